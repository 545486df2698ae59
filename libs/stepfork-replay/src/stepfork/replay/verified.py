"""The stored fingerprints of a plan, verified once when the replay session opens.

Spec replay.txt, "Matching guarantees": a stored ``input_hash``/``output_hash`` that does not match its
recorded payload makes replay reject the bundle. Each consumed call used to verify its two fingerprints as it
was matched: an orjson encoding and a SHA-256 per payload, on payloads parsed when the bundle was loaded and
long out of the CPU caches by the time the call came. Verifying the whole plan when the session opens does
the same work while the payloads are fresh, and leaves each call a comparison of bytes
(docs/performance.md, "HTTP capture").

What is proven here is the same as before: the orjson sorted encoding of a payload hashes to its stored
fingerprint, so those bytes *are* its canonical bytes
(:func:`stepfork.trace.canonical.canonical_of_fingerprint`).
A payload that is not proven here (no stored hash, a hash that does not match, a float or an integer orjson
writes otherwise) is left to the per-call checks of :mod:`stepfork.replay.matching`, which raise the same
errors at the same call as before: when and how a bad fingerprint is reported does not change.
"""

from __future__ import annotations

from typing import Final

from stepfork.replay.plan import RecordedCall
from stepfork.trace.canonical import canonical_of_fingerprint
from stepfork.trace.plainjson import holds_tag

__all__ = ["KEPT_INPUT_BYTES", "VerifiedPayloads"]

KEPT_INPUT_BYTES: Final = 64 * 1024 * 1024
"""Canonical input bytes kept for the plan at most (bytes). Past it an input is still proven, and its bytes
are encoded again when its call comes: a plan's payloads are already in memory as Python objects, several
times their JSON size, and this bounds the copy."""


class VerifiedPayloads:
    """The payloads of a plan whose stored fingerprints were verified when the session opened.

    Args:
        calls: the visible recorded calls (``RecordedCall.index`` 0..n-1).
        budget: at most this many bytes of canonical input kept (default :data:`KEPT_INPUT_BYTES`).

    Attributes:
        inputs: ``{index: bytes | None}`` for each input proven by its stored ``input_hash``: its canonical
            bytes (orjson's sorted encoding, proven equal to them), or None when they were not kept
            (budget). An index absent was not proven (no hash, or not proven by orjson's bytes).
        outputs: ``{index: plain}`` for each output proven by its stored ``output_hash``; ``plain`` is True
            when its canonical bytes hold no tagged form (``$stepfork``), so the recorded value is plain
            JSON as it stands.
    """

    __slots__ = ("inputs", "outputs")

    def __init__(self, calls: list[RecordedCall], *, budget: int | None = None) -> None:
        budget = KEPT_INPUT_BYTES if budget is None else budget
        self.inputs: dict[int, bytes | None] = {}
        self.outputs: dict[int, bool] = {}
        kept = 0
        for call in calls:
            if call.input_hash is not None:
                data = canonical_of_fingerprint(call.input, call.input_hash)
                if data is not None:
                    kept += len(data)
                    self.inputs[call.index] = data if kept <= budget else None
            if call.output_hash is not None and not call.missing:
                data = canonical_of_fingerprint(call.output, call.output_hash)
                if data is not None:
                    self.outputs[call.index] = not holds_tag(data)

    def forget(self, index: int) -> None:
        """Drop what is kept for the call at ``index`` (consumed: no check reads it again)."""
        self.inputs.pop(index, None)
        self.outputs.pop(index, None)
