"""examples/quickstart/corpus.py's command line (docs/check.md: ``python corpus.py runs 10``): bad input
and a second run into the same directory are one line on stderr and exit 2, never a traceback; ``--overwrite``
replaces an earlier corpus and nothing else. Called in-process (``main(argv)``, what ``__main__`` runs)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from ..corpus_support import corpus_module

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.fixture
def corpus_py() -> Iterator[ModuleType]:
    yield corpus_module("stepfork_example_corpus_cli")
    sys.modules.pop("quickstart", None)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["abc"], "argument COUNT: invalid positive integer value: 'abc'"),
        (["0"], "argument COUNT: invalid positive integer value: '0'"),
        (["3", "-1"], "argument DIVERGE_EVERY: invalid positive integer value: '-1'"),
        (["3", "x"], "argument DIVERGE_EVERY: invalid positive integer value: 'x'"),
        ([], "the following arguments are required: COUNT"),
    ],
)
def test_bad_numbers_are_one_line_exit_2(
    corpus_py: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], says: str
) -> None:
    assert corpus_py.main([str(tmp_path / "runs"), *args]) == 2
    assert says in _one_line(capsys)
    assert not (tmp_path / "runs").exists()


def test_second_run_refused_until_overwrite(
    corpus_py: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    assert corpus_py.main([str(runs), "3", "2"]) == 0
    assert capsys.readouterr().out == "3 bundles, 1 diverging\n"

    assert corpus_py.main([str(runs), "2"]) == 2
    assert _one_line(capsys) == f"corpus.py: {runs} already holds a corpus; pass --overwrite to replace it"
    assert len(list(runs.glob("shard-*/*.sftrace"))) == 3

    assert corpus_py.main([str(runs), "2", "--overwrite"]) == 0  # exactly the new corpus, none left over
    assert capsys.readouterr().out == "2 bundles, 0 diverging\n"
    assert sorted(p.name for p in runs.glob("shard-*/*.sftrace")) == ["run-0000.sftrace", "run-0001.sftrace"]


def test_a_directory_holding_other_files_is_never_emptied(
    corpus_py: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert corpus_py.main([str(tmp_path), "2", "--overwrite"]) == 2
    assert "notes.txt, not written by corpus.py; choose a new or empty OUT_DIR" in _one_line(capsys)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert corpus_py.main([str(tmp_path / "notes.txt"), "2"]) == 2
    assert "is a file" in _one_line(capsys)
