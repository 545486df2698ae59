"""A replay session's explicit API (REFERENCE-API.md: ``before_tool``/``before_llm``), for programs that
cannot use the decorators: each call is given by its name (or provider and model) and JSON input, matched
like any instrumented call, and answered with a :class:`~stepfork.replay.results.ReplayDecision`. The explicit
part of :class:`~stepfork.replay.session.ReplaySession`.
"""

from __future__ import annotations

from typing import Any

from stepfork.replay.results import ReplayDecision
from stepfork.replay.session_calls import CallReplayer, _Held
from stepfork.trace.boundary import BoundaryCall


class ExplicitReplay(CallReplayer):
    """``before_tool`` and ``before_llm`` of :class:`~stepfork.replay.session.ReplaySession`."""

    def _decision(self, call: BoundaryCall) -> ReplayDecision:
        execute, value = self._decide(call, False)
        if type(value) is _Held:
            self._ended.wait()
            raise value.failure
        with self._lock:
            return ReplayDecision(execute, value, self._served.matched()[-1])

    def before_tool(self, *, name: str, input: Any) -> ReplayDecision:
        """Match a tool call given by name and JSON input; return what to do (REFERENCE-API.md)."""
        return self._decision(BoundaryCall(kind="tool", name=name, input=input))

    def before_llm(self, *, provider: str | None, model: str, input: Any) -> ReplayDecision:
        """Match an LLM call given by provider, model and JSON input; return what to do."""
        return self._decision(
            BoundaryCall(kind="llm", name=model, input=input, provider=provider, model=model)
        )
