"""Parsing of options shared by several commands: ``--raise-as TYPE=MODULE:CLASS`` (replay, export),
``--allow-host HOST[:PORT]`` (replay, export, fork, minimize), ``--allow-command NAME`` (replay, export,
fork, minimize, check),
``--ordering``, ``--ignore``.

A bad value is refused here, before any bundle is read or any module imported, with one line on stderr and
exit 2, as the commands refuse other bad options (spec/cli-reference.txt, exit code conventions).
"""

from __future__ import annotations

from typing import Any

RAISE_AS_HELP = (
    "Raise a recorded failure of error type TYPE (qualified or short) as your exception class "
    "MODULE:CLASS, imported like the entrypoint, so your agent's except clause runs. Repeatable."
)

ALLOW_NETWORK_HELP = (
    "Leave the network open during a frozen, forbidden or manual replay (sealed by default: an "
    "uninstrumented outbound connection fails with network_sealed)."
)
ALLOW_HOST_HELP = (
    "Let connections to HOST (a name or an address: every port), HOST:PORT (one port; IPv6 in brackets, "
    "[::1]:8000) or a Unix socket's PATH through the sealed network; loopback and private addresses are "
    "sealed too. Repeatable."
)
ALLOW_COMMAND_HELP = (
    "Let the replay start the program NAME (or the file PATH) as a child process, unsealed: a frozen, "
    "forbidden or manual replay refuses every child the seal cannot reach (not Python) with "
    "child_process_refused. Repeatable."
)

_FORM = "expected TYPE=MODULE:CLASS, for example app.errors.RateLimited=app.errors:RateLimited"


def _dotted(text: str, *, allow_locals: bool = False) -> bool:
    """True when every dot-separated part of ``text`` is a Python identifier (or ``<locals>``, the part a
    class defined inside a function has in its recorded qualified name)."""
    return all(part.isidentifier() or (allow_locals and part == "<locals>") for part in text.split("."))


def _problem(value: str) -> str | None:
    """Why ``value`` is not ``TYPE=MODULE:CLASS``, or None."""
    error_type, equals, target = value.partition("=")
    if not equals:
        return "no '=' between TYPE and MODULE:CLASS"
    if not error_type or not _dotted(error_type, allow_locals=True):
        return "TYPE must be a recorded error type name (dotted identifiers)"
    module, colon, attribute = target.partition(":")
    if not colon or not module or not _dotted(module):
        return "MODULE must be a dotted module path, followed by ':'"
    if not attribute or not _dotted(attribute):
        return "CLASS must be a class name (or dotted attribute path) in MODULE"
    return None


def parse_raise_as(values: list[str] | None) -> dict[str, str] | None:
    """Parse the repeated ``--raise-as TYPE=MODULE:CLASS`` values into ``{TYPE: "MODULE:CLASS"}``.

    Args:
        values: the option's values as typed (None or empty when not given).

    Returns:
        The mapping in the order given, or None when the option was not given.

    Raises:
        typer.Exit: (2), after printing one line, for a value of another shape or a TYPE given twice.
    """
    if not values:
        return None
    from stepfork.cli.output import fail, sanitize_text

    mapping: dict[str, str] = {}
    for value in values:
        problem = _problem(value)
        if problem is not None:
            fail(f"Invalid --raise-as {sanitize_text(repr(value))}: {problem}; {_FORM}.", 2)
        error_type, _, target = value.partition("=")
        if error_type in mapping:
            fail(f"--raise-as names the error type {error_type!r} twice; give each TYPE once.", 2)
        mapping[error_type] = target
    return mapping


def parse_allow_hosts(values: list[str] | None) -> list[str]:
    """The ``--allow-host`` values, normalized (``HOST`` or ``HOST:PORT``, IPv6 in brackets, duplicates
    dropped), or one line on stderr and exit 2 for a malformed one (``stepfork.replay.network.
    parse_allowed_host``)."""
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.replay.network import format_host, parse_allowed_host

    allowed: list[str] = []
    for value in values or []:
        try:
            allowed.append(format_host(*parse_allowed_host(value)))
        except ValueError as exc:
            fail(f"--allow-host: {sanitize_text(str(exc))}", 2)
    return list(dict.fromkeys(allowed))


def parse_allow_commands(values: list[str] | None) -> list[str]:
    """The ``--allow-command`` values (a program's name or a path; duplicates dropped), or one line on
    stderr and exit 2 for a malformed one (``stepfork.replay.network.parse_allowed_command``)."""
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.replay.network import parse_allowed_command

    allowed: list[str] = []
    for value in values or []:
        try:
            allowed.append(parse_allowed_command(value))
        except ValueError as exc:
            fail(f"--allow-command: {sanitize_text(str(exc))}", 2)
    return list(dict.fromkeys(allowed))


def describe_raise_as(mapping: dict[str, str]) -> str:
    """``TYPE=MODULE:CLASS, ...`` for a report header (the values were validated: no control text)."""
    return ", ".join(f"{error_type}={target}" for error_type, target in mapping.items())


ORDERING_VALUES = ("auto", "strict", "concurrent", "unordered")

ORDERING_HELP = (
    "Which recorded call a live call is matched against: auto (default: recorded order, except among "
    "calls the recording proves concurrent: thread pools, asyncio.gather), strict (recorded order "
    "always), concurrent (overlapping sibling calls in any order), unordered (consecutive sibling calls "
    "in any order)."
)


def ordering_option() -> Any:
    """The ``--ordering`` option (replay, export, minimize, fork): ``Annotated[str, ordering_option()]``."""
    import typer

    return typer.Option("--ordering", metavar="|".join(ORDERING_VALUES), help=ORDERING_HELP)


def parse_ordering(value: str) -> str:
    """Return ``value`` as one of :data:`ORDERING_VALUES`, in any letter case (docs/cli.md).

    Raises:
        typer.Exit: (2), after printing one line naming the valid orderings.
    """
    return parse_choice("--ordering", value, ORDERING_VALUES)


ISOLATION_VALUES = ("worker", "bundle")
"""The ``stepfork check --isolation`` values (stepfork.analysis.check_corpus)."""


def parse_choice(option: str, value: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` as the one of ``choices`` it names in any letter case (docs/cli.md: fixed-value
    options accept any letter case).

    Raises:
        typer.Exit: (2), after printing one line naming ``option`` and its choices.
    """
    folded = value.casefold()
    for choice in choices:
        if choice == folded:
            return choice
    from stepfork.cli.output import fail, sanitize_text

    expected = ", ".join(choices)
    fail(f"Invalid {option} {sanitize_text(repr(value))}; expected one of {expected}.", 2)


IGNORE_HELP = (
    "Accept input differences of the call TOOL (a tool name, or provider/model) at the JSON path PATH "
    "(a clock or random id the agent makes; [*], *, ** wildcards), reported as ignored; a PATH alone "
    "($.generated_at) leaves that path of the run's output uncompared. Repeatable."
)


def ignore_option() -> Any:
    """The ``--ignore TOOL:PATH`` option of replay and export (``Annotated[list[str] | None, ...]``)."""
    import typer

    return typer.Option("--ignore", metavar="[TOOL:]PATH", help=IGNORE_HELP)


def parse_ignore(values: list[str] | None) -> dict[str, list[str]] | None:
    """Parse repeated ``--ignore TOOL:$.path`` values into ``{TOOL: [paths]}`` (None when none is given; a
    value that is a path alone, ``$.generated_at``, is the run output's: :func:`parse_ignore_output`).

    The label ends at the first ``:$`` (labels may hold ``:``, paths start with ``$``). Whether the label
    names a recorded call is checked once the bundle is read (``stepfork.replay.ignoring``).

    Raises:
        typer.Exit: (2), after printing one line, for a value without ``TOOL:$...`` or a malformed path
            (a stray ``[``: ``$.[``, ``$.items[x]``), as ``diff --ignore``.
    """
    if not values:
        return None
    from stepfork.cli.output import fail, sanitize_text

    mapping: dict[str, list[str]] = {}
    for value in values:
        if value.startswith("$"):  # a path of the run's output: parse_ignore_output's
            continue
        cut = value.find(":$")
        if cut <= 0:
            fail(
                f"Invalid --ignore {sanitize_text(repr(value))}: expected TOOL:PATH with a JSON path, "
                "for example search:$.requested_at.",
                2,
                error="invalid_option",
            )
        _check_path(value, value[cut + 1 :])
        mapping.setdefault(value[:cut], []).append(value[cut + 1 :])
    return mapping or None


def _check_path(value: str, path: str) -> None:
    from stepfork.replay.ignoring import path_problem

    problem = path_problem(path)
    if problem is not None:
        from stepfork.cli.output import fail, sanitize_text

        fail(f"Invalid --ignore {sanitize_text(repr(value))}: {problem}.", 2, error="invalid_option")


def parse_ignore_output(values: list[str] | None) -> list[str]:
    """The ``--ignore PATH`` values that name a path of the run's output (a JSON path alone,
    ``$.generated_at``; NEWCOMER finding 13), in order; ``TOOL:PATH`` values are :func:`parse_ignore`'s.

    Raises:
        typer.Exit: (2), after printing one line, for a malformed path (``$.[``).
    """
    paths = [value for value in values or () if value.startswith("$")]
    for path in paths:
        _check_path(path, path)
    return paths
