"""The HTML view file without a browser (issue 16; docs/view.md): the embedded JSON is escaped and parses
back to the redacted events, the CSP allows only the page's own script and style and no network, the
script builds the DOM without innerHTML, the file stays small, writing streams and never overwrites."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import tracemalloc
from pathlib import Path

import pytest

from stepfork.analysis.view import default_output, diff_html, trace_html, write_trace_view
from stepfork.analysis.view._data import path_to_pointer
from stepfork.trace.bundle import Trace
from stepfork.trace.models import RunStart, ToolCall, ToolResult

from ..conftest import GOLDEN
from ..view_support import HOSTILE, T0, calls_trace, hostile_trace

ASSETS = Path(__file__).resolve().parents[2] / "libs/stepfork-analysis/src/stepfork/analysis/view/assets"


def _element(page: str, element_id: str) -> str:
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    assert match is not None, element_id
    return match.group(1)


def _script(page: str) -> str:
    match = re.search(r"<script>(.*?)</script>", page, re.S)
    assert match is not None
    return match.group(1)


def _sha(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_hostile_values_stay_inside_the_json_elements_and_parse_back(tmp_path: Path) -> None:
    bundle = hostile_trace().save(tmp_path / "hostile.sftrace")
    page = write_trace_view(bundle, tmp_path / "hostile.html").read_text(encoding="utf-8")
    data, meta = _element(page, "sf-events"), _element(page, "sf-meta")
    for text in (data, meta):
        assert not set("<>&") & set(text)  # escaped as \u003c \u003e \u0026
    # the only elements are the page's own: 2 data elements + 1 script, one style, no comment
    assert page.count("</script>") == 3
    assert page.count("<script") == 3
    assert "<!--" not in page
    assert "javascript:" not in page.replace(data, "").replace(meta, "")
    events = json.loads(data)
    stored = [json.loads(line) for line in (bundle / "events.jsonl").read_bytes().splitlines()]
    assert [e["id"] for e in events] == [e["id"] for e in stored]
    for got, want in zip(events, stored, strict=True):
        want.pop("run_id")
        assert {k: v for k, v in got.items() if k != "t"} == want
    names = {e.get("name") for e in events}
    assert set(HOSTILE) <= names
    summary = json.loads(meta)["summary"]
    assert summary["agent_name"] == "<script>window.__sfHook('agent')</script>"
    assert summary["status"] == "failed"
    assert summary["errors"] == 1


def test_the_csp_allows_only_the_pages_own_script_and_style_and_no_network(tmp_path: Path) -> None:
    page = trace_html(GOLDEN / "successful_run.sftrace")
    match = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert match is not None
    policy = dict(part.strip().split(" ", 1) for part in match.group(1).split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'none'"
    assert policy["form-action"] == "'none'"
    assert policy["base-uri"] == "'none'"
    assert policy["script-src"] == f"'sha256-{_sha(_script(page))}'"
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert style is not None
    assert policy["style-src"] == f"'sha256-{_sha(style.group(1))}'"
    # the CSP meta comes before anything that could load or run
    assert page.index("Content-Security-Policy") < page.index("<style>") < page.index("<script")
    assert "http://" not in page
    assert "https://" not in page


def test_the_script_never_parses_html() -> None:
    script = (ASSETS / "view.js").read_text()
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
        'setAttribute("href',
        "srcdoc",
        "fetch(",
        "XMLHttpRequest",
    ):
        assert sink not in script, sink


def test_an_in_memory_trace_is_redacted_before_it_is_embedded() -> None:
    trace = Trace(run_id="run_secret", agent_name="agent sk-live-1234567890abcdefghijkl", created_at=T0)
    start = trace.add(RunStart(id="s0", run_id="r", timestamp=T0, input={}))
    call = trace.add(
        ToolCall(
            id="s1",
            run_id="r",
            parent_id=start.id,
            timestamp=T0,
            name="pay",
            input={"api_key": "sk-live-1234567890abcdefghijkl", "amount": 3},
        )
    )
    trace.add(
        ToolResult(
            id="s2",
            run_id="r",
            parent_id=call.id,
            timestamp=T0,
            name="pay",
            output={"note": "Bearer abcdefghijklmnopqrstuvwxyz0123456789"},
        )
    )
    page = trace_html(trace)
    assert "sk-live-1234567890abcdefghijkl" not in page
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in page
    events = json.loads(_element(page, "sf-events"))
    assert events[1]["input"] == {"api_key": "[REDACTED]", "amount": 3}


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_file_is_at_most_one_and_a_half_times_events_jsonl(tmp_path: Path) -> None:
    bundle = calls_trace(10_000).save(tmp_path / "big.sftrace")
    out = write_trace_view(bundle, tmp_path / "big.html")
    events = (bundle / "events.jsonl").stat().st_size
    assert out.stat().st_size <= 1.5 * events
    page = out.read_text()
    assert (
        json.loads(_element(page, "sf-meta"))["summary"]["tool_calls"]
        + json.loads(_element(page, "sf-meta"))["summary"]["llm_calls"]
        == 10_000
    )


def test_writing_streams_the_bundle(tmp_path: Path) -> None:
    # 400 events of ~25 kB each: a writer holding the events (or the page) would peak past the file size
    bundle = calls_trace(200, payload="y" * 25_000).save(tmp_path / "wide.sftrace")
    size = (bundle / "events.jsonl").stat().st_size
    tracemalloc.start()
    try:
        write_trace_view(bundle, tmp_path / "wide.html")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size > 8_000_000
    assert peak < size / 4, (peak, size)


def test_nothing_is_overwritten_without_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "view.html"
    target.write_text("mine")
    with pytest.raises(FileExistsError):
        write_trace_view(GOLDEN / "successful_run.sftrace", target)
    assert target.read_text() == "mine"
    write_trace_view(GOLDEN / "successful_run.sftrace", target, overwrite=True)
    assert "sf-events" in target.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["view.html"]  # no temporary file left


def test_default_output_is_beside_the_bundle(tmp_path: Path) -> None:
    assert default_output(tmp_path / "run.sftrace") == tmp_path / "run.html"
    assert default_output(str(tmp_path / "run.sftrace") + "/") == tmp_path / "run.html"


@pytest.mark.parametrize(
    ("path", "pointer"),
    [
        ("$", ""),
        ("$.messages[0].content", "/messages/0/content"),
        ("output.should_notify", "/output/should_notify"),
        ("a/b.c~d", "/a~1b/c~0d"),
        ("$[2]", "/2"),
    ],
)
def test_dotted_paths_become_json_pointers(path: str, pointer: str) -> None:
    assert path_to_pointer(path) == pointer


def test_the_diff_page_carries_each_changed_path_as_a_pointer() -> None:
    from stepfork.analysis.diff import diff_traces

    result = diff_traces(GOLDEN / "diff_baseline.sftrace", GOLDEN / "diff_changed.sftrace")
    meta = json.loads(_element(diff_html(result), "sf-meta"))
    assert meta["view"] == "diff"
    pointers = {c["pointer"] for s in meta["steps"] for c in s["changes"]}
    assert {"/output/price", "/output/selected_flight"} <= pointers


def test_a_crashed_recording_shows_what_was_written(tmp_path: Path) -> None:
    from stepfork.trace.models import RunStatus

    trace = calls_trace(5)
    trace.status = RunStatus.RUNNING
    bundle = trace.save(tmp_path / "crashed.sftrace")
    (bundle / "integrity.json").unlink()  # a killed recorder never wrote it
    lines = len((bundle / "events.jsonl").read_bytes().splitlines())
    with (bundle / "events.jsonl").open("ab") as handle:
        handle.write(b'{"id":"torn","ty')  # a write cut by SIGKILL
    page = write_trace_view(bundle, tmp_path / "crashed.html").read_text()
    assert len(json.loads(_element(page, "sf-events"))) == lines
    summary = json.loads(_element(page, "sf-meta"))["summary"]
    assert summary["torn_line"] == lines + 1
    assert summary["status"] == "running"
    # a completed bundle with a torn line is corrupt, and refused as every reader refuses it
    trace.status = RunStatus.COMPLETED
    done = trace.save(tmp_path / "done.sftrace")
    with (done / "events.jsonl").open("ab") as handle:
        handle.write(b'{"id":"torn"')
    from stepfork.trace.errors import TraceStorageError

    with pytest.raises(TraceStorageError):
        write_trace_view(done, tmp_path / "done.html")
    assert not (tmp_path / "done.html").exists()


def test_integers_beyond_64_bits_are_embedded_exactly() -> None:
    trace = Trace(run_id="run_big", agent_name="big", created_at=T0)
    start = trace.add(RunStart(id="b0", run_id="r", timestamp=T0, input={"n": 2**80, "s": "<b>"}))
    assert start.input["n"] == 2**80
    events = json.loads(_element(trace_html(trace), "sf-events"))
    assert events[0]["input"] == {"n": 2**80, "s": "<b>"}
