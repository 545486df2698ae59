"""Values a run minted from the system's randomness, known by where they came from (NEWCOMER 4, 10, 11).

Two runs of the same code differ in the ids they mint: ``uuid.uuid4()``, ``uuid4().hex[:8]``,
``secrets.token_urlsafe(16)``, ``os.urandom(8).hex()``. Telling such a value from a computed one by its
looks fails both ways: a short random id can look like a word (``uuid4().hex[:8]`` was recognised 91 times in
100), and a deterministic digest (``sha256(email)[:16]``) looks random. So Stepfork notes what was minted.

While a recording or a replay is active (:func:`start`), every value drawn from ``os.urandom`` (which
``uuid.uuid4`` reads, however it was imported) and ``secrets.token_bytes`` (which ``token_hex`` and
``token_urlsafe`` read) is noted by a :class:`MintLog`, in the text forms code makes of it: hex, base64url,
base64 and, for 16 bytes, the uuid4 built from them (with and without hyphens). So is every character drawn
from the system's randomness one at a time: ``secrets.choice(alphabet)`` (however it was imported) and a
``SystemRandom``'s ``choice``, ``choices`` and ``sample`` (``secrets.SystemRandom``, ``random.SystemRandom``),
in the order drawn, per thread: ``"".join(secrets.choice(ALPHABET) for _ in range(12))``, the Python
documentation's recipe for a random id, is a run of that stream. Only one-character picks count: a pick among
words (``secrets.choice(["approve", "reject"])``) is behaviour, compared exactly. An integer drawn from the
system's randomness (``secrets.randbelow``, however it was imported, and a ``SystemRandom``'s ``randrange``
and ``randint``) is noted in its decimal form and zero-padded to its bound's width
(``f"{secrets.randbelow(10**8):08d}"``), and, drawn below a bound of a 9 and zeros, shifted into that
bound's number of digits (``secrets.randbelow(900000) + 100000``, the usual 6-digit code), when that form
has at least :data:`MIN_NUMBER` digits. A *minted span* of a string is a run of at least :data:`MIN_SPAN`
characters that occurs in one of those forms (``uuid4().hex[:8]`` is one, ``f"ref-{token_hex(4)}"`` holds
one), or in a hex form upper-cased (``uuid4().hex[:8].upper()``: a run of the string with no lower-case
letter is looked up case-folded too, so the log indexes no second form), or a whole run of digits (no
digit on either side) that is a drawn integer's form of :data:`MIN_NUMBER` to ``MIN_SPAN - 1`` digits
(``SystemRandom().randint(100000, 999999)`` in ``f"Your code is {code}"``; never a part of a longer
number, and never a number the run did not draw: a 6-digit constant in the code is compared exactly).
An integer value a payload holds (``{"code": 482913}``) is looked up by its decimal text. Not covered:
clocks (an id made from a clock reading is recognised by the window of its run:
:mod:`stepfork.replay.noise.clock`), and
randomness drawn outside Python (an extension module's own generator, such as ``uuid_utils``);
docs/diff.md says how those compare.

The ``random`` module's global generator is a seeded generator, not the system's randomness: what it draws
follows from its state. A log keeps that state as the session starts (:attr:`MintLog.random_state`); a
recording whose run drew from it writes it to ``minted.json`` (``"random"``), and a replay starts from it
(:func:`restore_random`), so unchanged code draws the same ``random.choices(...)`` id, ``random.randint``
number or shuffle again (NEWCOMER2 finding 7; Temporal's replayer does as much for ``workflow.random()``).
It holds only while the replay makes the same draws in the same order: a ``random.Random()`` the agent makes
and seeds itself, numpy's generators, a draw at import time (before the session) or inside a tool the
replay serves instead of running are outside it (docs/replay.md).

A recording writes the minted spans that occur in its payloads to ``minted.json`` (only values the bundle
already holds, after redaction: nothing more of the minted randomness is kept), and a replay keeps its own
:class:`MintLog`. :mod:`stepfork.replay.noise` renames a value only where it is minted on both sides (or is
a uuid of a random or time-based version, by its version field), so the verdict never depends on how
random a value happens to look.
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import re
import secrets
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

from stepfork.trace._attached import Attached, read_parsed

MIN_SPAN = 8
"""The shortest minted span: ``uuid4().hex[:8]``, ``token_hex(4)``."""
MIN_NUMBER = 6
"""The fewest digits of a drawn integer's form that is noted (a 6-digit code); one shorter than
:data:`MIN_SPAN` is a minted span only as a whole run of digits (module docstring). Fewer digits (a die
roll, ``randint(1, 6)``) are data, compared exactly."""
MAX_VALUES = 100_000
"""How many minted values one log keeps (a long-lived service's recording); later ones are not noted."""
MAX_CHOSEN = 1_000_000
"""How many characters drawn one at a time (``secrets.choice``) one log keeps; later ones are not noted."""
RECORD_MINTED = True
"""Internal switch, for benchmarks only: False records sessions without ``minted.json``."""
EXTENSION_NAME = "minted"
FORMAT = "stepfork-minted/1"
"""``minted.json``: ``{"format": "stepfork-minted/1", "values": [minted spans the payloads hold]}``, and
``"random": {"version": 3, "state": [625 ints], "gauss_next": null}`` when the run drew from ``random``, and
``"utc_offset": seconds``, the recording process's local time zone at the session's start (how its naive
``datetime.now()`` readings are read back: :mod:`stepfork.replay.noise.clock`)."""
MAX_UTC_OFFSET = 26 * 3600
"""The widest local UTC offset a ``minted.json`` may state, in seconds (time zones span -12:00 to +14:00)."""
_RUN = re.compile(r"[A-Za-z0-9_+/=-]{8,256}")  # where a span can be: runs of hex, base64 and uuid chars
_HEX_FORM = re.compile(r"[0-9a-f-]+")  # what an upper-cased form may be: hex (a uuid with its hyphens)
_NUMBER = re.compile(rf"(?<![0-9])[0-9]{{{MIN_NUMBER},{MIN_SPAN - 1}}}(?![0-9])")  # a short drawn number


def _short_number(value: str) -> bool:
    """True for a drawn integer's form shorter than :data:`MIN_SPAN` that is noted (:data:`MIN_NUMBER`+)."""
    return MIN_NUMBER <= len(value) < MIN_SPAN and value.isascii() and value.isdigit()


def _number_spans(text: str, numbers: frozenset[str] | set[str], found: list[tuple[int, int]]) -> None:
    """Add to ``found`` (sorted, not overlapping) each whole run of digits of ``text`` in ``numbers`` that
    overlaps none of its spans."""
    extra = [
        (m.start(), m.end())
        for m in _NUMBER.finditer(text)
        if m.group() in numbers and not any(m.start() < end and start < m.end() for start, end in found)
    ]
    if extra:
        found.extend(extra)
        found.sort()


RandomState = tuple[int, tuple[int, ...], float | None]
"""``random.getstate()`` of the Mersenne Twister: version 3, 624 words and the position, ``gauss_next``."""


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
        self._raw: list[bytes | tuple[str, ...]] = []  # bytes drawn, or the text forms of a number
        self._indexed = 0
        self._forms: list[str] = []
        self._grams: dict[str, list[int]] = {}
        self._numbers: set[str] = set()  # drawn integers' forms shorter than MIN_SPAN (whole digit runs)
        # characters drawn one at a time, per thread in drawing order, and (form number, length indexed)
        self._chosen: dict[int, list[str]] = {}
        self._chosen_count = 0
        self._chosen_forms: dict[int, tuple[int, int]] = {}
        self._lock = threading.Lock()
        self.random_state: RandomState = random.getstate()
        """The state of ``random``'s global generator when the log started."""
        self.drew_random = False
        """Set by :func:`stop`: True when the generator's state changed while the log was active (the run
        drew from ``random``)."""
        self.utc_offset: int = time.localtime().tm_gmtoff
        """The local UTC offset in seconds when the log started (``minted.json``: ``utc_offset``)."""

    def __bool__(self) -> bool:
        return bool(self._raw) or bool(self._chosen_count)

    def note(self, data: bytes | bytearray) -> None:
        """Note ``data``, just drawn from the system's randomness."""
        if len(self._raw) < MAX_VALUES:
            self._raw.append(bytes(data))

    def note_number(self, value: int, bound: int) -> None:
        """Note ``value``, an integer just drawn from the system's randomness below ``bound`` (exclusive):
        its decimal form and, when shorter, that form zero-padded to the width of ``bound - 1``
        (``f"{n:08d}"``), and for a ``bound`` of a 9 and zeros ``value`` shifted into its number of digits
        (``randbelow(900000) + 100000``); forms under :data:`MIN_NUMBER` digits are no id and are not
        noted."""
        if value < 0 or len(self._raw) >= MAX_VALUES:
            return
        text = str(value)
        forms = {text, text.zfill(len(str(bound - 1)))}
        top = str(bound)
        if len(top) > 1 and top[0] == "9" and top.count("0") == len(top) - 1:
            forms.add(str(value + 10 ** (len(top) - 1)))
        kept = tuple(form for form in forms if len(form) >= MIN_NUMBER)
        if kept:
            self._raw.append(kept)

    def note_chosen(self, picked: Iterable[Any]) -> None:
        """Note what a ``SystemRandom`` pick (``secrets.choice``, ``choices``, ``sample``) just drew from the
        system's randomness: its one-character strings continue this thread's stream (module docstring);
        anything else is not a minted value and breaks nothing."""
        chars = [item for item in picked if type(item) is str and len(item) == 1]
        if chars and self._chosen_count < MAX_CHOSEN:
            self._chosen_count += len(chars)
            self._chosen.setdefault(threading.get_ident(), []).extend(chars)

    def _index(self) -> None:
        with self._lock:
            pending = self._raw[self._indexed :]
            self._indexed += len(pending)
            for data in pending:
                for form in _forms(data) if isinstance(data, bytes) else data:
                    if len(form) < MIN_SPAN:
                        self._numbers.add(form)
                        continue
                    self._add_grams(len(self._forms), form, 0)
                    self._forms.append(form)
            for thread, chars in list(self._chosen.items()):
                number, done = self._chosen_forms.get(thread, (len(self._forms), 0))
                if len(chars) == done:
                    continue
                form = "".join(chars)  # the stream grows: one form per thread, its new grams added
                if number == len(self._forms):
                    self._forms.append(form)
                else:
                    self._forms[number] = form
                self._add_grams(number, form, max(0, done - MIN_SPAN + 1))
                self._chosen_forms[thread] = (number, len(form))

    def _add_grams(self, number: int, form: str, start: int) -> None:
        """Index the :data:`MIN_SPAN`-character grams of ``form`` (form ``number``) from ``start`` on."""
        for at in range(start, len(form) - MIN_SPAN + 1):
            self._grams.setdefault(form[at : at + MIN_SPAN], []).append(number)

    def _stale(self) -> bool:
        """True when values were noted since the last :meth:`_index`."""
        if self._indexed < len(self._raw):
            return True
        indexed = self._chosen_forms
        return any(len(chars) != indexed.get(t, (0, 0))[1] for t, chars in list(self._chosen.items()))

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each minted span of ``text`` (module docstring), left to right."""
        if not self or len(text) < MIN_NUMBER:
            return []
        if self._stale():
            self._index()
        out: list[tuple[int, int]] = []
        for run in _RUN.finditer(text):
            found = self._in_run(text, run.start(), run.end())
            if not found and run.group().isupper():
                found = self._folded(run)
            out.extend(found)
        if self._numbers:
            _number_spans(text, self._numbers, out)
        return out

    def _folded(self, run: re.Match[str]) -> list[tuple[int, int]]:
        """The upper-cased hex forms in ``run`` (a run with no lower-case letter): its lower-cased text's
        minted spans that are hex (and uuid hyphens), at their place in the text."""
        lowered, offset = run.group().lower(), run.start()
        found = self._in_run(lowered, 0, len(lowered))
        return [(offset + a, offset + b) for a, b in found if _HEX_FORM.fullmatch(lowered, a, b)]

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
    """The minted spans a bundle's payloads hold (its ``minted.json``), and the state of ``random``'s global
    generator when the run began (``random_state``; None when the run drew nothing from it)."""

    def __init__(
        self, values: Iterable[str], random_state: RandomState | None = None, utc_offset: int | None = None
    ) -> None:
        self.values = frozenset(
            v for v in values if isinstance(v, str) and (len(v) >= MIN_SPAN or _short_number(v))
        )
        ordered = sorted((v for v in self.values if len(v) >= MIN_SPAN), key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._numbers = frozenset(v for v in self.values if len(v) < MIN_SPAN)
        self.random_state = random_state
        self.utc_offset = utc_offset
        """The recording process's local UTC offset in seconds (east positive), or None when not stated."""

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each recorded minted span in ``text``, left to right (longest first; a short
        drawn number as a whole run of digits only)."""
        if len(text) < MIN_NUMBER:
            return []
        found = [] if self._pattern is None else [(m.start(), m.end()) for m in self._pattern.finditer(text)]
        if self._numbers:
            _number_spans(text, self._numbers, found)
        return found

    def shown_in(self, text: str) -> RecordedMinted:
        """The values that ``text`` (a bundle's redacted payloads) still holds: a redacted copy keeps no
        value its payloads no longer show (``stepfork redact``)."""
        return RecordedMinted((v for v in self.values if v in text), self.random_state, self.utc_offset)

    def to_json(self) -> dict[str, Any]:
        """The ``minted.json`` document (``"random"`` only when the run drew from ``random``; ``"utc_offset"``
        when known)."""
        document: dict[str, Any] = {"format": FORMAT, "values": sorted(self.values)}
        if self.random_state is not None:
            version, internal, gauss = self.random_state
            document["random"] = {"version": version, "state": list(internal), "gauss_next": gauss}
        if self.utc_offset is not None:
            document["utc_offset"] = self.utc_offset
        return document

    @classmethod
    def parse(cls, data: Any) -> RecordedMinted | None:
        """The values of a ``minted.json`` document, or None when it is not one (a malformed ``"random"``
        is left out: the replay then starts from its own generator's state, as before it existed; so is a
        ``"utc_offset"`` that is not an integer within :data:`MAX_UTC_OFFSET`)."""
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or not isinstance(data.get("values"), list)
        ):
            return None
        offset = data.get("utc_offset")
        if type(offset) is not int or abs(offset) > MAX_UTC_OFFSET:
            offset = None  # absent (older bundles) or malformed: naive readings are read as before
        return cls(data["values"], _random_state(data.get("random")), offset)


def _random_state(data: Any) -> RandomState | None:
    """The generator state of a ``minted.json`` ``"random"`` object, or None when absent or malformed."""
    if not isinstance(data, dict) or data.get("version") != 3:
        return None
    words, gauss = data.get("state"), data.get("gauss_next")
    if not isinstance(words, list) or len(words) != 625:
        return None
    if not all(type(w) is int and 0 <= w < 2**32 for w in words) or words[-1] > 624:
        return None
    if gauss is not None and type(gauss) is not float:
        return None
    return (3, tuple(words), gauss)


def restore_random(state: RandomState | None) -> RandomState | None:
    """Set ``random``'s global generator to ``state`` (a recording's, :attr:`RecordedMinted.random_state`)
    and return the state it had, for :func:`put_back_random`; None (nothing done) when ``state`` is None."""
    if state is None:
        return None
    before = random.getstate()
    try:
        random.setstate(state)
    except (TypeError, ValueError):  # parse checked it; a state the interpreter refuses changes nothing
        return None
    return before


def put_back_random(state: RandomState | None) -> None:
    """Set ``random``'s global generator back to ``state`` (what :func:`restore_random` returned), so a
    replay leaves the generator of the process it ran in as it found it; nothing when None."""
    if state is not None:
        random.setstate(state)


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


def _note_chosen(picked: Iterable[Any]) -> None:
    for log in tuple(_ACTIVE):
        log.note_chosen(picked)


_CHOICE_CODE = random.Random.choice.__code__
_RANDBELOW_CODE = secrets.randbelow.__code__


def _randbelow(self: random.SystemRandom, n: int) -> int:
    """``SystemRandom._randbelow``: the index every ``choice`` draws. ``secrets.choice`` is a method bound
    when ``secrets`` was imported (``from secrets import choice`` keeps it), so the one place that sees each
    of its picks is this lookup on the class; the pick is ``seq[index]`` of the calling ``choice``."""
    index: int = _ORIGINAL["randbelow"](self, n)
    if _ACTIVE:
        caller = sys._getframe(1)
        if caller.f_code is _CHOICE_CODE:
            seq: Any = caller.f_locals.get("seq")
            with contextlib.suppress(Exception):  # a sequence that indexes differently: not an id
                _note_chosen((seq[index],))
        elif caller.f_code is _RANDBELOW_CODE:  # secrets.randbelow(n), however it was imported
            _note_number(index, n)
    return index


def _randrange(self: random.SystemRandom, *args: Any, **kwargs: Any) -> int:
    """``SystemRandom.randrange`` (``randint`` calls it on the instance): the number drawn, noted with the
    range's largest value setting its padded width (``randint(0, 10**8 - 1)``: 8 digits)."""
    value: int = _ORIGINAL["randrange"](self, *args, **kwargs)
    if _ACTIVE:
        bounds = [*args, *kwargs.values()][:2]  # start, stop (randrange(stop): that one alone)
        with contextlib.suppress(TypeError, ValueError):  # arguments randrange took but int() refuses
            _note_number(value, int(bounds[-1]))  # the exclusive stop sets the padded width
    return value


def _note_number(value: int, bound: int) -> None:
    for log in tuple(_ACTIVE):
        log.note_number(value, bound)


def _choices(self: random.SystemRandom, *args: Any, **kwargs: Any) -> list[Any]:
    picked: list[Any] = _ORIGINAL["choices"](self, *args, **kwargs)
    if _ACTIVE:
        _note_chosen(picked)
    return picked


def _sample(self: random.SystemRandom, *args: Any, **kwargs: Any) -> list[Any]:
    picked: list[Any] = _ORIGINAL["sample"](self, *args, **kwargs)
    if _ACTIVE:
        _note_chosen(picked)
    return picked


def _install_picks() -> None:
    """Wrap ``SystemRandom``'s ``_randbelow`` (behind ``choice`` and ``secrets.randbelow``), ``randrange``
    (behind ``randint``), ``choices`` and ``sample`` on the class, where every instance (``secrets``'s own
    included) looks them up at each call. ``random``'s own global generator is a ``Random``, untouched."""
    system = random.SystemRandom
    _ORIGINAL["randbelow"] = system._randbelow  # type: ignore[attr-defined]
    _ORIGINAL["randrange"] = system.randrange
    _ORIGINAL["choices"] = system.choices
    _ORIGINAL["sample"] = system.sample
    wrappers: dict[str, Any] = {
        "_randbelow": _randbelow,
        "randrange": _randrange,
        "choices": _choices,
        "sample": _sample,
    }
    for name, wrapper in wrappers.items():
        wrapper.__wrapped__ = _ORIGINAL[name.lstrip("_")]
        setattr(system, name, wrapper)


def _install() -> None:
    """Wrap ``os.urandom``, ``secrets.token_bytes`` and ``SystemRandom``'s picks once (the wrappers pass
    everything through and note only while a log is active)."""
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
    _install_picks()


def start() -> MintLog:
    """A new :class:`MintLog`, noting every value minted in this process until :func:`stop`."""
    log = MintLog()
    with _HOOK_LOCK:
        _install()
        _ACTIVE.append(log)
    return log


def stop(log: MintLog) -> None:
    """Stop noting values into ``log`` (it keeps what it noted) and note whether the run drew from
    ``random``'s global generator (:attr:`MintLog.drew_random`)."""
    with _HOOK_LOCK:
        if log in _ACTIVE:
            _ACTIVE.remove(log)
            log.drew_random = random.getstate() != log.random_state


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
