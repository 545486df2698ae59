"""``check_corpus``'s local scheduling around the replays: who owns the zygote and the replays' processes.

A local run (the default executor) owns what it started: ending or interrupting it stops its own zygote
and its own replays, never those of another run in the same process (a notebook, a service), and an
interrupted run leaves no replay running, on the zygote's path and where the zygote cannot run.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import check_corpus
from stepfork.analysis._zygote.client import FORCE_SUBPROCESS_ENV

from ..corpus_support import quickstart_corpus

# A bundle without run input (order_id None) is the "bad" one, as in test_check_isolation.py.
AGENTS = """
import os, time
import quickstart

HERE = os.path.dirname(os.path.abspath(__file__))


def publish(name, text):
    # whole or not at all: the test reads the file as soon as it exists, and may kill this process then
    with open(os.path.join(HERE, name + ".tmp"), "w") as note:
        note.write(text)
    os.replace(os.path.join(HERE, name + ".tmp"), os.path.join(HERE, name))


def gated(order_id=None):
    # says it started, then waits until the test lets it go on (another check ends meanwhile)
    open(os.path.join(HERE, "started"), "a").close()
    while not os.path.exists(os.path.join(HERE, "go")):
        time.sleep(0.01)
    return quickstart.run_agent(order_id)


def slow_import(order_id=None):
    if order_id is None:
        import slowsdk  # noqa: F401  an installed package's module, imported lazily: the zygote preloads it
    return quickstart.run_agent(order_id)


HELPERS = []


def spawner(order_id=None):
    if order_id is None:
        helper = os.fork()
        if helper == 0:  # a helper process left running, as one multiprocessing starts by fork
            time.sleep(600)
            os._exit(0)
        HELPERS.append(helper)  # state the probe sees: the worker exits after this verdict
        publish("helper.pid", str(helper))
    return quickstart.run_agent(order_id)


def stuck(order_id=None):
    if order_id is None:
        publish("stuck.pid", str(os.getpid()))
        time.sleep(600)
    return quickstart.run_agent(order_id)
"""


# An installed package whose import is slow in the zygote only (the session leader; a worker is not one):
# as an SDK's lazily imported modules are, which the zygote preloads between batches
SLOW_SDK = """
import os, time

if os.getsid(0) == os.getpid():
    time.sleep(1.5)
"""


# An agent whose module, imported by the zygote, makes one step of the zygote's stop at the end of a check
# take a minute (``{step}``: ``waitpid``, its reaping of its workers, or ``killpg``, its killing of them; a
# worker with a large heap takes ms to tear down): it notes the zygote's pid when that step starts
SLOW_STOP = """
import os, time
import quickstart
from queued import publish  # beside it (the fixture small)

_ZYGOTE = os.getpid()  # this module is imported by the zygote, not by the process that runs check_corpus
_real = os.{step}


def _slow(*args):
    if os.getpid() == _ZYGOTE:
        publish("stopping.pid", str(_ZYGOTE))
        time.sleep(60)
    return _real(*args)


os.{step} = _slow
run_agent = quickstart.run_agent
"""


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, list[str], dict[str, str]]:
    """An import root with quickstart and the candidates above, and 4 bundles (the last without run input)."""
    (tmp_path / "queued.py").write_text(AGENTS)
    expected = quickstart_corpus(tmp_path, 4, diverge_every=4)
    return tmp_path, sorted(expected), expected


def _wait_for(path: Path, seconds: float = 60.0) -> None:
    """Wait until ``path`` exists (a replay in another process made it); fail after ``seconds``."""
    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.01)


def _wait_gone(pid: int, seconds: float = 10.0) -> None:
    """Wait until process ``pid`` has ended (gone, or a zombie its new parent has not reaped yet)."""
    end = time.monotonic() + seconds
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state in ("Z", "X"):
            return
        assert time.monotonic() < end, f"process {pid} still runs"
        time.sleep(0.01)


@pytest.mark.parametrize("step", ["waitpid", "killpg"])
def test_a_check_returns_without_waiting_for_its_zygote_to_stop(small, step: str) -> None:
    # at the normal end every batch is answered, so no worker runs agent code: check_corpus tells the zygote
    # to stop and returns, and a thread of this process waits for the zygote to kill its workers, reap them
    # and exit, and reaps it (3-8 ms at the end of every check before: the kills, then the reaping)
    work, bundles, expected = small
    (work / "slowstop.py").write_text(SLOW_STOP.replace("{step}", step))
    result = check_corpus(bundles, "slowstop:run_agent", jobs=1, import_root=work)
    assert {v.bundle: v.verdict for v in result.verdicts} == expected
    _wait_for(work / "stopping.pid")
    zygote = int((work / "stopping.pid").read_text())
    os.kill(zygote, 0)  # still in its slow step (its minute): check_corpus returned before, every verdict in
    os.kill(zygote, signal.SIGKILL)
    end = time.monotonic() + 10
    while Path(f"/proc/{zygote}").exists():  # reaped by this process, not left a zombie
        assert time.monotonic() < end, f"the zygote {zygote} was not reaped"
        time.sleep(0.01)
    for worker in {v.worker for v in result.verdicts if v.worker}:
        _wait_gone(worker)  # killed, or its job pipe ended with the zygote: it exits on its own


def test_a_check_joins_its_threads_only_after_an_error(small, monkeypatch: pytest.MonkeyPatch) -> None:
    # at the normal end the pool's threads wait for work that never comes: they end on their own (joining
    # them cost 1-2 ms at the end of every check); after an error (Ctrl-C) they are joined before it returns
    import stepfork.analysis.check._corpus as check_module

    waits: list[bool] = []

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            waits.append(wait)
            super().shutdown(wait, cancel_futures=cancel_futures)

    monkeypatch.setattr(check_module, "ThreadPoolExecutor", Pool)
    work, bundles, expected = small
    result = check_corpus(bundles, "quickstart:run_agent", jobs=1, import_root=work)
    assert {v.bundle: v.verdict for v in result.verdicts} == expected
    assert waits == [False]

    def interrupt(verdict: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_corpus(bundles, "quickstart:run_agent", jobs=1, import_root=work, on_result=interrupt)
    assert waits == [False, True]


def test_a_check_that_ends_leaves_another_check_of_the_process_running(small) -> None:
    # two check_corpus calls at once in one process: the first to end closed every zygote of the process,
    # and the other's bundles still replaying came back COULD NOT EXECUTE ("the check was stopped")
    work, bundles, expected = small
    outcome: dict[str, Any] = {}

    def long_check() -> None:
        try:
            outcome["result"] = check_corpus(bundles, "queued:gated", jobs=1, batch_size=1, import_root=work)
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=long_check)
    thread.start()
    try:
        _wait_for(work / "started")  # its zygote runs a replay now
        short = check_corpus(bundles[:1], "quickstart:run_agent", jobs=1, import_root=work)
        assert [v.verdict for v in short.verdicts] == [expected[bundles[0]]]
    finally:
        (work / "go").touch()
        thread.join()
    assert "error" not in outcome, outcome
    verdicts = outcome["result"].verdicts
    assert {v.bundle: v.verdict for v in verdicts} == expected, verdicts


@pytest.mark.parametrize("path", ["zygote", "subprocess"])
def test_an_interrupted_check_kills_the_replays_it_runs(
    small, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C (a KeyboardInterrupt in the caller's thread, as `kill -INT` of `stepfork check` gives) while
    # another replay hangs: where the zygote cannot run (a fresh process per replay), the check waited for
    # the hung replay's whole --timeout before it stopped
    if path == "subprocess":
        monkeypatch.setenv(FORCE_SUBPROCESS_ENV, "1")
    work, bundles, expected = small
    bad = next(b for b in bundles if expected[b] == "DIVERGED")
    good = next(b for b in bundles if expected[b] == "MATCHED")

    def interrupt(verdict: Any) -> None:
        _wait_for(work / "stuck.pid")  # the other replay hangs now
        raise KeyboardInterrupt

    timeout = 40.0
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        check_corpus(
            [bad, good],
            "queued:stuck",
            jobs=2,
            batch_size=1,
            timeout=timeout,
            import_root=work,
            on_result=interrupt,
        )
    assert time.monotonic() - start < timeout / 2  # not after the hung replay's timeout
    pid = int((work / "stuck.pid").read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)


def test_a_verdict_given_while_the_zygote_was_busy_is_not_a_timeout(
    small, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the zygote preloads what a replay imported (1.5 s here) after handing the worker its next batch; the
    # verdicts the worker gave meanwhile waited unread in its pipe, and the batch was judged timed out
    work, bundles, expected = small
    packages = tmp_path_factory.mktemp("env") / "site-packages"
    packages.mkdir()
    (packages / "slowsdk.py").write_text(SLOW_SDK)
    monkeypatch.setenv("PYTHONPATH", str(packages))
    bad = [b for b in bundles if expected[b] == "DIVERGED"]
    chosen = bad + [b for b in bundles if b not in bad]  # the slow import first, then batches queued
    result = check_corpus(chosen, "queued:slow_import", jobs=1, batch_size=1, timeout=1.0, import_root=work)
    assert [(v.verdict, v.reason) for v in result.verdicts] == [(expected[b], None) for b in chosen]


@pytest.mark.parametrize(("isolation", "batch_size"), [("worker", 4), ("bundle", 1)])
def test_a_worker_that_leaves_a_forked_process_behind_does_not_stall_the_queue(
    small, isolation: str, batch_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the helper holds the worker's answer pipe open: the zygote waited for its end before going on with
    # the rest of the batch and before starting a queued batch in its place (--jobs 1), until the check's
    # own process gave up on the zygote and replayed everything in fresh processes
    from stepfork.analysis.check import _runner as _check_runner

    monkeypatch.setattr(_check_runner, "GRACE", 5.0)  # gives up sooner: a stall fails in seconds
    work, bundles, expected = small
    bad = [b for b in bundles if expected[b] == "DIVERGED"]
    chosen = bad + [b for b in bundles if b not in bad]
    result = check_corpus(
        chosen,
        "queued:spawner",
        jobs=1,
        batch_size=batch_size,
        timeout=2.0,
        import_root=work,
        isolation=isolation,
    )
    assert [v.verdict for v in result.verdicts] == [expected[b] for b in chosen]
    assert all(v.worker for v in result.verdicts), result.verdicts  # answered by the zygote's workers
    _wait_gone(int((work / "helper.pid").read_text()))  # killed with its worker's process group


def test_a_replay_in_a_fresh_process_that_leaves_a_forked_process_behind_is_not_a_timeout(
    small, monkeypatch: pytest.MonkeyPatch
) -> None:
    # where the zygote cannot run: the helper the agent forked held the replay's pipes open, so a replay
    # done in milliseconds was reported as a timeout, and the helper ran on after the check
    monkeypatch.setenv(FORCE_SUBPROCESS_ENV, "1")
    work, bundles, expected = small
    result = check_corpus(bundles, "queued:spawner", jobs=1, timeout=20.0, import_root=work)
    assert [v.verdict for v in result.verdicts] == [expected[b] for b in bundles], result.verdicts
    assert not any(v.worker for v in result.verdicts)  # each in a fresh process, not a zygote's worker
    _wait_gone(int((work / "helper.pid").read_text()))  # killed with its replay's process group
