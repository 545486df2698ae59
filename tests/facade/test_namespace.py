"""The facade owns stepfork/__init__.py; every other member is a namespace portion (docs/architecture.md)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_only_the_facade_ships_the_namespace_init():
    inits = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("*/*/src/stepfork/__init__.py"))
    assert inits == ["libs/stepfork/src/stepfork/__init__.py"]


def test_namespace_init_extends_path_first():
    text = (ROOT / "libs/stepfork/src/stepfork/__init__.py").read_text(encoding="utf-8")
    docstring_end = text.index('"""', 3) + 3
    first_statement = text[docstring_end:].strip().splitlines()[0]
    assert first_statement == '__path__ = __import__("pkgutil").extend_path(__path__, __name__)'


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
