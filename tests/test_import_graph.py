"""No import cycle among the modules of libs/ and apps/ (issue 32), read statically with ``ast``.

What counts as an import is documented in tests/import_graph.py and docs/decisions.md ("Import cycles"):
every import statement wherever it sits (function bodies included: one placed there to dodge a cycle still
is a cycle), literal ``importlib.import_module`` calls, not ``if TYPE_CHECKING:`` blocks. The tests on a
synthetic package below show the check can fail, and on what.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .import_graph import Edge, describe, find_cycles, import_edges, module_files

REPO = Path(__file__).resolve().parents[1]
ROOTS = sorted(REPO.glob("libs/*/src")) + sorted(REPO.glob("apps/*/src"))


@pytest.fixture(scope="module")
def repository_edges() -> list[Edge]:
    return import_edges(module_files(ROOTS))


def test_no_module_of_libs_or_apps_is_in_an_import_cycle(repository_edges: list[Edge]) -> None:
    cycles = find_cycles(repository_edges)
    message = "\n\n".join(describe(cycle, REPO) for cycle in cycles)
    assert cycles == [], f"import cycle(s), each import of the cycle on one line:\n{message}"


def test_the_repository_graph_holds_the_imports_it_should(repository_edges: list[Edge]) -> None:
    # the graph is not vacuous: every distribution is read, and imports at module level and inside
    # functions are both edges
    pairs = {(edge.source, edge.target): edge for edge in repository_edges}
    assert {root.parts[-2] for root in ROOTS} == {
        "stepfork-trace",
        "stepfork-replay",
        "stepfork-analysis",
        "stepfork",
        "stepfork-cli",
    }
    module_level = pairs[("stepfork.analysis.minimize._attempts", "stepfork.analysis._zygote.client")]
    assert not module_level.function
    in_function = pairs[("stepfork.analysis.minimize._minimize", "stepfork.analysis.minimize._attempts")]
    assert in_function.function
    assert ("stepfork.cli.commands.replay", "stepfork.cli.replay_report") in pairs
    assert len({edge.source for edge in repository_edges}) > 150


def _package(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return module_files([root])


def test_a_cycle_through_an_import_inside_a_function_is_found_and_named(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "def later():\n    from pkg.a import thing\n    return thing\n",
            "pkg/c.py": "import pkg.a\n",  # imports into the cycle, not part of it
        },
    )
    cycles = find_cycles(import_edges(modules))
    assert len(cycles) == 1
    assert [(edge.source, edge.target, edge.function) for edge in cycles[0]] == [
        ("pkg.a", "pkg.b", False),
        ("pkg.b", "pkg.a", True),
    ]
    text = describe(cycles[0], tmp_path)
    assert "pkg.a -> pkg.b (pkg/a.py:1)" in text
    assert "pkg.b -> pkg.a (pkg/b.py:2, in a function)" in text


def test_relative_imports_packages_and_literal_import_module_calls_are_edges(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "pkg/__init__.py": "from .sub import face\n",
            "pkg/sub/__init__.py": "from ._impl import face\n",
            "pkg/sub/_impl.py": (
                "import importlib\n\ndef face():\n    return importlib.import_module('pkg.tail')\n"
            ),
            "pkg/tail.py": "from . import sub\n",
        },
    )
    edges = {(edge.source, edge.target) for edge in import_edges(modules)}
    assert edges == {
        ("pkg", "pkg.sub"),
        ("pkg.sub", "pkg.sub._impl"),
        ("pkg.sub._impl", "pkg.tail"),
        ("pkg.tail", "pkg.sub"),
    }
    cycle = find_cycles(import_edges(modules))
    assert [edge.source for edge in cycle[0]] == ["pkg.sub", "pkg.sub._impl", "pkg.tail"]


def test_imports_for_type_checkers_only_and_of_other_packages_are_not_edges(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from typing import TYPE_CHECKING\nimport json\nfrom pkg import b\n",
            "pkg/b.py": (
                "import typing\nif typing.TYPE_CHECKING:\n    from pkg.a import A\nelse:\n    import pkg.c\n"
            ),
            "pkg/c.py": "",
        },
    )
    edges = {(edge.source, edge.target) for edge in import_edges(modules)}
    assert edges == {("pkg.a", "pkg.b"), ("pkg.b", "pkg.c")}
    assert find_cycles(import_edges(modules)) == []
