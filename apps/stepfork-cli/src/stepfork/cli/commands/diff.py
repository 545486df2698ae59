"""``stepfork diff BASELINE CANDIDATE [--json] [--ignore PATH]... [--strict] [--show-ignored]
[--noise-rules FILE]...`` (spec/cli-reference.txt "diff"; volatile values: issue 12; noise rules:
issue 28, stepfork.replay.noise).

Exit codes: 0 behaviour equivalent, 1 meaningful behavioural difference, 2 invalid or unreadable input
(with ``--json`` also every command's error object on stdout, ``{"error": "integrity_mismatch" |
"unreadable_trace", "message", "exit_code": 2}``: :func:`stepfork.cli.output.with_json_errors`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import typer


def diff(
    baseline: Path = typer.Argument(..., help="Baseline .sftrace directory bundle."),
    candidate: Path = typer.Argument(..., help="Candidate .sftrace directory bundle."),
    as_json: bool = typer.Option(False, "--json", help="Emit machine-readable JSON (no Rich markup)."),
    ignore: list[str] | None = typer.Option(
        None,
        "--ignore",
        metavar="PATH",
        help="Also ignore differences at PATH ([*], *, ** wildcards). Repeatable.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Ignore nothing: no noise rule, no renaming of ids, not even --ignore."
    ),
    show_ignored: bool = typer.Option(False, "--show-ignored", help="List the ignored differences."),
    noise_rules: list[Path] | None = typer.Option(
        None,
        "--noise-rules",
        metavar="FILE",
        help="More noise rules: a TOML file of [[rule]] tables (docs/diff.md). Repeatable.",
    ),
) -> None:
    """Compare the behavior of two recorded agent runs."""
    from stepfork.analysis.diff import check_path_patterns, diff_traces
    from stepfork.cli.output import fail, sanitize_text, shown
    from stepfork.replay.noise import NoiseRules
    from stepfork.trace import TraceError, TraceIntegrityError, load_verified_trace

    try:  # a bad option first, before either bundle is read
        check_path_patterns(ignore or ())
        NoiseRules.with_files(noise_rules or ())
    except ValueError as exc:
        fail(sanitize_text(str(exc)), 2, error="invalid_option")
    loaded = []
    for role, path in (("baseline", baseline), ("candidate", candidate)):
        try:  # each side on its own, so the message names the one that cannot be read
            loaded.append(load_verified_trace(path))
        except TraceIntegrityError as exc:  # the one line every command gives (issue 13)
            fail(sanitize_text(str(exc)), 2, error="integrity_mismatch")
        except (TraceError, OSError) as exc:
            why = sanitize_text(str(exc), keep=(path, shown(path)))
            fail(f"Unreadable {role} bundle {shown(path)}: {why}", 2, error="unreadable_trace")
    base, cand = loaded
    if base.agent_name != cand.agent_name:
        typer.echo(
            f"Warning: the two runs are of different agents (baseline {sanitize_text(base.agent_name)!r}, "
            f"candidate {sanitize_text(cand.agent_name)!r}); the comparison may not mean much.",
            err=True,
        )
    result = diff_traces(
        base,
        cand,
        ignore=ignore or (),
        strict=strict,
        show_ignored=show_ignored,
        noise_rules=noise_rules or (),
    )
    # the paths as the user gave them (diff_traces of loaded traces has none)
    result = result.model_copy(
        update={
            "baseline": result.baseline.model_copy(update={"path": str(baseline)}),
            "candidate": result.candidate.model_copy(update={"path": str(candidate)}),
        }
    )
    _print(result, as_json=as_json)


def _print(result: Any, *, as_json: bool) -> NoReturn:
    """Print the diff with the escaping every command applies to trace text: each report line through
    ``sanitize_text`` (a name holding ESC or a newline shows as ``\\x1b`` / ``\\n``), the JSON with
    the terminal controls json leaves raw (C1, bidi overrides) as ``\\uXXXX`` escapes; exit 0 or 1."""
    from stepfork.cli.colour import echo
    from stepfork.cli.output import escape_json_controls, sanitize_text

    if as_json:
        typer.echo(escape_json_controls(json.dumps(result.to_dict(), ensure_ascii=False, indent=2)))
    else:
        echo("\n".join(sanitize_text(line) for line in result.lines()))
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    """Add the ``diff`` command to ``app``."""
    app.command("diff")(diff)
