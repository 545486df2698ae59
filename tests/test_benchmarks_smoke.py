"""The benchmarks still run (benchmarks/, `hatch run bench:all`): each measure once, at a toy size.

Figures come from the benchmarks themselves, never from tests (GUIDE.md: no timing in tests); this only
keeps the scripts from rotting as the code they measure changes. Cheap: a few calls per measure.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

# the benchmarks at toy size: `hatch run slow:test` (tests/conftest.py)
pytestmark = pytest.mark.slow

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_smoke_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_capture_benchmark_measures_baseline_record_and_replay() -> None:
    httpx2 = pytest.importorskip("httpx2")
    openai = pytest.importorskip("openai")
    rows = _load("bench_capture").measure_all(httpx2, openai, calls=5, rounds=1)
    assert set(rows) == {"plain", "stream"}
    for row in rows.values():
        assert min(row["baseline_us"], row["record_ratio"], row["replay_ratio"]) > 0


def test_the_concurrency_benchmark_measures_every_workload_with_and_without_the_facts() -> None:
    bench = _load("bench_concurrency")
    rows = bench.measure_all(calls=8, rounds=1)
    assert set(rows) == {"loop", "threads", "gather-10", "gather-200"}
    for row in rows.values():
        assert min(row["with_facts_us"], row["without_us"]) > 0
    from stepfork.trace import concurrency

    assert concurrency.RECORD_FACTS is True  # the switch is always restored


def test_the_check_benchmark_corpus_of_an_sdk_example_agent_gets_the_expected_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anthropic")
    bench = _load("bench_check")
    monkeypatch.setattr(bench, "SDK_DIVERGE_EVERY", 2)  # the second bundle diverges on purpose
    agent = bench.AGENTS["anthropic"]
    for file in agent.files:
        (tmp_path / file.name).write_bytes(file.read_bytes())
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = agent.make(tmp_path / "corpus", 2)
    assert sorted(expected.values()) == ["DIVERGED", "MATCHED"]
    loop = bench.sequential_loop(agent.entrypoint, sorted(expected), str(tmp_path))
    assert loop.cold_verdicts == expected
    assert loop.warm_verdicts == expected
    root = str(tmp_path)
    _, _, verdicts = bench.checked(agent.entrypoint, sorted(expected), root, 1, warm=True, started=True)
    assert verdicts == expected


@pytest.mark.parametrize("measure", ["baseline", "record", "replay"])
def test_the_instruction_benchmark_process_makes_its_calls(measure: str) -> None:
    # the process callgrind counts (benchmarks/bench_capture_instructions.py), here without valgrind
    pytest.importorskip("httpx2")
    pytest.importorskip("openai")
    import subprocess
    import sys

    script = BENCHMARKS / "bench_capture_instructions.py"
    for kind in ("plain", "stream"):
        proc = subprocess.run(
            [sys.executable, str(script), "--child", kind, measure, "2"], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_recording_and_replay_benchmarks_measure_the_structured_argument(tmp_path: Path) -> None:
    # issue 31's shape: a list of small dicts, distinct deep copies, floor on the same copies
    recording = _load("bench_recording").measure_structured("2KB", 2 * 1024, tmp_path, calls=5, rounds=1)
    assert recording["payload_bytes"] >= 2 * 1024
    assert min(recording["floor_us"], recording["ratio"]) > 0
    assert recording["target"] == 3.0
    replay = _load("bench_replay").measure_structured(tmp_path, calls=5, rounds=1)
    assert min(replay["floor_us"], replay["ratio"]) > 0
    assert replay["target"] == 1.5


def test_the_recording_benchmark_measures_a_run_that_minted_values_against_one_that_did_not(
    tmp_path: Path,
) -> None:
    minted = _load("bench_recording").measure_minted("2KB", 2 * 1024, tmp_path, calls=5, rounds=1)
    assert minted["minted_values_written"] == 1  # the payload's request_id: the minted run was scanned
    assert min(minted["floor_us"], minted["plain_call_us"], minted["minted_call_us"]) > 0


def test_the_diff_benchmark_measures_the_default_and_strict_diff_of_two_noisy_recordings() -> None:
    result = _load("bench_diff").main(calls=40, rounds=1)
    assert result["default_equivalent"] is True  # the provider's noise is ignored by default
    assert result["strict_equivalent"] is False  # and counted by --strict
    assert min(result["strict_s"], result["default_s"]) > 0


def test_the_load_checks_benchmark_measures_both_loaders_and_both_hash_rules() -> None:
    rows = _load("bench_load_checks").measure_all(calls=(5,), repeats=1)
    row = rows["5 calls"]
    assert (
        min(row["load_trace_s"], row["load_verified_trace_s"], row["verified_ratio"], row["proof_speedup"])
        > 0
    )
