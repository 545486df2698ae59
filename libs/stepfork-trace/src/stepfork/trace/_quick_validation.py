"""The quick verdict of ``stepfork validate``: a clean bundle proved valid without pydantic (issue 31).

``stepfork validate`` runs in a fresh process, where importing pydantic and the schema 0.1 models costs
several times the interpreter's own start-up (docs/performance.md "CLI"). :func:`quick_validate` proves the
common verdict, a valid bundle with nothing to warn about, from the files themselves:

- it reads them as the loader does (``_regular_files.open_regular``: regular files, never through a
  symlink) and parses them with the standard library's C parser, accepting a file only when the encoder
  that wrote it (``json.dumps``, which is the canonical rule's writer, ``canonical.compact_json`` and
  ``_files.pretty_json``; tests/trace/test_quick_validation.py proves them equal on generated values) writes
  the parsed value back to the very same text: no duplicate key was dropped, no number rounded, no escape
  lost, so the value is the one ``canonical.loads_json`` reads;
- it accepts each manifest, event and redaction entry only in a *stricter* form of the models
  (:mod:`stepfork.trace.models`, the one definition of the format): every field of an exact JSON type,
  required fields present (``id``, ``run_id`` and ``timestamp`` of every event too, which the models would
  fill in), no unknown key, timestamps exactly as the writer writes them (``...:SS[.ffffff]Z``);
- then it runs the very checks of full validation (``_validation_checks.check_events`` on the same
  ``EventMeta`` records) and the same secret scan: the recorder's screen with the default rules
  (:func:`_may_hold_secret`: the key rule, then ``TextRules.blob_may_match_values`` over the record's
  compact text, as ``default_redactor.may_change`` does) and the redaction walk whenever the screen is not
  sure.

It imports the standard library's ``json``, ``re``, ``datetime``, ``typing`` and ``gc`` and the format's
plain tables, never orjson, hashlib, dataclasses or pydantic (tests/e2e/test_cli_quick_validate.py): a
process that gets its verdict here is ``stepfork validate``'s whole cold start (docs/performance.md, "The
tool-call hot path, replay and cold start").

Anything else, however harmless (an int where the model takes a float, a missing optional field the model
would default, a warning, a bundle made by ``stepfork import``), returns None, and the full validation
decides and reports. So the quick verdict can only ever be the full one: tests/trace/test_quick_validation.py
compares both on every bundle of the test data and on mutations of them.
"""

from __future__ import annotations

import gc
import json
import os
import re
from datetime import datetime

from stepfork.trace._format import SCHEMA_VERSION, EventStatus, EventType, ReplayPolicy, RunStatus
from stepfork.trace._redaction_names import key_rule
from stepfork.trace._redaction_text import TextRules
from stepfork.trace._regular_files import EVENTS_FILE, MANIFEST_FILE, REDACTIONS_FILE, open_regular
from stepfork.trace._validation_checks import EventMeta, check_events
from stepfork.trace._validation_codes import check_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (stepfork validate's cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterator
    from typing import Any

    Check = Callable[[Any], bool]

    from stepfork.trace._validation_types import ValidationResult

__all__ = ["quick_check_names", "quick_validate"]

# The writer's form only (notes 1.3): UTC, "Z", a 6-digit fraction when the microseconds are not zero.
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{6})?Z\Z")
_MAX_EXACT_FLOAT_INT = 2**53  # an int the model's float field takes without rounding


class _NotProven(Exception):
    """Raised anywhere below: the quick verdict cannot be given (the full validation decides)."""


def _refuse(_: str) -> Any:
    raise _NotProven  # NaN, Infinity: not JSON (canonical.loads_json refuses them)


_decode = json.JSONDecoder(parse_constant=_refuse).decode
# The writers' encoders (canonical.compact_json's rule for event lines, _files.pretty_json for the two files)
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_pretty = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False).encode


def _exact(text: str, *, pretty: bool) -> Any:
    """The value of the JSON ``text`` when its writer's encoder gives this very text back (then reading
    changed nothing: canonical.loads_json gives the same value); raises _NotProven otherwise."""
    try:
        value = _decode(text)
        written = _pretty(value) + "\n" if pretty else _compact(value)
    except (ValueError, RecursionError):  # malformed, a number past the digit limit, too deep, inf
        raise _NotProven from None
    if written != text:
        raise _NotProven  # another writer's layout, a duplicate key, a number not as Python writes it...
    return value


def _text(value: Any) -> bool:
    return type(value) is str and value != ""


def _maybe_text(value: Any) -> bool:
    return value is None or (type(value) is str and value != "")


def _maybe_str(value: Any) -> bool:
    return value is None or type(value) is str


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _maybe_count(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 0)


def _maybe_cost(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return bool(0 <= value <= _MAX_EXACT_FLOAT_INT)
    return value is None or (kind is float and value >= 0)


def _json(_: Any) -> bool:
    return True  # a payload: any JSON value (loads_json read it exactly)


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _one_of(values: frozenset[str]) -> Check:
    def check(value: Any) -> bool:
        return type(value) is str and value in values

    return check


def _timestamp(value: Any) -> datetime:
    if type(value) is not str or _TIMESTAMP.match(value) is None:
        raise _NotProven
    try:
        return datetime.fromisoformat(value)
    except ValueError:  # a day or an hour out of range
        raise _NotProven from None


_COMMON: dict[str, Check] = {
    "id": _text,
    "run_id": _text,
    "parent_id": _maybe_text,
    "step": _count,
    "type": _one_of(frozenset(EventType)),
    "timestamp": lambda value: _timestamp(value) is not None,
    "duration_ms": _maybe_count,
    "status": _one_of(frozenset(EventStatus)),
    "replay_policy": _one_of(frozenset(ReplayPolicy)),
    "input_hash": _maybe_str,
    "output_hash": _maybe_str,
    "redactions": _strings,
}
_COMMON_REQUIRED = ("id", "run_id", "type", "timestamp")
_RUN_STATUS = _one_of(frozenset(RunStatus))

# Per event type: (its own fields and their checks, the fields required). The models' field names and
# required fields; tests/trace/test_quick_validation.py compares them with stepfork.trace.models.
EVENT_FIELDS: dict[str, tuple[dict[str, Check], tuple[str, ...]]] = {
    EventType.RUN_START: ({"input": _json}, ()),
    EventType.LLM_REQUEST: ({"provider": _maybe_text, "model": _text, "input": _json}, ("model", "input")),
    EventType.LLM_RESPONSE: (
        {
            "model": _maybe_text,
            "output": _json,
            "prompt_tokens": _maybe_count,
            "completion_tokens": _maybe_count,
            "total_tokens": _maybe_count,
            "cost_usd": _maybe_cost,
        },
        ("output",),
    ),
    EventType.TOOL_CALL: ({"name": _text, "input": _json}, ("name", "input")),
    EventType.TOOL_RESULT: ({"name": _text, "output": _json}, ("name", "output")),
    EventType.STATE_CHANGE: ({"key": _maybe_text, "before": _json, "after": _json}, ()),
    EventType.ERROR: ({"error_type": _text, "message": _text, "details": _json}, ("error_type", "message")),
    EventType.RUN_END: ({"run_status": _RUN_STATUS, "output": _json}, ("run_status",)),
}
_EVENT_CHECKS = {
    kind: ({**_COMMON, **own}, (*_COMMON_REQUIRED, *required))
    for kind, (own, required) in EVENT_FIELDS.items()
}

_FAILURE: dict[str, Check] = {"type": _text, "message": _text, "step": _count}
_ENVIRONMENT: dict[str, Check] = {"python": _maybe_str, "os": _maybe_str, "stepfork_version": _maybe_str}
_TOTALS: dict[str, Check] = {
    "events": _count,
    "llm_calls": _count,
    "tool_calls": _count,
    "cost_usd": _maybe_cost,
    "duration_ms": _maybe_count,
}
_ENTRY: dict[str, Check] = {
    "event_id": _text,
    "path": lambda value: type(value) is str,
    "reason": _text,
    "replacement": lambda value: value == "[REDACTED]",
}


def _fits(obj: Any, checks: dict[str, Check], required: tuple[str, ...] | frozenset[str]) -> bool:
    """True when ``obj`` is a dict whose keys are known, required ones present, each value passing its check;
    else raises _NotProven."""
    if type(obj) is not dict or not checks.keys() >= obj.keys() or not obj.keys() >= set(required):
        raise _NotProven
    for name, value in obj.items():
        if not checks[name](value):
            raise _NotProven
    return True


class _Totals:
    __slots__ = ("events", "llm_calls", "tool_calls")

    def __init__(self, totals: dict[str, Any]) -> None:
        self.events: int = totals.get("events", 0)
        self.llm_calls: int = totals.get("llm_calls", 0)
        self.tool_calls: int = totals.get("tool_calls", 0)


class _Failure:
    __slots__ = ("step",)

    def __init__(self, failure: dict[str, Any]) -> None:
        self.step: int = failure["step"]


class _Header:
    """What the event checks read of the manifest (``_validation_checks.RunHeader``)."""

    __slots__ = ("failure", "run_id", "status", "totals")

    def __init__(self, manifest: dict[str, Any]) -> None:
        self.run_id: str = manifest["run_id"]
        self.status = RunStatus(manifest.get("status", RunStatus.RUNNING))
        self.totals = _Totals(manifest.get("totals", {}))
        failure = manifest.get("failure")
        self.failure = None if failure is None else _Failure(failure)


def _manifest(obj: Any) -> dict[str, Any]:
    checks: dict[str, Check] = {
        "format": lambda value: value == "stepfork",
        "schema_version": lambda value: value == SCHEMA_VERSION,
        "run_id": _text,
        "agent_name": _text,
        "created_at": lambda value: _timestamp(value) is not None,
        "status": _RUN_STATUS,
        "failure": lambda value: value is None or _fits(value, _FAILURE, frozenset(_FAILURE)),
        "environment": lambda value: _fits(value, _ENVIRONMENT, ()),
        "totals": lambda value: _fits(value, _TOTALS, ()),
    }
    _fits(obj, checks, ("run_id", "agent_name", "created_at"))
    manifest: dict[str, Any] = obj
    failed = manifest.get("status", RunStatus.RUNNING) == RunStatus.FAILED
    if failed != (manifest.get("failure") is not None):
        raise _NotProven  # the model's rule: failure set exactly when the run failed
    return manifest


def _redactions(obj: Any) -> None:
    checks: dict[str, Check] = {
        "schema_version": lambda value: value == SCHEMA_VERSION,
        "entries": lambda value: (
            type(value) is list
            and all(_fits(entry, _ENTRY, ("event_id", "path", "reason")) for entry in value)
        ),
    }
    _fits(obj, checks, ())


def _read(bundle: str, name: str) -> str:
    try:
        fd = open_regular(os.path.join(bundle, name))  # type: ignore[arg-type]
    except OSError:
        raise _NotProven from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _NotProven from None


def _lines(bundle: str) -> Iterator[str]:
    """The lines of events.jsonl without their newlines; refused when the file does not end in one."""
    data = _read(bundle, EVENTS_FILE)
    if data and not data.endswith("\n"):
        raise _NotProven  # a torn final line: an issue, or a warning with --partial
    for line in data.split("\n")[:-1]:
        if not line.strip():
            raise _NotProven  # a blank line
        yield line


_DEFAULT_TEXT_RULES = TextRules((), ())  # default_redactor's text rules: no extra pattern, no secret


def _keys(value: Any) -> set[str]:
    """The distinct keys of every dict in the JSON ``value``, level by level (``gc.get_referents`` gives the
    values of dicts and the items of lists; strings and numbers have none)."""
    keys: set[str] = set()
    level = [value]
    while level:
        keys.update(*(item for item in level if type(item) is dict))
        level = gc.get_referents(*level)
    return keys


def _may_hold_secret(record: Any, text: bytes) -> bool:
    """``default_redactor.may_change(keys, text)`` without the redaction module: True when a key is
    sensitive or a string of the record, whose compact JSON ``text`` is given, may match a text rule."""
    keys = _keys(record)
    if any(map(key_rule, keys)):  # the default key rule (no added keys)
        return True
    return _DEFAULT_TEXT_RULES.blob_may_match_values(text, keys)


def _has_secret(record: dict[str, Any], text: bytes, *, manifest: bool) -> bool:
    """True unless no redaction rule would change ``record`` (the recorder's screen over its compact JSON
    ``text`` first; the redaction walk whenever the screen is not sure)."""
    if not _may_hold_secret(record, text):
        return False
    from stepfork.trace.redaction import redact_event, redact_manifest

    try:
        return bool((redact_manifest if manifest else redact_event)(record)[1])
    except Exception:  # a secret in a protected field: the full validation words the warning
        return True


def quick_check_names(path: str, *, strict: bool) -> list[str] | None:
    """The checks ``stepfork validate`` prints (all passed) when :func:`quick_validate` proves the bundle
    valid with no warning; None when it cannot (the full validation decides). Never raises."""
    try:
        return _quick_validate(path, strict=strict)
    except _NotProven:
        return None
    except Exception:  # an unreadable file, a malformed value: the full validation says what it is
        return None


def quick_validate(path: str, *, strict: bool) -> ValidationResult | None:
    """The verdict of ``validate_bundle(path, strict=strict)`` when it is "valid, no warning", proven
    without pydantic; None when it cannot be proven here (the full validation then decides). Never raises.

    Args:
        path: a bundle directory (a local path ending in ``.sftrace``; a URL is never proven here).
        strict: False for ``--partial``.

    Returns:
        ``ValidationResult(checks=checks_for([], strict=strict, integrity=False))``, what
        :func:`stepfork.trace.validation.validate_bundle` returns for such a bundle, or None.
    """
    if quick_check_names(path, strict=strict) is None:
        return None
    from stepfork.trace._validation_types import ValidationResult, checks_for

    return ValidationResult(checks=checks_for([], strict=strict, integrity=False))


def _quick_validate(path: str, *, strict: bool) -> list[str] | None:
    bundle = os.fspath(path)
    if not bundle.endswith(".sftrace") or "://" in bundle or not os.path.isdir(bundle):
        return None
    manifest = _manifest(_exact(_read(bundle, MANIFEST_FILE), pretty=True))
    if _has_secret(manifest, _compact(manifest).encode(), manifest=True):
        return None
    run_id = manifest["run_id"]
    metas: list[EventMeta] = []
    for line in _lines(bundle):
        event = _exact(line, pretty=False)
        kind = event.get("type") if type(event) is dict else None
        if kind not in _EVENT_CHECKS:
            return None
        checks, required = _EVENT_CHECKS[kind]
        _fits(event, checks, required)
        if _has_secret(event, line.encode(), manifest=False):
            return None
        metas.append(
            EventMeta(
                event["id"],
                run_id if event["run_id"] == run_id else event["run_id"],
                event.get("parent_id"),
                event.get("step", 0),
                EventType(kind),
                event.get("name"),
                event.get("model"),
                None if "run_status" not in event else RunStatus(event["run_status"]),
                _timestamp(event["timestamp"]),
            )
        )
    _redactions(_exact(_read(bundle, REDACTIONS_FILE), pretty=True))
    findings = check_events(_Header(manifest), metas, strict=strict)
    if findings.issues or findings.warnings or findings.incomplete:
        return None
    return check_names(strict=strict, integrity=False)
