"""Framework control flow raised inside a tool: recorded with its payload, re-raised on replay (issue 12).

Some exceptions a tool raises are not failures but the framework's own signals: LangGraph's
``GraphInterrupt`` (``interrupt()``: pause for a human) and ``ParentCommand`` (``Command(graph=PARENT)``),
pydantic-ai's ``ModelRetry`` (ask the model again), ``ToolFailed`` (tell the model the call failed),
``ApprovalRequired`` and ``CallDeferred``. Two more are an MCP server's answers the SDK reports its own way
(issue 29): a JSON-RPC error (the SDK's ``MCPError``, with its code, which the SDK's callers branch on)
and a tool result marked ``isError``, which the SDK returns rather than raises
(``stepfork.integrations._mcp_calls.ToolErrorResult`` carries it). The recorder writes the tool's failure as
usual plus ``details["control_flow"] = {"kind", "payload"}`` on its error event; replay raises the
framework's own exception with the same payload instead of a RecordedDependencyError, so the graph pauses,
resumes and retries as recorded.

Which classes: this table, in Stepfork's code. A bundle only names a *kind* from it; nothing named by a
bundle is imported, and a framework module is used only when the running program already imported it
(``sys.modules``): the agent that raised the signal while recording is the one that receives it on replay.
Recognition is by qualified class name on the MRO: nothing is imported here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

CONTROL_FLOW_KEY = "control_flow"
"""The key of an error event's ``details`` holding ``{"kind", "payload"}``."""

RESUME_KEY = "$resume"
"""The key of a tool call's recorded input holding the resume values of the LangGraph task it runs in."""

# qualified class name (on the exception's MRO) -> kind
_KINDS = {
    "langgraph.errors.GraphInterrupt": "langgraph.interrupt",
    "langgraph.errors.ParentCommand": "langgraph.parent_command",
    "pydantic_ai.exceptions.ModelRetry": "pydantic_ai.model_retry",
    "pydantic_ai.exceptions.ToolFailed": "pydantic_ai.tool_failed",
    "pydantic_ai.exceptions.ApprovalRequired": "pydantic_ai.approval_required",
    "pydantic_ai.exceptions.CallDeferred": "pydantic_ai.call_deferred",
    "mcp.shared.exceptions.MCPError": "mcp.error",
    "stepfork.integrations._mcp_calls.ToolErrorResult": "mcp.tool_error",
}


def _jsonable(value: Any) -> Any:
    from stepfork.trace.jsonable import to_jsonable

    return to_jsonable(value)


def _command_payload(command: Any) -> dict[str, Any]:
    goto = getattr(command, "goto", ())
    return {
        "graph": getattr(command, "graph", None),
        "update": _jsonable(getattr(command, "update", None)),
        "resume": _jsonable(getattr(command, "resume", None)),
        "goto": _jsonable(list(goto) if isinstance(goto, list | tuple) else goto),
    }


def describe(exc: BaseException) -> dict[str, Any] | None:
    """``{"kind", "payload"}`` when ``exc`` is a known framework control-flow exception, else None.

    Payloads: interrupt ``{"interrupts": [{"value", "id"}]}``; parent command ``{"command": {graph,
    update, resume, goto}}``; model retry and tool failed ``{"message"}``; approval/deferred
    ``{"metadata"}`` (and ``kind`` for deferred); MCP error ``{"code", "message", "data"}``; MCP tool error
    ``{"result"}``. Values go through ``to_jsonable``; a payload without a JSON form gives None
    (the exception is then recorded as an ordinary failure).
    """
    kind = None
    for cls in type(exc).__mro__:
        kind = _KINDS.get(f"{cls.__module__}.{cls.__qualname__}")
        if kind is not None:
            break
    if kind is None:
        return None
    try:
        if kind == "langgraph.interrupt":
            interrupts = exc.args[0] if exc.args else ()
            payload: dict[str, Any] = {
                "interrupts": [
                    {"value": _jsonable(getattr(i, "value", None)), "id": getattr(i, "id", None)}
                    for i in interrupts
                ]
            }
        elif kind == "langgraph.parent_command":
            payload = {"command": _command_payload(exc.args[0] if exc.args else None)}
        elif kind in ("pydantic_ai.model_retry", "pydantic_ai.tool_failed"):
            payload = {"message": str(getattr(exc, "message", exc))}
        elif kind == "mcp.error":
            error = exc.error  # type: ignore[attr-defined]
            payload = {"code": error.code, "message": error.message, "data": _jsonable(error.data)}
        elif kind == "mcp.tool_error":
            payload = {"result": _jsonable(exc.result)}  # type: ignore[attr-defined]
        else:
            payload = {"metadata": _jsonable(getattr(exc, "metadata", None))}
            if kind == "pydantic_ai.call_deferred":
                payload["kind"] = getattr(exc, "kind", "external")
    except Exception:  # a payload without a JSON form: an ordinary failure
        return None
    return {"kind": kind, "payload": payload}


def stable_message(exc: BaseException, control: dict[str, Any] | None) -> str | None:
    """The message to record for a control-flow exception when ``str(exc)`` holds a per-run value, else
    None: a LangGraph interrupt's text shows each ``Interrupt``'s id, made anew on every run, so its
    message is ``GraphInterrupt(<values>)`` (the ids stay in the payload, for replay)."""
    if control is None or control["kind"] != "langgraph.interrupt":
        return None
    values = [item["value"] for item in control["payload"]["interrupts"]]
    return f"GraphInterrupt({values!r})"


def _module(name: str) -> Any:
    return sys.modules.get(name)


def resume_values() -> list[Any] | None:
    """The values the running LangGraph task resumes with (``Command(resume=...)``), or None.

    A tool that calls ``interrupt()`` receives the human's answer as ``interrupt()``'s return value on the
    resumed run: an input of the call that its arguments do not show. ``trace_tool`` adds these values to
    the recorded and matched input under ``"$resume"`` (docs/integrations.md, "Human in the loop"), so a
    changed answer is a divergence at that tool and path instead of a stale frozen result.

    Returns:
        The task's resume values in interrupt order (LangGraph's scratchpad ``resume`` list; else the
        pending ``Command(resume=value)`` not yet consumed, as ``[value]``); None outside a LangGraph task
        (LangGraph not imported, no runnable config, no scratchpad) or when the task resumes nothing.
        Read without consuming anything and without importing LangGraph.
    """
    config_module = _module("langchain_core.runnables.config")
    if config_module is None or _module("langgraph.types") is None:
        return None
    try:
        config = config_module.var_child_runnable_config.get()
        scratchpad = (config or {}).get("configurable", {}).get("__pregel_scratchpad")
        if scratchpad is None:
            return None
        values = list(scratchpad.resume)
        if not values:
            pending = scratchpad.get_null_resume(False)
            values = [] if pending is None else [pending]
    except Exception:  # another LangGraph's internals: record the call as before
        return None
    return values or None


def _interrupt(payload: dict[str, Any]) -> BaseException | None:
    errors, types = _module("langgraph.errors"), _module("langgraph.types")
    if errors is None or types is None:
        return None
    from stepfork.trace.jsonable import from_jsonable

    interrupts = [
        types.Interrupt(value=from_jsonable(item.get("value")), id=item.get("id") or "placeholder-id")
        for item in payload.get("interrupts", [])
    ]
    return errors.GraphInterrupt(interrupts)  # type: ignore[no-any-return]


def _parent_command(payload: dict[str, Any]) -> BaseException | None:
    errors, types = _module("langgraph.errors"), _module("langgraph.types")
    if errors is None or types is None:
        return None
    from stepfork.trace.jsonable import from_jsonable

    fields = payload.get("command") or {}
    goto = from_jsonable(fields.get("goto"))
    command = types.Command(
        graph=fields.get("graph"),
        update=from_jsonable(fields.get("update")),
        resume=from_jsonable(fields.get("resume")),
        goto=goto if goto is not None else (),
    )
    return errors.ParentCommand(command)  # type: ignore[no-any-return]


def _pydantic_ai(kind: str, payload: dict[str, Any]) -> BaseException | None:
    exceptions = _module("pydantic_ai.exceptions")
    if exceptions is None:
        return None
    from stepfork.trace.jsonable import from_jsonable

    if kind == "pydantic_ai.model_retry":
        return exceptions.ModelRetry(str(payload.get("message", "")))  # type: ignore[no-any-return]
    if kind == "pydantic_ai.tool_failed":  # pydantic-ai releases that have it (it raised it while recording)
        failed = getattr(exceptions, "ToolFailed", None)
        return None if failed is None else failed(str(payload.get("message", "")))
    metadata = from_jsonable(payload.get("metadata"))
    if kind == "pydantic_ai.approval_required":
        return exceptions.ApprovalRequired(metadata=metadata)  # type: ignore[no-any-return]
    return exceptions.CallDeferred(metadata=metadata, kind=payload.get("kind", "external"))  # type: ignore[no-any-return]


def _mcp(kind: str, payload: dict[str, Any]) -> BaseException | None:
    from stepfork.trace.jsonable import from_jsonable

    if kind == "mcp.error":
        exceptions = _module("mcp.shared.exceptions")
        if exceptions is None or not isinstance(payload.get("code"), int):
            return None
        message, data = str(payload.get("message", "")), from_jsonable(payload.get("data"))
        return exceptions.MCPError(payload["code"], message, data)  # type: ignore[no-any-return]
    calls = _module("stepfork.integrations._mcp_calls")
    result = from_jsonable(payload.get("result"))
    if calls is None or not isinstance(result, dict):
        return None
    return calls.ToolErrorResult(result)  # type: ignore[no-any-return]


_REBUILD: dict[str, Callable[[dict[str, Any]], BaseException | None]] = {
    "langgraph.interrupt": _interrupt,
    "langgraph.parent_command": _parent_command,
    "pydantic_ai.model_retry": lambda p: _pydantic_ai("pydantic_ai.model_retry", p),
    "pydantic_ai.tool_failed": lambda p: _pydantic_ai("pydantic_ai.tool_failed", p),
    "pydantic_ai.approval_required": lambda p: _pydantic_ai("pydantic_ai.approval_required", p),
    "pydantic_ai.call_deferred": lambda p: _pydantic_ai("pydantic_ai.call_deferred", p),
    "mcp.error": lambda p: _mcp("mcp.error", p),
    "mcp.tool_error": lambda p: _mcp("mcp.tool_error", p),
}


def rebuild(details: Any) -> BaseException | None:
    """The framework exception a recorded error's ``details`` describes, or None.

    None when the details hold no known kind, the framework is not imported in this process, or the
    payload does not fit (then replay raises its RecordedDependencyError as for any failure).
    """
    if not isinstance(details, dict):
        return None
    control = details.get(CONTROL_FLOW_KEY)
    if not isinstance(control, dict):
        return None
    build = _REBUILD.get(str(control.get("kind")))
    payload = control.get("payload")
    if build is None or not isinstance(payload, dict):
        return None
    try:
        return build(payload)
    except Exception:
        return None
