"""``check_corpus(on_result=...)`` hears each verdict when its replay ends, not when its batch does.

A batch holds up to 256 bundles: with an agent whose replays take seconds, a progress bar that moved a
batch at a time stood still for minutes. Here the batch's last replay waits until ``on_result`` has heard
the first verdict; it would wait out its 30 s bound when verdicts came only with the whole batch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepfork.analysis import BundleVerdict, check_corpus
from stepfork.analysis._zygote.client import FORCE_SUBPROCESS_ENV

from ..corpus_support import quickstart_corpus

AGENT = """
import os, time
import quickstart

HERE = os.path.dirname(os.path.abspath(__file__))


def waits(order_id=None):
    if order_id is None:  # the batch's last bundle (recorded without run input)
        go = os.path.join(HERE, "go")
        end = time.monotonic() + 30
        while not os.path.exists(go) and time.monotonic() < end:
            time.sleep(0.01)
        if os.path.exists(go):
            open(os.path.join(HERE, "heard-before-the-batch-ended"), "w").close()
    return quickstart.run_agent(order_id)
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    work = tmp_path_factory.mktemp("check-progress")
    (work / "progress_agent.py").write_text(AGENT)
    return work, quickstart_corpus(work, 2, diverge_every=2)  # the second has no run input


@pytest.mark.parametrize("path", ["zygote", "subprocess"])
def test_each_verdict_is_heard_before_its_batch_ends(
    work: tuple[Path, dict[str, str]], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, expected = work
    bundles = sorted(expected)
    for name in ("go", "heard-before-the-batch-ended"):
        (root / name).unlink(missing_ok=True)
    if path == "subprocess":
        monkeypatch.setenv(FORCE_SUBPROCESS_ENV, "1")
    heard: list[BundleVerdict] = []

    def on_result(verdict: BundleVerdict) -> None:
        heard.append(verdict)
        (root / "go").touch()

    result = check_corpus(
        bundles, "progress_agent:waits", jobs=1, batch_size=2, import_root=root, on_result=on_result
    )
    assert (root / "heard-before-the-batch-ended").exists()
    assert [v.bundle for v in heard] == bundles  # each once, in the batch's order
    assert {v.bundle: v.verdict for v in result.verdicts} == expected
    assert [v.verdict for v in heard] == [v.verdict for v in result.verdicts]
