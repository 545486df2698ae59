"""README's install table works from a clone (issue 13): each row's line, run as written in a fresh
virtualenv at the root of a copy of the repository, installs what the row promises.

uv runs the ``pip install`` lines when it is on PATH (same arguments, its cache keeps this fast), else the
venv's own pip does. The index must be reachable (PyPI), as it is in CI.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROWS = {
    "production": "a production service that records runs",
    "developer": "an agent developer (replay, CLI, pytest)",
    "notebook": "an analyst in a notebook",
}

pytestmark = pytest.mark.slow


def install_lines() -> dict[str, str]:
    """{row key: the command in README's install table}."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Install", 1)[1].split("\n## ", 1)[0]
    found: dict[str, str] = {}
    for key, who in ROWS.items():
        match = re.search(rf"^\| {re.escape(who)} \| `([^`]+)` \|", section, re.MULTILINE)
        assert match is not None, f"README's install table has no row for {who!r}"
        found[key] = match.group(1)
    return found


def test_every_row_is_one_pip_install_line_of_local_paths() -> None:
    for key, line in install_lines().items():
        words = shlex.split(line)
        assert words[:2] == ["pip", "install"], (key, line)
        for path in words[2:]:
            assert (REPO / path / "pyproject.toml").is_file(), (key, path)


def _copy_tree(dest: Path) -> Path:
    """The distributions of the repository, copied (a build never writes into the checkout)."""
    for part in ("libs", "apps"):
        shutil.copytree(REPO / part, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return dest


def _install(line: str, root: Path, venv: Path) -> Path:
    python = venv / "bin" / "python"
    uv = shutil.which("uv")
    if uv is not None:
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
        command = [uv, "pip", "install", "-q", "--python", str(python), *shlex.split(line)[2:]]
    else:  # pragma: no cover - CI has uv (hatch's installer)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        command = [str(python), "-m", "pip", "install", "-q", *shlex.split(line)[2:]]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    return python


def _python(python: Path, code: str, cwd: Path) -> str:
    done = subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _distributions(python: Path, cwd: Path) -> set[str]:
    out = _python(
        python,
        """
        import importlib.metadata as md
        print("\\n".join(sorted({d.metadata["Name"].lower() for d in md.distributions()})))
        """,
        cwd,
    )
    return set(out.split())


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy_tree(tmp_path_factory.mktemp("clone"))


def test_the_production_line_installs_stepfork_trace_alone(clone: Path, tmp_path: Path) -> None:
    python = _install(install_lines()["production"], clone, tmp_path / "venv")
    names = _distributions(python, tmp_path)
    assert {n for n in names if n.startswith("stepfork")} == {"stepfork-trace"}
    assert "pytest" not in names
    _python(python, "import stepfork.trace; print(stepfork.trace.__version__)", tmp_path)


def test_the_developer_line_installs_the_cli_with_pytest(clone: Path, tmp_path: Path) -> None:
    python = _install(install_lines()["developer"], clone, tmp_path / "venv")
    names = _distributions(python, tmp_path)
    assert {"stepfork-trace", "stepfork-replay", "stepfork-analysis", "stepfork", "stepfork-cli"} <= names
    assert "pytest" in names  # `stepfork run` needs it
    command = [str(python.parent / "stepfork"), "--version"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("stepfork "), done.stdout
    code = "from stepfork import ReplaySession, record\nimport stepfork.replay.pytest_plugin"
    _python(python, code, tmp_path)


def test_the_notebook_line_installs_the_analysis_library(clone: Path, tmp_path: Path) -> None:
    python = _install(install_lines()["notebook"], clone, tmp_path / "venv")
    names = _distributions(python, tmp_path)
    assert {n for n in names if n.startswith("stepfork")} == {
        "stepfork-trace",
        "stepfork-replay",
        "stepfork-analysis",
    }
    _python(python, "import stepfork.analysis; from stepfork.analysis import diff_traces", tmp_path)
    # without pytest, `run` cannot execute a check and its reason names the command that fixes it
    assert "pytest" not in names
    shutil.copytree(REPO / "examples" / "quickstart", tmp_path / "q", ignore=shutil.ignore_patterns("*.pyc"))
    out = _python(
        python,
        """
        from stepfork.analysis.export._codegen import export_pytest_test
        from stepfork.analysis.export._runner import run_exported_test

        export_pytest_test(trace_path="notify.sftrace", entrypoint="quickstart:run_agent", output_path="t.py")
        receipt = run_exported_test("t.py")
        print(receipt.verdict, receipt.reason)
        print(receipt.detail)
        """,
        tmp_path / "q",
    )
    verdict, detail = out.split("\n", 1)
    assert verdict == "could_not_execute pytest_unavailable"
    assert f"{python} -m pip install 'pytest>=8'" in detail
