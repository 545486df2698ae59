"""Shared paths for the CLI-layer tests (export codegen, runner, receipts).

``golden_copy`` lives in tests/conftest.py.
"""

from __future__ import annotations

from ..conftest import GOLDEN, REFERENCE

__all__ = ["GOLDEN", "REFERENCE"]
