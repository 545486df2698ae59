"""A stream compared as the text it carries when only its chunking differs (NEWCOMER finding 12).

A provider cuts one answer into stream events as its servers please: the same text arrives in 12 SSE
events in one recording and in 9 in the next (an OpenAI ``choices[0].delta.content``, an Anthropic
``content_block_delta``, a Responses ``response.output_text.delta``, a Gemini chunk's
``candidates[0].content.parts[0].text``, a Bedrock ``contentBlockDelta``). Compared event by event, every
event from the first cut on differs, and the diff called the same answer a change.

:func:`reassemble` reads a stream as what it carries: each event without its text deltas (the rules data's
``[streams] deltas``) and counters (``[streams] counters``: ``sequence_number``), runs of consecutive events
alike (their provider noise aside: ``obfuscation``, ``p``) kept once, and the text deltas concatenated per
place (the event kind, the delta's path with each list item's own ``index`` for its position, and the
event's ``[streams] indexes``: ``index``, ``output_index``, ``contentBlockIndex``...). Two streams whose
chunking differs are equal when their texts are equal and their kept events are equal up to noise
(:meth:`stepfork.replay.noise.compare.Comparison` compares those, so ids still pair into the renaming); then
the per-event differences are one ignored difference, ``stream chunking``. Any other difference falls back
to the event-by-event comparison, so a changed answer is still reported at its event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stepfork.trace.canonical import canonical_json

if TYPE_CHECKING:
    from stepfork.replay.noise.rules import NoiseRules

CHUNKING = "stream chunking"
TextKey = tuple[str, str, tuple[str, ...]]


@dataclass
class Reassembled:
    """One stream read as what it carries.

    Attributes:
        runs: ``(index of the run's first event, that event without its text deltas and counters)``, one
            per run of consecutive events alike.
        texts: ``(event kind, delta path, index values)`` -> the text of every delta there, in order.
        chunks: each event's ``(delta path, text)`` pieces, in order: equal lists mean equal chunking.
    """

    runs: list[tuple[int, Any]] = field(default_factory=list)
    texts: dict[TextKey, str] = field(default_factory=dict)
    chunks: list[tuple[tuple[str, str], ...]] = field(default_factory=list)


class _Split:
    def __init__(self, rules: NoiseRules) -> None:
        self.rules = rules
        self.pieces: list[tuple[str, str]] = []

    def split(self, value: Any, rel: str, logical: str) -> tuple[Any, Any]:
        """``(kept, alike)``: ``value`` without its text deltas (and counters at the top); ``alike`` also
        without the places a body rule names (provider noise that differs from event to event)."""
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            alike: dict[str, Any] = {}
            for key, item in value.items():
                sub = f"{rel}.{key}" if rel else key
                lsub = f"{logical}.{key}" if logical else key
                if isinstance(item, str) and self.rules.is_stream_delta(sub):
                    self.pieces.append((lsub, item))
                    continue
                if not rel and key in self.rules.stream_counters:
                    continue
                kept[key], inner = self.split(item, sub, lsub)
                if self.rules.body_rule(sub) is None:
                    alike[key] = inner
            return kept, alike
        if isinstance(value, list):
            pairs = []
            for position, item in enumerate(value):
                own = item.get("index") if isinstance(item, dict) else None
                at = own if isinstance(own, int) and not isinstance(own, bool) else position
                pairs.append(self.split(item, f"{rel}[{position}]", f"{logical}[{at}]"))
            return [k for k, _ in pairs], [a for _, a in pairs]
        return value, value


def describe(stream: Reassembled) -> str:
    """How a stream cut its text, for the ignored difference: ``12 events, text in pieces of 5, 11, 9...``."""
    sizes = [len(text) for pieces in stream.chunks for _, text in pieces if text]
    shown = ", ".join(map(str, sizes[:8])) + (", ..." if len(sizes) > 8 else "")
    return (
        f"{len(stream.chunks)} events, text in pieces of {shown}" if sizes else f"{len(stream.chunks)} events"
    )


def _body_key(event: dict[str, Any]) -> str | None:
    for key in ("data", "json"):  # an SSE event's data; an event-stream message's JSON
        if isinstance(event.get(key), dict):
            return key
    return None


def _kind(event: dict[str, Any], body: dict[str, Any]) -> str:
    headers = event.get("headers")
    named = event.get("event") or (headers.get(":event-type") if isinstance(headers, dict) else None)
    return str(named or body.get("type") or "")


def reassemble(events: list[Any], rules: NoiseRules) -> Reassembled | None:
    """``events`` (a stream's ``events`` list as the HTTP capture writes it) read as what they carry
    (module docstring); None when an event is not an object."""
    out = Reassembled()
    last: bytes | None = None
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            return None
        key = _body_key(event)
        split = _Split(rules)
        kept = dict(event)
        alike = dict(event)
        pieces: tuple[tuple[str, str], ...] = ()
        if key is not None:
            body = event[key]
            kept[key], alike[key] = split.split(body, "", "")
            kind = _kind(event, body)
            indexes = tuple(f"{k}={body[k]}" for k in rules.stream_indexes if k in body)
            for path, text in split.pieces:
                slot = (kind, path, indexes)
                out.texts[slot] = out.texts.get(slot, "") + text
            pieces = tuple(split.pieces)
        out.chunks.append(pieces)
        signature = canonical_json(alike)
        if signature != last:
            out.runs.append((index, kept))
            last = signature
    return out
