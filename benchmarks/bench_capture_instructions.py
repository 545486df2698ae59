"""Instructions per call of the HTTP capture, recording and replay (issue 11), counted by callgrind.

The same calls as ``bench_capture.py`` (the OpenAI SDK's ``chat.completions.create``, plain and
``stream=True``, on ``httpx2.MockTransport`` serving the same ~2 KB completion or 20-chunk stream), but
counted in instructions executed instead of timed: ``valgrind --tool=callgrind`` counts every instruction of
the process, and the count is the same from one run to the next whatever else the machine is doing. On a
shared VM, where the timed benchmark's rounds move by several percent, this is the figure that does not.

Each measure runs in a process of its own, under callgrind, after the same set-up (imports, a recording of
``CALLS + WARM`` calls, a record session and a replay session opened, ``WARM`` calls of every measure):

- ``none``: the set-up only;
- ``baseline``: then ``CALLS`` calls on the uninstrumented client (the fake answers);
- ``record``: then ``CALLS`` calls on an ``instrument_openai`` client inside ``record()``;
- ``replay``: then ``CALLS`` calls served by the frozen ``ReplaySession``.

Instructions per call = (measure - none) / CALLS; the ratios are record and replay over baseline. The process
ends with ``os._exit`` right after its calls, so finishing a session (integrity, fsync) is not counted, as in
the timed benchmark. ``PYTHONHASHSEED`` is fixed so that the runs hash strings alike.

Instructions are not time: a cache miss or a slow instruction counts as one. And valgrind hides CPU
features from the program: OpenSSL's SHA-256 runs its generic code under it (no SHA extensions), so the
fingerprints that recording and replay compute count several times what they cost on this machine. The
ratios are therefore pessimistic for Stepfork. Run: ``hatch run bench:python
benchmarks/bench_capture_instructions.py`` (about 3 minutes on 2 cores); ``STEPFORK_BENCH_INSTR_CALLS``
changes the size. Skipped where valgrind or the openai SDK is missing. JSON goes to
benchmarks/results/capture_instructions.json.
"""

from __future__ import annotations

import contextvars
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "capture_instructions.json"
CALLS = int(os.environ.get("STEPFORK_BENCH_INSTR_CALLS", "100"))
WARM = 20
MEASURES = ("none", "baseline", "record", "replay")
KINDS = ("plain", "stream")
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def child(kind: str, measure: str, calls: int) -> None:
    """The measured process: set up as the module docstring says, make ``calls`` calls of ``measure``,
    then end at once (``os._exit``: no session finish, no interpreter teardown)."""
    sys.path.insert(0, str(HERE))
    import bench_capture as shapes
    import httpx2
    import openai

    from stepfork.integrations.openai import instrument_openai
    from stepfork.replay import ReplaySession
    from stepfork.trace import record

    def serve(request: Any) -> Any:
        body = json.loads(request.content)
        if body.get("stream"):
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=shapes._stream(body["model"])
            )
        return httpx2.Response(200, json=shapes._completion(body["model"]))

    def client(instrumented: bool) -> Any:
        http = httpx2.Client(transport=httpx2.MockTransport(serve))
        c = openai.OpenAI(api_key="sk-bench", http_client=http, max_retries=0)
        return instrument_openai(c) if instrumented else c

    def call(c: Any) -> Any:
        if kind == "plain":
            return c.chat.completions.create(model="gpt-4o-mini", messages=shapes.MESSAGES, temperature=0)
        return list(c.chat.completions.create(model="gpt-4o-mini", messages=shapes.MESSAGES, stream=True))

    folder = Path(tempfile.mkdtemp(prefix="stepfork-instr-"))
    base_client, rec_client = client(False), client(True)
    with record("bench", output=folder / "recorded.sftrace"):
        for _ in range(calls + WARM):
            call(rec_client)
    contexts = {name: contextvars.copy_context() for name in ("baseline", "record", "replay")}
    contexts["record"].run(record("bench", output=folder / "measured.sftrace").__enter__)
    contexts["replay"].run(ReplaySession.from_trace(folder / "recorded.sftrace").__enter__)
    clients = {"baseline": base_client, "record": rec_client, "replay": rec_client}
    for name, ctx in contexts.items():  # every measure's path warm in every process, the set-up alike
        for _ in range(WARM // 2):
            ctx.run(call, clients[name])
    if measure != "none":
        ctx, c = contexts[measure], clients[measure]
        for _ in range(calls):
            ctx.run(call, c)
    sys.stdout.flush()
    os._exit(0)


def _count(kind: str, measure: str, calls: int) -> int:
    """Instructions callgrind collected for one child process."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={Path(tmp) / 'callgrind.out'}",
                sys.executable,
                __file__,
                "--child",
                kind,
                measure,
                str(calls),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
            check=False,
        )
    found = _COLLECTED.findall(proc.stderr)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"callgrind run {kind}/{measure} failed: {proc.stderr[-2000:]}")
    return int(found[-1])


def measure_all(calls: int = CALLS) -> dict[str, dict[str, float]]:
    """``{"plain": row, "stream": row}``: instructions per call of each measure and the two ratios."""
    jobs = [(kind, measure) for kind in KINDS for measure in MEASURES]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: _count(*job, calls), jobs), strict=True))
    rows: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        per_call = {
            measure: (counts[(kind, measure)] - counts[(kind, "none")]) / calls for measure in MEASURES[1:]
        }
        rows[kind] = {f"{measure}_instructions": value for measure, value in per_call.items()}
        rows[kind]["record_ratio"] = per_call["record"] / per_call["baseline"]
        rows[kind]["replay_ratio"] = per_call["replay"] / per_call["baseline"]
    return rows


def main() -> None:
    if shutil.which("valgrind") is None:
        print("bench_capture_instructions: valgrind is not installed; skipped")
        return
    try:
        import openai
    except ImportError:
        print("bench_capture_instructions: the openai SDK is not installed in this environment; skipped")
        return
    rows = measure_all(CALLS)
    print(f"{'call':<8}{'baseline':>14}{'record':>14}{'replay':>14}{'record x':>11}{'replay x':>11}")
    for kind, row in rows.items():
        millions = "".join(f"{row[f'{m}_instructions'] / 1e6:>12.3f}M" for m in MEASURES[1:])
        print(f"{kind:<8}{millions}{row['record_ratio']:>10.3f}x{row['replay_ratio']:>10.3f}x")
    print(
        f"instructions per call (callgrind), {CALLS} calls per measure, each measure in its own process; "
        "targets: record <= 1.3x, replay <= 1.0x the un-instrumented call on the fake transport"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    meta = {
        "python": list(sys.version_info[:3]),
        "machine": platform.machine(),
        "openai": openai.__version__,
        "calls": CALLS,
    }
    RESULTS.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()
