"""Bundles for the HTML view tests (tests/analysis/test_view_page.py, tests/browser): a run of N calls with
nested, overlapping calls (a gather), and a hostile run whose names, outputs and error messages hold markup.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from stepfork.trace.bundle import Trace
from stepfork.trace.models import (
    ErrorEvent,
    LLMRequest,
    LLMResponse,
    RunEnd,
    RunStart,
    RunStatus,
    ToolCall,
    ToolResult,
)

T0 = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)

# Everything a page could mistake for markup or script if it were not treated as text. Each payload that
# would run calls window.__sfHook(name), which the browser test records.
HOSTILE = [
    "<script>window.__sfHook('script-tag')</script>",
    "</script><script>window.__sfHook('script-close')</script>",
    "<!-- <script>window.__sfHook('comment')</script> -->",
    "<img src=x onerror=\"window.__sfHook('img-onerror')\">",
    "javascript:window.__sfHook('javascript-url')",
    "<svg onload=\"window.__sfHook('svg-onload')\"></svg>",
    "<iframe src=\"javascript:window.__sfHook('iframe')\"></iframe>",
    "<a href=\"javascript:window.__sfHook('link')\">click</a>",
    "]]></script><style>body{background:url(http://127.0.0.1:9/leak)}</style>",
    '<link rel=stylesheet href="http://127.0.0.1:9/x.css"><base href="http://127.0.0.1:9/">',
    "\u2028\u2029 & &amp; &lt;script&gt;",
]


def calls_trace(n_calls: int, *, payload: str = "x" * 40, agent: str = "many-calls") -> Trace:
    """A completed run of ``n_calls`` calls: groups of four tool calls running at once (overlapping in
    time) under one LLM call each, every 50th tool call failing with an error event."""
    trace = Trace(run_id="run_many", agent_name=agent, created_at=T0, status=RunStatus.COMPLETED)
    at = [T0]

    def tick(ms: float = 1.0) -> datetime:
        at[0] += timedelta(milliseconds=ms)
        return at[0]

    start = trace.add(RunStart(id="e-start", run_id="r", timestamp=tick(), input={"task": "many"}))
    made = 0
    group = 0
    while made < n_calls:
        llm = trace.add(
            LLMRequest(
                id=f"e-llm-{group}",
                run_id="r",
                parent_id=start.id,
                timestamp=tick(),
                provider="openai",
                model="gpt-test",
                input={"messages": [{"role": "user", "content": f"group {group} {payload}"}]},
            )
        )
        made += 1
        tools = []
        for k in range(min(4, n_calls - made)):
            tools.append(
                trace.add(
                    ToolCall(
                        id=f"e-tool-{group}-{k}",
                        run_id="r",
                        parent_id=llm.id,
                        timestamp=tick(0.1),
                        name=f"lookup_{k}",
                        input={"query": f"q{group}-{k}", "pad": payload},
                    )
                )
            )
        made += len(tools)
        for k, call in enumerate(tools):
            if (group * 4 + k) % 50 == 49:
                trace.add(
                    ErrorEvent(
                        id=f"e-err-{group}-{k}",
                        run_id="r",
                        parent_id=call.id,
                        timestamp=tick(2),
                        error_type="TimeoutError",
                        message=f"lookup {k} timed out",
                    )
                )
            else:
                trace.add(
                    ToolResult(
                        id=f"e-res-{group}-{k}",
                        run_id="r",
                        parent_id=call.id,
                        timestamp=tick(2),
                        name=call.name,
                        duration_ms=2,
                        output={"answer": f"a{group}-{k}", "pad": payload},
                    )
                )
        trace.add(
            LLMResponse(
                id=f"e-llmr-{group}",
                run_id="r",
                parent_id=llm.id,
                timestamp=tick(),
                model="gpt-test",
                output={"content": f"done {group}"},
                prompt_tokens=10,
                completion_tokens=5,
                total_tokens=15,
                cost_usd=0.001,
            )
        )
        group += 1
    trace.add(
        RunEnd(
            id="e-end",
            run_id="r",
            parent_id=start.id,
            timestamp=tick(),
            run_status=RunStatus.COMPLETED,
            output={"ok": True},
        )
    )
    return trace


def hostile_trace() -> Trace:
    """A failed run whose tool names, inputs, outputs, error types and messages hold :data:`HOSTILE`."""
    from stepfork.trace.models import FailureInfo

    trace = Trace(
        run_id="run_hostile",
        agent_name="<script>window.__sfHook('agent')</script>",
        created_at=T0,
        status=RunStatus.FAILED,
        failure=FailureInfo(type="</script><b>", message=HOSTILE[1], step=3),
    )
    start = trace.add(RunStart(id="h-start", run_id="r", timestamp=T0, input={"<script>": HOSTILE[0]}))
    for i, text in enumerate(HOSTILE):
        call = trace.add(
            ToolCall(
                id=f"h-call-{i}",
                run_id="r",
                parent_id=start.id,
                timestamp=T0 + timedelta(seconds=i),
                name=text,
                input={text: text, "url": "javascript:window.__sfHook('input')"},
            )
        )
        trace.add(
            ToolResult(
                id=f"h-res-{i}",
                run_id="r",
                parent_id=call.id,
                timestamp=T0 + timedelta(seconds=i, milliseconds=5),
                name=text,
                output={"html": text, "list": [text, {"k": text}]},
            )
        )
    trace.add(
        ErrorEvent(
            id="h-err",
            run_id="r",
            parent_id=start.id,
            timestamp=T0 + timedelta(seconds=30),
            error_type=HOSTILE[3],
            message=HOSTILE[1],
            details={"trace": HOSTILE[2]},
        )
    )
    trace.add(
        RunEnd(
            id="h-end",
            run_id="r",
            parent_id=start.id,
            timestamp=T0 + timedelta(seconds=31),
            run_status=RunStatus.FAILED,
            output=HOSTILE[0],
        )
    )
    return trace


def save(trace: Trace, path: Path) -> Path:
    """Save ``trace`` as a bundle at ``path`` and return it."""
    return trace.save(path)
