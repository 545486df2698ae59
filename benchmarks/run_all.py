"""Run every ``benchmarks/bench_*.py`` ``main()`` in name order (``hatch run bench:all [NAME ...]``).

Each benchmark prints its own table and writes its JSON under benchmarks/results/. Arguments select
benchmarks by name (``recording`` runs bench_recording.py); none runs them all. Exit status 1 when a
benchmark raised (the others still run).
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover(names: list[str]) -> list[Path]:
    """The bench_*.py files of this folder, filtered by ``names`` (without the ``bench_`` prefix)."""
    files = sorted(HERE.glob("bench_*.py"))
    if names:
        files = [f for f in files if f.stem.removeprefix("bench_") in names or f.stem in names]
    return files


def run(path: Path) -> bool:
    """Import ``path`` as a module and call its ``main()``; True when it finished without raising."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        print(f"== {path.name}: cannot be imported", file=sys.stderr)
        return False
    module = importlib.util.module_from_spec(spec)
    print(f"== {path.name}")
    try:
        spec.loader.exec_module(module)
        module.main()
    except Exception:
        traceback.print_exc()
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks; return 0 when all succeeded, 1 otherwise, 2 when none matched."""
    names = list(sys.argv[1:] if argv is None else argv)
    files = discover(names)
    if not files:
        print(f"no benchmark matches {names}", file=sys.stderr)
        return 2
    ok = [run(path) for path in files]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
