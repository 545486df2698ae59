"""A corpus of real quickstart recordings for the ``check`` tests (tests/analysis/test_check_isolation.py,
tests/e2e/test_cli_check.py), made by examples/quickstart/corpus.py as a user would make one.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


def corpus_module(name: str = "stepfork_example_corpus") -> ModuleType:
    """examples/quickstart/corpus.py loaded as a module called ``name`` (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location(name, QUICKSTART / "corpus.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quickstart_corpus(work: Path, count: int, *, diverge_every: int = 10) -> dict[str, str]:
    """Copy the quickstart agent into ``work`` and record ``count`` bundles of it under ``work/corpus``;
    return ``{bundle path: expected verdict}`` (``MATCHED``, or ``DIVERGED`` for every ``diverge_every``-th,
    recorded for another order: examples/quickstart/corpus.py ``make_corpus``).

    corpus.py imports the example's own ``quickstart``; it is dropped from ``sys.modules`` after, so an
    in-process import (``import_root=work``) finds the copy in ``work``.
    """
    shutil.copy2(QUICKSTART / "quickstart.py", work / "quickstart.py")
    module = corpus_module()
    expected: dict[str, str] = module.make_corpus(work / "corpus", count, diverge_every=diverge_every)
    sys.modules.pop("quickstart", None)
    return expected
