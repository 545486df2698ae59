"""Secret removal before anything is written or printed (interop/REFERENCE-NOTES.md section 3, CASES C5).

Three rules over JSON values (docs/redaction.md): values under sensitive keys (reason ``sensitive_key``),
credential shapes inside any string (``credential_pattern``, prefixes such as ``Bearer`` kept) and exact
registered secrets (``registered_secret``) become ``"[REDACTED]"``. Tagged ``bytes``/``str`` values are
decoded and scanned too, and the deltas of a recorded stream are joined before they are matched
(:mod:`stepfork.trace._redaction_streams`). An already redacted value gives no finding; when nothing
changes the same object comes back. A payload is first screened in one pass (its JSON text against the
rules' needles, one multi-literal search in pydantic-core's Rust regex) so the common case, no secret,
costs that search and a look at the dict keys; the recorder runs it over the canonical bytes it writes
(:meth:`may_change`).

This module owns the key rule and the walk over JSON values (pointers, tagged forms, keys that are
secrets); what happens inside one string, and the payload screen, is :mod:`stepfork.trace._redaction_text`
(``REPLACEMENT`` and ``MIN_SECRET_LENGTH`` live there and are re-exported here).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

from stepfork.trace._redaction_names import SENSITIVE_KEYS, WHOLE_VALUE, key_rule, normalize_key
from stepfork.trace._redaction_pairs import holds_key_id, redact_paired
from stepfork.trace._redaction_rules import PATTERNS
from stepfork.trace._redaction_streams import STREAM_KEYS, redact_streams, stream_count, streams_may_match
from stepfork.trace._redaction_text import MIN_SECRET_LENGTH as MIN_SECRET_LENGTH
from stepfork.trace._redaction_text import REPLACEMENT, Reason, TextRules, check_secret
from stepfork.trace.errors import RedactionError

__all__ = [
    "PATTERNS", "REPLACEMENT", "SENSITIVE_KEYS", "RedactionFinding", "RedactionResult", "Redactor",
    "default_redactor", "normalize_key", "redact_event", "redact_json", "redact_manifest", "redact_text",
    "register_secret",
]  # fmt: skip

REDACTION_REPLACEMENT: Final = REPLACEMENT
"""The earlier implementation's name of :data:`REPLACEMENT` in this module (``stepfork.trace`` exports it too;
issue 32)."""

_TAG: Final = "$stepfork"


def _remember(names: frozenset[str], verdicts: dict[Any, int], key: Any) -> int:
    verdict = key_rule(key, names)
    if len(verdicts) > 10_000:  # bounded: keys can be data (ids used as keys)
        verdicts.clear()
    verdicts[key] = verdict
    return verdict


def _replaced(rule: int, item: Any) -> bool:
    """Whether the key rule ``rule`` (``key_rule``: 1 whole value, 2 strings) replaces the value ``item``:
    a reference name's value always, a secret name's only when it is a non-empty string or tagged
    bytes/str (a count under ``max_tokens`` is a number, a secret is a string: docs/redaction.md rule 1)."""
    if rule == WHOLE_VALUE:
        return True
    if isinstance(item, str):
        return item != ""
    return isinstance(item, dict) and item.get(_TAG) in ("bytes", "str")


def _join(base: str, parts: list[str | int]) -> str:
    """``base`` followed by one JSON Pointer token per part (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    tokens = [str(p).replace("~", "~0").replace("/", "~1") for p in parts]
    return "/".join([base, *tokens]) if tokens else base


def _pointer(base: str, key: str | int) -> str:
    return _join(base, [key])


def _compile(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    return pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)


@dataclasses.dataclass(frozen=True, slots=True)
class RedactionFinding:
    """One redacted value: its JSON Pointer (from the event root, ``/input/api_key``) and the rule."""

    path: str
    reason: Reason


@dataclasses.dataclass(frozen=True, slots=True)
class RedactionResult:
    """The redacted value (the input object itself when nothing changed) and what was redacted."""

    value: Any
    findings: list[RedactionFinding]


class Redactor:
    """A set of redaction rules: sensitive keys, credential patterns and registered secret values.

    Args:
        extra_keys: more sensitive key names (normalized like the defaults, so ``"X-Tenant-Key"`` works).
        extra_patterns: more regexes (str or compiled); a group named ``secret`` limits the replacement.
        secrets: exact secret values to remove wherever they appear (each at least 4 characters).

    Thread-safe: rules may be added while other threads redact.
    """

    def __init__(
        self,
        *,
        extra_keys: Iterable[str] = (),
        extra_patterns: Iterable[str | re.Pattern[str]] = (),
        secrets: Iterable[str] = (),
    ) -> None:
        self._lock = threading.Lock()
        # (normalized reference names, key -> key_rule verdict cache, keys known clean: one subset test in
        # may_change); replaced as a whole when a key is added, so a verdict is always cached next to the
        # names it was computed from.
        self._keys: tuple[frozenset[str], dict[Any, int], set[Any]] = (
            SENSITIVE_KEYS | {normalize_key(k) for k in extra_keys},
            {},
            set(),
        )
        # The user's patterns (the defaults live in the text rules) and secrets: the text rules are
        # rebuilt from them on every addition.
        self._extra_patterns: list[re.Pattern[str]] = [_compile(p) for p in extra_patterns]
        self._secrets: set[str] = set()
        for s in secrets:
            check_secret(s)
            self._secrets.add(s)
        self._rebuild()

    def _rebuild(self) -> None:
        # Swapped in as one object so a redacting thread never sees half an update.
        self._text = TextRules(self._extra_patterns, self._secrets)

    def register_secret(self, value: str) -> None:
        """Redact every occurrence of ``value`` from now on (reason ``registered_secret``).

        Raises ValueError when ``value`` is shorter than 4 characters or part of ``"[REDACTED]"``.
        """
        check_secret(value)
        with self._lock:
            self._secrets.add(value)
            self._rebuild()

    def add_key(self, name: str) -> None:
        """Treat dict keys normalizing like ``name`` as sensitive (whole value redacted)."""
        with self._lock:
            self._keys = (self._keys[0] | {normalize_key(name)}, {}, set())

    def add_pattern(self, pattern: str | re.Pattern[str]) -> None:
        """Redact matches of ``pattern`` in every string; a group named ``secret`` limits the replacement."""
        compiled = _compile(pattern)
        with self._lock:
            self._extra_patterns.append(compiled)
            self._rebuild()

    def is_sensitive_key(self, key: str) -> bool:
        """True when the key rule redacts a value under ``key`` (docs/redaction.md rule 1): any value of a
        reference name or an added key (``api_key``, ``token``), a string of a secret name
        (``openai_api_key``, ``db_password``, ``github_token``). False for ``max_tokens``, ``sort_key``."""
        return key_rule(key, self._keys[0]) != 0

    # -- text ---------------------------------------------------------------------------------------

    def is_clean_text(self, text: str) -> bool:
        """True when no rule changes ``text`` (:meth:`redact` of a str would return it unchanged).

        Short texts (tool and model names) are answered from a cache kept with the rules.
        """
        return self._text.redact(text)[1] is None

    def redact_text(self, text: str) -> str:
        """``text`` with every credential pattern and registered secret replaced (no key rules apply)."""
        return self._text.redact(text)[0]

    # -- JSON ---------------------------------------------------------------------------------------

    def redact(self, value: Any, *, base_path: str = "") -> RedactionResult:
        """Apply the three rules to a JSON value (notes 3).

        Args:
            value: a JSON value, possibly holding tagged forms.
            base_path: the JSON Pointer of ``value`` (``"/input"``); findings are reported below it.

        A dict holding a recorded stream (``sse``, ``eventstream``, ``stream``) has the secrets its
        deltas hold once joined redacted first (``_redaction_streams``: docs/redaction.md, "Streams").

        Returns:
            RedactionResult: the redacted value (``value`` itself when nothing changed) and one finding
            per changed value, in walk order.
        """
        findings: list[RedactionFinding] = []
        out = self._walk_value(value, base_path, findings)
        return RedactionResult(out, findings)

    def _walk_value(self, value: Any, base: str, findings: list[RedactionFinding]) -> Any:
        """:meth:`_walk` of one whole value (``redact``'s, an event field's), then the AWS pair rule: when
        something was redacted and a string of ``value`` holds an access key id, every string of an AWS
        secret key's shape in it goes too (:mod:`stepfork.trace._redaction_pairs`)."""
        before = len(findings)
        out = self._walk(value, base, [], findings, self._text.strings_may_match(value))
        if len(findings) > before and holds_key_id(value):  # an access key id is always redacted

            def found(parts: list[str | int]) -> None:
                findings.append(RedactionFinding(_join(base, parts), "credential_pattern"))

            out = redact_paired(out, REPLACEMENT, found)
        return out

    def may_change(self, keys: Iterable[Any], encoded: bytes, value: Any = None) -> bool:
        """False when :meth:`redact` is sure to return a plain-JSON value unchanged, from its facts.

        Args:
            keys: every dict key in the value (``plainjson.PlainFacts.keys``; the value has no tags).
            encoded: its JSON text as orjson or the canonical rule writes it (any key order).
            value: the value itself, when at hand (the recorder): what a stream's deltas are joined from.

        Returns True when a key is sensitive or a string may match (the one-pass screen of
        :meth:`redact`, run over bytes the recorder needs anyway, not counting clean keys such as
        ``max_tokens`` that merely hold a needle: ``TextRules.blob_may_match_values``): the walk
        decides then. A value holding a stream (a key of ``_redaction_streams.STREAM_KEYS`` whose value is
        an object in ``encoded``) may hold a secret split across its deltas, which no screen of the text
        finds: True unless ``value`` (the value itself) is given and its joined deltas match no rule
        (``streams_may_match``).
        """
        names, verdicts, clean = self._keys
        if not clean.issuperset(keys):  # the keys seen before are known clean: one C-level test
            for key in keys:
                sensitive = verdicts.get(key)
                if sensitive is None:
                    sensitive = _remember(names, verdicts, key)
                if sensitive:
                    return True
            if len(clean) > 10_000:  # bounded: keys can be data
                clean.clear()
            clean.update(keys)
        if self._text.blob_may_match_values(encoded, keys):
            return True
        if STREAM_KEYS.isdisjoint(keys):
            return False
        count = stream_count(encoded)
        return bool(count) and (value is None or streams_may_match(value, self._text, count))

    def _walk(
        self, value: Any, base: str, parts: list[str | int], found: list[RedactionFinding], scan: bool
    ) -> Any:
        # ``parts`` is the key stack below ``base``; pointers are built only for findings (hot path).
        t = type(value)
        if t is str:
            if not scan:
                return value
            new, reason = self._text.redact(value)
            if reason is not None and new != value:
                found.append(RedactionFinding(_join(base, parts), reason))
                return new
            return value
        if t is list:
            out: list[Any] | None = None
            for i, item in enumerate(value):
                ti = type(item)
                if ti is not dict and ti is not list and (ti is not str or not scan):
                    continue
                parts.append(i)
                new_item = self._walk(item, base, parts, found, scan)
                parts.pop()
                if new_item is not item:
                    if out is None:
                        out = list(value)
                    out[i] = new_item
            return value if out is None else out
        if t is dict:
            if _TAG in value:
                return self._walk_tag(value, _join(base, parts), found)
            if "sse" in value or "eventstream" in value or "stream" in value:  # a secret split across deltas
                value, changed = redact_streams(value, self._text)
                found += [RedactionFinding(_join(base, [*parts, *path]), why) for path, why in changed]
            copy: dict[str, Any] | None = None
            renamed: list[tuple[str, str, Reason]] = []
            names, verdicts, _ = self._keys
            for key, item in value.items():
                if scan and type(key) is str:  # a secret used as a key is a secret too (issue 7)
                    new_key, key_reason = self._text.redact(key)
                    if key_reason is not None and new_key != key:
                        renamed.append((key, new_key, key_reason))
                rule = verdicts.get(key)
                if rule is None:
                    rule = _remember(names, verdicts, key)
                if rule and _replaced(rule, item):
                    if type(item) is str and item == REPLACEMENT:
                        continue  # already redacted: no new finding
                    found.append(RedactionFinding(_join(base, [*parts, key]), "sensitive_key"))
                    new_item = REPLACEMENT
                else:
                    ti = type(item)
                    if ti is not dict and ti is not list and (ti is not str or not scan):
                        continue
                    parts.append(key)
                    new_item = self._walk(item, base, parts, found, scan)
                    parts.pop()
                if new_item is not item:
                    if copy is None:
                        copy = dict(value)
                    copy[key] = new_item
            if renamed:
                return self._rename_keys(value if copy is None else copy, renamed, _join(base, parts), found)
            return value if copy is None else copy
        return value

    @staticmethod
    def _rename_keys(
        value: dict[str, Any],
        renamed: list[tuple[str, str, Reason]],
        path: str,
        found: list[RedactionFinding],
    ) -> Any:
        """``value`` with its secret keys replaced, in order (findings at the new keys). Keys that collide
        once redacted keep every value: the tagged pairs form ``{"$stepfork": "dict", "value": [[k, v],
        ...]}`` (docs/values.md), findings at each pair's key."""
        new_names = {old: (new, reason) for old, new, reason in renamed}
        pairs = [(new_names.get(k, (k, None))[0], v) for k, v in value.items()]
        if len({k for k, _ in pairs}) == len(pairs):
            for _old, new, reason in renamed:
                found.append(RedactionFinding(_pointer(path, new), reason))
            return dict(pairs)
        pairs_path = _pointer(path, "value")
        for i, key in enumerate(value):
            if key in new_names:
                found.append(RedactionFinding(_pointer(_pointer(pairs_path, i), 0), new_names[key][1]))
        return {_TAG: "dict", "value": [[k, v] for k, v in pairs]}

    def _walk_tag(self, value: dict[str, Any], path: str, findings: list[RedactionFinding]) -> Any:
        kind, raw = value.get(_TAG), value.get("value")
        sub = _pointer(path, "value")
        if kind in ("bytes", "str") and type(raw) is str:
            # bytes that are not UTF-8 are scanned too: surrogateescape keeps every other byte as it was
            errors = "surrogatepass" if kind == "str" else "surrogateescape"
            try:
                data = base64.b64decode(raw, validate=True)
                text = data.decode("utf-8", errors)
            except (binascii.Error, UnicodeDecodeError):
                return value  # not base64 (a damaged tag): nothing to scan
            new, reason = self._text.redact(text)
            if reason is None or new == text:
                return value
            findings.append(RedactionFinding(sub, reason))
            encoded = new.encode("utf-8", errors)
            return {**value, "value": base64.b64encode(encoded).decode("ascii")}
        if kind == "dict" and type(raw) is list:  # pairs form: a str key still decides sensitivity
            out: list[Any] | None = None
            for i, pair in enumerate(raw):
                is_pair = type(pair) is list and len(pair) == 2 and type(pair[0]) is str
                rule = key_rule(pair[0], self._keys[0]) if is_pair else 0
                if rule and _replaced(rule, pair[1]):
                    if pair[1] == REPLACEMENT and type(pair[1]) is str:
                        continue
                    findings.append(RedactionFinding(_pointer(_pointer(sub, i), 1), "sensitive_key"))
                    new_pair: Any = [pair[0], REPLACEMENT]
                else:
                    new_pair = self._walk(pair, _pointer(sub, i), [], findings, True)
                if new_pair is not pair:
                    if out is None:
                        out = list(raw)
                    out[i] = new_pair
            return value if out is None else {**value, "value": out}
        new_raw = self._walk(raw, sub, [], findings, True)
        return value if new_raw is raw else {**value, "value": new_raw}


default_redactor: Final = Redactor()
"""The process-wide rules used by recording, replay, the CLI, diff and export."""


def register_secret(value: str) -> None:
    """Register ``value`` (at least 4 characters) with :data:`default_redactor`; ValueError otherwise."""
    default_redactor.register_secret(value)


def redact_json(value: Any, *, base_path: str = "") -> RedactionResult:
    """:meth:`Redactor.redact` with :data:`default_redactor`."""
    return default_redactor.redact(value, base_path=base_path)


def redact_text(text: str) -> str:
    """:meth:`Redactor.redact_text` with :data:`default_redactor`."""
    return default_redactor.redact_text(text)


def _check_protected(redactor: Redactor, name: str, value: Any, owner: str) -> None:
    for text in [value] if type(value) is not list else value:
        if type(text) is str and redactor._text.redact(text)[1] is not None:
            raise RedactionError(
                f"protected field {name!r} of {owner} holds a secret; it cannot be rewritten (notes 3)",
                code="secret_in_protected_field",
            )


def _redact_fields(
    record: Mapping[str, Any], protected: frozenset[str], redactor: Redactor, owner: str
) -> tuple[dict[str, Any], list[RedactionFinding]]:
    findings: list[RedactionFinding] = []
    changed: dict[str, Any] = {}
    for name, value in record.items():
        if name in protected:
            _check_protected(redactor, name, value, owner)
            continue
        new = redactor._walk_value(value, _pointer("", name), findings)
        if new is not value:
            changed[name] = new
    if not changed:
        return dict(record) if type(record) is not dict else record, findings
    return {**record, **changed}, findings


def redact_event(
    event: Mapping[str, Any], redactor: Redactor | None = None
) -> tuple[dict[str, Any], list[RedactionFinding]]:
    """Redact one event dict (notes 3): every field except the protected ones (models.PROTECTED_EVENT_FIELDS).

    Args:
        event: an event as a dict (``model_dump`` output or a parsed events.jsonl line).
        redactor: the rules; :data:`default_redactor` when None.

    Returns:
        ``(event, findings)``: the redacted event (the same object when nothing changed) whose
        ``redactions`` list has the new JSON Pointers appended (each once), and the findings.

    Raises:
        RedactionError(code="secret_in_protected_field"): a protected string (id, timestamp...) holds one.
    """
    from stepfork.trace._format import PROTECTED_EVENT_FIELDS

    rules = redactor or default_redactor
    owner = f"event {rules.redact_text(str(event.get('id')))!r}"  # the id itself may be the leak
    out, findings = _redact_fields(event, PROTECTED_EVENT_FIELDS, rules, owner)
    if findings:
        existing = list(out.get("redactions") or [])
        for finding in findings:
            if finding.path not in existing:
                existing.append(finding.path)
        out["redactions"] = existing
    return out, findings


def redact_manifest(
    manifest: Mapping[str, Any], redactor: Redactor | None = None
) -> tuple[dict[str, Any], list[RedactionFinding]]:
    """Redact a manifest dict except models.PROTECTED_MANIFEST_FIELDS; findings belong to ``__manifest__``.

    Returns ``(manifest, findings)`` (the same object when nothing changed); raises RedactionError as
    :func:`redact_event` does.
    """
    from stepfork.trace._format import PROTECTED_MANIFEST_FIELDS

    return _redact_fields(manifest, PROTECTED_MANIFEST_FIELDS, redactor or default_redactor, "the manifest")
