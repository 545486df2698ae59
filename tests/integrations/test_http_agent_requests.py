"""A request the agent's own context made is its behaviour: a REST tool call
(`requests` through `instrument_urllib3()`) recorded in the agent's context that does not come again is a
divergence, `recorded http call not made: POST .../refunds`, in `replay`, `check`, an exported test run by
`stepfork run`; a request of a background thread that does not come stays informational, as before.

The agent is written as the requests documentation writes it (`requests.get(...).json()`,
`requests.post(url, json=...)`), recorded by running it as a program against a real REST API on 127.0.0.1
(fresh ids, dates and request ids per response), and replayed sealed (the API is never called again).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from shop_api import ShopApi, serving

STEPFORK = Path(sys.executable).parent / "stepfork"

AGENT = '''
"""A refund agent whose tools are plain REST calls through requests."""
import os
import sys
import threading

import requests

from stepfork import record, trace_tool
from stepfork.integrations.urllib3 import instrument_urllib3

instrument_urllib3()
API = os.environ.get("SHOP_API", "http://127.0.0.1:9")


def run_agent():
    if os.environ.get("POLL"):  # a library's background poller: a thread started without the context
        poller = threading.Thread(target=lambda: requests.get(f"{API}/flags"))
        poller.start()
        poller.join()
    order = requests.get(f"{API}/orders/ORD-1").json()  # look the order up
    if not os.environ.get("BUG"):  # the regression: the refund is never issued
        requests.post(f"{API}/refunds", json={"order": "ORD-1", "amount": 10}).json()
    return {"order_ok": order["status"] == "delivered", "refunded": True}


@trace_tool
def issue_refund(order: str, amount: int) -> dict:
    return requests.post(f"{API}/refunds", json={"order": order, "amount": amount}).json()


def run_tool_agent():
    """The refund as a traced tool: its request is made inside the tool's body, which replay serves."""
    refund = issue_refund("ORD-1", 10)
    return {"refunded": refund["status"] == "succeeded"}


if __name__ == "__main__":
    with record("refund-agent", output=sys.argv[1]) as session:
        session.set_output(run_tool_agent() if os.environ.get("TOOL") else run_agent())
'''


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopApi]:
    with serving() as api:
        yield api


def _env(shop: ShopApi, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BUG", "POLL", "TOOL")}
    env.update(SHOP_API=shop.url, PYTHONPATH="", **extra)
    return env


def _stepfork(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=180
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, shop: ShopApi) -> Path:
    """The refund agent's folder, holding ``refund.sftrace`` (the good run), ``polled.sftrace`` (the same
    with a background poller) and ``tool.sftrace`` (the refund as a traced tool), each recorded by running
    the agent as a program."""
    folder = tmp_path_factory.mktemp("refund")
    (folder / "agent_refund.py").write_text(AGENT)
    for name, extra in (("refund", {}), ("polled", {"POLL": "1"}), ("tool", {"TOOL": "1"})):
        done = subprocess.run(
            [sys.executable, "agent_refund.py", f"{name}.sftrace"],
            cwd=folder,
            env=_env(shop, **extra),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    return folder


def test_the_recorder_says_which_context_made_each_request(recorded: Path) -> None:
    from stepfork.trace import load_trace, validate_bundle

    bundle = recorded / "polled.sftrace"
    assert validate_bundle(bundle, strict=True, verify_integrity=True).valid
    facts = json.loads((bundle / "concurrency.json").read_text())
    names = {e.id: e.name for e in load_trace(bundle).events if str(e.type) == "tool_call"}
    background = {
        names[call_id].split(" ", 2)[1] + " " + names[call_id].rsplit("/", 1)[1]: entry["background"]
        for call_id, entry in facts["calls"].items()
    }
    assert background == {"GET flags": True, "GET ORD-1": False, "POST refunds": False}


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_replay_diverges_when_the_agent_no_longer_posts_the_refund(recorded: Path, shop: ShopApi) -> None:
    sent = len(shop.requests)
    args = ("replay", "refund.sftrace", "--entrypoint", "agent_refund:run_agent")
    good = _stepfork(recorded, _env(shop), *args)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Recorded behavior: MATCHED" in good.stdout
    bug = _stepfork(recorded, _env(shop, BUG="1"), *args)
    assert bug.returncode == 1, bug.stdout + bug.stderr
    assert "Dependency matching: DIVERGED" in bug.stdout
    assert f"recorded http call not made: POST {shop.url}/refunds" in bug.stdout
    assert "Status: DIVERGED" in bug.stdout
    as_json = json.loads(_stepfork(recorded, _env(shop, BUG="1"), *args, "--json").stdout)
    assert (as_json["matching"]["status"], as_json["matching"]["code"]) == ("DIVERGED", "request_not_made")
    assert len(shop.requests) == sent  # sealed: the API was never called again


def test_check_reports_the_missing_refund_as_diverged(recorded: Path, shop: ShopApi) -> None:
    corpus = recorded / "corpus"
    corpus.mkdir(exist_ok=True)
    if not (corpus / "refund.sftrace").exists():
        import shutil

        shutil.copytree(recorded / "refund.sftrace", corpus / "refund.sftrace")
    args = ("check", "corpus", "--entrypoint", "agent_refund:run_agent", "--jobs", "1", "--json")
    good = _stepfork(recorded, _env(shop), *args)
    assert good.returncode == 0, good.stdout + good.stderr
    bug = _stepfork(recorded, _env(shop, BUG="1"), *args)
    assert bug.returncode == 1, bug.stdout + bug.stderr
    verdict = json.loads(bug.stdout)["verdicts"][0]
    assert (verdict["verdict"], verdict["code"]) == ("DIVERGED", "request_not_made"), verdict
    assert "recorded http call not made: POST" in verdict["detail"]


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_exported_test_fails_when_the_refund_is_not_posted(recorded: Path, shop: ShopApi) -> None:
    (recorded / "expected.json").write_text(json.dumps({"order_ok": True, "refunded": True}))
    exported = _stepfork(
        recorded,
        _env(shop),
        "export", "refund.sftrace", "--pytest", "-o", "test_refund.py", "--overwrite",
        "--entrypoint", "agent_refund:run_agent", "--expect-output", "expected.json",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    good = _stepfork(recorded, _env(shop), "run", "test_refund.py", "--json")
    assert json.loads(good.stdout)["verdict"] == "passed", good.stdout
    bug = _stepfork(recorded, _env(shop, BUG="1"), "run", "test_refund.py", "--json")
    receipt = json.loads(bug.stdout)
    assert (bug.returncode, receipt["verdict"]) == (1, "failed"), bug.stdout
    assert "recorded http call not made: POST" in receipt["detail"]


def test_a_background_request_that_does_not_come_stays_informational(recorded: Path, shop: ShopApi) -> None:
    """The poller's GET came from a thread without the context: without POLL it is not made, and the replay
    still matches; the agent's own requests are all made."""
    done = _stepfork(
        recorded, _env(shop), "replay", "polled.sftrace", "--entrypoint", "agent_refund:run_agent"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  HTTP requests: 2 served (of 3 recorded): 2 by the agent\n" in done.stdout
    assert "Recorded behavior: MATCHED" in done.stdout


def test_a_bundle_recorded_before_the_context_fact_keeps_the_earlier_rule(
    recorded: Path, shop: ShopApi, tmp_path: Path
) -> None:
    """concurrency.json without ``background`` (written before this release): which context made a request is
    unknown, so one that does not come is not missing (docs/format.md)."""
    import shutil

    from stepfork.trace import load_trace, save_trace
    from stepfork.trace.concurrency import ConcurrencyFacts, attach_facts, load_facts

    old = tmp_path / "old.sftrace"
    trace = load_trace(recorded / "refund.sftrace")
    facts = load_facts(recorded / "refund.sftrace")
    assert facts is not None
    for fact in facts.calls.values():
        fact.background = None
    attach_facts(trace, ConcurrencyFacts.parse(facts.to_json()))
    save_trace(trace, old)
    assert "background" not in (old / "concurrency.json").read_text()
    shutil.copy(recorded / "agent_refund.py", tmp_path)
    done = _stepfork(
        tmp_path, _env(shop, BUG="1"), "replay", "old.sftrace", "--entrypoint", "agent_refund:run_agent"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  HTTP requests: 1 served (of 2 recorded): 1 by the agent\n" in done.stdout


def test_a_request_made_inside_a_served_tool_is_not_missing(recorded: Path, shop: ShopApi) -> None:
    """Frozen replay serves ``issue_refund`` from the recording, so the POST its body made is never made
    again: it was nested in the tool, not the agent's own request."""
    args = ("replay", "tool.sftrace", "--entrypoint", "agent_refund:run_tool_agent", "--json")
    done = _stepfork(recorded, _env(shop), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert (report["matching"]["status"], report["behavior"]["status"]) == ("COMPLETE", "MATCHED")
    assert [call["label"] for call in report["calls"]] == ["issue_refund"]


SCRIPT = '''
"""The refund agent as a plain program: no Stepfork import, recorded with `stepfork record --`."""
import json
import os

import requests

API = os.environ["SHOP_API"]
order = requests.get(f"{API}/orders/ORD-1").json()
if not os.environ.get("BUG"):
    requests.post(f"{API}/refunds", json={"order": "ORD-1", "amount": 10})
print(json.dumps({"order_ok": order["status"] == "delivered", "refunded": True}))
'''


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_program_recorded_with_record_dash_dash_diverges_without_its_refund(
    tmp_path: Path, shop: ShopApi
) -> None:
    (tmp_path / "refund_program.py").write_text(SCRIPT)
    recorded = _stepfork(
        tmp_path, _env(shop), "record", "-o", "p.sftrace", "--", "python", "refund_program.py"
    )
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    good = _stepfork(tmp_path, _env(shop), "replay", "p.sftrace", "--", "python", "refund_program.py")
    assert good.returncode == 0, good.stdout + good.stderr
    bug = _stepfork(tmp_path, _env(shop, BUG="1"), "replay", "p.sftrace", "--", "python", "refund_program.py")
    assert bug.returncode == 1, bug.stdout + bug.stderr
    assert f"recorded http call not made: POST {shop.url}/refunds" in bug.stdout
