"""Values a run minted from the system's randomness, known by where they came from (NEWCOMER 4, 10, 11).

Two runs of the same code differ in the ids they mint: ``uuid.uuid4()``, ``uuid4().hex[:8]``,
``secrets.token_urlsafe(16)``, ``os.urandom(8).hex()``. Telling such a value from a computed one by its
looks fails both ways: a short random id can look like a word (``uuid4().hex[:8]`` was recognised 91 times in
100), and a deterministic digest (``sha256(email)[:16]``) looks random. So Stepfork notes what was minted.

While a recording or a replay is active (:func:`start`), every value drawn from ``os.urandom`` (which
``uuid.uuid4`` reads, however it was imported) and ``secrets.token_bytes`` (which ``token_hex`` and
``token_urlsafe`` read) is noted by a :class:`MintLog`, in the text forms code makes of it: hex,
base64url, base64 and, for 16 bytes, the uuid4 built from them (with and without hyphens). A *minted span*
of a string is a run of at least :data:`MIN_SPAN` characters that occurs in one of those forms
(``uuid4().hex[:8]`` is one, ``f"ref-{token_hex(4)}"`` holds one). Not covered: ``random`` (a seeded
generator: its values are the program's), clocks, and randomness drawn outside Python (an extension module's
own generator, such as ``uuid_utils``); docs/diff.md says how those compare.

A recording writes the minted spans that occur in its payloads to ``minted.json`` (only values the bundle
already holds, after redaction: nothing more of the minted randomness is kept), and a replay keeps its own
:class:`MintLog`. :mod:`stepfork.replay.noise` renames a value only where it is minted on both sides (or is
a uuid of a random or time-based version, by its version field), so the verdict never depends on how
random a value happens to look.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import threading
import uuid
from collections.abc import Iterable
from typing import Any

from stepfork.trace._attached import Attached, read_parsed

MIN_SPAN = 8
"""The shortest minted span: ``uuid4().hex[:8]``, ``token_hex(4)``."""
MAX_VALUES = 100_000
"""How many minted values one log keeps (a long-lived service's recording); later ones are not noted."""
RECORD_MINTED = True
"""Internal switch, for benchmarks only: False records sessions without ``minted.json``."""
EXTENSION_NAME = "minted"
FORMAT = "stepfork-minted/1"
"""``minted.json``: ``{"format": "stepfork-minted/1", "values": [minted spans the payloads hold]}``."""
_RUN = re.compile(r"[A-Za-z0-9_+/=-]{8,256}")  # where a span can be: runs of hex, base64 and uuid chars


class Spans:
    """A finder of minted spans in text (:meth:`spans`); :class:`MintLog` for a live run,
    :class:`RecordedMinted` for a bundle's ``minted.json``."""

    def spans(self, text: str) -> list[tuple[int, int]]:  # pragma: no cover - interface
        """``(start, end)`` of each minted span of ``text``, left to right, not overlapping."""
        raise NotImplementedError


class MintLog(Spans):
    """The values minted in this process while the log is active (thread-safe: values are noted from any
    thread; their forms are indexed on the first :meth:`spans` after them)."""

    def __init__(self) -> None:
        self._raw: list[bytes] = []
        self._indexed = 0
        self._forms: list[str] = []
        self._grams: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._raw)

    def note(self, data: bytes | bytearray) -> None:
        """Note ``data``, just drawn from the system's randomness."""
        if len(self._raw) < MAX_VALUES:
            self._raw.append(bytes(data))

    def _index(self) -> None:
        with self._lock:
            pending = self._raw[self._indexed :]
            self._indexed += len(pending)
            for data in pending:
                for form in _forms(data):
                    number = len(self._forms)
                    self._forms.append(form)
                    for start in range(len(form) - MIN_SPAN + 1):
                        self._grams.setdefault(form[start : start + MIN_SPAN], []).append(number)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each minted span of ``text`` (module docstring), left to right."""
        if not self._raw or len(text) < MIN_SPAN:
            return []
        if self._indexed < len(self._raw):
            self._index()
        out: list[tuple[int, int]] = []
        for run in _RUN.finditer(text):
            out.extend(self._in_run(text, run.start(), run.end()))
        return out

    def _in_run(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        grams, forms = self._grams, self._forms
        at = start
        while at + MIN_SPAN <= end:
            numbers = grams.get(text[at : at + MIN_SPAN])
            if numbers is None:
                at += 1
                continue
            best = at + MIN_SPAN
            for number in numbers:
                form = forms[number]
                stop = at + MIN_SPAN
                while stop < end and text[at : stop + 1] in form:
                    stop += 1
                best = max(best, stop)
            found.append((at, best))
            at = best
        return found


class RecordedMinted(Spans):
    """The minted spans a bundle's payloads hold (its ``minted.json``)."""

    def __init__(self, values: Iterable[str]) -> None:
        self.values = frozenset(v for v in values if isinstance(v, str) and len(v) >= MIN_SPAN)
        ordered = sorted(self.values, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each recorded minted span in ``text``, left to right (longest first)."""
        if self._pattern is None or len(text) < MIN_SPAN:
            return []
        return [(m.start(), m.end()) for m in self._pattern.finditer(text)]

    def shown_in(self, text: str) -> RecordedMinted:
        """The values that ``text`` (a bundle's redacted payloads) still holds: a redacted copy keeps no
        value its payloads no longer show (``stepfork redact``)."""
        return RecordedMinted(v for v in self.values if v in text)

    def to_json(self) -> dict[str, Any]:
        """The ``minted.json`` document."""
        return {"format": FORMAT, "values": sorted(self.values)}

    @classmethod
    def parse(cls, data: Any) -> RecordedMinted | None:
        """The values of a ``minted.json`` document, or None when it is not one."""
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or not isinstance(data.get("values"), list)
        ):
            return None
        return cls(data["values"])


def _forms(data: bytes) -> list[str]:
    """The text forms code makes of ``data``: hex, base64url and base64 (unpadded) and, for 16 bytes, the
    uuid4 ``uuid.uuid4()`` builds from them, with and without hyphens."""
    forms = [
        data.hex(),
        base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii"),
        base64.b64encode(data).rstrip(b"=").decode("ascii"),
    ]
    if len(data) == 16:
        made = uuid.UUID(bytes=data, version=4)
        forms += [str(made), made.hex]
    return [form for form in forms if len(form) >= MIN_SPAN]


# -- the hooks -------------------------------------------------------------------------------------------

_ACTIVE: list[MintLog] = []
_HOOK_LOCK = threading.Lock()
_ORIGINAL: dict[str, Any] = {}


def _note(data: Any) -> None:
    if isinstance(data, bytes | bytearray):
        for log in tuple(_ACTIVE):
            log.note(data)


def _urandom(size: int, /) -> bytes:
    data: bytes = _ORIGINAL["urandom"](size)
    if _ACTIVE:
        _note(data)
    return data


def _token_bytes(nbytes: int | None = None) -> bytes:
    data: bytes = _ORIGINAL["token_bytes"](nbytes)
    if _ACTIVE:
        _note(data)
    return data


def _install() -> None:
    """Wrap ``os.urandom`` and ``secrets.token_bytes`` once (the wrappers pass everything through and
    note only while a log is active)."""
    if _ORIGINAL:
        return
    _ORIGINAL["urandom"] = os.urandom
    _ORIGINAL["token_bytes"] = secrets.token_bytes
    _urandom.__wrapped__ = os.urandom  # type: ignore[attr-defined]
    _urandom.__doc__ = os.urandom.__doc__
    _token_bytes.__wrapped__ = secrets.token_bytes  # type: ignore[attr-defined]
    _token_bytes.__doc__ = secrets.token_bytes.__doc__
    os.urandom = _urandom
    secrets.token_bytes = _token_bytes


def start() -> MintLog:
    """A new :class:`MintLog`, noting every value minted in this process until :func:`stop`."""
    log = MintLog()
    with _HOOK_LOCK:
        _install()
        _ACTIVE.append(log)
    return log


def stop(log: MintLog) -> None:
    """Stop noting values into ``log`` (it keeps what it noted)."""
    with _HOOK_LOCK:
        if log in _ACTIVE:
            _ACTIVE.remove(log)


# -- minted.json travels with a loaded Trace (as concurrency.json does) -----------------------------------

_MINTED: Attached[RecordedMinted] = Attached()


def attach_minted(trace: Any, minted: RecordedMinted | None) -> None:
    """Make ``minted`` the recorded minted spans of ``trace`` (a ``Trace``); None forgets them."""
    _MINTED.attach(trace, minted)


def minted_of(trace: Any) -> RecordedMinted | None:
    """The minted spans recorded with ``trace`` (its ``minted.json``, attached by ``load_trace``), or None
    for a bundle recorded without them (written before this file existed, or built in memory)."""
    return _MINTED.of(trace)


def load_minted(path: Any) -> RecordedMinted | None:
    """The ``minted.json`` of the bundle at ``path``, or None when absent or malformed."""
    return read_parsed(path, EXTENSION_NAME, RecordedMinted.parse)
