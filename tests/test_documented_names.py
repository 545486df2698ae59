"""Every documented import path of Stepfork works (issue 32: stepfork.analysis laid out by capability, its
public paths kept).

The names are collected, not listed by hand: the ``import`` statements of every code block in docs/*.md and
README.md, of examples/ (scripts and notebooks), every ``stepfork.analysis...`` path the docs' prose names
(``stepfork.analysis.forking.read_fork_info``), and every ``__all__`` of stepfork.analysis and of the facade
(libs/stepfork), the packages that re-export it. A doc naming a moved module fails here.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
ANALYSIS = REPO / "libs" / "stepfork-analysis" / "src"
FACADE = REPO / "libs" / "stepfork" / "src"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
ANALYSIS_PATH = re.compile(r"\bstepfork\.analysis(?:\.[A-Za-z_]\w*)+")


def _documents() -> list[Path]:
    return [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]


def _code() -> Iterator[tuple[str, str]]:
    """``(where, source)`` of every code block of the docs and README and of every example."""
    for doc in _documents():
        for number, match in enumerate(FENCE.finditer(doc.read_text(encoding="utf-8")), 1):
            yield f"{doc.relative_to(REPO)} block {number}", match.group(1)
    for script in sorted((REPO / "examples").rglob("*.py")):
        yield str(script.relative_to(REPO)), script.read_text(encoding="utf-8")
    for notebook in sorted((REPO / "examples").rglob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells, 1):
            if cell["cell_type"] == "code":
                yield f"{notebook.relative_to(REPO)} cell {number}", "".join(cell["source"])


def _documented_imports() -> list[tuple[str, str, str | None]]:
    """``(where, module, name or None)`` of each ``stepfork`` import the documentation shows."""
    found = []
    for where, source in _code():
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a shell block, a table
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == "stepfork":
                    found += [(where, node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [(where, a.name, None) for a in node.names if a.name.split(".")[0] == "stepfork"]
    return found


def _prose_paths() -> list[tuple[str, str]]:
    """``(where, dotted path)`` of every ``stepfork.analysis...`` path the docs and README name."""
    found = []
    for doc in _documents():
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            found += [(f"{doc.relative_to(REPO)}:{number}", m.group(0)) for m in ANALYSIS_PATH.finditer(line)]
    return found


def _all_names(root: Path, package: str) -> list[tuple[str, str]]:
    """``(module, name)`` of each name in the ``__all__`` of every module of ``package`` under ``root``."""
    found = []
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = [getattr(target, "id", None) for target in getattr(node, "targets", [])]
            if isinstance(node, ast.Assign) and "__all__" in targets:
                try:
                    names = ast.literal_eval(node.value)
                except ValueError:  # computed (stepfork.analysis: sorted(_EXPORTS)): ask the module
                    names = importlib.import_module(module).__all__
                found += [(module, name) for name in names]
    return found


def _resolve(path: str) -> Any:
    """The object a dotted path names: the longest prefix that imports, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(path)


DOCUMENTED = _documented_imports()
PROSE = _prose_paths()
ALL_NAMES = _all_names(ANALYSIS, "stepfork.analysis") + _all_names(FACADE, "stepfork")


def test_the_documentation_is_read() -> None:
    # the collections are not empty: a change of the docs' format must not make these tests vacuous
    modules = {module for _, module, _ in DOCUMENTED}
    assert {"stepfork", "stepfork.analysis", "stepfork.inspect"} <= modules
    assert any(path.startswith("stepfork.analysis.forking") for _, path in PROSE)
    assert {"stepfork.analysis", "stepfork.analysis.diff", "stepfork.export"} <= {m for m, _ in ALL_NAMES}


@pytest.mark.parametrize(
    ("where", "module", "name"), DOCUMENTED, ids=[f"{w}:{m}:{n}" for w, m, n in DOCUMENTED]
)
def test_every_import_the_documentation_shows_works(where: str, module: str, name: str | None) -> None:
    imported = importlib.import_module(module)
    if name is not None and name != "*":
        assert getattr(imported, name) is not None, f"{where}: from {module} import {name}"


@pytest.mark.parametrize(("where", "path"), PROSE, ids=[f"{w}:{p}" for w, p in PROSE])
def test_every_stepfork_analysis_path_the_docs_name_exists(where: str, path: str) -> None:
    try:
        _resolve(path)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{where} names {path}, which does not exist: {exc}")


@pytest.mark.parametrize(("module", "name"), ALL_NAMES, ids=[f"{m}.{n}" for m, n in ALL_NAMES])
def test_every_name_an_all_lists_is_importable(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{module}.__all__ lists {name!r}"


def test_the_top_level_names_are_the_faces_own_objects() -> None:
    # `from stepfork.analysis import X` gives the object of a public module (a capability's face, or
    # view.dataframes), never one named through a private module
    import stepfork.analysis

    for name in stepfork.analysis.__all__:
        owner = importlib.import_module(stepfork.analysis._EXPORTS[name])
        assert not any(part.startswith("_") for part in owner.__name__.split(".")), name
        assert getattr(stepfork.analysis, name) is getattr(owner, name), name
