"""Reliability campaign (issue 7): helper modules of this folder are importable (--import-mode=importlib),
and every test here is marked ``slow``: the campaign runs in `hatch run slow:test` at its CI size and in
`hatch run soak:run` at its soak size, not in the README's `hatch test` (tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``slow``."""
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.slow)
