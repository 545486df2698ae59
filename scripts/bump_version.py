"""Set one version on every Stepfork distribution: ``python scripts/bump_version.py 0.3.0``.

Stepfork's distributions are versioned together (docs/architecture.md). The version lives in each member's
pyproject.toml (``version = "..."``), in the ``==`` pins between members, and in two ``__version__`` strings;
this script rewrites all of them, and tests/test_versions.py fails when any of them disagree. Run without an
argument it prints the current version.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECTS = [
    ROOT / "pyproject.toml",
    *sorted((ROOT / "libs").glob("*/pyproject.toml")),
    *sorted((ROOT / "apps").glob("*/pyproject.toml")),
]
VERSION_FILES = [
    ROOT / "libs/stepfork-trace/src/stepfork/trace/_version.py",
    ROOT / "libs/stepfork/src/stepfork/__init__.py",
]
MEMBERS = ("stepfork-trace", "stepfork-replay", "stepfork-analysis", "stepfork-cli", "stepfork")
_VERSION_RE = re.compile(r'^version = "([^"]+)"$', re.MULTILINE)
_PIN_RE = re.compile(r'"(' + "|".join(re.escape(m) for m in MEMBERS) + r')==([^"]+)"')
_DUNDER_RE = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)


def current_versions() -> dict[str, set[str]]:
    """Map each file (relative path) to the set of versions it states (its own and its pins)."""
    found: dict[str, set[str]] = {}
    for path in PYPROJECTS:
        text = path.read_text(encoding="utf-8")
        found[str(path.relative_to(ROOT))] = set(_VERSION_RE.findall(text)) | {
            v for _, v in _PIN_RE.findall(text)
        }
    for path in VERSION_FILES:
        found[str(path.relative_to(ROOT))] = set(_DUNDER_RE.findall(path.read_text(encoding="utf-8")))
    return found


def bump(new: str) -> None:
    """Rewrite every version statement to ``new``. Raises ValueError for a malformed version."""
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.dev\d+)?", new):
        raise ValueError(f"not a release version: {new!r}")
    for path in PYPROJECTS:
        text = path.read_text(encoding="utf-8")
        text = _VERSION_RE.sub(f'version = "{new}"', text)
        text = _PIN_RE.sub(lambda m: f'"{m.group(1)}=={new}"', text)
        path.write_text(text, encoding="utf-8")
    for path in VERSION_FILES:
        text = _DUNDER_RE.sub(f'__version__ = "{new}"', path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    """Print the versions (no argument) or set a new one; returns the exit code."""
    if not argv:
        versions = set().union(*current_versions().values())
        print(", ".join(sorted(versions)))
        return 0 if len(versions) == 1 else 1
    try:
        bump(argv[0])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"all distributions now at {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
