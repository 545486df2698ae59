"""``check``'s zygote hands a worker its next batch while it still replays (``Child.ahead``), so a worker
that ends a batch goes on at once instead of waiting for the zygote to read its last verdict; a worker that
exits instead never read that batch, and it is replayed by another.

The scheduling is driven here on the zygote's own loop object with real pipes and a real process standing
in for a worker (the zygote kills a worker that says ``restart``); the end-to-end verdicts are checked
through ``check_corpus`` in tests/analysis/test_check_isolation.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import orjson
import pytest

from stepfork.analysis._zygote.server import Child
from stepfork.analysis.check._zygote import TASK
from stepfork.analysis.check._zygote_batches import _AHEAD_MAX, _GATHER, BatchZygote


@pytest.fixture
def zygote() -> Iterator[tuple[BatchZygote, int]]:
    """A check zygote's loop with one worker slot (``workers: 1``); yields it and the read end of what it
    sends to the client."""
    proto_in, client_out = os.pipe()
    client_in, proto_out = os.pipe()
    loop = BatchZygote({"timeout": 60.0, "workers": 1}, proto_in, proto_out, TASK.work)
    os.set_blocking(client_in, False)
    yield loop, client_in
    for fd in (proto_in, client_out, client_in, proto_out):
        os.close(fd)


@pytest.fixture
def worker(zygote: tuple[BatchZygote, int]) -> Iterator[tuple[Child, int, subprocess.Popen[bytes]]]:
    """A running worker of ``zygote`` replaying batch 1 (two bundles): its Child, the read end of its jobs
    pipe (what the zygote hands it) and the process standing in for it."""
    loop, _ = zygote
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    jobs_read, jobs_write = os.pipe()
    result_read, result_write = os.pipe()
    os.set_blocking(jobs_read, False)
    with tempfile.TemporaryFile() as stderr:
        child = Child(1, proc.pid, result_read, stderr, float("inf"), ["a", "b"], jobs_fd=jobs_write)
        loop.children[result_read] = child
        yield child, jobs_read, proc
    proc.kill()
    proc.wait()
    for fd in (jobs_read, jobs_write, result_read, result_write):
        os.close(fd)


def _answer(pid: int, **fields: object) -> bytes:
    return orjson.dumps({"kind": "verdict", "verdict": "MATCHED", "worker": pid, **fields}) + b"\n"


def _sent(client_in: int) -> list[dict[str, object]]:
    try:
        data = os.read(client_in, 65536)
    except BlockingIOError:
        return []
    return [orjson.loads(line) for line in data.splitlines()]


def test_a_queued_batch_is_handed_to_the_running_worker_before_its_batch_ends(zygote, worker) -> None:
    loop, client_in = zygote
    child, jobs_read, _ = worker
    loop.dispatch(2, ["c", "d"])  # the cap is reached: queued, then handed ahead by the loop's round
    loop.dispatch(3, ["e"])
    loop.pump()
    assert os.read(jobs_read, 65536) == b'["c","d"]\n'  # written while the worker still replays batch 1
    assert child.ahead == (2, ["c", "d"])
    assert list(loop.queue) == [(3, ["e"])]  # one batch ahead per worker
    loop.received(child, _answer(child.pid) + _answer(child.pid) + _answer(child.pid, verdict="DIVERGED"))
    # batch 1 is reported, and the answer after it is already batch 2's: the worker went straight on
    assert child.job == 2
    assert child.answered == 1
    assert child.ahead is None
    assert [(m["id"], len(m["verdicts"])) for m in _sent(client_in)] == [(1, 2)]
    assert loop.batches[2][0]["verdict"] == "DIVERGED"
    loop.pump()  # the next queued batch goes ahead in its place
    assert child.ahead == (3, ["e"])


def test_a_worker_that_exits_after_its_batch_gives_back_the_batch_handed_ahead(zygote, worker) -> None:
    loop, client_in = zygote
    child, _, proc = worker
    loop.dispatch(2, ["c", "d"])
    loop.pump()
    assert child.ahead == (2, ["c", "d"])
    # its last replay changed the agent's state: it exits (the zygote kills it) without reading batch 2
    loop.received(child, _answer(child.pid) + _answer(child.pid, restart=True))
    assert proc.wait(timeout=10) != 0
    assert child.job is None
    assert child.ahead is None
    assert list(loop.queue) == [(2, ["c", "d"])]  # first in line for the next worker
    assert [m["id"] for m in _sent(client_in)] == [1]


def test_a_batch_too_long_for_the_pipe_waits_in_the_queue(zygote, worker) -> None:
    loop, _ = zygote
    child, jobs_read, _ = worker
    long = ["x" * 1000] * (_AHEAD_MAX // 1000 + 1)  # a worker reads ahead only when its batch ends
    loop.dispatch(2, long)
    loop.pump()
    assert child.ahead is None
    assert list(loop.queue) == [(2, long)]
    with pytest.raises(BlockingIOError):
        os.read(jobs_read, 1)


def test_a_batch_handed_ahead_is_awaited_at_its_workers_pace_from_its_first_bundle(zygote, worker) -> None:
    # the zygote lets verdicts gather for up to _GATHER, less when a batch's last verdict is due sooner at
    # the pace of its verdicts so far; a batch handed ahead had none yet when it became current, so the
    # zygote slept the whole _GATHER, and a run's short last batch was reported up to 10 ms after its end
    loop, _ = zygote
    child, _, _ = worker
    loop.dispatch(2, ["c", "d"])
    loop.pump()
    start = time.monotonic() - 1.0  # the worker stamps each verdict with when it had it (done_at)
    child.since = child.batch_start = start
    answers = [_answer(child.pid, done_at=start + 0.001), _answer(child.pid, done_at=start + 0.002)]
    loop.received(child, b"".join(answers))
    assert (child.job, child.answered) == (2, 0)  # batch 2 runs, no verdict of it yet
    # two bundles left at the 1 ms per bundle of batch 1: due 2 ms after its last verdict
    assert loop._gather_for(start + 0.002) == pytest.approx(0.002)
    assert loop._gather_for(start + 0.002) < _GATHER
