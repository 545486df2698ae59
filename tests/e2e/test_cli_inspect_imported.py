"""``stepfork inspect`` of a bundle made by ``stepfork import``: the manifest records no duration (spans
carry none as a total), so the summary shows the span of the events' timestamps, as the HTML view does
(one summary: stepfork.analysis.inspection.summary.SummaryBuilder)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .conftest import run_cli

SECOND = 1_000_000_000  # ns


def test_an_imported_bundle_shows_the_duration_its_events_give(quickstart: Path) -> None:
    from stepfork.analysis.otlp import import_otlp

    exported = run_cli("export", "notify.sftrace", "--otlp", "-o", "run.otlp.json", cwd=quickstart)
    assert exported.code == 0, exported.text
    spans = json.loads((quickstart / "run.otlp.json").read_text(encoding="utf-8"))
    for resource in spans["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                if not span.get("parentSpanId"):  # the run's span ends 1.5 s later
                    span["endTimeUnixNano"] = str(int(span["endTimeUnixNano"]) + 3 * SECOND // 2)
    (quickstart / "run.otlp.json").write_text(json.dumps(spans), encoding="utf-8")
    (trace,) = import_otlp(quickstart / "run.otlp.json")
    trace.save(quickstart / "imported.sftrace")
    assert trace.manifest.totals.duration_ms is None

    data = json.loads(run_cli("inspect", "imported.sftrace", "--json", cwd=quickstart).out)
    assert 1500 <= data["duration_ms"] < 1600, data
    human = run_cli("inspect", "imported.sftrace", cwd=quickstart)
    assert re.search(r"^Duration: +1[5]\d\d ms$", human.out, re.MULTILINE), human.out
