"""No command writes into or over a bundle, through the real CLI (docs/cli.md "Where outputs may go").

Every writer of a file (``export`` -o, ``export --otlp -o``) or of a bundle (``fork``, ``import``,
``record``, ``minimize``, ``redact``) refuses, with one line and exit 2, an output that is a bundle or lies
inside one (also through a symlink), a bundle output inside another bundle, and (``fork``, ``minimize``,
``redact``) an output that overlaps its input bundle, even with ``--overwrite``. Each refusal leaves both
bundles byte-identical and verifying. One rule: ``stepfork.trace._outputs``.

One case per command runs the real ``stepfork`` executable (each exit 2 and its one line from a process of
its own); the other cases prove the same wiring through the console script's ``main`` in this process.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import InProcess, Result, copy_quickstart, run_cli

_INSIDE = "is inside the bundle directory"
_OVERLAP = "overlaps the input bundle notify.sftrace"
_E = ("-e", "quickstart:run_agent")
_EXPECTED = "expected.json"

CASES: dict[str, tuple[tuple[str, ...], str]] = {
    "export-over-events": (
        ("export", "notify.sftrace", *_E, "-o", "notify.sftrace/events.jsonl", "--overwrite"),
        _INSIDE,
    ),
    "export-new-file": (("export", "notify.sftrace", *_E, "-o", "notify.sftrace/new_test.py"), _INSIDE),
    "export-symlink": (("export", "notify.sftrace", *_E, "-o", "link/new_test.py", "--overwrite"), _INSIDE),
    "export-otlp": (("export", "notify.sftrace", "--otlp", "-o", "other.sftrace/spans.json"), _INSIDE),
    "fork-over-input": (
        ("fork", "notify.sftrace", "--step", "3", *_E, "-o", "notify.sftrace", "--overwrite"),
        _OVERLAP,
    ),
    "fork-symlink-to-input": (
        ("fork", "notify.sftrace", "--step", "3", *_E, "-o", "link.sftrace", "--overwrite"),
        _OVERLAP,
    ),
    "fork-inside-input": (
        ("fork", "notify.sftrace", "--step", "3", *_E, "-o", "notify.sftrace/child.sftrace"),
        _OVERLAP,
    ),
    "fork-inside-other": (
        ("fork", "notify.sftrace", "--step", "3", *_E, "-o", "other.sftrace/child.sftrace"),
        _INSIDE,
    ),
    "import-inside": (("import", "spans.json", "-o", "other.sftrace/sub.sftrace"), _INSIDE),
    "import-symlink": (("import", "spans.json", "-o", "link/sub.sftrace"), _INSIDE),
    "record-inside": (
        ("record", "-o", "other.sftrace/in.sftrace", "--", "python", "quickstart.py"),
        _INSIDE,
    ),
    "minimize-inside": (
        ("minimize", "notify.sftrace", *_E, "-o", "other.sftrace/m.sftrace", "--expect-output", _EXPECTED),
        _INSIDE,
    ),
    "redact-inside": (("redact", "notify.sftrace", "-o", "other.sftrace/r.sftrace"), _INSIDE),
    "redact-symlink-to-input": (("redact", "notify.sftrace", "-o", "link.sftrace", "--overwrite"), _OVERLAP),
}

# one case per command through the real executable; the rest in-process (the same parser and command)
REAL = {
    "export-over-events",
    "fork-over-input",
    "import-inside",
    "record-inside",
    "minimize-inside",
    "redact-inside",
}
assert {case.split("-")[0] for case in REAL} == {case.split("-")[0] for case in CASES}


@pytest.fixture(scope="module")
def otlp_spans(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The quickstart bundle's OTLP JSON, written once per module by the real `stepfork export --otlp`;
    the import cases only read it (each gets a copy)."""
    work = tmp_path_factory.mktemp("otlp-source")
    copy_quickstart(work)
    made = run_cli("export", "notify.sftrace", "--otlp", "-o", "spans.json", cwd=work)
    assert made.code == 0, made.text
    return (work / "spans.json").read_bytes()


def _tree(bundle: Path) -> dict[str, bytes]:
    return {str(p.relative_to(bundle)): p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", list(CASES))
def test_no_command_writes_into_or_over_a_bundle(
    quickstart: Path,
    case: str,
    request: pytest.FixtureRequest,
    in_process: InProcess,
) -> None:
    args, reason = CASES[case]

    def stepfork(*argv: str) -> Result:
        if case in REAL:
            return run_cli(*argv, cwd=quickstart)
        return in_process(*argv, cwd=quickstart)

    shutil.copytree(quickstart / "notify.sftrace", quickstart / "other.sftrace")
    (quickstart / "link").symlink_to("notify.sftrace")
    (quickstart / "link.sftrace").symlink_to("notify.sftrace")
    if "spans.json" in args:
        (quickstart / "spans.json").write_bytes(request.getfixturevalue("otlp_spans"))
    bundles = [quickstart / "notify.sftrace", quickstart / "other.sftrace"]
    before = [_tree(b) for b in bundles]

    result = stepfork(*args)

    assert result.code == 2, result.text
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert reason in lines[0]
    assert "Traceback" not in result.text
    assert [_tree(b) for b in bundles] == before  # other.sftrace is a byte copy of notify.sftrace
    # the check, not the command under test: in-process in every case
    verified = in_process("validate", "notify.sftrace", "--verify-integrity", cwd=quickstart)
    assert verified.code == 0, verified.text
