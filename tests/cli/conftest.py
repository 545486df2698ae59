"""Shared paths and factories for the CLI-layer tests (export codegen, runner, receipts)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / ".." / "shared" / "interop" / "reference-bundles"
GOLDEN = REFERENCE / "tests" / "golden"


@pytest.fixture
def golden_copy(tmp_path: Path):
    """Copy a golden reference bundle into tmp_path and return its path: ``golden_copy("successful_run")``."""

    def copy(name: str, dest: str | None = None) -> Path:
        target = tmp_path / (dest or f"{name}.sftrace")
        shutil.copytree(GOLDEN / f"{name}.sftrace", target)
        return target

    return copy
