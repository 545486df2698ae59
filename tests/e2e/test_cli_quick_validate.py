"""``stepfork validate`` of a clean bundle is answered before typer and pydantic load (issue 31), and says
exactly what the typer command says; every other case is the typer command's.

``stepfork --debug validate ...`` never takes the quick path (an option before the command), so it is the
reference here: same stdout, stderr and exit code, bundle by bundle, in both modes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import QUICKSTART, REFERENCE, cli_env, run_cli, stepfork_executable

BUNDLES = [
    QUICKSTART / "notify.sftrace",  # proven quickly
    REFERENCE / "tests/golden/successful_run.sftrace",  # proven quickly
    REFERENCE / "tests/golden/partial_run.sftrace",  # strict: issues; --partial: proven quickly
    REFERENCE / "tests/golden/diff_changed.sftrace",  # a status_mismatch warning: the typer command
]


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
@pytest.mark.parametrize("options", [[], ["--partial"]], ids=["strict", "partial"])
def test_the_quick_answer_is_the_typer_commands_answer(bundle: Path, options: list[str]) -> None:
    quick = run_cli("validate", *options, bundle)
    typer = run_cli("--debug", "validate", *options, bundle)
    assert (quick.code, quick.out, quick.err) == (typer.code, typer.out, typer.err)


def test_a_bundle_made_by_stepfork_import_keeps_its_warnings(tmp_path: Path) -> None:
    from stepfork.cli._quick import IMPORT_FILE
    from stepfork.replay.imported import IMPORT_EXTENSION

    assert f"{IMPORT_EXTENSION}.json" == IMPORT_FILE  # the file whose warnings only the typer command reads
    bundle = tmp_path / "imported.sftrace"
    shutil.copytree(QUICKSTART / "notify.sftrace", bundle)
    (bundle / IMPORT_FILE).write_text('{"format": "unknown"}\n', encoding="utf-8")
    quick = run_cli("validate", bundle)
    typer = run_cli("--debug", "validate", bundle)
    assert (quick.code, quick.out, quick.err) == (typer.code, typer.out, typer.err)


def test_a_clean_bundle_is_validated_without_typer_pydantic_or_orjson() -> None:
    # the console script's main in a fresh interpreter; what it imported, printed at exit. orjson imports
    # dataclasses, uuid and inspect, dataclasses and hashlib cost more than the interpreter's start-up
    # (issue 31, docs/performance.md): the quick verdict imports none of them
    heavy = "('pydantic', 'pydantic_core', 'typer', 'rich', 'click', 'orjson', 'dataclasses', 'hashlib')"
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(' '.join(sorted(m for m in sys.modules if m.split('.')[0]"
        f" in {heavy}))))\n"
        "from stepfork.cli.app import main\n"
        "main(['validate', sys.argv[1]])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(QUICKSTART / "notify.sftrace")],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("Validation passed.\n")
    assert done.stderr == ""  # none of them was imported
    assert Path(stepfork_executable()).exists()
