"""The facade owns stepfork/__init__.py; every other member is a namespace portion (docs/architecture.md)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_only_the_facade_ships_the_namespace_init():
    inits = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("*/*/src/stepfork/__init__.py"))
    assert inits == ["libs/stepfork/src/stepfork/__init__.py"]


def test_the_namespace_holds_every_installed_member_portion():
    import stepfork

    portions = {Path(p).resolve() for p in stepfork.__path__}
    for member in ("libs/stepfork", "libs/stepfork-trace", "libs/stepfork-replay", "libs/stepfork-analysis"):
        assert (ROOT / member / "src" / "stepfork").resolve() in portions, member
    assert (ROOT / "apps/stepfork-cli/src/stepfork").resolve() in portions
    assert len(stepfork.__path__) == len(set(stepfork.__path__)), "a portion is listed twice"


def test_import_stepfork_does_not_import_pkgutil_or_typing():
    # `stepfork --version` imports the facade; pkgutil and typing would double its start-up time
    script = (
        "import sys\nbefore = set(sys.modules)\nimport stepfork\n"
        "print(sorted(m for m in ('pkgutil', 'typing', 're') if m in set(sys.modules) - before))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_facade_exports_resolve_lazily_and_unknown_names_fail():
    script = (
        "import sys, stepfork\n"
        "assert 'stepfork.replay' not in sys.modules\n"
        "assert 'pydantic' not in sys.modules, 'import stepfork must stay light'\n"
        "try:\n    stepfork.no_such_name\nexcept AttributeError:\n    pass\n"
        "else:\n    raise SystemExit('unknown name resolved')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_every_facade_name_is_importable():
    import stepfork

    for name in stepfork.__all__:
        assert getattr(stepfork, name) is not None, name
