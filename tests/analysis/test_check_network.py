"""The network in ``check``'s workers: sealed for the worker's whole life (``network.seal_process``, taken in
the zygote before it forks), with the same verdicts as a replay that seals itself.

A worker replays many bundles; installing the seal's hooks before each replay and removing them after cost
about 30 us per bundle (docs/performance.md, "Run J"). Now no worker replay installs a hook, and an
uninstrumented call still makes the replay DIVERGED with ``network_sealed``, from a plain thread too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepfork.analysis import check_corpus

from ..corpus_support import quickstart_corpus

AGENTS = """
import os, socket, threading
import quickstart
from stepfork.replay import network

HERE = os.path.dirname(os.path.abspath(__file__))
_install = network._hooks


def _counted():
    # notes which process installs the seal's hooks (the zygote's import of this module patches it there)
    with open(os.path.join(HERE, "hook-installs.txt"), "a") as out:
        out.write(f"{os.getpid()}\\n")
    return _install()


network._hooks = _counted


def run(order_id=None):
    return quickstart.run_agent(order_id)


def networked(order_id=None):
    # a bundle without run input: an uninstrumented call to a provider, from a plain thread (the replay
    # session's context does not reach it)
    if order_id is None:
        def call():
            try:
                socket.create_connection(("192.0.2.10", 443), timeout=5).close()
            except Exception:  # the agent swallows the error: the seal records it all the same
                pass

        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
    return quickstart.run_agent(order_id)
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], dict[str, str]]:
    """An import root holding quickstart and the candidates above, and 6 bundles (2 without run input)."""
    work = tmp_path_factory.mktemp("check-network")
    (work / "netagents.py").write_text(AGENTS)
    expected = quickstart_corpus(work, 6, diverge_every=3)
    return work, sorted(expected), expected


def test_no_worker_replay_installs_the_seals_hooks(corpus) -> None:
    work, bundles, expected = corpus
    log = work / "hook-installs.txt"
    log.unlink(missing_ok=True)
    result = check_corpus(bundles, "netagents:run", jobs=2, batch_size=2, import_root=work)
    assert {v.bundle: v.verdict for v in result.verdicts} == expected
    installers = set(log.read_text().split())
    workers = {str(v.worker) for v in result.verdicts}
    assert installers, "the zygote installed no hook"
    assert not installers & workers, "a worker installed the seal's hooks around its replays"


def test_an_uninstrumented_call_from_a_plain_thread_still_diverges_with_network_sealed(corpus) -> None:
    work, bundles, expected = corpus
    result = check_corpus(bundles, "netagents:networked", jobs=1, batch_size=len(bundles), import_root=work)
    for verdict in result.verdicts:
        if expected[verdict.bundle] == "DIVERGED":
            assert (verdict.verdict, verdict.code) == ("DIVERGED", "network_sealed"), verdict
            assert "192.0.2.10:443" in (verdict.detail or "")
        else:
            assert verdict.verdict == "MATCHED", verdict
    assert len({v.worker for v in result.verdicts}) == 1  # one worker, sealed throughout
