"""A naive clock reading (``datetime.now().isoformat()``) recorded in one time zone and compared in another.

``datetime.now()`` without a zone is the recording machine's local time. A laptop in India records, CI in
New York replays and diffs: the reading is neither UTC nor the comparing machine's local time, so it used
to fall outside the run's window and the same code was DIVERGED / BEHAVIOR CHANGED. The recorder now
states its process's UTC offset in ``minted.json`` (``utc_offset``), and a naive reading is read in that
zone too (docs/diff.md "Clock readings"). A time outside the run stays a change whatever the zone.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepfork.replay.noise.clock import ClockWindow
from stepfork.trace import minting
from stepfork.trace.minting import RecordedMinted

AGENT = """
import datetime, sys
from stepfork import record, trace_tool


@trace_tool
def create_ticket(kind: str) -> dict:
    return {"kind": kind, "status": "open"}


def agent(hours_ahead: float = 0.0) -> dict:
    ticket = create_ticket("refund")
    moment = datetime.datetime.now() + datetime.timedelta(hours=hours_ahead)  # naive local time
    return {"status": ticket["status"], "finished_at": moment.isoformat()}


if __name__ == "__main__":
    with record("zones", output=sys.argv[1], overwrite=True) as session:
        session.set_output(agent())
"""

REPLAY = """
import sys
from stepfork.replay import replay_entrypoint
import zones
hours = float(sys.argv[2])
outcome = replay_entrypoint(sys.argv[1], lambda: zones.agent(hours))
print(outcome.behavior.status, outcome.behavior.path)
"""

DIFF = """
import sys
from stepfork.analysis import diff_traces
print(diff_traces(sys.argv[1], sys.argv[2]).equivalent)
"""


def run(tmp_path: Path, zone: str, *args: str) -> str:
    env = {**os.environ, "TZ": zone, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "zones.py").write_text(AGENT)
    (tmp_path / "replay_it.py").write_text(REPLAY)
    (tmp_path / "diff_it.py").write_text(DIFF)
    return tmp_path


def test_a_naive_reading_recorded_in_a_third_time_zone_is_noise(folder: Path) -> None:
    run(folder, "Asia/Kolkata", "zones.py", "a.sftrace")  # UTC+05:30
    run(folder, "Asia/Kolkata", "zones.py", "b.sftrace")
    minted = json.loads((folder / "a.sftrace" / "minted.json").read_text())
    assert minted["utc_offset"] == 19800
    assert run(folder, "America/New_York", "diff_it.py", "a.sftrace", "b.sftrace") == "True"
    assert run(folder, "America/New_York", "replay_it.py", "a.sftrace", "0") == "MATCHED None"
    # a time outside the run is still behaviour, in any zone
    assert run(folder, "America/New_York", "replay_it.py", "a.sftrace", "30") == "DIVERGED finished_at"
    assert run(folder, "Asia/Kolkata", "replay_it.py", "a.sftrace", "30") == "DIVERGED finished_at"


def test_the_offset_is_read_only_when_well_formed_and_a_window_without_it_reads_as_before() -> None:
    start = 1_796_522_963_000_000_000
    local = datetime.datetime.fromtimestamp(start / 10**9).astimezone().utcoffset()
    east = 19800 if local != datetime.timedelta(seconds=19800) else 35100  # neither UTC nor local time
    naive = datetime.datetime.fromtimestamp(start / 10**9, datetime.UTC) + datetime.timedelta(seconds=east)
    text = naive.replace(tzinfo=None).isoformat()
    assert ClockWindow(start, start + 10**9, utc_offset=east).spans(text) == [(0, len(text))]
    assert ClockWindow(start, start + 10**9).spans(text) == []  # a bundle that does not state it
    document = {"format": minting.FORMAT, "values": []}
    assert RecordedMinted.parse({**document, "utc_offset": east}).utc_offset == east  # type: ignore[union-attr]
    for malformed in ("19800", 10**9, True, 1.5, None):
        assert RecordedMinted.parse({**document, "utc_offset": malformed}).utc_offset is None  # type: ignore[union-attr]
    assert RecordedMinted.parse(document).utc_offset is None  # type: ignore[union-attr]
