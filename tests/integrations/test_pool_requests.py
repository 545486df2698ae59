"""Work an agent submits to a thread pool is the agent's (a newcomer's report, finding 2).

Agents fan their tool calls out with ``concurrent.futures.ThreadPoolExecutor`` (``pool.map``,
``pool.submit``), whose workers do not inherit the submitter's context. Before, their requests were
"background" (a thread without the session in its context): a buggy version that dropped its refund POST
replayed COMPLETED, its exported test with a reviewed expectation PASSED, and LLM calls made from the pool
could all be dropped unnoticed. Now work submitted under a session runs in it, while recording and while
replaying (stepfork.trace.executors): its requests must come (``request_not_made``), one more than recorded
is refused, and its LLM calls are in the agent's order. A library's own thread (``threading.Thread``,
started from inside the agent's call as LiteLLM starts its cost-map retry) stays background, and a bundle
recorded before the rule replays as it did.

The agents are written as the `requests`, httpx and OpenAI SDK documentation write them, run against a
shop's REST API and an OpenAI-compatible server on 127.0.0.1 (fresh ids, dates and request ids per
response), recorded and replayed through the real CLI; every replay is sealed, and the servers' counters
prove it sent nothing.
"""

from __future__ import annotations

import contextvars
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_openai import LocalOpenAI, serving
from shop_api import ShopApi
from shop_api import serving as shop_serving

STEPFORK = Path(sys.executable).parent / "stepfork"

POOL_AGENT = '''
"""A refund agent that issues its side effects in parallel, as services do. No Stepfork import."""
import json
import os
from concurrent.futures import ThreadPoolExecutor

import requests

import flags

API = os.environ["SHOP_API"]


def refund(order):
    return requests.post(f"{API}/refunds", json={"order": order["id"], "amount": 10}).json()


def ticket(order):
    return requests.post(f"{API}/tickets", json={"order": order["id"], "note": "refund requested"}).json()


def main():
    if os.environ.get("POLL"):  # a library refreshes its flags on a thread of its own
        flags.refresh_in_background().join()
    order = requests.get(f"{API}/orders/ORD-1").json()
    jobs = [ticket] if os.environ.get("BUG") else [refund, ticket]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda job: job(order), jobs))
    return {"order": order["id"], "status": "refund requested"}


if __name__ == "__main__":
    print(json.dumps(main()))
'''

FLAGS_LIBRARY = '''
"""A feature-flag library: it refreshes its flags from a daemon thread it starts itself, from inside the
caller's call (as LiteLLM starts its model-cost-map retry)."""
import os
import threading

import requests


def refresh_in_background():
    thread = threading.Thread(target=_refresh, name="flags-refresh", daemon=True)
    thread.start()
    return thread


def _refresh():
    requests.get(f"{os.environ['SHOP_API']}/flags")
'''

# the same agent recorded by a build before the rule: work submitted to the pool was a thread without the
# session in its context (RecordingSession.submit_carries_context, False there)
RECORD_BEFORE_THE_RULE = """
import sys

from stepfork.integrations.autocapture import enable

enable()

from stepfork.trace import record
from stepfork.trace.recording import RecordingSession

RecordingSession.submit_carries_context = False
import shop_agent

with record("shop_agent", output=sys.argv[1]):  # as `stepfork record --`: no output recorded
    shop_agent.main()
"""

HTTPX_AGENT = '''
"""The refund agent on httpx, one future per tool (`pool.submit`, `as_completed`), instrumented in code."""
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed

import httpx

from stepfork import record
from stepfork.integrations.httpx import instrument_httpx

client = instrument_httpx(httpx.Client(base_url=os.environ["SHOP_API"]))


def run_agent():
    order = client.get("/orders/ORD-2").json()
    posts = [("/refunds", {"order": order["id"], "amount": 25})]
    if not os.environ.get("BUG"):
        posts.append(("/tickets", {"order": order["id"], "note": "refund requested"}))
    if os.environ.get("TWICE"):  # a retry loop gone wrong: the refund is issued twice
        posts.append(posts[0])
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(client.post, path, json=body) for path, body in posts]
        statuses = sorted(future.result().json()["status"] for future in as_completed(futures))
    return {"order": order["id"], "statuses": sorted(set(statuses))}


if __name__ == "__main__":
    with record("httpx-refund", output=sys.argv[1]) as session:
        session.set_output(run_agent())
'''

LLM_AGENT = '''
"""Three translations at once through a thread pool, as the OpenAI SDK README's sync client. No Stepfork
import."""
import json
import os
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI

client = OpenAI()
CITIES = ["Paris", "London", "Tokyo"][: int(os.environ.get("CITIES", "3"))]


def translate(city):
    response = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"Translate the name {city}"}]
    )
    return response.choices[0].message.content


with ThreadPoolExecutor(max_workers=3) as pool:
    print(json.dumps({"translations": len(list(pool.map(translate, CITIES)))}))
'''


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BUG", "POLL", "TWICE", "CITIES")}
    env.update(PYTHONPATH="", NO_COLOR="1", COLUMNS="120", **extra)
    return env


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(STEPFORK), *args] if args[0] != "python" else [sys.executable, *args[1:]]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=180)


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopApi]:
    with shop_serving() as api:
        yield api


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, shop: ShopApi) -> Path:
    """The pool agent's folder with ``pool.sftrace`` recorded by ``stepfork record --``, ``polled.sftrace``
    (the same while the flags library polled) and ``before.sftrace`` (recorded as a build before the rule
    records)."""
    work = tmp_path_factory.mktemp("pool")
    (work / "shop_agent.py").write_text(POOL_AGENT)
    (work / "flags.py").write_text(FLAGS_LIBRARY)
    (work / "record_before.py").write_text(RECORD_BEFORE_THE_RULE)
    env = _env(SHOP_API=shop.url)
    for name, extra in (("pool", {}), ("polled", {"POLL": "1"})):
        command = ("record", "-o", f"{name}.sftrace", "--", "python", "shop_agent.py")
        done = _run(work, {**env, **extra}, *command)
        assert done.returncode == 0, done.stdout + done.stderr
    done = _run(work, {**env, "PYTHONPATH": str(work)}, "python", "record_before.py", "before.sftrace")
    assert done.returncode == 0, done.stdout + done.stderr
    return work


def _background(bundle: Path) -> dict[str, bool]:
    """``{"METHOD /path": background}`` of a bundle's http calls, from its concurrency.json."""
    from stepfork.trace import load_trace

    facts = json.loads((bundle / "concurrency.json").read_text())["calls"]
    calls = [e for e in load_trace(bundle).events if str(e.type) == "tool_call"]
    return {f"{e.name.split(' ')[1]} /{e.name.split('/', 3)[3]}": facts[e.id]["background"] for e in calls}


def test_requests_made_by_pool_workers_are_recorded_as_the_agents(folder: Path) -> None:
    assert _background(folder / "pool.sftrace") == {
        "GET /orders/ORD-1": False,
        "POST /refunds": False,
        "POST /tickets": False,
    }
    assert json.loads((folder / "pool.sftrace" / "concurrency.json").read_text())["submit_carries_context"]


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_refund_dropped_from_the_pool_diverges_and_the_report_names_the_agents_requests(
    folder: Path, shop: ShopApi
) -> None:
    sent = len(shop.requests)
    command = ("replay", "pool.sftrace", "--verbose", "--", "python", "shop_agent.py")
    good = _run(folder, _env(SHOP_API=shop.url), *command)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Dependency Calls\n  HTTP requests: 3 served (of 3 recorded): 3 by the agent\n" in good.stdout
    assert "(none reached)" not in good.stdout
    assert "Background" not in good.stdout
    assert f"    - http POST {shop.url}/refunds (step " in good.stdout
    assert "Status: COMPLETED" in good.stdout
    bug = _run(folder, _env(SHOP_API=shop.url, BUG="1"), *command)
    assert bug.returncode == 1, bug.stdout + bug.stderr
    assert "Dependency matching: DIVERGED" in bug.stdout
    assert f"recorded http call not made: POST {shop.url}/refunds" in bug.stdout
    assert "Status: DIVERGED" in bug.stdout
    as_json = _run(folder, _env(SHOP_API=shop.url, BUG="1"), "replay", "pool.sftrace", "--json", *command[3:])
    report = json.loads(as_json.stdout)
    assert (report["matching"]["status"], report["matching"]["code"]) == ("DIVERGED", "request_not_made")
    assert (report["requests"]["agent"], report["requests"]["background"]) == (2, 0)
    assert len(shop.requests) == sent  # sealed: the shop was never called again


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_exported_test_of_a_pool_agent_fails_without_its_refund(folder: Path, shop: ShopApi) -> None:
    (folder / "expected.json").write_text(json.dumps({"order": "ORD-1", "status": "refund requested"}))
    exported = _run(
        folder,
        _env(SHOP_API=shop.url),
        "export", "pool.sftrace", "-o", "test_pool.py", "--overwrite", "--expect-output", "expected.json",
        "--", "python", "shop_agent.py",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stdout + exported.stderr
    good = _run(folder, _env(SHOP_API=shop.url), "run", "test_pool.py", "--json")
    assert json.loads(good.stdout)["verdict"] == "passed", good.stdout
    bug = _run(folder, _env(SHOP_API=shop.url, BUG="1"), "run", "test_pool.py", "--json")
    receipt = json.loads(bug.stdout)
    assert (bug.returncode, receipt["verdict"]) == (1, "failed"), bug.stdout
    assert f"recorded http call not made: POST {shop.url}/refunds" in receipt["detail"]


def test_a_librarys_own_thread_stays_background_and_may_stay_away(folder: Path, shop: ShopApi) -> None:
    """The flags library starts its thread from inside the agent's call: that thread is not the agent's
    work (only a pool's submitted work is), so its GET is background, and a replay without it matches."""
    assert _background(folder / "polled.sftrace")["GET /flags"] is True
    assert _background(folder / "polled.sftrace")["POST /refunds"] is False
    done = _run(folder, _env(SHOP_API=shop.url), "replay", "polled.sftrace", "--", "python", "shop_agent.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  HTTP requests: 3 served (of 4 recorded): 3 by the agent\n" in done.stdout
    polled = _run(
        folder, _env(SHOP_API=shop.url, POLL="1"), "replay", "polled.sftrace", "--", "python", "shop_agent.py"
    )
    assert polled.returncode == 0, polled.stdout + polled.stderr
    line = "  HTTP requests: 4 served (of 4 recorded): 3 by the agent, 1 by a background thread\n"
    assert line in polled.stdout


def test_a_bundle_recorded_before_the_rule_replays_as_it_did(folder: Path, shop: ShopApi) -> None:
    """Its pool's requests were recorded as background: the replay decides by the rule they were recorded
    with, so they are background again (and one that does not come stays informational, as it did)."""
    bundle = folder / "before.sftrace"
    assert "submit_carries_context" not in (bundle / "concurrency.json").read_text()
    assert _background(bundle) == {"GET /orders/ORD-1": False, "POST /refunds": True, "POST /tickets": True}
    command = ("replay", "before.sftrace", "--", "python", "shop_agent.py")
    good = _run(folder, _env(SHOP_API=shop.url), *command)
    assert good.returncode == 0, good.stdout + good.stderr
    line = "  HTTP requests: 3 served (of 3 recorded): 1 by the agent, 2 by background threads\n"
    assert line in good.stdout
    bug = _run(folder, _env(SHOP_API=shop.url, BUG="1"), *command)
    assert bug.returncode == 0, bug.stdout + bug.stderr


@pytest.fixture(scope="module")
def httpx_folder(tmp_path_factory: pytest.TempPathFactory, shop: ShopApi) -> Path:
    work = tmp_path_factory.mktemp("httpx-pool")
    (work / "httpx_agent.py").write_text(HTTPX_AGENT)
    done = _run(work, _env(SHOP_API=shop.url), "python", "httpx_agent.py", "refund.sftrace")
    assert done.returncode == 0, done.stdout + done.stderr
    return work


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_an_httpx_agent_submitting_its_posts_is_strict_on_missing_and_repeated_requests(
    httpx_folder: Path, shop: ShopApi
) -> None:
    command = ("replay", "refund.sftrace", "--entrypoint", "httpx_agent:run_agent", "--json")
    good = json.loads(_run(httpx_folder, _env(SHOP_API=shop.url), *command).stdout)
    assert (good["matching"]["status"], good["behavior"]["status"]) == ("COMPLETE", "MATCHED")
    assert good["requests"]["agent"] == 3
    missing = json.loads(_run(httpx_folder, _env(SHOP_API=shop.url, BUG="1"), *command).stdout)
    assert missing["matching"]["code"] == "request_not_made", missing["matching"]
    assert f"POST {shop.url}/tickets" in missing["matching"]["message"]
    twice = json.loads(_run(httpx_folder, _env(SHOP_API=shop.url, TWICE="1"), *command).stdout)
    assert twice["matching"]["code"] == "request_not_recorded", twice["matching"]
    assert "/refunds from the agent" in twice["matching"]["message"]


@pytest.fixture(scope="module")
def openai_server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_llm_calls_made_from_a_pool_are_in_the_agents_order_and_cannot_be_dropped(
    tmp_path: Path, openai_server: LocalOpenAI
) -> None:
    (tmp_path / "translate.py").write_text(LLM_AGENT)
    env = _env(OPENAI_BASE_URL=openai_server.base_url, OPENAI_API_KEY="sk-local-test-key")
    recorded = _run(tmp_path, env, "record", "-o", "t.sftrace", "--", "python", "translate.py")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    sent = len(openai_server.requests)
    for _ in range(3):  # the pool's order changes from run to run: the recording proves it may
        good = _run(tmp_path, env, "replay", "t.sftrace", "--json", "--", "python", "translate.py")
        report: dict[str, Any] = json.loads(good.stdout)
        assert good.returncode == 0, report["matching"]
        assert [call["kind"] for call in report["calls"]] == ["llm"] * 3
    dropped = _run(tmp_path, {**env, "CITIES": "2"}, "replay", "t.sftrace", "--", "python", "translate.py")
    assert dropped.returncode == 1, dropped.stdout + dropped.stderr
    assert "Dependency matching: INCOMPLETE" in dropped.stdout
    assert len(openai_server.requests) == sent


def test_a_replay_waits_for_a_fire_and_forget_refund_before_calling_it_missing(
    tmp_path: Path, shop: ShopApi
) -> None:
    """The agent submits its refund and returns without waiting for it; the worker sends it late. The
    session, ending with that request still expected, waits for the work it saw submitted (while it still
    serves) instead of calling the refund missing."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from stepfork.integrations.httpx import instrument_httpx
    from stepfork.replay import ReplaySession
    from stepfork.trace import record

    client = instrument_httpx(httpx.Client(base_url=shop.url))
    pool = ThreadPoolExecutor(max_workers=1)
    gate = threading.Event()

    def send_refund() -> None:
        gate.wait()
        client.post("/refunds", json={"order": "ORD-3", "amount": 5})

    def agent() -> dict[str, str]:
        pool.submit(send_refund)  # fire and forget
        return {"status": "refund requested"}

    bundle = tmp_path / "late.sftrace"
    gate.set()
    with record("late-refund", output=bundle):
        agent()
        pool.submit(lambda: None).result()  # the refund is sent before the recording ends
    gate.clear()
    sent = len(shop.requests)
    session = ReplaySession.from_trace(bundle)

    def replay() -> None:  # in a context of its own: the session is left from another thread
        session.__enter__()
        assert agent() == {"status": "refund requested"}
        ending = threading.Thread(target=session.__exit__, args=(None, None, None))
        ending.start()
        ending.join(timeout=0.5)
        assert ending.is_alive()  # still serving: the refund it expects is on its way
        gate.set()
        ending.join(timeout=30)
        assert not ending.is_alive()

    contextvars.copy_context().run(replay)
    session.verify_complete()
    assert [item.label for item in session.served_requests] == [f"http POST {shop.url}/refunds"]
    assert len(shop.requests) == sent
    pool.shutdown()
    client.close()
