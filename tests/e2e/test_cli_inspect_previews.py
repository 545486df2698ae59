"""``stepfork inspect --events`` cuts long payloads to replay's one-line preview; ``--full`` and ``--json``
print them whole."""

from __future__ import annotations

import json
from pathlib import Path

from stepfork.replay.diagnostics import PREVIEW_CHARS

from ..view_support import calls_trace
from .conftest import run_cli

SIZE = 300_000  # far past any preview, small enough for a cheap subprocess


def _big_payload(tmp_path: Path) -> Path:
    return calls_trace(1, payload="y" * SIZE).save(tmp_path / "big.sftrace")


def test_events_cuts_a_huge_payload_and_full_prints_it_whole(tmp_path: Path) -> None:
    bundle = _big_payload(tmp_path)
    short = run_cli("inspect", bundle, "--events")
    assert short.code == 0, short.text
    longest = max(len(line) for line in short.out.splitlines())
    assert longest < PREVIEW_CHARS + 200, longest
    assert "group 0 yyy" in short.out
    assert "--full prints them whole" in short.out
    whole = run_cli("inspect", bundle, "--events", "--full")
    assert whole.code == 0, whole.text
    assert "y" * SIZE in whole.out
    assert "--full prints them whole" not in whole.out
    data = json.loads(run_cli("inspect", bundle, "--json", "--events").out)
    assert any("y" * SIZE in json.dumps(row["details"]) for row in data["timeline"])
