"""``stepfork.trace.hashing``: the earlier implementation's module of its payload hashes (issue 32).

``hash_json(value)`` (the SHA-256 hex digest of the canonical JSON bytes; :func:`stepfork.trace.fingerprint`)
and ``hash_event_payloads(event)`` (a copy of the event with ``input_hash``/``output_hash`` filled in) at
that path: the same functions as :mod:`stepfork.trace`.
"""

from stepfork.trace.bundle_bytes import hash_event_payloads
from stepfork.trace.canonical import hash_json

__all__ = ["hash_event_payloads", "hash_json"]
