"""Fresh values are decided by where they came from, never by how random they look (NEWCOMER findings 4, 10
and 11; docs/decisions.md "which values compare up to a renaming", docs/diff.md "Noise rules").

- A deterministic digest of a tool's value (``sha256(email)[:16]``) is compared exactly: a voucher bound to
  the wrong account is DIVERGED in replay, fails its exported test and is a change in ``diff``.
- A short id the run mints (``uuid4().hex[:8]``) is renamed every time (30 replays of 30), and so is a
  minted value that happens to look like a number or a word: the rule reads ``minted.json`` and the
  replay's own log (``stepfork.trace.minting``), not the value.
- A value the agent puts into a call's input (an idempotency key, ``user=str(uuid4())``) is renamed by
  replay's matching as ``diff`` renames it; a handed-out value there is still a divergence.
- A reviewed expectation (``export --expect-output``) is compared exactly, but for the paths the user
  ignores (``--ignore $.PATH``, as ``replay --ignore $.PATH``).

Values that must *look* a certain way are made by feeding the system's randomness a chosen sequence
(the ``os.urandom`` the mint log wraps), so each test is deterministic.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint, run_regression_case
from stepfork.trace import Trace, load_trace, minting, record, trace_tool

STEPFORK = Path(sys.executable).parent / "stepfork"


@trace_tool
def lookup_customer(email: str) -> dict[str, str]:
    return {"email": email, "tier": "gold"}


def voucher_agent() -> dict[str, str]:
    customer = lookup_customer("alice@example.com")
    who = os.environ.get("WHO", customer["email"])  # the bug under test: WHO picks the account
    return {"tier": customer["tier"], "voucher": hashlib.sha256(who.encode()).hexdigest()[:16]}


def short_id_agent() -> dict[str, str]:
    customer = lookup_customer("alice@example.com")
    return {"tier": customer["tier"], "ref": uuid.uuid4().hex[:8], "code": secrets.token_urlsafe(16)}


def recorded(tmp_path: Path, agent: Any, name: str = "run") -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("origin", output=bundle) as session:
        session.set_output(agent())
    return bundle


@pytest.fixture
def randomness(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The values the system's randomness gives next (``os.urandom`` under the mint log's wrapper):
    append bytes; each call takes the first value of the right size, else real randomness."""
    minting.stop(minting.start())  # the wrapper is installed
    queue: list[bytes] = []
    real = minting._ORIGINAL["urandom"]

    def chosen(size: int) -> bytes:
        for number, value in enumerate(queue):
            if len(value) == size:
                return queue.pop(number)
        return bytes(real(size))

    monkeypatch.setitem(minting._ORIGINAL, "urandom", chosen)
    monkeypatch.setitem(minting._ORIGINAL, "token_bytes", lambda n=None: chosen(32 if n is None else n))
    return queue


def test_a_digest_of_a_tool_value_is_compared_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = recorded(tmp_path, voucher_agent)
    assert replay_entrypoint(bundle, voucher_agent).behavior.status == "MATCHED"
    expected = load_trace(bundle).events[-1].output
    monkeypatch.setenv("WHO", "mallory@example.com")
    wrong = replay_entrypoint(bundle, voucher_agent)
    assert (wrong.behavior.status, wrong.behavior.path) == ("DIVERGED", "voucher")
    assert wrong.exit_code == 1
    for source in ("file", "recorded"):
        with pytest.raises(AssertionError, match="behavior mismatch at 'voucher'"):
            run_regression_case(voucher_agent, bundle, expectation=expected, expectation_source=source)
    mallory = recorded(tmp_path, voucher_agent, "mallory")
    assert [c.path for c in diff_traces(bundle, mallory).changes] == ["output.voucher"]


def test_a_short_minted_id_in_the_output_is_matched_every_time(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, short_id_agent)
    assert set(minting.load_minted(bundle).values) >= set(load_trace(bundle).events[-1].output.values()) - {
        "gold"
    }
    outcomes = [replay_entrypoint(bundle, short_id_agent) for _ in range(30)]
    assert [o.behavior.status for o in outcomes] == ["MATCHED"] * 30
    assert {d.path for d in outcomes[0].behavior.ignored} == {"$.ref", "$.code"}
    assert diff_traces(bundle, recorded(tmp_path, short_id_agent, "again")).equivalent


LOOKS = [
    ("12345678", "abcdef12"),  # a number, then a word-like run of hex letters
    ("abcdefab", "00000000"),
    ("deadbeef", "cafebabe"),
]


def four_bytes_agent() -> dict[str, str]:
    return {"ref": os.urandom(4).hex(), "code": f"c-{secrets.token_hex(4)}"}


@pytest.mark.parametrize(("first", "second"), LOOKS)
def test_minted_values_that_look_like_numbers_or_words_are_renamed(
    tmp_path: Path, randomness: list[bytes], first: str, second: str
) -> None:
    randomness += [bytes.fromhex(first), bytes.fromhex(first)]
    bundle = recorded(tmp_path, four_bytes_agent)
    assert load_trace(bundle).events[-1].output == {"ref": first, "code": f"c-{first}"}
    randomness += [bytes.fromhex(second), bytes.fromhex(second)]
    outcome = replay_entrypoint(bundle, four_bytes_agent)
    assert outcome.result == {"ref": second, "code": f"c-{second}"}
    assert outcome.behavior.status == "MATCHED", outcome.behavior.message


def test_a_value_the_replay_did_not_mint_is_a_change(tmp_path: Path, randomness: list[bytes]) -> None:
    randomness.append(bytes.fromhex("12345678"))
    bundle = recorded(tmp_path, lambda: {"ref": os.urandom(4).hex()})
    outcome = replay_entrypoint(bundle, lambda: {"ref": "abcdef12"})  # a constant: nobody minted it
    assert (outcome.behavior.status, outcome.behavior.path) == ("DIVERGED", "ref")


def test_a_urlsafe_token_that_starts_with_a_dash_is_one_value(
    tmp_path: Path, randomness: list[bytes]
) -> None:
    def agent() -> dict[str, str]:
        return {"code": f"c:{secrets.token_urlsafe(12)}."}

    randomness.append(bytes([0xF8]) + bytes(range(1, 12)))  # base64url: "-AECAwQF..."
    bundle = recorded(tmp_path, agent)
    assert load_trace(bundle).events[-1].output["code"].startswith("c:-")
    outcome = replay_entrypoint(bundle, agent)
    assert outcome.behavior.status == "MATCHED", outcome.behavior.message


@trace_tool
def create_ticket(title: str, idempotency_key: str) -> dict[str, str]:
    return {"status": "created", "ticket": f"tk_{uuid.uuid4().hex[:20]}"}


def ticket_agent() -> dict[str, str]:
    first = create_ticket("printer broken", idempotency_key=str(uuid.uuid4()))
    again = create_ticket("printer still broken", idempotency_key=uuid.uuid4().hex)
    return {"first": first["ticket"], "again": again["ticket"]}


def test_a_value_minted_into_a_calls_input_is_renamed_by_replay_as_by_diff(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, ticket_agent)
    outcome = replay_entrypoint(bundle, ticket_agent)
    assert outcome.matching.status == "COMPLETE", outcome.matching.message
    assert outcome.behavior.status == "MATCHED"
    assert [(i.label, i.path, i.reason) for i in outcome.ignored] == [
        ("create_ticket", "$.idempotency_key", "renamed id"),
        ("create_ticket", "$.idempotency_key", "renamed id"),
    ]
    assert diff_traces(bundle, recorded(tmp_path, ticket_agent, "again")).equivalent

    def echoes_a_handed_out_id() -> dict[str, str]:  # the second key is the first ticket: handed out
        first = create_ticket("printer broken", idempotency_key=str(uuid.uuid4()))
        create_ticket("printer still broken", idempotency_key=first["ticket"])
        return {"first": first["ticket"], "again": first["ticket"]}

    diverged = replay_entrypoint(bundle, echoes_a_handed_out_id)
    assert diverged.matching.status == "DIVERGED"
    assert "$.idempotency_key" in (diverged.matching.message or "")


def test_a_recording_without_minted_json_lets_the_replay_vouch_for_a_value_of_the_same_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def legacy(agent: Any) -> Trace:
        trace = load_trace(recorded(tmp_path, agent, agent.__name__))
        minting.attach_minted(trace, None)  # as a bundle recorded before minted.json existed
        return trace

    assert replay_entrypoint(legacy(short_id_agent), short_id_agent).behavior.status == "MATCHED"
    old = legacy(voucher_agent)
    monkeypatch.setenv("WHO", "mallory@example.com")
    assert replay_entrypoint(old, voucher_agent).behavior.status == "DIVERGED"


def stepfork(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False)


AGENT = """import datetime, hashlib, os, uuid
from stepfork import record, trace_tool


@trace_tool
def lookup(q: str) -> dict:
    return {"q": q}


def run_agent():
    found = lookup("a")
    # a time outside the run (a reminder tomorrow): behaviour, unlike a clock reading inside the run
    stamp = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).isoformat()
    return {"answer": found["q"], "remind_at": stamp, "ref": uuid.uuid4().hex[:8]}


if __name__ == "__main__":
    import sys

    with record("stamped", output=sys.argv[1], overwrite=True) as s:
        s.set_output(run_agent())
"""


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_replay_and_export_ignore_a_path_of_the_output_and_a_reviewed_expectation_is_exact(
    tmp_path: Path,
) -> None:
    (tmp_path / "stamped.py").write_text(AGENT)
    done = subprocess.run([sys.executable, "stamped.py", "run.sftrace"], cwd=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    plain = stepfork(tmp_path, "replay", "run.sftrace", "--entrypoint", "stamped:run_agent")
    assert plain.returncode == 1, plain.stdout
    assert "output differs at 'remind_at'" in plain.stdout
    ignored = stepfork(
        tmp_path, "replay", "run.sftrace", "--entrypoint", "stamped:run_agent", "--ignore", "$.remind_at"
    )
    assert ignored.returncode == 0, ignored.stdout + ignored.stderr
    assert "remind_at (--ignore)" in ignored.stdout
    assert "ref (renamed id)" in ignored.stdout

    reviewed = json.loads(json.dumps(load_trace(tmp_path / "run.sftrace").events[-1].output))
    (tmp_path / "expected.json").write_text(json.dumps(reviewed))
    for name, extra, verdict in [
        ("test_exact.py", ["--ignore", "$.remind_at"], "FAILED"),  # the minted ref is compared too
        ("test_marked.py", ["--ignore", "$.remind_at", "--ignore", "$.ref"], "PASSED"),
    ]:
        exported = stepfork(
            tmp_path,
            "export",
            "run.sftrace",
            "--entrypoint",
            "stamped:run_agent",
            "--expect-output",
            "expected.json",
            "-o",
            name,
            *extra,
        )
        assert exported.returncode == 0, exported.stderr
        assert "IGNORE_OUTPUT = ['$.remind_at'" in (tmp_path / name).read_text()
        ran = stepfork(tmp_path, "run", name)
        assert f"Verdict: {verdict}" in ran.stdout, ran.stdout + ran.stderr


def test_minted_json_holds_only_minted_values_the_bundle_already_shows(tmp_path: Path) -> None:
    kept, secret = os.urandom(6).hex(), ""

    def agent() -> dict[str, str]:
        nonlocal secret
        secret = secrets.token_urlsafe(24)
        os.urandom(32)  # minted, never shown
        return {"ref": os.urandom(4).hex(), "api_key": secret, "note": f"kept {kept}"}

    bundle = recorded(tmp_path, agent)
    values = minting.load_minted(bundle).values
    assert load_trace(bundle).events[-1].output["ref"] in values
    assert load_trace(bundle).events[-1].output["api_key"] == "[REDACTED]"
    assert not any(secret[:8] in value or value in secret for value in values)
    assert not any(kept in value for value in values)  # minted before the recording began
    assert len(values) == 1


@trace_tool
def book(reference: str) -> dict[str, str]:
    return {"booked": reference, "confirmation": os.urandom(5).hex()}


def test_minted_values_in_a_tools_plain_input_and_output_are_noted(tmp_path: Path) -> None:
    # a plain payload and a clean name: the recorder writes both lines straight from their parts
    # (EventLog.emit_tool), not through the redaction walk; what they hold is noted all the same
    reference = ""

    def agent() -> str:
        nonlocal reference
        reference = os.urandom(4).hex()  # 8 hex digits: no id by shape, minted by origin
        return book(reference)["confirmation"][:2]

    bundle = recorded(tmp_path, agent)
    confirmation = load_trace(bundle).events[2].output["confirmation"]
    assert minting.load_minted(bundle).values == {reference, confirmation}
