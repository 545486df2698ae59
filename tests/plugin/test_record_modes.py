"""Record modes of the pytest plugin (issue 13): ``--stepfork-record-mode=none|once|rewrite``, the deprecated
``--stepfork-record`` alias, and ``--stepfork-unused``.

Each test writes a small project into tmp_path and runs pytest on it in a subprocess, as a user would. The
tool's body reads LOOKUP_VALUE: unset, a body that runs instead of being replayed raises KeyError.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepfork.trace import Trace

AGENT_LIB = textwrap.dedent(
    """
    import os
    from stepfork.trace import trace_tool

    @trace_tool
    def lookup(key: str) -> str:
        return os.environ["LOOKUP_VALUE"] + ":" + key

    def agent():
        return [lookup("k0"), lookup("k1")]
    """
)

TESTS = textwrap.dedent(
    """
    import pytest
    from agent_lib import agent

    @pytest.mark.stepfork("bundles/agent.sftrace")
    def test_agent():
        values = agent()
        assert [v.split(":")[1] for v in values] == ["k0", "k1"]
    """
)

HAND_RECORD = textwrap.dedent(
    """
    import sys
    from stepfork.trace import record
    from agent_lib import agent

    with record("recorded-by-hand", output=sys.argv[1]) as session:
        session.set_output(agent())
    """
)


def project(tmp_path: Path) -> Path:
    (tmp_path / "agent_lib.py").write_text(AGENT_LIB, encoding="utf-8")
    (tmp_path / "test_agent.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOOKUP_VALUE", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path.cwd()), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def run_pytest(root: Path, *args: str, xdist: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    plugins = ["-p", "xdist", "-n", "2"] if xdist else ["-p", "no:xdist"]
    full_env = _env(**env)
    full_env["PYTHONPATH"] = os.pathsep.join([str(root), full_env["PYTHONPATH"]])
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            *plugins,
            "-rA",
            "--rootdir",
            str(root),
            *args,
        ],
        cwd=root,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def digest(bundle: Path) -> str:
    """SHA-256 over the names and bytes of every file of the bundle."""
    h = hashlib.sha256()
    for path in sorted(bundle.iterdir()):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def hand_record(root: Path) -> Path:
    bundle = root / "bundles" / "agent.sftrace"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-c", HAND_RECORD, str(bundle)],
        cwd=root,
        env={**_env(LOOKUP_VALUE="hand"), "PYTHONPATH": str(root)},
        check=True,
        timeout=60,
    )
    assert Trace.load(bundle).agent_name == "recorded-by-hand"
    return bundle


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
@pytest.mark.parametrize("mode", [None, "none", "once"])
def test_a_hand_recorded_bundle_survives_none_and_once_and_is_replayed(
    tmp_path: Path, mode: str | None
) -> None:
    root = project(tmp_path)
    bundle = hand_record(root)
    before = digest(bundle)
    args = [] if mode is None else [f"--stepfork-record-mode={mode}"]
    done = run_pytest(root, *args, LOOKUP_VALUE="live-now")  # a body that ran would return live values
    assert done.returncode == 0, done.stdout + done.stderr
    assert digest(bundle) == before
    assert Trace.load(bundle).agent_name == "recorded-by-hand"


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_rewrite_records_every_marked_test_again(tmp_path: Path) -> None:
    root = project(tmp_path)
    bundle = hand_record(root)
    done = run_pytest(root, "--stepfork-record-mode=rewrite", LOOKUP_VALUE="live")
    assert done.returncode == 0, done.stdout + done.stderr
    trace = Trace.load(bundle)
    assert trace.agent_name == "test_agent"
    outputs = [getattr(e, "output", None) for e in trace.events if e.type == "tool_result"]
    assert outputs == ["live:k0", "live:k1"]


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_once_records_a_missing_bundle_then_replays_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    bundle = root / "bundles" / "agent.sftrace"
    first = run_pytest(root, "--stepfork-record-mode=once", LOOKUP_VALUE="live")
    assert first.returncode == 0, first.stdout + first.stderr
    before = digest(bundle)
    second = run_pytest(root, "--stepfork-record-mode=once")  # LOOKUP_VALUE unset: replayed, not run
    assert second.returncode == 0, second.stdout + second.stderr
    assert digest(bundle) == before


def test_none_is_the_default_and_a_missing_bundle_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = run_pytest(root, LOOKUP_VALUE="live")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout
    assert "StepforkBundleMissingError" in done.stdout
    assert "--stepfork-record-mode=once" in done.stdout
    assert not (root / "bundles" / "agent.sftrace").exists()


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_old_flag_is_a_deprecated_alias_of_rewrite(tmp_path: Path) -> None:
    root = project(tmp_path)
    bundle = hand_record(root)
    done = run_pytest(root, "--stepfork-record", LOOKUP_VALUE="live")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "StepforkDeprecationWarning: --stepfork-record is deprecated" in done.stdout
    assert "--stepfork-record-mode=rewrite" in done.stdout
    assert Trace.load(bundle).agent_name == "test_agent"


def test_the_old_flag_and_a_contradicting_mode_are_refused(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = run_pytest(root, "--stepfork-record", "--stepfork-record-mode=once", LOOKUP_VALUE="live")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "contradicts --stepfork-record-mode=once" in done.stderr


def test_an_unknown_mode_is_refused_with_the_choices(tmp_path: Path) -> None:
    done = run_pytest(project(tmp_path), "--stepfork-record-mode=all")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "'none', 'once', 'rewrite'" in done.stderr


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
@pytest.mark.parametrize("xdist", [False, True])
def test_unused_bundles_under_the_test_tree_are_listed(tmp_path: Path, xdist: bool) -> None:
    root = project(tmp_path)
    hand_record(root)
    (root / "bundles" / "old.sftrace").mkdir()
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "er" / "gone.sftrace").mkdir()
    done = run_pytest(root, "--stepfork-unused", xdist=xdist)
    assert done.returncode == 0, done.stdout + done.stderr
    section = done.stdout.split("stepfork: unused bundles", 1)[1].splitlines()[1:3]
    assert section == [os.path.join("bundles", "old.sftrace"), os.path.join("deep", "er", "gone.sftrace")]
