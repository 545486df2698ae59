"""``check_corpus`` with an entrypoint that cannot be resolved: it stops before replaying the corpus.

The entrypoint is imported where the replays run (the zygote, or a fresh process per bundle where the
zygote cannot run), never in the caller's process. When no such process can resolve it, ``check_corpus``
raises ``EntrypointError`` once, after one import per process, instead of reading and replaying every
bundle to give each the same ``entrypoint_unresolvable`` verdict (docs/decisions.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepfork.analysis import check_corpus
from stepfork.analysis._zygote.client import FORCE_SUBPROCESS_ENV
from stepfork.replay import EntrypointError
from stepfork.replay.raise_as import RaiseAsClassError

from ..corpus_support import quickstart_corpus

# Its import notes itself in imports.log, then fails: the log counts the imports tried.
BROKEN = """
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imports.log"), "a") as log:
    log.write("import\\n")
raise RuntimeError("boom at import")
"""


# A script without a __main__ guard: its import exits (before, each bundle's replay process "died")
EXITING = """
import os, sys

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imports.log"), "a") as log:
    log.write("import\\n")
sys.exit(0)
"""

# The same with os._exit, which ends the process at once (before, each bundle "died" with status 0)
HARD_EXITING = EXITING.replace("import os, sys", "import os").replace("sys.exit(0)", "os._exit(0)")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    work = tmp_path_factory.mktemp("check-entrypoint")
    bundles = sorted(quickstart_corpus(work, 20, diverge_every=5))
    (work / "broken.py").write_text(BROKEN)
    (work / "exiting.py").write_text(EXITING)
    (work / "hard_exiting.py").write_text(HARD_EXITING)
    return work, bundles


@pytest.mark.parametrize("path", ["zygote", "subprocess"])
@pytest.mark.parametrize(
    ("module", "said"),
    [("exiting", "importing it exited (SystemExit(0))"), ("hard_exiting", "importing it called os._exit(0)")],
)
def test_an_entrypoint_module_that_exits_on_import_is_raised_once(
    work: tuple[Path, list[str]], path: str, module: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, bundles = work
    log = root / "imports.log"
    log.unlink(missing_ok=True)
    if path == "subprocess":
        monkeypatch.setenv(FORCE_SUBPROCESS_ENV, "1")
    with pytest.raises(EntrypointError) as raised:
        check_corpus(bundles, f"{module}:run", jobs=1, batch_size=4, import_root=root)
    assert raised.value.code == "import_failed"
    assert said in str(raised.value)
    assert log.read_text().splitlines() == ["import"]


# (entrypoint, raise_as, the error, its verdict reason): an unimportable --raise-as class stops the check
# as an unimportable entrypoint does, since it is imported with it, before any bundle is read
UNIMPORTABLE = {
    "entrypoint": ("broken:run", None, EntrypointError, "entrypoint_unresolvable"),
    "raise_as": (
        "quickstart:run_agent",
        {"TimeoutError": "broken:AgentTimeout"},
        RaiseAsClassError,
        "raise_as_unresolvable",
    ),
}


@pytest.mark.parametrize("path", ["zygote", "subprocess"])
@pytest.mark.parametrize("what", list(UNIMPORTABLE))
def test_what_cannot_be_imported_is_raised_once(
    work: tuple[Path, list[str]], path: str, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, bundles = work
    entrypoint, raise_as, error_type, reason = UNIMPORTABLE[what]
    log = root / "imports.log"
    log.unlink(missing_ok=True)
    if path == "subprocess":
        monkeypatch.setenv(FORCE_SUBPROCESS_ENV, "1")
    seen = []
    with pytest.raises(error_type) as raised:
        check_corpus(
            bundles,
            entrypoint,
            jobs=1,
            batch_size=4,
            import_root=root,
            raise_as=raise_as,
            on_result=seen.append,
        )
    error = raised.value
    if what == "entrypoint":
        assert (error.code, error.spec) == ("import_failed", "broken:run")
        assert "RuntimeError: boom at import" in str(error)
    else:
        assert (error.key, error.spec, error.code) == ("TimeoutError", "broken:AgentTimeout", "import_failed")
        assert "RuntimeError: boom at import" in error.detail
        assert not error.detail.startswith("raise_as[")  # the resolver's message, as in replay
    # one import tried (the zygote's, or the first fresh process's), not one per bundle
    assert log.read_text().splitlines() == ["import"]
    assert len(seen) == len(bundles)
    assert {(v.verdict, v.reason) for v in seen} == {("COULD NOT EXECUTE", reason)}


def test_a_missing_attribute_is_raised_with_its_suggestion(work: tuple[Path, list[str]]) -> None:
    root, bundles = work
    with pytest.raises(EntrypointError, match="has no attribute 'run_agnet'; did you mean 'run_agent'"):
        check_corpus(bundles, "quickstart:run_agnet", jobs=2, import_root=root)


def test_an_entrypoint_that_needs_what_a_run_did_not_record_stays_a_verdict(
    work: tuple[Path, list[str]],
) -> None:
    """An entrypoint that resolves but cannot be called with a bundle's recorded input is that bundle's
    verdict (``entrypoint_unresolvable``), not an error of the whole corpus."""
    root, bundles = work
    (root / "needs.py").write_text("import quickstart\n\ndef run(order_id, extra):\n    return None\n")
    result = check_corpus(bundles[:3], "needs:run", jobs=1, import_root=root)
    assert [v.reason for v in result.verdicts] == ["entrypoint_unresolvable"] * 3
    assert result.exit_code == 2


def test_a_missing_raise_as_class_is_raised_with_its_suggestion(work: tuple[Path, list[str]]) -> None:
    root, bundles = work
    (root / "errs.py").write_text("class AgentTimeout(Exception):\n    pass\n")
    with pytest.raises(
        RaiseAsClassError, match="has no attribute 'AgentTimout'; did you mean 'AgentTimeout'"
    ):
        check_corpus(
            bundles[:4], "quickstart:run_agent", jobs=1, import_root=root, raise_as={"E": "errs:AgentTimout"}
        )


def test_a_raise_as_class_replay_would_refuse_stops_the_check_once(work: tuple[Path, list[str]]) -> None:
    # not an Exception subclass: replay refuses it before its run; check refuses it before any bundle
    root, bundles = work
    seen = []
    refused = "must be an Exception subclass, not KeyboardInterrupt"
    with pytest.raises(RaiseAsClassError, match=refused) as raised:
        check_corpus(
            bundles[:4],
            "quickstart:run_agent",
            jobs=1,
            import_root=root,
            raise_as={"LookupError": "builtins:KeyboardInterrupt"},
            on_result=seen.append,
        )
    assert (raised.value.key, raised.value.code) == ("LookupError", "unusable")
    assert {(v.verdict, v.reason) for v in seen} == {("COULD NOT EXECUTE", "raise_as_unresolvable")}
