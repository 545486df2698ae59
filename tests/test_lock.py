"""The committed lock of the test environments (issue 28; scripts/lock.py, docs/development.md).

A fresh clone's ``hatch test`` and ``.ci/run`` must install exactly what was tested: every environment that
runs tests, lint or types installs from requirements/constraints.txt, the lock covers every requirement
they declare, the docs' "tested with" lines are generated from it, and the environment running this test
holds the locked releases.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lock_script():
    spec = importlib.util.spec_from_file_location("stepfork_lock_script", ROOT / "scripts" / "lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lock = _lock_script()

# environments that are not test environments: the lock's own tool (it must run without the lock) and the
# newest-releases run; hatch's internal ones are not in hatch.toml
UNLOCKED = {"lock", "latest"}


def test_lock_check_passes_through_its_command_line() -> None:
    script = ROOT / "scripts" / "lock.py"
    done = subprocess.run([sys.executable, str(script), "check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "the locks cover every declared requirement" in done.stdout


def test_every_test_environment_installs_from_the_lock() -> None:
    with (ROOT / "hatch.toml").open("rb") as handle:
        envs = tomllib.load(handle)["envs"]
    unlocked = [name for name, env in envs.items() if name not in UNLOCKED and lock.lock_of(env) is None]
    assert not unlocked, f"environments that would install unpinned releases: {unlocked}"


def test_the_latest_environment_does_not_read_the_lock() -> None:
    with (ROOT / "hatch.toml").open("rb") as handle:
        latest = tomllib.load(handle)["envs"]["latest"]
    assert "UV_CONSTRAINT" not in (latest.get("env-vars") or {})
    assert any("lock.py upgrade" in step for step in latest["scripts"]["test"])


def test_every_lock_is_committed_with_its_input() -> None:
    assert lock.locks()[0] == lock.LOCK
    for path in lock.locks():
        assert path.is_file(), path
        assert path.with_suffix(".in").is_file(), path


def test_a_requirement_outside_the_lock_is_named() -> None:
    problems = lock.uncovered(["openai>=999", "no-such-package-for-stepfork>=1", "pytest>=8"])
    assert problems[0].startswith("openai>=999: the lock pins ")
    assert problems[1] == "no-such-package-for-stepfork>=1: not in the lock"
    assert len(problems) == 2


def test_every_sdk_is_locked_and_named_with_its_version_in_the_docs() -> None:
    block = " ".join(lock.docs_block().split())  # wrapped at 110 columns
    named = {}
    for path in lock.locks():  # the main lock first; an SDK pinned there is named with its version there
        for name, version, _ in lock.read_lock(path):
            named.setdefault(name, version)
    for sdk in lock.sdk_names():
        assert sdk in named, f"{sdk} is in [tool.stepfork-dev] sdks but in no lock"
        assert f"{sdk} {named[sdk]}" in block
    assert "`requirements/openai2.txt`, by `hatch run openai2:test`" in block  # LlamaIndex, CrewAI
    assert lock.stale_docs() == []


def test_a_stale_docs_block_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"x\n{lock.BLOCK_START}\nTested with openai 0.0.1\n{lock.BLOCK_END}\n", encoding="utf-8")
    monkeypatch.setattr(lock, "DOCS_BLOCKS", (doc,))
    assert lock.stale_docs() == [str(doc)]
    lock.write_docs()
    assert lock.stale_docs() == []
    assert doc.read_text(encoding="utf-8").startswith("x\n" + lock.BLOCK_START)


def test_the_members_editable_entries_are_not_pins() -> None:
    member = "-e ./libs/stepfork-trace\n    # via\n    #   -r requirements/constraints.in\n"
    compiled = member + "orjson==3.0\n    # via x\n"
    assert lock._strip_members(compiled) == "orjson==3.0\n    # via x\n"
    assert all(not line.startswith("-e") for line in lock.LOCK.read_text(encoding="utf-8").splitlines())


def test_this_environment_holds_the_locked_releases() -> None:
    # `hatch test` installs from the lock; an environment created before the lock changed keeps what it
    # had (hatch adds missing packages only): recreate it
    differences = lock.installed_differences()
    assert not differences, (
        "installed releases differ from requirements/constraints.txt (recreate the environment: "
        f"`hatch env prune`): {differences}"
    )
