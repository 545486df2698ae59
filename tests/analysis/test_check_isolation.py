"""``check_corpus``'s batch workers (issue 17): one worker process replays many bundles, yet a crash or a hang
costs only its own bundle, and module state a replay changes never reaches the next replay's verdict.

The corpus is real quickstart recordings (examples/quickstart/corpus.py): every fourth bundle has no
recorded run input, so the candidate entrypoints below can single those out (their ``order_id`` is None).
Each test runs the whole corpus as ONE batch (``batch_size``), so every bundle goes through one task.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stepfork.analysis import check_corpus

from ..corpus_support import quickstart_corpus

# Candidate builds of the quickstart agent. A bundle without run input (order_id None) is a "bad" one.
AGENTS = """
import os, threading, time
import quickstart

SEEN = []


def crashy(order_id=None):
    if order_id is None:
        print("agent: giving up on", order_id, file=__import__("sys").stderr)
        os._exit(3)
    return quickstart.run_agent(order_id)


def silent(order_id=None):
    if order_id is None:
        os._exit(3)  # nothing written to stderr
    return quickstart.run_agent(order_id)


def segfaulty(order_id=None):
    if order_id is None:
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    return quickstart.run_agent(order_id)


def hangy(order_id=None):
    if order_id is None:
        time.sleep(600)
    return quickstart.run_agent(order_id)


def leaky(order_id=None):
    # module state: were it left for the next replay, that replay would ask for another order and diverge
    SEEN.append(order_id)
    return quickstart.run_agent(order_id if len(SEEN) == 1 else "ORD-1002")


def marking(order_id=None):
    # changes module state only on a bundle without run input: its worker exits after that verdict
    if order_id is None:
        SEEN.append("bad")
    return quickstart.run_agent("ORD-1002" if SEEN and order_id is not None else order_id)


def envy(order_id=None):
    os.environ["STEPFORK_TEST_REPLAYS"] = os.environ.get("STEPFORK_TEST_REPLAYS", "") + "x"
    return quickstart.run_agent(order_id or "ORD-1002")


def threaded(order_id=None):
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
    return quickstart.run_agent(order_id or "ORD-1002")


def forky(order_id=None):
    os.fork()  # both processes return: only the worker may answer
    return quickstart.run_agent(order_id)


class Proxy:
    def __getattr__(self, name):  # as a web framework's request proxy outside a request
        raise RuntimeError("Working outside of request context.")


REQUEST = Proxy()


def proxied(order_id=None):
    return quickstart.run_agent(order_id)


def sleepy(order_id=None):
    if order_id is None:
        time.sleep(0.3)
    return quickstart.run_agent(order_id or "ORD-1002")


def exclusive(order_id=None):
    # notes a replay that runs while another holds the lock (two replays at once)
    import fcntl

    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "exclusive.lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            with open(os.path.join(here, "overlaps.txt"), "a") as seen:
                seen.write("overlap ")
        time.sleep(0.2)  # long enough for a second replay, were one started, to reach the lock
        return quickstart.run_agent(order_id)


def rebinding(order_id=None):
    # rebinds the entrypoint's own name, as a hot-reloading agent might: a worker that went on would replay
    # the next bundle through diverting (a worker resolves the entrypoint once, not per bundle)
    globals()["rebinding"] = diverting
    return quickstart.run_agent(order_id or "ORD-1002")


def diverting(order_id=None):
    return quickstart.run_agent("ORD-1002")


def lazy(order_id=None):
    # an agent module imported on first use: its import-time state is new to the worker
    import lazyhelper

    return quickstart.run_agent(lazyhelper.order(order_id))
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], dict[str, str]]:
    """An import root holding quickstart and the candidates above, and 8 bundles (2 without run input)."""
    work = tmp_path_factory.mktemp("check-isolation")
    (work / "candidates.py").write_text(AGENTS)
    (work / "lazyhelper.py").write_text("def order(order_id):\n    return order_id or 'ORD-1002'\n")
    # a state too large to compare after every replay (over 50,000 values): every replay gets a fresh worker
    (work / "bigstate.py").write_text(
        "import quickstart\n\nTABLE = list(range(60_000))\n\n"
        "def run(order_id=None):\n    return quickstart.run_agent(order_id or 'ORD-1002')\n"
    )
    expected = quickstart_corpus(work, 8, diverge_every=4)
    return work, sorted(expected), expected


def _check(corpus: tuple[Path, list[str], dict[str, str]], entrypoint: str, **options):
    work, bundles, _ = corpus
    return check_corpus(bundles, entrypoint, jobs=1, batch_size=len(bundles), import_root=work, **options)


def _bad(corpus: tuple[Path, list[str], dict[str, str]]) -> set[str]:
    return {b for b, v in corpus[2].items() if v == "DIVERGED"}  # recorded without run input


def test_one_worker_replays_the_whole_batch(corpus) -> None:
    result = _check(corpus, "quickstart:run_agent")
    assert {v.bundle: v.verdict for v in result.verdicts} == corpus[2]
    assert len({v.worker for v in result.verdicts}) == 1  # no fork per bundle
    assert all(v.worker for v in result.verdicts)


def test_a_crash_costs_only_its_own_bundle(corpus) -> None:
    result = _check(corpus, "candidates:crashy")
    bad = _bad(corpus)
    for verdict in result.verdicts:
        if verdict.bundle in bad:
            assert (verdict.verdict, verdict.reason) == ("COULD NOT EXECUTE", "check_error")
            # described by its own last stderr line, not by an earlier bundle's
            assert verdict.detail == "the replay's process died: agent: giving up on None"
        else:
            assert verdict.verdict == "MATCHED", verdict
    # the bundles after each crash went on in a fresh worker: three workers for two crashes (at 4th and 8th)
    assert len({v.worker for v in result.verdicts if v.bundle not in bad}) == 2


def test_a_hang_costs_only_its_own_bundle(corpus) -> None:
    result = _check(corpus, "candidates:hangy", timeout=1.0)
    bad = _bad(corpus)
    for verdict in result.verdicts:
        if verdict.bundle in bad:
            assert (verdict.verdict, verdict.reason) == ("COULD NOT EXECUTE", "timeout")
        else:
            assert verdict.verdict == "MATCHED", verdict


def test_module_state_a_replay_changes_never_reaches_the_next_verdict(corpus) -> None:
    result = _check(corpus, "candidates:leaky")
    # as a fork per bundle would give: each replay sees SEEN empty, so only the bundles without run input
    # (their order_id None is looked up as given) diverge
    bad = _bad(corpus)
    assert {v.bundle: v.verdict for v in result.verdicts} == {
        b: ("DIVERGED" if b in bad else "MATCHED") for b in corpus[1]
    }
    assert len({v.worker for v in result.verdicts}) == len(corpus[1])  # a fresh worker after each


@pytest.mark.parametrize(
    "agent", ["candidates:threaded", "candidates:envy", "bigstate:run", "candidates:rebinding"]
)
def test_what_the_probe_cannot_clear_sends_the_next_bundle_to_a_fresh_worker(corpus, agent: str) -> None:
    # a thread left running, a changed os.environ, a state too large to compare, a rebound entrypoint
    result = _check(corpus, agent)
    # these candidates look up the recorded order of the bundles without run input too: all match
    assert [v.verdict for v in result.verdicts] == ["MATCHED"] * len(corpus[1])
    assert len({v.worker for v in result.verdicts}) == len(corpus[1])


def test_isolation_bundle_forks_per_bundle_with_the_same_verdicts(corpus) -> None:
    result = _check(corpus, "quickstart:run_agent", isolation="bundle")
    assert {v.bundle: v.verdict for v in result.verdicts} == corpus[2]
    assert len({v.worker for v in result.verdicts}) == len(corpus[1])
    with pytest.raises(ValueError, match="isolation"):
        _check(corpus, "quickstart:run_agent", isolation="thread")


def test_a_replay_importing_a_new_agent_module_sends_the_next_bundle_to_a_fresh_worker(corpus) -> None:
    result = _check(corpus, "candidates:lazy")
    assert [v.verdict for v in result.verdicts] == ["MATCHED"] * len(corpus[1])
    # each replay imported lazyhelper (the zygote never imports the agent's own modules): a fresh worker each
    assert len({v.worker for v in result.verdicts}) == len(corpus[1])


LAZY_TOOL = """
import os
from stepfork import trace_tool


@trace_tool
def load_config() -> dict:
    with open(os.environ["STEPFORK_TEST_LIVE_LOG"], "a") as log:  # only a live call writes
        log.write("live\\n")
    return {"threshold": 3}


CONFIG = load_config()  # a tool called when the module is first imported
"""

LAZY_AGENT = """
def run(order_id=None):
    import lazytool  # imported on first use

    return {"order": order_id, "threshold": lazytool.CONFIG["threshold"]}
"""


def test_an_agent_module_imported_during_a_replay_runs_inside_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # its import-time tool call is served from the recording in every replay, never made live by the zygote
    from stepfork import record

    (tmp_path / "lazytool.py").write_text(LAZY_TOOL)
    (tmp_path / "lazyagent.py").write_text(LAZY_AGENT)
    live = tmp_path / "live.log"
    monkeypatch.setenv("STEPFORK_TEST_LIVE_LOG", str(live))
    monkeypatch.syspath_prepend(str(tmp_path))
    bundles = []
    for index in range(4):
        for name in ("lazytool", "lazyagent"):
            sys.modules.pop(name, None)
        import lazyagent

        bundle = tmp_path / f"run-{index}.sftrace"
        with record("lazy-agent", output=str(bundle), run_input={"order_id": f"ORD-{index}"}) as session:
            session.set_output(lazyagent.run(f"ORD-{index}"))
        bundles.append(str(bundle))
    for name in ("lazytool", "lazyagent"):
        sys.modules.pop(name, None)
    assert live.read_text().count("live") == 4  # one per recording
    for isolation in ("worker", "bundle"):
        result = check_corpus(
            bundles, "lazyagent:run", jobs=2, batch_size=2, import_root=tmp_path, isolation=isolation
        )
        assert [v.verdict for v in result.verdicts] == ["MATCHED"] * 4, result.verdicts
    assert live.read_text().count("live") == 4  # no replay, and not the zygote, called the tool live


def test_a_worker_replays_batch_after_batch(corpus) -> None:
    work, bundles, expected = corpus
    result = check_corpus(bundles, "quickstart:run_agent", jobs=1, batch_size=2, import_root=work)
    assert {v.bundle: v.verdict for v in result.verdicts} == expected
    assert len({v.worker for v in result.verdicts}) == 1  # four batches, one fork


@pytest.mark.parametrize("agent", ["candidates:crashy", "candidates:leaky"])
def test_small_batches_give_the_verdicts_of_one_batch(corpus, agent: str) -> None:
    # a crash or a state change in one batch never reaches the next batch a worker takes
    work, bundles, _ = corpus
    one = _check(corpus, agent)
    small = check_corpus(bundles, agent, jobs=2, batch_size=3, import_root=work)
    assert [(v.verdict, v.reason, v.detail) for v in small.verdicts] == [
        (v.verdict, v.reason, v.detail) for v in one.verdicts
    ]


@pytest.mark.parametrize("agent", ["candidates:crashy", "candidates:marking"])
def test_a_batch_handed_ahead_to_a_worker_that_ends_is_replayed_by_another(corpus, agent: str) -> None:
    # one worker, two batches of four: the second is written to the worker while it replays the first,
    # whose last bundle ends it (a crash; a state change); the second batch is replayed by a fresh worker
    work, bundles, expected = corpus
    one = _check(corpus, agent)
    ahead = check_corpus(bundles, agent, jobs=1, batch_size=4, import_root=work)
    if agent.endswith("marking"):  # had the state leaked, the bundles after a bad one would diverge
        assert {v.bundle: v.verdict for v in ahead.verdicts} == expected
    assert [(v.verdict, v.reason, v.detail) for v in ahead.verdicts] == [
        (v.verdict, v.reason, v.detail) for v in one.verdicts
    ]
    first, second = {v.worker for v in ahead.verdicts[:3]}, {v.worker for v in ahead.verdicts[4:]}
    assert len(first) == 1
    assert first.isdisjoint(second)


def test_each_bundle_is_timed_by_its_own_replay(corpus) -> None:
    # the zygote reads verdict lines in gathers; each line carries its worker's own finishing time
    work, bundles, _ = corpus
    result = check_corpus(bundles, "candidates:sleepy", jobs=1, batch_size=len(bundles), import_root=work)
    assert [v.verdict for v in result.verdicts] == ["MATCHED"] * len(bundles)
    bad = _bad(corpus)
    for index, verdict in enumerate(result.verdicts):
        if verdict.bundle in bad:
            assert verdict.duration_ms >= 300, verdict
            after = result.verdicts[index + 1] if index + 1 < len(bundles) else None
            assert after is None or after.duration_ms < 300, after  # the sleep is not counted twice


@pytest.mark.parametrize("agent", ["candidates:forky", "candidates:proxied"])
def test_an_agent_that_forks_or_holds_a_raising_proxy_gets_the_verdicts_of_replay(corpus, agent: str) -> None:
    # a forked copy of the worker never answers for it; a global the probe cannot read: a worker per bundle
    work, bundles, expected = corpus
    result = check_corpus(bundles, agent, jobs=2, batch_size=3, import_root=work, timeout=30)
    assert {v.bundle: v.verdict for v in result.verdicts} == expected


@pytest.mark.parametrize(
    ("agent", "how"),
    [("candidates:silent", "exit status 3"), ("candidates:segfaulty", "killed by signal SIGSEGV")],
)
@pytest.mark.parametrize("path", ["zygote", "subprocess"])
def test_a_silent_crash_is_described_by_how_the_process_ended(
    corpus, agent: str, how: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "subprocess":  # where the zygote cannot run: a fresh process per bundle
        from stepfork.analysis._zygote.client import FORCE_SUBPROCESS_ENV

        monkeypatch.setenv(FORCE_SUBPROCESS_ENV, "1")
    result = _check(corpus, agent)
    bad = _bad(corpus)
    for verdict in result.verdicts:
        if verdict.bundle in bad:
            assert verdict.detail == f"the replay's process died: no output ({how})", verdict
        else:
            assert verdict.verdict == "MATCHED", verdict


@pytest.mark.parametrize("path", ["zygote", "subprocess"])
def test_jobs_bounds_the_replays_at_once(corpus, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the local pool asks the zygote for more batches than --jobs (it queues them); where the zygote cannot
    # run, the fresh process per bundle is bounded by --jobs all the same
    work, bundles, expected = corpus
    if path == "subprocess":
        from stepfork.analysis._zygote.client import FORCE_SUBPROCESS_ENV

        monkeypatch.setenv(FORCE_SUBPROCESS_ENV, "1")
    (work / "overlaps.txt").unlink(missing_ok=True)
    chosen = bundles[:4]
    result = check_corpus(chosen, "candidates:exclusive", jobs=1, batch_size=1, import_root=work)
    assert {v.bundle: v.verdict for v in result.verdicts} == {b: expected[b] for b in chosen}, result.verdicts
    assert not (work / "overlaps.txt").exists()
