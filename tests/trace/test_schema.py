"""JSON Schemas of schema 0.1 and the generated docs/schema files (issue 2 item 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stepfork.trace.schema import (
    event_json_schema,
    main,
    manifest_json_schema,
    render_schemas,
    stale_schemas,
    trace_json_schema,
)

DOCS_SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema"


def test_docs_schema_is_up_to_date() -> None:
    # regenerate with: hatch run schema
    assert stale_schemas(DOCS_SCHEMA) == []


def test_check_exits_1_when_a_file_is_stale_or_missing_and_0_when_fresh(tmp_path: Path) -> None:
    assert main([str(tmp_path), "--check"]) == 1
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path), "--check"]) == 0
    (tmp_path / "manifest.schema.json").write_text("{}\n")
    assert main([str(tmp_path), "--check"]) == 1


def test_the_module_runs_as_a_script(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stepfork.trace.schema", str(tmp_path), "--check"],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 1


def test_schema_files_have_sorted_keys_and_a_final_newline() -> None:
    for name, data in render_schemas().items():
        assert data.endswith(b"}\n"), name
        assert (
            data
            == (json.dumps(json.loads(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
        )


def test_event_schema_discriminates_the_eight_types_and_forbids_extra_keys() -> None:
    schema = event_json_schema()
    assert sorted(schema["discriminator"]["mapping"]) == sorted(
        [
            "run_start",
            "llm_request",
            "llm_response",
            "tool_call",
            "tool_result",
            "state_change",
            "error",
            "run_end",
        ]
    )
    assert all(
        d["additionalProperties"] is False for d in schema["$defs"].values() if d.get("type") == "object"
    )


def test_manifest_schema_requires_the_identity_fields_and_pins_the_version() -> None:
    schema = manifest_json_schema()
    assert {"run_id", "agent_name", "created_at"} <= set(schema["required"])
    assert schema["properties"]["schema_version"]["const"] == "0.1"
    assert schema["additionalProperties"] is False


def test_trace_schema_holds_the_events_list() -> None:
    assert "events" in trace_json_schema()["properties"]
