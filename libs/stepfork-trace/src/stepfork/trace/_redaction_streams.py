"""Secrets split across the chunks of a streamed response (NEWCOMER 16; docs/redaction.md, "Streams").

A streamed answer is recorded chunk by chunk: the HTTP capture's ``{"sse": {"events": [...]}}`` and
``{"eventstream": {"events": [...]}}`` outputs (:mod:`stepfork.integrations._http_exchange`) and the SDK
integrations' ``{"stream": {"chunks": [...]}}`` (:mod:`stepfork.integrations._streams`). Redaction runs per
string, so an API key the model wrote across two deltas (``"sk-pr"``, ``"oj-Zq8X..."``) matched no rule in
either, while the agent, the SDK and any reader joining the deltas saw it whole.

Here the deltas of one stream are grouped the way readers join them, and each group's joined text is
screened by the string rules (:class:`stepfork.trace._redaction_text.TextRules`). A group is the deltas at
the same place in their events: the same event name, the same identity fields (``type``, ``index``,
``item_id``, ``output_index``, ``content_index``, ``contentBlockIndex``...) and the same path to the
string, a list position counted by its element's ``index`` when it has one (OpenAI's
``choices[i].delta.content`` and ``tool_calls[j].function.arguments``, Anthropic's
``content_block_delta`` ``text``/``partial_json``/``thinking`` per block, the Responses API's
``response.*.delta`` per item and part, Gemini's ``candidates[i].content.parts[j].text``, Bedrock's
``contentBlockDelta`` per block). Only strings under :data:`DELTA_KEYS` are joined. For each match in the
joined text, the delta where it starts gets ``[REDACTED]`` in place of its part of the match and every
other delta it covers loses its part, so the joined text is the joined text redacted. Pure functions over
JSON values: the redaction walk calls :func:`redact_streams` at each dict holding a stream (wherever it is:
an ``llm_response``'s output, a report that quotes one) before walking it, and the recorder's screen asks
:func:`stream_count` and :func:`streams_may_match` when its text screen found nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import orjson

from stepfork.trace._redaction_text import REPLACEMENT, Reason, TextRules

__all__ = ["DELTA_KEYS", "STREAM_KEYS", "redact_streams", "stream_count", "streams_may_match"]

STREAM_KEYS: Final = frozenset({"sse", "eventstream", "stream"})
"""The keys of a recorded output that hold a stream (``sse``/``eventstream``: ``events``; ``stream``:
``chunks``). A payload with none of them among its dict keys holds no stream."""

DELTA_KEYS: Final = frozenset(
    {
        "content", "text", "delta", "arguments", "partial_json", "thinking", "reasoning",
        "reasoning_content", "refusal", "transcript", "input",
    }
)  # fmt: skip
"""Keys whose string values a stream's readers concatenate (the deltas of text, tool arguments, thinking)."""

_IDENTITY: Final = (
    "type", "index", "item_id", "output_index", "content_index", "summary_index", "contentBlockIndex",
)  # fmt: skip
_CONTAINERS: Final = frozenset(
    {
        "choices", "delta", "tool_calls", "function", "function_call", "candidates", "content", "parts",
        "toolUse", "reasoningContent", "audio",
    }
)  # fmt: skip
"""The keys a delta sits under (OpenAI ``choices[i].delta.tool_calls[j].function``, Anthropic and Bedrock
``delta``, Gemini ``candidates[i].content.parts[j]``); nothing else of an event is searched (a Responses
``response.completed`` event's whole response is one value each, which the walk redacts per string)."""
_WANTED: Final = DELTA_KEYS | _CONTAINERS
_SCALARS: Final = (str, int, type(None))
_TAG: Final = "$stepfork"
_MAX_ROUNDS: Final = 8  # a replacement can complete a match across its edge (TextRules._apply); bounded

Path = tuple[str | int, ...]


def _streams(value: Any) -> Iterator[tuple[str, list[Any]]]:
    """``(form, events)`` of each stream ``value`` (a recorded output) holds at its top level; ``form`` is
    its key (:data:`STREAM_KEYS`)."""
    if type(value) is not dict:
        return
    for form, items in (("sse", "events"), ("eventstream", "events"), ("stream", "chunks")):
        stream = value.get(form)
        if type(stream) is dict and type(stream.get(items)) is list:
            yield form, stream[items]


def _event_parts(form: str, event: Any) -> tuple[Any, Path, Any]:
    """``(name, path, data)`` of one recorded event of a stream in ``form``: the JSON payload to look for
    deltas in, where it is inside the event, and the event's name (SSE ``event``, an event stream's
    ``:event-type``)."""
    if type(event) is not dict:
        return None, (), None
    if form == "stream":  # an SDK chunk's wire JSON
        return None, (), event
    if form == "eventstream":
        headers = event.get("headers")
        return (headers.get(":event-type") if type(headers) is dict else None), ("json",), event.get("json")
    if "data" in event:
        return event.get("event"), ("data",), event["data"]
    return event.get("event"), (), {"text": event.get("text")}  # SSE data that is not JSON


def _deltas(
    node: dict[str, Any], place: tuple[Any, ...], at: Path | None, out: list[tuple[Any, Any]]
) -> None:
    """Append ``(group, (text, path))`` for every delta string in ``node`` (an event's payload): ``group``
    is ``place`` followed by the keys to the string (a list position as its element's ``index`` when it
    has one), ``path`` the keys and positions from the events list (``at`` is where ``node`` is), or
    ``(group, text)`` when ``at`` is None (a screen, which needs no path). Only :data:`_CONTAINERS` are
    entered: the recorder screens every stream, so this stays a short walk."""
    if _TAG in node:
        return
    for key in node.keys() & _WANTED:  # one C-level test of the keys: most are neither
        item = node[key]
        kind = type(item)
        if kind is str:
            if item and key in DELTA_KEYS:
                out.append(((*place, key), item if at is None else (item, (*at, key))))
        elif kind is dict:
            if key in _CONTAINERS:
                _deltas(item, (*place, key), None if at is None else (*at, key), out)
        elif kind is list and key in _CONTAINERS:
            for position, element in enumerate(item):
                if type(element) is dict:
                    index = element.get("index")
                    where = (*place, key, index if type(index) is int else position)
                    _deltas(element, where, None if at is None else (*at, key, position), out)


def _groups(form: str, events: list[Any], *, paths: bool = True) -> dict[Any, list[Any]]:
    """The deltas of the ``events`` of a stream in ``form`` by group (module docstring): each ``(text,
    path from the events list)`` in event order, or its text alone without ``paths``."""
    groups: dict[Any, list[Any]] = {}
    found: list[tuple[Any, Any]] = []
    for position, event in enumerate(events):
        name, inside, data = _event_parts(form, event)
        if type(data) is not dict:
            continue
        identity = (name if type(name) is str else None, *map(data.get, _IDENTITY))
        try:
            hash(identity)
        except TypeError:  # an odd payload (a list where a type is): its scalar part
            identity = tuple(v if type(v) in _SCALARS else None for v in identity)
        _deltas(data, identity, (position, *inside) if paths else None, found)
        for group, member in found:
            known = groups.get(group)
            if known is None:
                groups[group] = [member]
            else:
                known.append(member)
        found.clear()
    return groups


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans as one (as ``_redaction_text._replace_spans`` replaces them), sorted."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _cut(texts: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """``texts`` (the deltas of a group, in order) with each span of their joined text replaced: the delta
    where a span starts holds ``[REDACTED]`` for it, the others covered lose their part."""
    joined = "".join(texts)
    out: list[str] = []
    offset = 0
    for text in texts:
        start_of, end_of = offset, offset + len(text)
        offset = end_of
        pieces: list[str] = []
        done = start_of
        for start, end in spans:
            if end <= start_of or start >= end_of:
                continue
            if start > done:
                pieces.append(joined[done:start])
            if start >= start_of:
                pieces.append(REPLACEMENT)
            done = max(done, min(end, end_of))
        pieces.append(joined[done:end_of])
        out.append("".join(pieces))
    return out


def _redact_group(texts: list[str], rules: TextRules) -> tuple[list[str], Reason | None]:
    """The deltas of one group with every match of their joined text replaced, and the reason."""
    reason: Reason | None = None
    for _ in range(_MAX_ROUNDS):
        spans, found = rules.spans("".join(texts))
        if not spans:
            break
        new = _cut(texts, _merge(spans))
        if new == texts:
            break
        texts = new
        reason = "registered_secret" if found == "registered_secret" else reason or found
    return texts, reason


def _holders(value: Any) -> Iterator[dict[str, Any]]:
    """Every dict inside ``value`` (itself included, at any depth) with a key of :data:`STREAM_KEYS`."""
    t = type(value)
    if t is dict:
        if _TAG in value:
            return
        if "sse" in value or "eventstream" in value or "stream" in value:
            yield value
        for item in value.values():
            if type(item) is dict or type(item) is list:
                yield from _holders(item)
    elif t is list:
        for item in value:
            if type(item) is dict or type(item) is list:
                yield from _holders(item)


_MARKS: Final = (b'"sse":{', b'"eventstream":{', b'"stream":{')


def stream_count(encoded: bytes) -> int:
    """How many stream keys whose value is an object (``"sse":{``) the compact JSON text ``encoded``
    (orjson's or the canonical rule's) holds: 0 means no stream (inside a string the quote before ``:`` is
    escaped, so only keys count)."""
    return sum(encoded.count(mark) for mark in _MARKS)


def streams_may_match(value: Any, rules: TextRules, count: int | None = None) -> bool:
    """True when the joined deltas of some group of a stream anywhere in ``value`` may hold a match of
    ``rules`` (then the redaction walk may change ``value``); False for a value holding no stream.

    ``count``: :func:`stream_count` of ``value``'s JSON text, when known: when the streams at the top level
    of ``value`` (a recorded output) are all of them, nothing deeper is searched.
    """
    top = [form for form in STREAM_KEYS if type(value) is dict and type(value.get(form)) is dict]
    holders = [value] if count is not None and len(top) == count else _holders(value)
    for holder in holders:
        for form, events in _streams(holder):
            for members in _groups(form, events, paths=False).values():
                if len(members) < 2:
                    continue
                text = "".join(members)
                # the needle screen first (one search); the rules decide when it finds something
                try:
                    screened = rules.blob_may_match(orjson.dumps(text))
                except orjson.JSONEncodeError:  # a lone surrogate: the rules decide
                    screened = True
                if screened and rules.spans(text)[0]:
                    return True
    return False


def redact_streams(value: dict[str, Any], rules: TextRules) -> tuple[Any, list[tuple[Path, Reason]]]:
    """``value`` (a dict holding streams under :data:`STREAM_KEYS`: a recorded output) with the secrets its
    streams' joined deltas hold redacted. Streams deeper inside are the caller's (the redaction walk calls
    this for every dict holding one).

    Returns:
        ``(value, changes)``: ``value`` itself when nothing changed, else a copy (only the containers on
        the way to a changed delta are copied); ``changes`` the ``(path from value, reason)`` of each delta
        changed, a path being the keys and positions to it (``("sse", "events", 3, "data", "choices", 0,
        "delta", "content")``).
    """
    changes: list[tuple[Path, Reason]] = []
    for form, events in _streams(value):
        prefix = (form, "chunks" if form == "stream" else "events")
        for members in _groups(form, events).values():
            if len(members) < 2:  # one string: the walk's own rules see all of it
                continue
            texts = [text for text, _ in members]
            new, reason = _redact_group(texts, rules)
            if reason is None:
                continue
            for (old, path), text in zip(members, new, strict=True):
                if text != old:
                    value = _replaced(value, (*prefix, *path), text)
                    changes.append(((*prefix, *path), reason))
    return value, changes


def _replaced(value: Any, path: Path, text: str) -> Any:
    """A copy of ``value`` with the string at ``path`` replaced by ``text`` (containers copied on the way;
    a container already copied by an earlier replacement is copied again, which is correct and rare)."""
    if not path:
        return text
    head, rest = path[0], path[1:]
    copy: Any = dict(value) if type(value) is dict else list(value)
    copy[head] = _replaced(value[head], rest, text)
    return copy
