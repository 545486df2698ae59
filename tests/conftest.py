"""What every test folder shares: where the reference bundles are, and copies of the golden ones.

Test folders import the paths as ``from ..conftest import GOLDEN`` (``--import-mode=importlib`` names this
module ``tests.conftest``); the ``golden_copy`` fixture is visible to every test below ``tests/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# The repo's parent holds shared/: the bundles an earlier implementation wrote (interop/REFERENCE-NOTES.md).
REFERENCE = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "interop" / "reference-bundles"
).resolve()
GOLDEN = REFERENCE / "tests" / "golden"


@pytest.fixture
def golden_copy(tmp_path: Path) -> Callable[..., Path]:
    """Copy a golden reference bundle into tmp_path and return its path: ``golden_copy("successful_run")``,
    or ``golden_copy("successful_run", "other.sftrace")`` to name the copy."""

    def copy(name: str, dest: str | None = None) -> Path:
        target = tmp_path / (dest or f"{name}.sftrace")
        shutil.copytree(GOLDEN / f"{name}.sftrace", target)
        return target

    return copy
