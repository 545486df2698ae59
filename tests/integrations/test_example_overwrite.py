"""The example agents' record commands write like every other writer: an existing bundle is replaced only
with ``--overwrite`` (GUIDE.md, "nothing overwritten without --overwrite"), refused otherwise with one line
and exit 2, before the agent runs. In-process, on the dependency-free asyncio example; every other example
is held to the same rule by its source (no hard-coded ``overwrite=True``)."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_an_example_refuses_an_existing_bundle_unless_given_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES / "asyncio_fanout"))
    monkeypatch.delitem(sys.modules, "fanout_agent", raising=False)
    try:
        fanout = importlib.import_module("fanout_agent")
        bundle = str(tmp_path / "run.sftrace")
        assert fanout.main(["record-nordic", bundle]) == 0  # a failing run: its bundle is what one studies
        capsys.readouterr()
        events = tmp_path / "run.sftrace" / "events.jsonl"
        before = events.read_bytes()

        assert fanout.main(["record", bundle]) == 2
        refused = capsys.readouterr()
        assert (refused.out, refused.err) == ("", f"{bundle} exists; pass --overwrite to replace it\n")
        assert events.read_bytes() == before

        assert fanout.main(["record", bundle, "--overwrite"]) == 0
        assert json.loads(capsys.readouterr().out)["warmest"] == "Rome"
        assert events.read_bytes() != before
    finally:
        sys.modules.pop("fanout_agent", None)


def test_no_example_records_with_overwrite_hard_coded() -> None:
    sources = sorted(EXAMPLES.glob("*/*.py"))
    assert sources
    hard_coded = [p.relative_to(EXAMPLES).as_posix() for p in sources if "overwrite=True" in p.read_text()]
    assert hard_coded == []
    # every example with a record command (its record_run) takes --overwrite on its command line
    recorders = [p for p in sources if re.search(r"^def record_run\(", p.read_text(), re.M)]
    assert len(recorders) >= 9
    assert [p.name for p in recorders if "--overwrite" not in p.read_text()] == []
