"""JSON Schema (draft 2020-12, as pydantic generates it) of each schema 0.1 file, and the docs/schema writer.

``python -m stepfork.trace.schema OUTDIR`` writes one ``<name>.schema.json`` per schema into OUTDIR (sorted
keys, 2-space indent, final newline); ``--check`` writes nothing and exits 1 when a file is missing or
differs (stale), 0 otherwise. The schemas describe what the models accept when reading; the byte layout of
each file is in docs/format.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from stepfork.trace.models import EVENT_ADAPTER, IntegrityRecord, RedactionManifest, TraceManifest

_ID_BASE = "https://stepfork.dev/schema/0.1/"


def _titled(schema: dict[str, Any], name: str, title: str) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": _ID_BASE + name,
        **schema,
        "title": title,
    }


def event_json_schema() -> dict[str, Any]:
    """JSON Schema of one events.jsonl line: the union of the 8 event types, discriminated on ``type``."""
    return _titled(EVENT_ADAPTER.json_schema(), "event.schema.json", "Stepfork event (schema 0.1)")


def manifest_json_schema() -> dict[str, Any]:
    """JSON Schema of manifest.json (notes 1.2)."""
    return _titled(
        TraceManifest.model_json_schema(), "manifest.schema.json", "Stepfork manifest (schema 0.1)"
    )


def redactions_json_schema() -> dict[str, Any]:
    """JSON Schema of redactions.json (notes 1.7)."""
    return _titled(
        RedactionManifest.model_json_schema(), "redactions.schema.json", "Stepfork redactions (schema 0.1)"
    )


def integrity_json_schema() -> dict[str, Any]:
    """JSON Schema of integrity.json (notes 2.4)."""
    return _titled(
        IntegrityRecord.model_json_schema(), "integrity.schema.json", "Stepfork integrity (schema 0.1)"
    )


def trace_json_schema() -> dict[str, Any]:
    """JSON Schema of an in-memory :class:`~stepfork.trace.bundle.Trace` (manifest fields, events...)."""
    from stepfork.trace.bundle import Trace

    return _titled(Trace.model_json_schema(), "trace.schema.json", "Stepfork trace (schema 0.1)")


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "event.schema.json": event_json_schema,
    "manifest.schema.json": manifest_json_schema,
    "redactions.schema.json": redactions_json_schema,
    "integrity.schema.json": integrity_json_schema,
    "trace.schema.json": trace_json_schema,
}


def render_schemas() -> dict[str, bytes]:
    """The bytes of every schema file by file name: sorted keys, 2-space indent, raw UTF-8, final newline."""
    return {
        name: (json.dumps(build(), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
        for name, build in SCHEMAS.items()
    }


def stale_schemas(outdir: Path) -> list[str]:
    """Names of the schema files in ``outdir`` that are missing or differ from :func:`render_schemas`."""
    stale = []
    for name, data in render_schemas().items():
        path = outdir / name
        if not path.is_file() or path.read_bytes() != data:
            stale.append(name)
    return stale


def write_schemas(outdir: Path) -> list[Path]:
    """Write every schema file into ``outdir`` (created if needed); return the paths written."""
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in render_schemas().items():
        (outdir / name).write_bytes(data)
        written.append(outdir / name)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``OUTDIR [--check]``. Returns 0, or 1 when ``--check`` finds stale files."""
    parser = argparse.ArgumentParser(prog="python -m stepfork.trace.schema", description=__doc__)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 when a schema file is missing or stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_schemas(args.outdir)
        for name in stale:
            print(f"stale: {args.outdir / name}", file=sys.stderr)
        return 1 if stale else 0
    for path in write_schemas(args.outdir):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
