"""Shared factories for the replay tests: record a run into a temporary bundle, locate golden bundles."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stepfork.trace import record

from ..conftest import GOLDEN

# --import-mode=importlib: make the helper modules of this folder importable (replay_agents).
sys.path.insert(0, str(Path(__file__).resolve().parent))


_counter = itertools.count()


class Recorder:
    """Record ``agent()`` (sync or async) into a fresh bundle under ``tmp_path``; return its path."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(
        self, agent: Callable[[], Any], *, name: str = "agent", set_output: bool = True, raises: bool = False
    ) -> Path:
        path = self.root / f"{name}-{next(_counter)}.sftrace"
        try:
            with record(name, output=path) as session:
                result = agent()
                if asyncio.iscoroutine(result):
                    result = asyncio.run(result)
                if set_output:
                    session.set_output(result)
        except Exception:
            if not raises:
                raise
        return path

    def run_async(self, agent: Callable[[], Any], *, name: str = "agent", set_output: bool = True) -> Path:
        path = self.root / f"{name}-{next(_counter)}.sftrace"

        async def main() -> None:
            async with record(name, output=path) as session:
                result = await agent()
                if set_output:
                    session.set_output(result)

        asyncio.run(main())
        return path


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    return Recorder(tmp_path)


def golden(name: str) -> Path:
    """Path of a reference golden bundle, e.g. ``golden("successful_run")``."""
    path = GOLDEN / f"{name}.sftrace"
    assert path.is_dir(), path
    return path
