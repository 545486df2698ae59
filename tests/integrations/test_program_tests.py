"""Every recording can become a trusted test (issue 29, "A zero-code recording cannot become a trusted test"):
``stepfork record -- python agent.py`` -> ``stepfork export --expect-output F -- python agent.py`` ->
``stepfork run`` is PASSED on the fixed program and FAILED on the buggy one; an ``--entrypoint`` export of
that bundle is refused with the command that works; a check whose HTTP capture is missing, and a program
that cannot run, are could_not_execute, never FAILED. Real CLI, a real OpenAI SDK program, and a real
OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py) whose counter proves replays sent nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving

from stepfork.analysis.export import generate_pytest_source

STEPFORK = Path(sys.executable).parent / "stepfork"

# The agent decides whether to notify the customer from the model's answer. The bug: it notifies on any
# answer that mentions the weather, sunny included; the fix notifies only on rain. The model's requests are
# the same either way, so the recording replays both.
BUGGY = '''"""A notification agent: asks the model, decides, prints its decision as JSON."""
import json
import os

import openai


def decide(answer):
    return {"answer": answer, "notify": "degrees" in answer}


def main():
    client = openai.OpenAI(base_url=os.environ["AGENT_BASE_URL"], api_key="sk-local", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "What is the weather in Paris?"}]
    )
    return decide(reply.choices[0].message.content)


if __name__ == "__main__":
    print(json.dumps(main()))
'''
FIXED = BUGGY.replace('"degrees" in answer', '"rain" in answer')


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


@pytest.fixture
def workdir(tmp_path: Path, server: LocalOpenAI, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agent.py").write_text(BUGGY)
    monkeypatch.setenv("AGENT_BASE_URL", server.base_url)
    return tmp_path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


def recorded(workdir: Path) -> Path:
    done = cli("record", "-o", "run.sftrace", "--", sys.executable, "agent.py", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["notify"] is True  # the bug, recorded
    return workdir / "run.sftrace"


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_record_export_expect_output_run_passes_the_fix_and_fails_the_bug(
    workdir: Path, server: LocalOpenAI
) -> None:
    recorded(workdir)
    answer = "It is 21 degrees and sunny in Paris."
    (workdir / "expected.json").write_text(json.dumps({"answer": answer, "notify": False}))
    (workdir / "trajectory.json").write_text(json.dumps({"max_steps": 1}))
    exported = cli(
        "export",
        "run.sftrace",
        "--pytest",
        "-o",
        "test_notify.py",
        "--expect-output",
        "expected.json",
        "--expect-trajectory",
        "trajectory.json",
        "--",
        "python",
        "agent.py",
        cwd=workdir,
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "Expectation:" in exported.stdout
    sent = len(server.requests)

    buggy = cli("run", "test_notify.py", "--json", cwd=workdir)
    receipt = json.loads(buggy.stdout)
    assert (buggy.returncode, receipt["verdict"]) == (1, "failed"), buggy.stdout + buggy.stderr
    assert "behavior mismatch at 'notify': expected false, got true" in receipt["detail"]

    (workdir / "agent.py").write_text(FIXED)
    fixed = cli("run", "test_notify.py", cwd=workdir)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Verdict: PASSED" in fixed.stdout
    assert len(server.requests) == sent  # every replay was served from the bundle


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_program_test_compares_its_reviewed_output_exactly_but_for_the_paths_it_ignores(
    workdir: Path,
) -> None:
    # the program mints a request id of its own on every run (uuid4); the reviewed expectation is an oracle
    # (docs/decisions.md): compared exactly, so the user marks the minted id's path with --ignore $.ticket
    minting = BUGGY.replace(
        "    return decide(reply.choices[0].message.content)",
        "    import uuid\n\n"
        "    return {**decide(reply.choices[0].message.content), 'ticket': str(uuid.uuid4())}",
    )
    (workdir / "agent.py").write_text(minting)
    done = cli("record", "-o", "run.sftrace", "--", sys.executable, "agent.py", cwd=workdir)
    assert done.returncode == 0, done.stderr
    (workdir / "expected.json").write_text(done.stdout)  # the recorded output, its ticket id included
    for name, marks, verdict in [
        ("test_exact.py", [], "FAILED"),
        ("test_ticket.py", ["--ignore", "$.ticket"], "PASSED"),
    ]:
        exported = cli(
            "export", "run.sftrace", "--pytest", "-o", name, "--expect-output", "expected.json", *marks,
            "--", "python", "agent.py", cwd=workdir,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stdout + exported.stderr
        ran = cli("run", name, cwd=workdir)
        assert f"Verdict: {verdict}" in ran.stdout, ran.stdout + ran.stderr
    # a changed decision is still caught, the ignored id beside it left out
    (workdir / "agent.py").write_text(minting.replace('"degrees" in answer', "False"))
    ran = cli("run", "test_ticket.py", "--json", cwd=workdir)
    receipt = json.loads(ran.stdout)
    assert (ran.returncode, receipt["verdict"]) == (1, "failed"), ran.stdout
    assert "behavior mismatch at 'notify'" in receipt["detail"]
    assert "ticket" not in receipt["detail"]


def test_an_entrypoint_export_of_a_program_bundle_is_refused_with_the_command_that_works(
    workdir: Path,
) -> None:
    recorded(workdir)
    args = ("export", "run.sftrace", "--pytest", "-o", "t.py", "--entrypoint", "agent:main")
    done = cli(*args, cwd=workdir)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "stepfork export run.sftrace --pytest -o TEST.py -- python agent.py" in done.stderr
    assert not (workdir / "t.py").exists()


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_check_without_the_capture_it_was_recorded_with_could_not_execute(
    workdir: Path, server: LocalOpenAI
) -> None:
    """An entrypoint test of a program bundle, as a release before issue 29 wrote it: the agent's client
    is not captured there, so its request meets the seal. That is no regression of the agent."""
    bundle = recorded(workdir)
    test = workdir / "test_old.py"
    test.write_text(
        generate_pytest_source(
            trace_path=bundle, output_path=test, entrypoint="agent:main", import_root=workdir
        )
    )
    sent = len(server.requests)
    done = cli("run", "test_old.py", "--json", cwd=workdir)
    receipt = json.loads(done.stdout)
    assert (receipt["verdict"], receipt["reason"]) == ("could_not_execute", "capture_missing"), receipt
    assert done.returncode == 2
    assert len(server.requests) == sent  # the seal refused the request on 127.0.0.1


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_program_whose_replay_cannot_run_could_not_execute(workdir: Path) -> None:
    recorded(workdir)
    args = ("export", "run.sftrace", "--pytest", "-o", "test_p.py", "--", "python", "agent.py")
    exported = cli(*args, cwd=workdir)
    assert exported.returncode == 0, exported.stderr
    (workdir / "agent.py").write_text("import os\nos._exit(0)\n")  # ends the process before any verdict
    done = cli("run", "test_p.py", "--json", cwd=workdir)
    receipt = json.loads(done.stdout)
    assert (receipt["verdict"], receipt["reason"]) == ("could_not_execute", "program_not_run"), receipt


def test_the_program_output_rule() -> None:
    from stepfork.cli.program_test import program_output

    assert program_output('{"a": 1}\n') == {"a": 1}
    assert program_output("  [1, 2]  \n") == [1, 2]
    assert program_output("hello\nworld\n") == "hello\nworld"
    assert program_output("") == ""
    assert program_output("key sk-proj-Zabcdefghijklmnopqrstuv012345\n") == "key [REDACTED]"  # C5
