"""The order of the agent's own REST requests is behaviour in `stepfork diff` (NEWCOMER6 F1).

Requests outside the agent's order were all sorted apart by label and input, so an agent that shipped
before charging, or charged before anything else, diffed BEHAVIOR EQUIVALENT. Now only background
requests (a thread without the agent's context) are sorted apart; the agent's own stay where they came,
and the ones it sends concurrently (a thread pool's fan-out) are sorted with their proven siblings, so two
recordings of the same fan-out stay EQUIVALENT. The real CLI, `requests` against the shop's REST API on
127.0.0.1 (helpers/shop_api.py: fresh ids, dates and request ids per response).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import run_stepfork
from shop_api import ShopApi, serving

AGENT = """
import os
from concurrent.futures import ThreadPoolExecutor
import requests

SHOP = os.environ["SHOP_URL"]


def charge():
    return requests.post(SHOP + "/charges", json={"order": "o-17", "amount": 4200}, timeout=5).json()


def ship():
    return requests.post(SHOP + "/shipments", json={"order": "o-17"}, timeout=5).json()


steps = [ship, charge] if os.environ.get("SWAP") else [charge, ship]
for step in steps:
    step()
with ThreadPoolExecutor(max_workers=3) as pool:  # the agent's own fan-out: any order is the same
    list(pool.map(lambda sku: requests.get(SHOP + "/orders/" + sku, timeout=5).json(), ["a", "b", "c"]))
print("done")
"""


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopApi]:
    with serving() as running:
        yield running


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, shop: ShopApi) -> Path:
    here = tmp_path_factory.mktemp("order")
    (here / "agent.py").write_text(AGENT)
    for name, env in {"one": {}, "two": {}, "three": {}, "swapped": {"SWAP": "1"}}.items():
        done = stepfork(here, shop, "record", "-o", f"{name}.sftrace", "--", "python", "agent.py", **env)
        assert done.returncode == 0, done.stderr
    return here


def stepfork(folder: Path, shop: ShopApi, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_stepfork(folder, *args, SHOP_URL=shop.url, **env)


def test_shipping_before_charging_is_a_change(folder: Path, shop: ShopApi) -> None:
    done = stepfork(folder, shop, "diff", "one.sftrace", "swapped.sftrace")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Result: BEHAVIOR CHANGED" in done.stdout
    assert "/shipments (step 1): added" in done.stdout  # shipped first: moved before the charge


@pytest.mark.parametrize("other", ["two", "three"])
def test_the_same_agent_with_its_concurrent_fan_out_is_equivalent(
    folder: Path, shop: ShopApi, other: str
) -> None:
    done = stepfork(folder, shop, "diff", "one.sftrace", f"{other}.sftrace")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Result: BEHAVIOR EQUIVALENT" in done.stdout
