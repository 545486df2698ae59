"""The repository passes its tests from a plain clone: nothing in it reads the ``shared/`` folder that the
development machines keep beside the clone (issue 13). The reference bundles the tests use live in
tests/interop/data/reference-bundles with their PROVENANCE.md."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a path that climbs out of the repository into a sibling shared/ folder, in any spelling
# (spelled in parts so that this file does not match itself)
_UP, _SHARED = r"\.\.", "shared"
OUTSIDE = re.compile(
    rf"{_UP}/{_SHARED}|[\"']{_UP}[\"']\s*/\s*[\"']{_SHARED}[\"']|[\"']{_SHARED}[\"']\s*/\s*[\"']interop[\"']"
)
CHECKED = ("tests", "examples", "docs", "benchmarks", "scripts", ".ci", "libs", "apps")


def test_nothing_reads_the_shared_folder_beside_the_clone() -> None:
    offenders = []
    for top in CHECKED:
        for path in (REPO / top).rglob("*"):
            if not path.is_file() or path.suffix not in {".py", ".md", ".toml", ".txt", ""}:
                continue
            if "data" in path.relative_to(REPO).parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            lines = enumerate(text.splitlines(), 1)
            offenders += [f"{path.relative_to(REPO)}:{n}" for n, line in lines if OUTSIDE.search(line)]
    assert offenders == [], "these read the shared folder beside the clone: " + ", ".join(offenders)


def test_the_reference_bundles_are_in_the_repository() -> None:
    data = REPO / "tests" / "interop" / "data" / "reference-bundles"
    assert (data / "PROVENANCE.md").is_file()
    assert len(sorted(data.rglob("*.sftrace"))) == 9
