"""The Stepfork story on the quickstart agent, end to end (``hatch run demo``).

Every step runs a real command in a subprocess, exactly as you would type it: record the buggy run,
validate and inspect the bundle, replay it against the buggy and the fixed code, export a regression test
with the corrected expectation, and run that test against both. Everything is written into one working
directory (a fresh temporary directory, or ``--output-dir``); the source tree is never touched.

``--output-dir DIR`` must be new, empty, or a directory an earlier run of this demo made (it holds the
marker file ``.stepfork-demo``): the demo then replaces its own files there and nothing else. Any other
non-empty directory is refused with one line and exit 2, so a file of yours is never overwritten.

    hatch run demo                      # or: python examples/quickstart/demo.py --output-dir /tmp/sf-demo
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUNDLE = "notify.sftrace"
MARKER = ".stepfork-demo"
# Everything a run writes into its working directory: what a re-run into the same directory replaces.
DEMO_FILES = (
    "quickstart.py",
    "expected.json",
    BUNDLE,
    "test_notify_buggy.py",
    "test_notify_fixed.py",
    "receipts",
)


def prepare_workdir(workdir: Path) -> str | None:
    """Make ``workdir`` ready for a run: create it, or clear the files a previous demo run wrote there.

    Returns None when ready, else why ``workdir`` is refused: it is not a directory, or it is a non-empty
    directory without the demo's marker (someone else's files, never touched).
    """
    if workdir.exists() and not workdir.is_dir():
        return f"{workdir} exists and is not a directory"
    if workdir.is_dir() and any(workdir.iterdir()):
        if not (workdir / MARKER).is_file():
            return (
                f"{workdir} is not empty and was not made by this demo; "
                "give a new or empty directory (or omit --output-dir for a temporary one)"
            )
        for name in DEMO_FILES:  # only the demo's own files; anything else there is left alone
            path = workdir / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / MARKER).write_text(
        "Made by examples/quickstart/demo.py; a re-run into this directory replaces the demo's files.\n",
        encoding="utf-8",
    )
    return None


def stepfork_command() -> list[str]:
    """The installed ``stepfork`` executable next to this interpreter (or on PATH)."""
    beside = Path(sys.executable).parent / ("stepfork.exe" if os.name == "nt" else "stepfork")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("stepfork")
    if found:
        return [found]
    sys.exit("The stepfork command is not installed; run this demo with `hatch run demo`.")


class Demo:
    """Runs the steps in ``workdir`` and checks each exit code against the story."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.stepfork = stepfork_command()
        self.failures: list[str] = []
        self.number = 0

    def step(self, title: str, story: str) -> None:
        self.number += 1
        print(f"\n{'=' * 78}\nStep {self.number}. {title}\n{'=' * 78}")
        print(story)

    def run(self, args: list[str], expect: int, *, python: bool = False) -> str:
        command = [sys.executable, *args] if python else [*self.stepfork, *args]
        shown = "python " + " ".join(args) if python else "stepfork " + " ".join(args)
        print(f"\n$ {shown}")
        # Output is indented by two spaces: let tables use the terminal's width minus that.
        width = max(80, shutil.get_terminal_size().columns - 2)
        env = {**os.environ, "COLUMNS": str(width)}
        done = subprocess.run(
            command, cwd=self.workdir, env=env, capture_output=True, text=True, encoding="utf-8", check=False
        )
        output = (done.stdout + done.stderr).rstrip()
        if output:
            print("\n".join("  " + line for line in output.splitlines()))
        print(f"  [exit {done.returncode}]")
        if done.returncode != expect:
            self.failures.append(f"step {self.number}: `{shown}` exited {done.returncode}, expected {expect}")
        return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, help="where to write (default: a new temp directory)")
    options = parser.parse_args(argv)
    workdir = (options.output_dir or Path(tempfile.mkdtemp(prefix="stepfork-demo-"))).resolve()
    refused = prepare_workdir(workdir)
    if refused is not None:
        print(f"demo: {refused}", file=sys.stderr)
        return 2
    for name in ("quickstart.py", "expected.json"):
        shutil.copy2(HERE / name, workdir / name)

    demo = Demo(workdir)
    print(f"Stepfork quickstart demo. Working directory: {workdir}")

    demo.step(
        "Record the buggy run",
        "The agent looks up order ORD-1001 (tool `order_status`), asks a local model whether to notify\n"
        "the customer (`llm_request`), and returns its decision. The order has shipped, but the agent\n"
        "reads the model's reply wrongly and decides not to notify. We record that run into a bundle.",
    )
    demo.run(["quickstart.py", "record", BUNDLE], 0, python=True)

    demo.step("Validate the bundle", "Structure, strict execution checks and integrity hashes.")
    demo.run(["validate", BUNDLE, "--verify-integrity"], 0)

    demo.step(
        "Inspect it",
        'What the agent did, call by call, with each payload (--events). The model said "notify"\n'
        "(step 4), yet the run's output (step 5) has should_notify false: that is the bug.",
    )
    demo.run(["inspect", BUNDLE, "--events"], 0)

    demo.step(
        "Replay the buggy code",
        "The tool and the model are served from the bundle (no order system, no model needed).\n"
        "The buggy entrypoint reproduces the recorded output exactly: MATCHED, exit 0.",
    )
    demo.run(["replay", BUNDLE, "--entrypoint", "quickstart:run_agent"], 0)

    demo.step(
        "Replay the fixed code",
        "Same recorded calls, same answers, but the fixed agent reads the reply correctly, so its output\n"
        "differs from the recording: DIVERGED, exit 1. Here that is the fix showing up.",
    )
    demo.run(["replay", BUNDLE, "--entrypoint", "quickstart:run_agent_fixed"], 1)

    demo.step(
        "Export a regression test with the corrected expectation",
        "expected.json says what the agent should have returned. The generated test replays the bundle\n"
        "through the buggy entrypoint and asserts that expectation.",
    )
    demo.run(
        [
            "export",
            BUNDLE,
            "--pytest",
            "--entrypoint",
            "quickstart:run_agent",
            "--expect-output",
            "expected.json",
            "--output",
            "test_notify_buggy.py",
        ],
        0,
    )

    demo.step(
        "Run it against the buggy code",
        "The check runs and disagrees: FAILED, exit 1, a caught regression. The runner writes a receipt.",
    )
    demo.run(["run", "test_notify_buggy.py", "--receipt", "receipts/buggy.json"], 1)

    demo.step("Export the same test for the fixed code", "Only the entrypoint changes.")
    demo.run(
        [
            "export",
            BUNDLE,
            "--pytest",
            "--entrypoint",
            "quickstart:run_agent_fixed",
            "--expect-output",
            "expected.json",
            "--output",
            "test_notify_fixed.py",
        ],
        0,
    )

    demo.step("Run it against the fixed code", "The check runs and agrees: PASSED, exit 0.")
    demo.run(["run", "test_notify_fixed.py", "--receipt", "receipts/fixed.json"], 0)

    print(f"\n{'=' * 78}")
    if demo.failures:
        print("The demo did not go as the story says:")
        print("\n".join(f"  - {failure}" for failure in demo.failures))
        return 1
    print(f"Done. The bundle, the tests and the receipts are in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
