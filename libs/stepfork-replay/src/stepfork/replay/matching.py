"""The strict call cursor and the matching of one live call against the next recorded call.

Spec replay.txt, "Matching guarantees": order, kind, tool name, LLM provider and model, the redacted
canonical JSON input (prompt payloads included), and the stored input/output fingerprints. Every check runs
before the dependency body; a failure raises :class:`ReplayMismatchError` carrying a
:class:`~stepfork.replay.diagnostics.Diagnostic`.

Fingerprints: a stored ``input_hash``/``output_hash`` must equal the SHA-256 of the recorded payload's
canonical bytes, else the bundle is rejected (``invalid_*_fingerprint``, recommending
``stepfork validate --verify-integrity``). Legacy or hand-built bundles without hashes replay when the full
input matches; their diagnostics say the fingerprints were computed from the loaded trace.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson

from stepfork.replay.diagnostics import (
    Diagnostic,
    JsonDifference,
    all_differences,
    difference_hint,
    model_fingerprint,
    preview,
    unmade_call_diagnostic,
)
from stepfork.replay.errors import ReplayExhaustedError, ReplayMismatchError
from stepfork.replay.fingerprints import INPUT, OUTPUT, TAGGED, prove_fingerprints
from stepfork.replay.plan import RecordedCall
from stepfork.replay.volatile import looks_volatile, volatile_hint
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.canonical import canonical_json, canonical_of_fingerprint, canonical_twin
from stepfork.trace.jsonable import take_plain_facts
from stepfork.trace.plainjson import holds_tag
from stepfork.trace.redaction import redact_json

INTEGRITY_HINT = "run `stepfork validate --verify-integrity` on the bundle"


class LiveInput:
    """The input of a live call, redacted only when needed (redaction is the costly step of the hot path).

    ``raw`` is ``BoundaryCall.input`` (JSON from ``to_jsonable``, not redacted). When its canonical bytes
    equal the recorded input's, redacting it would give the recorded (already redacted) input again, so the
    match needs no redaction; :attr:`value` redacts on first use (diagnostics, ``executed_calls``).
    """

    __slots__ = ("_bytes", "_raw_bytes", "_value", "plain_bytes", "raw")

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._value: Any = _UNSET
        self._raw_bytes: bytes | None = None
        self._bytes: bytes | None = None
        # The boundary's to_jsonable scan of a plain input already encoded it (sorted keys); its bytes are
        # the canonical bytes unless a float needs the checked path. Taken now, as the call gave it.
        facts = take_plain_facts(raw, rescan=False)
        self.plain_bytes: bytes | None = None
        """The raw canonical bytes when they are orjson's own (no float on the checked path), else None."""
        if facts is not None and not facts.risky_floats:
            self._raw_bytes = self.plain_bytes = facts.encoded

    def release_bytes(self) -> None:
        """Forget the cached canonical bytes; they are computed again if asked for.

        For a consumed call, whose LiveInput the session keeps (``executed_calls``) only for :attr:`value`:
        2 KB of bytes kept alive per call cost more than all the session's own per-call work (fresh
        memory instead of the block just freed; docs/performance.md, "Replay").
        """
        self._raw_bytes = self._bytes = self.plain_bytes = None

    @property
    def value(self) -> Any:
        """The redacted live input (JSON)."""
        if self._value is _UNSET:
            self._value = redact_json(self.raw).value
        return self._value

    @property
    def raw_bytes(self) -> bytes:
        """Canonical bytes of the unredacted input (never shown; compared only)."""
        if self._raw_bytes is None:
            self._raw_bytes = canonical_json(self.raw, assume_json=True)
        return self._raw_bytes

    @property
    def bytes(self) -> bytes:
        """Canonical bytes of the redacted input."""
        if self._bytes is None:
            value = self.value
            self._bytes = self.raw_bytes if value is self.raw else canonical_json(value, assume_json=True)
        return self._bytes


_UNSET: Any = object()


class CallCursor:
    """One strict cursor over the visible recorded calls, consumed in recorded order.

    Repeated identical calls are served in recorded order (a polling tool returning pending, pending,
    done). Not thread-safe on its own: the session serializes access.

    Recorded payloads are encoded with ``assume_json=True``: they are plain JSON as ``Trace.load`` reads
    them (an in-memory ``Trace`` must hold plain JSON payloads too).

    Attributes:
        calls: the visible recorded calls (index 0..n-1).
        position: index of the next call to consume.
        proofs: the flags of :func:`stepfork.replay.fingerprints.prove_fingerprints` of ``calls``, computed
            when the cursor is built (the session's set-up), not at each call.
    """

    __slots__ = ("_canonical", "calls", "position", "proofs")

    def __init__(self, calls: list[RecordedCall]) -> None:
        self.calls = calls
        self.position = 0
        self._canonical: dict[int, bytes] = {}
        self.proofs = prove_fingerprints(calls)
        """What the stored fingerprints of each call proved, at its index (stepfork.replay.fingerprints)."""

    def peek(self) -> RecordedCall | None:
        """The next recorded call, or None when every call was consumed."""
        if self.position < len(self.calls):
            return self.calls[self.position]
        return None

    def advance(self) -> None:
        """Consume the next recorded call."""
        self.position += 1

    def select(
        self,
        call: BoundaryCall,
        live: LiveInput,
        compares: Callable[[RecordedCall], bool],
        renames: Callable[[RecordedCall], bool] | None = None,
    ) -> RecordedCall | None:
        """The recorded call to check ``call`` against: the next one in recorded order (None past the end).

        ``live``, ``compares`` and ``renames`` are unused here; the concurrent ordering
        (:class:`stepfork.replay.ordering.ConcurrentCursor`) chooses among several candidates with them.
        """
        return self.peek()

    def consume(self, expected: RecordedCall) -> None:
        """Consume ``expected``, the call :meth:`select` returned and the checks accepted."""
        self.position += 1
        self._canonical.pop(expected.index, None)  # no check reads a consumed call's input bytes again

    @property
    def pending(self) -> int:
        """Number of recorded calls not consumed yet."""
        return len(self.calls) - self.position

    def remaining_calls(self) -> list[RecordedCall]:
        """The unconsumed calls, in recorded order."""
        return self.calls[self.position :]

    def remaining_labels(self) -> tuple[str, ...]:
        """Labels of the unconsumed calls, in recorded order."""
        return tuple(call.label for call in self.remaining_calls())

    def required_remaining(self) -> list[RecordedCall]:
        """The unconsumed calls a complete replay must still make: all but those the recorded run ended
        before (``RecordedCall.unfinished``: a background call in flight at exit need not start again)."""
        return [call for call in self.remaining_calls() if not call.unfinished]

    def recorded_input_bytes(self, call: RecordedCall) -> bytes:
        """Canonical bytes of the recorded input (computed once per call, kept until it is consumed)."""
        cached = self._canonical.get(call.index)
        if cached is None:
            cached = canonical_json(call.input, assume_json=True)
            self._canonical[call.index] = cached
        return cached


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _output_fingerprint(expected: RecordedCall) -> str | None:
    if expected.output_hash is not None:
        return expected.output_hash
    if expected.missing:
        return None
    return _sha(canonical_json(expected.output, assume_json=True))


def build_diagnostic(
    expected: RecordedCall | None,
    call: BoundaryCall,
    live: LiveInput,
    *,
    expected_bytes: bytes | None = None,
    with_difference: bool = False,
) -> Diagnostic:
    """Describe ``call`` (its input ``live``, shown redacted) against ``expected`` (None: past the end)."""
    live_input = live.value
    actual_fp = _sha(live.bytes)
    if expected is None:
        return Diagnostic(
            actual_kind=call.kind,
            actual_label=call.label,
            actual_input=preview(live_input),
            actual_input_fingerprint=actual_fp,
            actual_model_fingerprint=model_fingerprint(call.provider, call.model)
            if call.kind == "llm"
            else None,
            function=call.function,
        )
    if expected_bytes is None:
        expected_bytes = canonical_json(expected.input, assume_json=True)
    is_llm = expected.kind == "llm" or call.kind == "llm"
    differences, count = all_differences(expected.input, live_input) if with_difference else ((), 0)
    return Diagnostic(
        index=expected.index,
        step=expected.step,
        expected_kind=expected.kind,
        actual_kind=call.kind,
        expected_label=expected.label,
        actual_label=call.label,
        expected_input=preview(expected.input),
        actual_input=preview(live_input),
        difference=differences[0] if differences else None,
        differences=differences,
        difference_count=count,
        hint=_difference_hint(expected.label, differences[0]) if differences else None,
        expected_input_fingerprint=expected.input_hash or _sha(expected_bytes),
        actual_input_fingerprint=actual_fp,
        recorded_output_fingerprint=_output_fingerprint(expected),
        fingerprints_computed=expected.input_hash is None,
        expected_model_fingerprint=(
            model_fingerprint(expected.provider, expected.model)
            if is_llm and expected.kind == "llm"
            else None
        ),
        actual_model_fingerprint=model_fingerprint(call.provider, call.model) if call.kind == "llm" else None,
        function=call.function,
    )


def _difference_hint(label: str, difference: JsonDifference) -> str | None:
    """The hint of a divergence's first difference: a common cause (``difference_hint``), else, when both
    values look random or like a clock (``stepfork.replay.volatile``), the ``--ignore`` that accepts it."""
    hint = difference_hint(difference)
    if hint is None and looks_volatile(difference.expected, difference.actual):
        hint = volatile_hint(label, difference.path)
    return hint


def _hinted(diagnostic: Diagnostic, hint: str) -> Diagnostic:
    return dataclasses.replace(diagnostic, hint=hint)


RERECORD = "if the change is intended, record the run again"


def call_number(index: int | None) -> str:
    """``call #N``: calls numbered from 1, as the CLI's "Dependency Calls" list (cli-reference.txt,
    "replay", Common errors); ``index`` is the 0-based index of the structured fields."""
    return f"call #{index + 1}" if index is not None else "call past the end"


def _mismatch(
    code: str, message: str, diagnostic: Diagnostic, *, context: str | None = None, **extra: Any
) -> ReplayMismatchError:
    """``call #N: <message> (<context>)``; the context defaults to the recorded step."""
    where = context if context is not None else f"step {diagnostic.step}"
    text = f"{call_number(diagnostic.index)}: {message} ({where})"
    return ReplayMismatchError(text, code=code, diagnostic=diagnostic, **extra)


def _order_hint(expected: RecordedCall, call: BoundaryCall) -> str:
    """The hint of a kind or tool-name mismatch (built only when one is raised: this check runs per call)."""
    return (
        f"the agent calls {call.kind} {call.label!r} where the recording has {expected.kind} "
        f"{expected.label!r}: a call was added, removed or reordered; {RERECORD}"
    )


def check_identity(expected: RecordedCall | None, call: BoundaryCall, live: LiveInput) -> RecordedCall:
    """Check that a next recorded call exists and has the live call's kind, name, provider and model.

    Returns:
        ``expected`` when it matches.

    Raises:
        ReplayExhaustedError: ``exhausted``, every recorded call was already consumed.
        ReplayMismatchError: ``kind_mismatch``, ``name_mismatch``, ``model_mismatch``, ``provider_mismatch``.
    """
    if expected is None:
        diagnostic = build_diagnostic(None, call, live)
        hint = f"the agent makes more calls than the recording has (an extra call); {RERECORD}"
        raise ReplayExhaustedError(
            f"unexpected {call.kind} call {call.label!r}: every recorded call was already consumed",
            code="exhausted",
            diagnostic=_hinted(diagnostic, hint),
        )
    if expected.kind != call.kind:
        raise _mismatch(
            "kind_mismatch",
            f"expected {expected.kind} {expected.label!r}, got {call.kind} {call.label!r}",
            _hinted(build_diagnostic(expected, call, live), _order_hint(expected, call)),
        )
    if call.kind == "tool":
        if expected.name != call.name:
            raise _mismatch(
                "name_mismatch",
                f"expected tool {expected.name!r}, got tool {call.name!r}",
                _hinted(build_diagnostic(expected, call, live), _order_hint(expected, call)),
            )
        return expected
    if expected.model != call.model:
        raise _mismatch(
            "model_mismatch",
            f"expected LLM model {expected.model!r}, got {call.model!r}",
            build_diagnostic(expected, call, live),
        )
    if expected.provider != call.provider:
        raise _mismatch(
            "provider_mismatch",
            f"expected provider {expected.provider!r} for model {expected.model!r}, got {call.provider!r}",
            build_diagnostic(expected, call, live),
        )
    return expected


Renamed = Callable[[RecordedCall, Any, set[str]], "list[tuple[str, Any, Any, str]] | None"]
"""The session's test of an input that differs only by the values the replay minted (see check_input)."""


def check_input(
    cursor: CallCursor,
    expected: RecordedCall,
    call: BoundaryCall,
    live: LiveInput,
    *,
    compare: bool,
    ignore: tuple[re.Pattern[str], ...] = (),
    renamed: Renamed | None = None,
) -> list[tuple[str, Any, Any, str]]:
    """Verify the stored input fingerprint, then (when ``compare``) the redacted live input.

    ``compare`` is False for a hybrid live LLM, whose prompt may change (hybrid-replay.txt). ``ignore``:
    compiled paths (stepfork.replay.ignoring) at which a difference is accepted. ``renamed``: given the
    recorded call, the live input and the paths already ignored, the differences that are values the
    replay minted where the recording had the values it minted (``renamed id``), when that is all of
    them, else None (the session's; stepfork.replay.noise).

    Returns:
        the differences accepted, ``[(path, expected, actual, reason)]`` (reason ``--ignore`` or
        ``renamed id``; usually empty).

    Raises:
        ReplayMismatchError: ``invalid_input_fingerprint`` (stored hash disagrees with the recorded input;
            ``recommendation`` set) or ``input_diverged`` (``diagnostic.difference`` names the first
            differing JSON path, C7/C12).
    """
    proven = cursor.proofs[expected.index] & INPUT
    if proven:  # the stored fingerprint is the recorded input's: compare the live input's with it
        if not compare or _matches_fingerprint(expected, live):
            return []
    elif compare:
        if _same_plain_input(expected, live):
            return []
        # a live input from elsewhere (the HTTP capture parses JSON): proven by the stored fingerprint when
        # there is one (no float check), else by the byte rule; None: the full check below decides
        stored = expected.input_hash
        if live.plain_bytes is None and canonical_twin(live.raw, expected.input, stored) is not None:
            return []
    expected_bytes = cursor.recorded_input_bytes(expected)
    if not proven and expected.input_hash is not None and _sha(expected_bytes) != expected.input_hash:
        diagnostic = build_diagnostic(expected, call, live, expected_bytes=expected_bytes)
        raise _mismatch(
            "invalid_input_fingerprint",
            f"invalid input fingerprint for recorded {expected.kind} {expected.label!r}: the stored hash "
            f"does not match the recorded input; the bundle is rejected ({INTEGRITY_HINT})",
            diagnostic,
            recommendation=INTEGRITY_HINT,
        )
    if not compare or live.raw_bytes == expected_bytes:
        return []
    if live.bytes != expected_bytes:
        ignored: list[tuple[str, Any, Any, str]] = []
        if ignore:
            from stepfork.replay.ignoring import split_ignored

            paths, remaining = split_ignored(ignore, expected.input, live.value)
            ignored = [(path, before, after, "--ignore") for path, before, after in paths]
            if not remaining:
                return ignored
        if renamed is not None:
            accepted = renamed(expected, live.value, {path for path, *_ in ignored})
            if accepted is not None:
                return [*ignored, *accepted]
        diagnostic = build_diagnostic(
            expected, call, live, expected_bytes=expected_bytes, with_difference=True
        )
        if ignored:  # report the first difference that is not ignored
            path, before, after = remaining[0]
            diagnostic = replace(diagnostic, difference=JsonDifference(path, before, after))
        where = diagnostic.difference.path if diagnostic.difference is not None else "$"
        raise _mismatch(
            "input_diverged",
            f"input diverged from the recording at {where}",
            diagnostic,
            context=f"{expected.kind} {expected.label!r}, step {expected.step}",
            path=where,
        )
    return []


def _matches_fingerprint(expected: RecordedCall, live: LiveInput) -> bool:
    """True when the live input's canonical bytes hash to ``expected.input_hash``, which the session's
    set-up proved to be the recorded input's fingerprint (:mod:`stepfork.replay.fingerprints`): then the
    two inputs have the same canonical bytes, and the recorded one is not encoded again. One SHA-256 of the
    bytes the boundary's scan already made; a live input not from the scan (the HTTP capture's) is encoded
    once (``canonical_of_fingerprint``: bytes that hash to a canonical fingerprint are canonical bytes).
    False means "not proven here": the full check decides (and builds the diagnostics)."""
    data = live.plain_bytes
    if data is not None:
        return _sha(data) == expected.input_hash
    stored = expected.input_hash
    return stored is not None and canonical_of_fingerprint(live.raw, stored) is not None


def _same_plain_input(expected: RecordedCall, live: LiveInput) -> bool:
    """True when the live input's canonical bytes equal the recorded input's and match its stored hash.

    The fast path of :func:`check_input` for a call whose stored fingerprint the set-up did not prove (a
    bundle without fingerprints, or a recorded input orjson refuses), one orjson encoding and one SHA-256:
    the live bytes are orjson's sorted encoding with no float on the checked path
    (``LiveInput.plain_bytes``), so when orjson writes the recorded input to the very same bytes, no
    recorded float is on it either (it would print the same text, which only such floats print) and those
    bytes are the recorded input's canonical bytes too.
    False means "not proven here": the full check decides (and builds the diagnostics).
    """
    data = live.plain_bytes
    if data is None:
        return False
    try:
        recorded = orjson.dumps(expected.input, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # an int beyond 64 bits: the checked path
        return False
    # Not cached in the cursor (2 KB per call kept alive, see LiveInput.release_bytes): only a failing later
    # check needs them, and computes them again.
    return recorded == data and (expected.input_hash is None or _sha(data) == expected.input_hash)


def check_outcome(cursor: CallCursor, expected: RecordedCall, call: BoundaryCall, live: LiveInput) -> bool:
    """Check that the recorded call has an outcome and that its stored output fingerprint is valid.

    Returns:
        True when the stored output fingerprint was checked and the output holds no tagged form (the
        recorded value may be handed to a caller that only reads it: ``serving.rebuild_output``); False
        when the call has no stored output fingerprint (nothing was encoded) or its output holds a tag.

    Raises:
        ReplayMismatchError: ``missing_result`` or ``invalid_output_fingerprint`` (``recommendation`` set).
    """
    if expected.missing:
        raise _mismatch(
            "missing_result",
            f"no captured result for recorded {expected.kind} {expected.label!r}",
            build_diagnostic(expected, call, live, expected_bytes=cursor.recorded_input_bytes(expected)),
        )
    if expected.output_hash is None:
        return False
    proofs = cursor.proofs[expected.index]
    if proofs & OUTPUT:  # proven when the session was built
        return not proofs & TAGGED
    data = canonical_of_fingerprint(expected.output, expected.output_hash)
    if data is not None:
        return not holds_tag(data)
    # not proven by orjson's bytes (a float it writes otherwise, a big int, or a changed output): the rule
    data = canonical_json(expected.output, assume_json=True)
    if _sha(data) != expected.output_hash:
        raise _mismatch(
            "invalid_output_fingerprint",
            f"invalid output fingerprint for recorded {expected.kind} {expected.label!r}: the stored "
            f"hash does not match the recorded output; the bundle is rejected ({INTEGRITY_HINT})",
            build_diagnostic(expected, call, live, expected_bytes=cursor.recorded_input_bytes(expected)),
            recommendation=INTEGRITY_HINT,
        )
    return not holds_tag(data)


def incomplete_error(remaining: tuple[str, ...], next_call: RecordedCall | None) -> ReplayExhaustedError:
    """The ``incomplete`` error of ``verify_complete()``: recorded calls were left unmatched.

    Args:
        remaining: labels of the unconsumed calls, in recorded order (the message shows up to 5).
        next_call: the first of them, described by the diagnostic (None: no diagnostic).

    Returns:
        ReplayExhaustedError ``incomplete`` with ``remaining`` (the spec's "replay ended before consuming").
    """
    shown = ", ".join(repr(label) for label in remaining[:5])
    more = f" and {len(remaining) - 5} more" if len(remaining) > 5 else ""
    diagnostic = None
    if next_call is not None:
        diagnostic = unmade_call_diagnostic(
            next_call,
            index=next_call.index,
            hint=f"the agent stopped before making {len(remaining)} recorded call(s) (missing calls); "
            f"{RERECORD}",
        )
    return ReplayExhaustedError(
        f"replay ended before consuming {len(remaining)} recorded dependency call(s): {shown}{more}",
        code="incomplete",
        diagnostic=diagnostic,
        remaining=remaining,
    )
