"""examples/notebook/explore_runs.ipynb runs top to bottom in a real kernel (nbclient) and shows what it
says: the trace's rich view, the events DataFrame, the per-kind counts, the run row, the diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]


def _text(cell: dict) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        data = output.get("data", {})
        parts.append(data.get("text/plain", ""))
    return "".join(parts)


def _html(cell: dict) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.get("outputs", []))


def test_the_example_notebook_runs_and_shows_the_run(tmp_path: Path) -> None:
    work = tmp_path / "examples"
    shutil.copytree(REPO / "examples" / "notebook", work / "notebook")
    shutil.copytree(
        REPO / "examples" / "quickstart" / "notify.sftrace", work / "quickstart" / "notify.sftrace"
    )
    notebook = nbformat.read(work / "notebook" / "explore_runs.ipynb", as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(work / "notebook")}}
    ).execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(o.get("output_type") != "error" for c in code for o in c.get("outputs", []))
    trace_view = _html(code[1])
    assert "notify-agent" in trace_view
    assert "order_status" in trace_view
    assert '<iframe sandbox="allow-scripts"' in trace_view  # the full view a click away
    assert "order_status" in _text(code[2])
    assert "offset_ms" in _html(code[2])
    assert _text(code[3]).strip() == "{'llm': 2, 'run': 2, 'tool': 2}"
    assert "'agent_name': 'notify-agent'" in _text(code[4])
    assert "'integrity': 'verified'" in _text(code[4])
    assert _text(code[5]).startswith("True")
    assert "EQUIVALENT" in _html(code[5])
