"""``stepfork export --otlp`` and the export -> import round trip (issue 15, docs/import.md "Export").

The round trip is checked over every reference bundle and example bundle in the repository, with both
conventions, and as a hypothesis property over generated runs; replay verdicts survive it (the quickstart
agent, its fixed version). A real OTLP/HTTP receiver started on 127.0.0.1 (http.server decoding the
requests with opentelemetry-proto) receives the spans sent by the OTel SDK's OTLP/HTTP exporter.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from stepfork.analysis.otlp import import_otlp
from stepfork.analysis.otlp.decode import any_value
from stepfork.analysis.otlp.export import otlp_json, trace_spans
from stepfork.trace.bundle import Trace
from stepfork.trace.models import LLMRequest, LLMResponse, RunEnd, RunStart, RunStatus, ToolCall, ToolResult

from ..conftest import REFERENCE
from .conftest import GENAI_CONTENT, Done, run, stepfork_exe

REPO = Path(__file__).resolve().parents[2]
BUNDLES = sorted(
    [
        *REFERENCE.rglob("*.sftrace"),
        *(REPO / "examples").rglob("*.sftrace"),
        *(REPO / "tests" / "integrations" / "data").rglob("*.sftrace"),
    ]
)
CALL_FIELDS = ("name", "model", "provider", "input", "output", "error_type", "message", "run_status")


def behaviour(trace: Trace) -> list[dict[str, Any]]:
    """What a round trip must keep: each event's type, status and payload (ids and times aside)."""
    out = []
    for event in trace.events:
        item: dict[str, Any] = {"type": event.type.value, "status": event.status.value}
        item.update({f: getattr(event, f) for f in CALL_FIELDS if hasattr(event, f)})
        item["input"] = getattr(event, "input", None)
        out.append(item)
    return out


def round_trip(trace: Trace, convention: str, tmp_path: Path) -> Trace:
    spans = tmp_path / f"{convention}.otlp.json"
    spans.write_text(json.dumps(otlp_json(trace_spans(trace, convention=convention))))
    (back,) = import_otlp(spans)
    return back


@pytest.mark.parametrize("convention", ["genai", "openinference"])
@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_export_then_import_keeps_calls_inputs_outputs(bundle: Path, convention: str, tmp_path: Path) -> None:
    trace = Trace.load(bundle)
    back = round_trip(trace, convention, tmp_path)
    assert behaviour(back) == behaviour(trace)
    assert (back.run_id, back.agent_name, back.status, back.failure) == (
        trace.run_id,
        trace.agent_name,
        trace.status,
        trace.failure,
    )


def test_the_reference_and_example_bundles_are_all_covered() -> None:
    assert len(BUNDLES) >= 12


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    calls=st.lists(st.tuples(st.sampled_from(["llm", "tool"]), JSON, JSON), min_size=0, max_size=4),
    run_input=JSON,
    run_output=JSON,
    convention=st.sampled_from(["genai", "openinference"]),
)
def test_round_trip_property(
    calls: list[tuple[str, Any, Any]], run_input: Any, run_output: Any, convention: str, tmp_path: Path
) -> None:
    run_id = "run_0123456789abcdef0123456789abcdef"
    root = RunStart(id="evt_root", run_id=run_id, input=run_input)
    trace = Trace(run_id=run_id, agent_name="prop", status=RunStatus.COMPLETED, events=[root])
    for index, (kind, payload_in, payload_out) in enumerate(calls):
        call_id, result_id = f"evt_c{index}", f"evt_r{index}"
        if kind == "llm":
            trace.events.append(
                LLMRequest(
                    id=call_id,
                    run_id=run_id,
                    parent_id=root.id,
                    provider="openai",
                    model="m",
                    input=payload_in,
                )
            )
            trace.events.append(
                LLMResponse(id=result_id, run_id=run_id, parent_id=call_id, model="m", output=payload_out)
            )
        else:
            trace.events.append(
                ToolCall(id=call_id, run_id=run_id, parent_id=root.id, name="t", input=payload_in)
            )
            trace.events.append(
                ToolResult(id=result_id, run_id=run_id, parent_id=call_id, name="t", output=payload_out)
            )
    trace.events.append(
        RunEnd(
            id="evt_end", run_id=run_id, parent_id=root.id, run_status=RunStatus.COMPLETED, output=run_output
        )
    )
    for step, event in enumerate(trace.events):
        event.step = step
    assert behaviour(round_trip(trace, convention, tmp_path)) == behaviour(trace)


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Done:
    return run([stepfork_exe(), *args], cwd, env)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
@pytest.mark.parametrize("entrypoint", ["quickstart:run_agent", "quickstart:run_agent_fixed"])
def test_replay_verdicts_survive_the_round_trip(entrypoint: str, tmp_path: Path) -> None:
    work = tmp_path / "q"
    shutil.copytree(REPO / "examples" / "quickstart", work)
    for convention in ("genai", "openinference"):
        exported = _cli(
            "export",
            "notify.sftrace",
            "--otlp",
            "-o",
            f"{convention}.json",
            "--convention",
            convention,
            cwd=work,
        )
        assert exported.code == 0, exported.text
        assert _cli("import", f"{convention}.json", "-o", f"{convention}.sftrace", cwd=work).code == 0
    original = _cli("replay", "notify.sftrace", "--entrypoint", entrypoint, cwd=work)
    for convention in ("genai", "openinference"):
        again = _cli("replay", f"{convention}.sftrace", "--entrypoint", entrypoint, cwd=work)
        assert again.code == original.code
        verdict = [
            line for line in again.out.splitlines() if line.startswith(("Recorded behavior", "Status"))
        ]
        expected = [
            line for line in original.out.splitlines() if line.startswith(("Recorded behavior", "Status"))
        ]
        assert verdict == expected


def _attributes(span: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in span.attributes}


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_replay_exports_with_its_verdict_per_call(
    tmp_path: Path, produce: Callable[..., Path], work: Path
) -> None:
    produce("genai", "spans.pb", GENAI_CONTENT)
    assert _cli("import", "spans.pb", "-o", "prod.sftrace", cwd=work).code == 0
    env = {"WEATHER_TRACING": "genai", "WEATHER_USER_TEMPLATE": "Please answer: {question}"}
    done = _cli(
        "export",
        "prod.sftrace",
        "--otlp",
        "-o",
        "replay.json",
        "--entrypoint",
        "weather_otel:run_agent",
        cwd=work,
        env=env,
    )
    assert done.code == 0, done.text
    assert "the replay of the run" in done.out
    spans = json.loads((work / "replay.json").read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    attrs = [{kv["key"]: next(iter(kv["value"].values())) for kv in s["attributes"]} for s in spans]
    assert attrs[0]["stepfork.replay.matching"] == "DIVERGED"
    assert attrs[1]["stepfork.replay.divergence"].startswith(
        "call #1: input diverged from the recording at $.body.messages[1].content"
    )
    assert attrs[1]["stepfork.replay.action"] == "not_reached"
    assert attrs[1]["stepfork.replay.mode"] == "frozen"


def test_a_fork_exports_its_lineage(tmp_path: Path) -> None:
    work = tmp_path / "q"
    shutil.copytree(REPO / "examples" / "quickstart", work)
    forked = _cli(
        "fork",
        "notify.sftrace",
        "--step",
        "3",
        "--entrypoint",
        "quickstart:run_agent_fixed",
        "-o",
        "forked.sftrace",
        cwd=work,
    )
    assert forked.code == 0, forked.text
    done = _cli("export", "forked.sftrace", "--otlp", "-o", "fork.otlp.json", cwd=work)
    assert done.code == 0, done.text
    document = json.loads((work / "fork.otlp.json").read_text())
    root = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    attrs = {kv["key"]: next(iter(kv["value"].values())) for kv in root["attributes"]}
    assert attrs["stepfork.fork.parent.run_id"] == Trace.load(work / "notify.sftrace").run_id
    assert attrs["stepfork.fork.fork_step"] == "3"  # OTLP/JSON writes 64-bit ints as strings


class _Receiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.received.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP traces receiver on 127.0.0.1 (protobuf, decoded with opentelemetry-proto)."""
    received: list[ExportTraceServiceRequest] = []
    handler = type("Handler", (_Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/traces", received
    finally:
        server.shutdown()
        server.server_close()


def test_export_to_an_otlp_receiver(
    receiver: tuple[str, list[ExportTraceServiceRequest]], tmp_path: Path
) -> None:
    url, received = receiver
    work = tmp_path / "q"
    shutil.copytree(REPO / "examples" / "quickstart", work)
    done = _cli("export", "notify.sftrace", "--otlp-endpoint", url, "--convention", "openinference", cwd=work)
    assert done.code == 0, done.text
    assert f"Sent 3 spans to {url}" in done.out
    spans = [s for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
    names = [s.name for s in spans]
    trace = Trace.load(work / "notify.sftrace")
    assert names[0] == trace.agent_name
    root = spans[0]
    assert not root.parent_span_id
    assert all(s.parent_span_id == root.span_id for s in spans[1:])
    assert _attributes(root)["stepfork.run_id"] == trace.run_id
    calls = [_attributes(s) for s in spans[1:]]
    kinds = [e.type.value for e in trace.events if e.type.value in ("tool_call", "llm_request")]
    expected = ["TOOL" if kind == "tool_call" else "LLM" for kind in kinds]
    assert [a["openinference.span.kind"] for a in calls] == expected
    assert [a["stepfork.kind"] for a in calls] == [k.lower() for k in expected]
    assert [a["stepfork.step"] for a in calls] == [
        e.step for e in trace.events if e.type.value in ("tool_call", "llm_request")
    ]


def test_a_refusing_receiver_is_exit_1(tmp_path: Path) -> None:
    work = tmp_path / "q"
    shutil.copytree(REPO / "examples" / "quickstart", work)
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # answers 501 to POST
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1/traces"
        done = _cli("export", "notify.sftrace", "--otlp-endpoint", url, cwd=work)
    finally:
        server.shutdown()
        server.server_close()
    assert done.code == 1
    assert "did not accept the spans" in done.err
