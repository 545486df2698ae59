"""Where an id came from: the ids a recording handed to the agent, and so which ids are fresh (issue 28).

An opaque id (:mod:`stepfork.replay.noise.ids`) is *handed out* by a recording when it occurs in what the
recording gave the agent: a recorded dependency output (``tool_result`` and ``llm_response`` outputs, SSE
events included), a recorded failure (``error`` events) or the run's input; ids inside longer strings count
(a JSON-encoded tool argument, ``lc_run--<uuid>-0`` hands out its UUID too). Any other id is *fresh*:
minted by local code on this run, so two runs compare up to a renaming of fresh ids, while a handed-out id
must match exactly (an agent returning the wrong booking id is still caught).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stepfork.replay.noise.ids import TOKEN, embedded_uuids, is_opaque_id, may_hold_id

GIVING_EVENTS = frozenset({"tool_result", "llm_response", "error", "run_start"})
"""Event types whose payload the recording gives the agent."""

MIN_ID = 8


def collect_ids(values: Iterable[Any]) -> set[str]:
    """Every opaque-id token (and UUID inside one, lower case) in the strings and keys of ``values``."""
    found: set[str] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if len(value) >= MIN_ID and may_hold_id(value):
                for match in TOKEN.finditer(value):
                    token = match.group()
                    if len(token) >= MIN_ID and is_opaque_id(token):
                        found.add(token)
                        found.update(embedded_uuids(token))
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _payloads(trace: Any) -> Iterable[Any]:
    for event in trace.events:
        kind = str(getattr(event.type, "value", event.type))
        if kind not in GIVING_EVENTS:
            continue
        if kind == "error":
            yield getattr(event, "message", None)
            yield getattr(event, "error_type", None)
        elif kind == "run_start":
            yield getattr(event, "input", None)
        else:
            yield getattr(event, "output", None)


class Origins:
    """The ids one recording handed out, computed on first use (a replay that sees no differing id never
    scans the bundle).

    Args:
        trace: a :class:`stepfork.trace.Trace` (its events), or None for no recording (every id fresh).
        values: more values whose ids count as handed out.
    """

    def __init__(self, trace: Any = None, values: Iterable[Any] = ()) -> None:
        self._trace = trace
        self._values = list(values)
        self._ids: set[str] | None = None

    @property
    def ids(self) -> set[str]:
        """Every handed-out id token (and the UUIDs inside them, lower case)."""
        if self._ids is None:
            sources: list[Any] = list(self._values)
            if self._trace is not None:
                sources.extend(_payloads(self._trace))
            self._ids = collect_ids(sources)
        return self._ids

    def handed_out(self, token: str) -> bool:
        """True when ``token`` (an opaque id), or a UUID inside it, was handed out."""
        ids = self.ids
        return token in ids or any(u in ids for u in embedded_uuids(token))

    def fresh(self, token: str) -> bool:
        """True when ``token`` is an opaque id the recording did not hand out."""
        return is_opaque_id(token) and not self.handed_out(token)
