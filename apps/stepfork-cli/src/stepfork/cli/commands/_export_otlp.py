"""``stepfork export BUNDLE --otlp -o run.otlp.json [--otlp-endpoint URL] [--convention genai|openinference]
[--entrypoint M:F]`` (issue 15, docs/import.md "Export").

Exit 0 written/sent; 1 when OUT exists without --overwrite, the write fails or the receiver refuses the
spans; 2 for bad input (unreadable bundle, unknown convention, no destination, a replay that cannot run).
"""

from __future__ import annotations

from pathlib import Path

import typer

_EXIT_1_CODES = frozenset({"already_exists", "write_failed", "send_failed"})


def export_otlp_command(
    path: Path,
    output: Path | None,
    endpoint: str | None,
    convention: str,
    entrypoint: str | None,
    *,
    overwrite: bool,
) -> None:
    """Run the OTLP export and print what was written or sent; exits with the codes above."""
    from stepfork.cli.output import fail, sanitize_text

    if convention not in ("genai", "openinference"):
        fail(f"Invalid --convention {convention}: expected genai or openinference.", 2)
    if output is None and endpoint is None:
        fail("--otlp needs --output FILE (OTLP/JSON) or --otlp-endpoint URL.", 2)
    try:
        from stepfork.analysis.otlp.bundle_export import OtlpExportError, export_otlp
    except ImportError as exc:
        fail(f"OTLP export needs the otel extra: pip install 'stepfork-analysis[otel]' ({exc})", 2)
    try:
        spans = export_otlp(
            path,
            output=output,
            endpoint=endpoint,
            convention=convention,
            entrypoint=entrypoint,
            overwrite=overwrite,
        )
    except OtlpExportError as exc:
        fail(sanitize_text(str(exc)), 1 if exc.code in _EXIT_1_CODES else 2)
    except ImportError as exc:  # the OTel SDK is imported when the spans are built
        if not (exc.name or "").startswith(("opentelemetry", "google")):
            raise
        fail(f"OTLP export needs the otel extra: pip install 'stepfork-analysis[otel]' ({exc})", 2)
    what = "replay of the run" if entrypoint else "run"
    if output is not None:
        typer.echo(f"Wrote {output} ({len(spans)} spans, {convention}, the {what})")
    if endpoint is not None:
        typer.echo(f"Sent {len(spans)} spans to {endpoint} ({convention}, the {what})")
