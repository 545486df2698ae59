"""Every distribution carries one version, and the members pin each other with == (docs/architecture.md)."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_bump_script():
    spec = importlib.util.spec_from_file_location("bump_version", ROOT / "scripts" / "bump_version.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_version_statement_agrees():
    bump = _load_bump_script()
    versions = bump.current_versions()
    stated = set().union(*versions.values())
    assert stated == {"0.2.0"}, versions
    # each member pyproject states a version; each pin is exact
    for path in bump.PYPROJECTS:
        assert versions[str(path.relative_to(ROOT))], f"{path} states no version"


def test_members_pin_each_other_exactly():
    for pyproject in [*ROOT.glob("libs/*/pyproject.toml"), *ROOT.glob("apps/*/pyproject.toml")]:
        text = pyproject.read_text(encoding="utf-8")
        for dep in re.findall(r'"(stepfork[a-z-]*)([<>=!~][^"]*)"', text):
            assert dep[1].startswith("=="), f"{pyproject}: {dep[0]} must be pinned with ==, not {dep[1]}"


def test_installed_version_matches_source():
    import stepfork
    import stepfork.trace

    assert stepfork.__version__ == stepfork.trace.__version__ == "0.2.0"


def test_static_all_lists_every_lazy_export():
    import stepfork
    import stepfork.trace

    for module in (stepfork, stepfork.trace):
        assert set(module.__all__) == {"__version__", *module._EXPORTS}, module.__name__
