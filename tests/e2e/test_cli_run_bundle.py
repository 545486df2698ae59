"""``stepfork run TEST --bundle PATH`` replays PATH, and a bundle the replay would refuse is never a caught
regression (spec cli-reference.txt "run": ``--bundle <path>`` names the
bundle instead of reading TRACE_PATH from the test)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from stepfork.trace import load_trace, save_trace

from ..conftest import as_legacy_bundle
from .conftest import QuickstartExport, run_cli


def _ups_bundle(quickstart: Path) -> Path:
    """A valid bundle of the quickstart run in which the order ships with UPS, not FedEx."""
    trace = load_trace(quickstart / "notify.sftrace")
    events = []
    for event in trace.events:
        if str(event.type) == "tool_result" and event.name == "order_status":
            event = event.model_copy(update={"output": {**event.output, "carrier": "UPS"}})
        events.append(event)
    target = quickstart / "ups.sftrace"
    save_trace(trace.model_copy(update={"events": events}), target)
    return target


def test_the_bundle_option_is_the_bundle_the_test_replays(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    _ups_bundle(quickstart)
    own = run_cli("run", "test_fixed.py", "--json", cwd=quickstart)
    assert json.loads(own.out)["verdict"] == "passed", own.text
    other = run_cli("run", "test_fixed.py", "--bundle", "ups.sftrace", "--json", cwd=quickstart)
    receipt = json.loads(other.out)
    assert (other.code, receipt["verdict"], receipt["bundle"]) == (1, "failed", "ups.sftrace"), other.text
    assert 'behavior mismatch at \'carrier\': expected "FedEx", got "UPS"' in receipt["detail"]


def test_the_bundle_option_replays_when_the_tests_own_bundle_is_gone(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    shutil.move(quickstart / "notify.sftrace", quickstart / "moved.sftrace")
    result = run_cli("run", "test_fixed.py", "--bundle", "moved.sftrace", "--json", cwd=quickstart)
    receipt = json.loads(result.out)
    assert (result.code, receipt["verdict"], receipt["bundle"]) == (0, "passed", "moved.sftrace"), result.text


def test_a_bundle_missing_when_the_test_replays_is_could_not_execute(quickstart: Path) -> None:
    """The runner's pre-check reads TRACE_PATH; a test whose replay then finds no bundle stopped before
    replaying (``stepfork: trace bundle not found``): could_not_execute, never a caught regression."""
    (quickstart / "test_gone.py").write_text(
        "from pathlib import Path\n"
        "from stepfork.export import run_regression_case\n"
        "HERE = Path(__file__).resolve().parent\n"
        "TRACE_PATH = HERE / 'notify.sftrace'\n"
        "IMPORT_ROOT = HERE / '.'\n"
        "ENTRYPOINT = 'quickstart:run_agent_fixed'\n\n\n"
        "def test_gone() -> None:\n"
        "    run_regression_case(trace_path=HERE / 'gone.sftrace', entrypoint=ENTRYPOINT, import_root=HERE,\n"
        "                        expectation=None, has_expectation=False)\n",
        encoding="utf-8",
    )
    result = run_cli("run", "test_gone.py", "--json", cwd=quickstart)
    receipt = json.loads(result.out)
    assert (result.code, receipt["verdict"], receipt["reason"]) == (2, "could_not_execute", "bundle_missing")
    assert "gone.sftrace" in receipt["detail"]


def test_a_legacy_bundle_cut_at_a_line_boundary_is_could_not_execute(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    bundle = as_legacy_bundle(quickstart / "notify.sftrace")  # nothing says the file changed
    lines = (bundle / "events.jsonl").read_bytes().splitlines(keepends=True)
    (bundle / "events.jsonl").write_bytes(b"".join(lines[:3]))
    result = run_cli("run", "test_fixed.py", "--json", cwd=quickstart)
    receipt = json.loads(result.out)
    assert (result.code, receipt["verdict"], receipt["reason"]) == (
        2,
        "could_not_execute",
        "bundle_unreadable",
    )
    assert "event_count_mismatch" in receipt["detail"] or "manifest.json counts" in receipt["detail"]
    check = run_cli("check", ".", "--entrypoint", "quickstart:run_agent_fixed", cwd=quickstart)
    assert "COULD NOT EXECUTE" in check.out, check.text


def test_run_and_the_bundle_option_refuse_a_tampered_bundle_and_an_invalid_one(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    tampered = quickstart / "tampered.sftrace"
    shutil.copytree(quickstart / "notify.sftrace", tampered)
    events = tampered / "events.jsonl"
    events.write_text(events.read_text().replace('"carrier":"FedEx"', '"carrier":"DHL"  '), encoding="utf-8")
    _rehash(tampered)
    result = run_cli("run", "test_fixed.py", "--bundle", "tampered.sftrace", "--json", cwd=quickstart)
    receipt = json.loads(result.out)
    assert (result.code, receipt["reason"]) == (2, "bundle_unreadable"), result.text
    assert "payload_hash_mismatch" in receipt["detail"]


def _rehash(bundle: Path) -> None:
    """Rewrite integrity.json for the files as they are now (what a careless edit tool does)."""
    import hashlib

    record = json.loads((bundle / "integrity.json").read_text())
    for name in record["files"]:
        record["files"][name] = hashlib.sha256((bundle / name).read_bytes()).hexdigest()
    (bundle / "integrity.json").write_text(json.dumps(record))
