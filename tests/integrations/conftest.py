"""Shared pieces of the integration tests: the fake provider APIs of examples/ and the helper module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
# --import-mode=importlib: make the helpers and the example agents importable. Folders without a
# conftest.py only, so that no other test folder's `from conftest import ...` finds ours.
for folder in (
    HERE / "helpers",
    *(EXAMPLES / name for name in ("openai_agent", "anthropic_agent", "langgraph_agent", "mcp_agent")),
):
    sys.path.insert(0, str(folder))


@pytest.fixture(autouse=True)
def _close_kept_clients() -> Iterator[None]:
    """Close the clients a test kept (helpers/local_openai.py ``kept``)."""
    yield
    from local_openai import OPENED

    while OPENED:
        OPENED.pop().close()


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A fresh bundle path."""
    return tmp_path / "run.sftrace"
