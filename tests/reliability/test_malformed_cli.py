"""Damaged bundles through every CLI command: validate, inspect, replay, diff, minimize, fork, export, score
and run answer each with a documented exit code and a clear message, never a traceback or an internal
error, within a time bound and under a memory cap (issue 7 part 1; spec/cli-reference.txt exit codes).

An unreadable bundle (``Trace.load`` raises) must give exit 2 from every command that reads it, as the spec
says for each command ("Unreadable bundle. Exit 2"; run: ``could_not_execute``).
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
from damage import apply, damages, describe, materialize, read_model
from fuzz_agent import record_into
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_support import HERE, SOAK, one_clear_failure, record_figure, run_cli_batch, scale

from stepfork.trace import Trace, TraceStorageError, validate_bundle

BUNDLES_PER_BATCH = 10
BATCHES = scale(3, 20)
EP = "fuzz_agent:run_agent"
COUNTS: Counter[str] = Counter()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-fuzz")
    shutil.copy(HERE / "fuzz_agent.py", root / "fuzz_agent.py")
    record_into(root / "good.sftrace")
    return root


@pytest.fixture(scope="module")
def exported(workdir: Path) -> Path:
    (workdir / "expected.json").write_text('{"hits": 2, "plan": "go", "status": "booked"}')
    outcomes, _ = run_cli_batch(
        [
            [
                "export", "good.sftrace", "--pytest", "--entrypoint", EP, "--expect-output", "expected.json",
                "--output", "test_good_regression.py",
            ]
        ],
        cwd=workdir,
    )  # fmt: skip
    assert outcomes[0].code == 0, outcomes[0].text
    return workdir / "test_good_regression.py"


def _unreadable(bundle: Path) -> bool:
    try:
        Trace.load(bundle)
    except TraceStorageError:
        return True
    return False


def _jobs(name: str, with_run: bool) -> list[list[str]]:
    jobs = [
        ["validate", name],
        ["validate", "--partial", name],
        ["validate", "--verify-integrity", name],
        ["inspect", name],
        ["inspect", "--json", name],
        ["inspect", "--events", name],
        ["replay", name, "--entrypoint", EP],
        ["diff", "good.sftrace", name],
        ["diff", "--json", name, "good.sftrace"],
        ["minimize", name, "--entrypoint", EP, "--output", f"min-{name}", "--timeout", "10"],
        ["fork", name, "--step", "2", "--entrypoint", EP, "--output", f"fork-{name}"],
        ["export", name, "--pytest", "--entrypoint", EP, "--output", f"test_{name[:-8]}.py"],
        ["score", "test_good_regression.py", "--bundle", name],
    ]
    if with_run:
        jobs.append(["run", "test_good_regression.py", "--bundle", name, "--timeout-seconds", "60"])
    return jobs


def _expected_validate_code(bundle: Path, argv: list[str]) -> int:
    verify = "--verify-integrity" in argv
    result = validate_bundle(bundle, strict="--partial" not in argv, verify_integrity=verify)
    if verify and result.legacy:
        return 3
    if result.unreadable:
        return 2
    return 0 if result.valid else 1


@settings(
    max_examples=BATCHES,
    deadline=None,
    derandomize=not SOAK,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(batch=st.lists(damages(huge_mb=2), min_size=BUNDLES_PER_BATCH, max_size=BUNDLES_PER_BATCH))
def test_every_command_answers_every_damaged_bundle_with_a_documented_exit_and_one_clear_message(
    workdir: Path, exported: Path, batch: list
) -> None:
    healthy = read_model(workdir / "good.sftrace")
    stamp = time.monotonic_ns()
    names, jobs = [], []
    for i, ops in enumerate(batch):
        name = f"d{stamp}-{i}.sftrace"
        materialize(apply(healthy, ops), workdir / name, workdir)
        names.append(name)
        jobs += _jobs(name, with_run=i % 5 == 0)
    outcomes, rss_kib = run_cli_batch(jobs, cwd=workdir, per_job_seconds=60, memory_mb=2048)
    damage_of = {name: describe(ops) for name, ops in zip(names, batch, strict=True)}
    problems = []
    for outcome in outcomes:
        name = next(a for a in outcome.argv if a in damage_of)
        bundle = workdir / name
        why = one_clear_failure(outcome)
        command = outcome.argv[0]
        if why is None and command == "validate":
            expected = _expected_validate_code(bundle, outcome.argv)
            if outcome.code != expected:
                why = f"exit {outcome.code}, the library's verdict gives {expected}"
        elif why is None and _unreadable(bundle):
            said = outcome.err if outcome.err.strip() else outcome.out  # a failure is told on stderr
            lines = [line for line in said.splitlines() if line.strip()]
            if outcome.code != 2:
                why = f"exit {outcome.code} on an unreadable bundle (spec: 2)"
            elif "--json" not in outcome.argv and command != "run" and len(lines) > 2:
                why = f"{len(lines)} lines for an unreadable bundle (one clear line expected)"
        if why:
            problems.append(f"{' '.join(outcome.argv[:3])} [{damage_of[name]}]: {why}")
        COUNTS[f"cli:{command}"] += 1
    COUNTS["bundles"] += len(names)
    COUNTS["invocations"] += len(outcomes)
    COUNTS["max_rss_mb"] = max(COUNTS["max_rss_mb"], rss_kib // 1024)
    COUNTS["slowest_s"] = max(COUNTS["slowest_s"], int(max(o.seconds for o in outcomes)))
    record_figure("malformed-cli", **COUNTS)
    assert not problems, "\n".join(problems[:40])
