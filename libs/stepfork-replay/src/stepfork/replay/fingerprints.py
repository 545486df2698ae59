"""The stored fingerprints of a replay's recorded calls, checked once, when the session is built (issue 31).

Spec replay.txt, "Matching guarantees": a stored ``input_hash``/``output_hash`` must be the SHA-256 of the
recorded payload's canonical bytes, else the bundle is rejected when the call is reached
(:mod:`stepfork.replay.matching`). Checking it at the call encoded the recorded payload again on every
call, a value parsed long before and read back from memory. Here each recorded call's payloads are encoded
and hashed once, when the cursor is built, and the call keeps what that proved, as flags:

- :data:`INPUT`: the stored ``input_hash`` is the recorded input's fingerprint. A live input then matches
  when the SHA-256 of *its* canonical bytes is ``input_hash``: equal hashes of canonical bytes are equal
  canonical bytes (SHA-256 is collision resistant), so the recorded input is not encoded at the call;
- :data:`OUTPUT`: the stored ``output_hash`` is the recorded output's fingerprint;
- :data:`TAGGED`: with :data:`OUTPUT`, the output's canonical bytes hold a ``"$stepfork"`` key (a tagged
  form to decode: :func:`stepfork.replay.serving.rebuild_output`).

The proof is orjson's sorted encoding hashing to the stored value (``canonical_of_fingerprint``): those
bytes *are* the canonical bytes, with no float check. A flag left unset proves nothing, never that a hash
is wrong: that call takes the checks of :mod:`stepfork.replay.matching` at the call, which compute the
canonical bytes with the exact rule and reject a wrong stored hash only when the call is reached, so a
replay's verdict, errors and diagnostics do not change (a bundle whose call #900 is corrupt still replays
its first 899 calls, then fails there).

Cost: the same encodings, moved from the calls to the set-up; one SHA-256 more per call with an input (of
the live input, at the call, instead of comparing bytes). docs/performance.md, "The tool-call hot path".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from stepfork.replay.plan import RecordedCall
from stepfork.trace.canonical import canonical_of_fingerprint
from stepfork.trace.plainjson import holds_tag

__all__ = ["INPUT", "OUTPUT", "TAGGED", "prove_fingerprints"]

INPUT: Final = 1
"""The call's stored ``input_hash`` is the SHA-256 of its recorded input's canonical bytes."""
OUTPUT: Final = 2
"""The call's stored ``output_hash`` is the SHA-256 of its recorded output's canonical bytes."""
TAGGED: Final = 4
"""With :data:`OUTPUT`: the recorded output holds a tagged form."""


def prove_fingerprints(calls: Sequence[RecordedCall]) -> bytearray:
    """The flags of each call of ``calls`` (a plan: ``calls[i].index == i``), at its index.

    Args:
        calls: recorded calls whose payloads are plain JSON, as ``Trace.load`` reads them.

    Returns:
        one byte per call, an OR of :data:`INPUT`, :data:`OUTPUT` and :data:`TAGGED` (0: nothing proven;
        a call without a stored hash, or one orjson cannot prove, stays 0). Never raises.
    """
    flags = bytearray(len(calls))
    for position, call in enumerate(calls):
        found = 0
        if call.input_hash is not None and canonical_of_fingerprint(call.input, call.input_hash) is not None:
            found = INPUT
        if call.output_hash is not None and not call.missing:
            data = canonical_of_fingerprint(call.output, call.output_hash)
            if data is not None:
                found |= (OUTPUT | TAGGED) if holds_tag(data) else OUTPUT
        flags[position] = found
    return flags
