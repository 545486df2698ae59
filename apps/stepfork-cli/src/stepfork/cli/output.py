"""Output helpers shared by the commands: one-line errors with exit codes, sanitizing, rich console.

Everything trace-derived goes through :func:`sanitize` / :func:`sanitize_text` before it is printed
(secrets appear as ``[REDACTED]``; spec/cli-reference.txt "Error handling").
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NoReturn

# escape_controls (trace text's terminal controls shown as escapes, issue 7) lives with the analysis
# results, which escape their own text too: one rule for every command and notebook.
from stepfork.analysis._shared.render import escape_controls as escape_controls

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console


class CliExit(Exception):
    """Raised by a command to stop with ``code`` after printing ``message`` (one line, or a few)."""

    def __init__(self, message: str, code: int, *, stream: str = "stderr") -> None:
        super().__init__(message)
        self.code = code
        self.stream = stream


def shown(path: Any) -> str:
    """How a message names a bundle argument: a URL in its URL form (``s3://b/run.sftrace``, not the
    ``s3:/b/run.sftrace`` that typing the argument as a ``Path`` makes of it; docs/decisions.md), else
    the path as given."""
    import os

    from stepfork.trace._urls import url_of

    return url_of(path) or os.fspath(path)


# On inside json_errors(): fail() prints its error as one JSON object on stdout too.
_JSON_ERRORS: ContextVar[bool] = ContextVar("stepfork_cli_json_errors", default=False)


@contextlib.contextmanager
def json_errors(enabled: bool = True) -> Iterator[None]:
    """While the block runs (and ``enabled``: the command's ``--json``), every :func:`fail` also prints
    ``{"error": <code>, "message": <text>, "exit_code": <n>}`` on stdout, so a script parsing ``--json``
    gets JSON for an error that stops the command before its result (docs/cli.md, "check")."""
    token = _JSON_ERRORS.set(enabled)
    try:
        yield
    finally:
        _JSON_ERRORS.reset(token)


def with_json_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` (a typer command function with an ``as_json`` parameter, its ``--json``) running inside
    :func:`json_errors` when called with ``as_json=True``; a command without ``--json`` is unchanged.
    ``stepfork.cli.app`` applies it to every command, as it does the Ctrl-C wrapper; ``functools.wraps``
    keeps the signature typer reads."""
    import functools

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        with json_errors(bool(kwargs.get("as_json"))):
            return command(*args, **kwargs)

    return run


@contextlib.contextmanager
def agent_output_to_stderr(enabled: bool = True) -> Iterator[None]:
    """While the block runs (and ``enabled``: the command's ``--json``), what the agent prints goes to
    stderr, so stdout holds the command's JSON document alone: ``sys.stdout`` is ``sys.stderr`` and file
    descriptor 1 a copy of 2 (a subprocess or C code the agent runs writes there). Both restored after,
    before the result or an error is printed."""
    if not enabled:
        yield
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptor 1 or 2 (a closed stream): the Python-level redirect alone
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def fail(
    message: str,
    code: int,
    *,
    error: str = "invalid_option",
    extra: Mapping[str, Any] | None = None,
    result: bool = False,
) -> NoReturn:
    """Print ``message`` and exit with ``code`` (typer.Exit, so no traceback).

    The line goes to stderr: a usage error, or input the command cannot work on (docs/cli.md, "Output
    streams"). ``result``: the message is the command's result instead, a failure verdict about the
    user's data (``validate``'s issues, ``inspect --step`` matching no event, ``minimize`` finding no
    failure to keep), printed on stdout, where ``stepfork validate x | tee log`` and scripts look (issue 32).

    ``error``: the machine-readable code of the error (a refused option unless the caller says otherwise),
    printed only inside :func:`json_errors`, as ``{"error": error, "message": message, "exit_code": code}``
    on stdout (before the line on stderr, where the line then goes in either case, so stdout holds the JSON
    document alone; the message already sanitized by the caller). ``extra``: keys a command adds after
    those three (``score``'s ``path``), JSON values; never one of the three."""
    import typer

    text = message.rstrip("\n")
    as_json = _JSON_ERRORS.get()
    if as_json:
        emit_json({"error": error, "message": text, "exit_code": code, **(extra or {})})
        sys.stdout.flush()
    stream = sys.stdout if result and not as_json else sys.stderr
    stream.write(text + "\n")
    stream.flush()
    raise typer.Exit(code)


def exit_with_result(result: Any, *, as_json: bool) -> NoReturn:
    """Print a command's result and exit with its ``exit_code`` (typer.Exit).

    ``result`` has ``to_dict()`` (printed as indented JSON, non-ASCII kept, when ``as_json``), ``__str__``
    (the human text otherwise) and ``exit_code: int`` (the exit codes of spec/cli-reference.txt).
    """
    import typer

    if as_json:
        typer.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        from stepfork.cli.colour import echo

        echo(str(result))  # verdict words coloured on a terminal only
    raise typer.Exit(result.exit_code)


def emit_json(value: Any) -> None:
    """Print a JSON value to stdout, pretty-printed, non-ASCII kept."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def sanitize(value: Any) -> Any:
    """The redacted copy of a JSON value (interop notes section 3: the same redact_json as the bundle)."""
    from stepfork.trace.redaction import redact_json

    return redact_json(value).value


# The ones json.dumps(ensure_ascii=False) writes raw (it escapes C0 itself; newlines are its layout).
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape_json_controls(text: str) -> str:
    """JSON text with the terminal control characters json.dumps leaves raw (DEL, C1, bidi) written as
    ``\\uXXXX`` escapes: still valid JSON, the same value once parsed (controls only occur in strings)."""
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def sanitize_text(text: str, *, keep: Iterable[Any] = ()) -> str:
    """``text`` with credential patterns replaced by ``[REDACTED]`` and control characters escaped.

    ``keep``: what the user typed (the paths given as arguments, ``os.fspath`` taken) that an error
    message repeats: left as typed, the text between them redacted piece by piece, so a path such as
    ``token`` or ``secret:abc`` does not make the message's own words look like ``key: value`` (a
    ``[REDACTED]`` where "neither" stood). Only the given strings are kept; the rest is redacted as before.
    """
    kept = sorted({k for k in map(_fspath, keep) if len(k) >= 2}, key=len, reverse=True)
    if kept and any(k in text for k in kept):
        pieces = re.split("(" + "|".join(map(re.escape, kept)) + ")", text)
        # odd pieces are the kept strings themselves (still escaped: a typed path is shown, not acted on)
        shown = (escape_controls(p) if i % 2 else sanitize_text(p) for i, p in enumerate(pieces))
        return "".join(shown)
    redacted = sanitize(text)
    return escape_controls(redacted) if isinstance(redacted, str) else "[REDACTED]"


def _fspath(value: Any) -> str:
    import os

    return value if isinstance(value, str) else os.fspath(value)


def compact(value: Any) -> str:
    """Compact, sanitized JSON text of a value, for one-line display (control characters escaped)."""
    text = json.dumps(sanitize(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return escape_controls(text)


def console() -> Console:
    """A rich console on stdout with markup and highlighting off (trace text is data, not markup)."""
    from rich.console import Console

    return Console(markup=False, highlight=False, emoji=False, soft_wrap=False)
