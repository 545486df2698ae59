"""pydantic-ai integration: :class:`StepforkModel` (docs/integrations.md; issue 6).

``Agent(StepforkModel(model))`` (or ``instrument_model(model)``) makes each model request of the agent an
LLM boundary: provider the wrapped model's ``system`` (``openai``, ``anthropic``, ``function``...), its
``model_name``, and the input ``{"endpoint": "request", "request": {"messages", "settings", "tools"}}``
with the messages in pydantic-ai's own JSON form minus the fields that change on every run (``timestamp``,
``run_id``, ``conversation_id``). Replay returns real ``ModelResponse`` objects, rebuilt with
``ModelMessagesTypeAdapter``; token usage comes from ``response.usage``. The agent's function tools are
tool calls with no line, whenever a recording or a replay runs (``FunctionToolset.call_tool``:
:mod:`stepfork.integrations._framework_tools`); ``@agent.tool_plain`` over ``@trace_tool`` records each
call once.

Not instrumented yet: streamed requests (``agent.run_stream``); under an active Stepfork session they raise
NotImplementedError rather than run unseen.

The module imports without pydantic-ai (issue 32): :class:`StepforkModel` is read from
:mod:`stepfork.integrations._pydantic_ai_model` on first use, and using either name without ``pydantic_ai``
raises ImportError with the install hint (``install "stepfork-trace[pydantic-ai]" ...``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepfork.integrations._common import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover
    from stepfork.integrations._pydantic_ai_model import StepforkModel

__all__ = ["StepforkModel", "instrument_model"]

__getattr__ = lazy_attributes(
    __name__, "stepfork.integrations._pydantic_ai_model", frozenset({"StepforkModel", "VOLATILE_KEYS"})
)


def instrument_model(model: Any, *, provider: str | None = None) -> StepforkModel:
    """Wrap a pydantic-ai model (a ``Model`` instance or a known model name):
    ``StepforkModel(model, provider=provider)``.

    Raises:
        ImportError: ``pydantic_ai`` is not installed (the install hint).
    """
    from stepfork.integrations._pydantic_ai_model import StepforkModel

    return StepforkModel(model, provider=provider)
