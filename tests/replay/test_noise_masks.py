"""What the noise rules must never hide (NEWCOMER2 findings 1 and 6, the newcomer's cases/mask agents): a
real change that looks like an id or a clock is still a change, in replay (DIVERGED) and in diff (CHANGED).

Each agent is recorded as it is, then replayed with its bug (its own code changed) and recorded with it:
a product code constant changed in a prompt, a wrong offer booked from a tool's fresh ids, one fresh value
given for two keys, a handed-out id returned where a fresh one belongs, a catalog lookup on the wrong tier,
a deadline computed a week late, a fine-tuned model switched. The renaming of fresh values, the random
generator's restored state and the clock window (docs/diff.md "Noise rules") leave every one of them seen.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint
from stepfork.trace import llm_request, record, trace_tool


@trace_tool
def stock(sku: str) -> dict[str, Any]:
    return {"sku": sku, "in_stock": 3}


def sku_agent(sku: str = "B07XJ8C8F5", *, tool: bool = True) -> dict[str, Any]:
    level = stock(sku)["in_stock"] if tool else 3
    reply = llm_request(
        provider="local",
        model="m",
        input={"prompt": f"Write one line about product {sku}; stock {level}"},
        call=lambda: {"text": "A fine product."},
    )
    return {"sku": sku, "line": reply["text"]}


@trace_tool
def search_flights(dest: str) -> list[dict[str, Any]]:
    return [{"id": str(uuid.uuid4()), "price": 320}, {"id": str(uuid.uuid4()), "price": 450}]


def pick_agent(bug: str = "") -> dict[str, Any]:
    offers = search_flights("LIS")
    pick = offers[1] if bug == "dearer" else offers[0]
    confirmation, key = str(uuid.uuid4()), str(uuid.uuid4())
    if bug == "one key":
        key = confirmation
    if bug == "offer as confirmation":
        confirmation = pick["id"]
    return {
        "booked": pick["id"],
        "price": pick["price"],
        "confirmation": confirmation,
        "idempotency_key": key,
    }


def pick_id_agent(bug: bool = False) -> dict[str, Any]:
    offers = search_flights("LIS")
    return {"booked": (offers[1] if bug else offers[0])["id"]}


CATALOG = {"gold": ("B07XJ8C8F5", "GOLD25OFF"), "silver": ("B09G9FPHY6", "SLVR10OFF")}


@trace_tool
def customer_tier(customer: str) -> dict[str, str]:
    return {"customer": customer, "tier": "gold"}


def reco_agent(bug: bool = False) -> dict[str, str]:
    tier = "silver" if bug else customer_tier("alice")["tier"]
    if bug:
        customer_tier("alice")
    asin, promo = CATALOG[tier]
    return {"recommended_asin": asin, "promo_code": promo}


BASE = datetime.datetime(2026, 12, 1, 10, 0, tzinfo=datetime.UTC)


def deadline_agent(days: int = 0) -> dict[str, str]:
    deadline = (BASE + datetime.timedelta(days=days)).isoformat()
    reply = llm_request(
        provider="local",
        model="m",
        input={
            "messages": [{"role": "user", "content": "Draft the reminder"}],
            "reminder": {"due_at": deadline, "timeout_seconds": 30 if not days else 3000},
        },
        call=lambda: {"text": "Reminder drafted."},
    )
    return {"text": reply["text"]}


def fine_tune_agent(model: str = "ft:gpt-4o-mini-2024-07-18:acme:support:9Qx8Lm2P") -> dict[str, str]:
    reply = llm_request(
        provider="openai",
        model=model,
        input={"model": model, "messages": [{"role": "user", "content": "Classify: refund please"}]},
        call=lambda: {"text": "refund"},
    )
    return {"label": reply["text"]}


@dataclass(frozen=True)
class Case:
    name: str
    agent: Callable[[], Any]
    buggy: Callable[[], Any]
    replay: tuple[str, str]  # what replay says of the buggy code: (DIVERGED's place, its path)
    diff: str  # the first change of diff(recording, buggy recording)


CASES = [
    Case("sku in a prompt", sku_agent, lambda: sku_agent("B09G9FPHY6"), ("matching", "$.sku"), "input.sku"),
    Case(
        "sku in a prompt, no tool",
        lambda: sku_agent(tool=False),
        lambda: sku_agent("B09G9FPHY6", tool=False),
        ("matching", "$.prompt"),
        "input.prompt",
    ),
    Case(
        "the dearer offer", pick_agent, lambda: pick_agent("dearer"), ("behavior", "booked"), "output.booked"
    ),
    Case(
        "one fresh value for two keys",
        pick_agent,
        lambda: pick_agent("one key"),
        ("behavior", "idempotency_key"),
        "output.idempotency_key",
    ),
    Case(
        "a handed-out id as the confirmation",
        pick_agent,
        lambda: pick_agent("offer as confirmation"),
        ("behavior", "confirmation"),
        "output.confirmation",
    ),
    Case(
        "the other offer's id alone",
        pick_id_agent,
        lambda: pick_id_agent(True),
        ("behavior", "booked"),
        "output.booked",
    ),
    Case(
        "a catalog code on the wrong tier",
        reco_agent,
        lambda: reco_agent(True),
        ("behavior", "promo_code"),
        "output.promo_code",
    ),
    Case(
        "a deadline a week late",
        deadline_agent,
        lambda: deadline_agent(7),
        ("matching", "$.reminder.due_at"),
        "input.reminder.due_at",
    ),
]


def recorded(path: Path, agent: Callable[[], Any]) -> Path:
    with record("mask", output=path) as session:
        session.set_output(agent())
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_real_change_that_looks_like_noise_is_diverged_and_changed(tmp_path: Path, case: Case) -> None:
    bundle = recorded(tmp_path / "good.sftrace", case.agent)
    assert replay_entrypoint(bundle, case.agent).behavior.status == "MATCHED"
    outcome = replay_entrypoint(bundle, case.buggy)
    place, path = case.replay
    if place == "matching":
        assert outcome.matching.status == "DIVERGED", outcome.matching.message
        assert path in (outcome.matching.message or ""), outcome.matching.message
    else:
        assert (outcome.behavior.status, outcome.behavior.path) == ("DIVERGED", path), (
            outcome.behavior.message
        )
    assert outcome.exit_code == 1
    result = diff_traces(bundle, recorded(tmp_path / "bug.sftrace", case.buggy))
    assert not result.equivalent
    assert result.changes[0].path == case.diff, str(result)


def test_a_switched_fine_tuned_model_is_another_call(tmp_path: Path) -> None:
    bundle = recorded(tmp_path / "good.sftrace", fine_tune_agent)
    other = lambda: fine_tune_agent("ft:gpt-4o-mini-2024-07-18:acme:support:7Hd2Kq9Z")  # noqa: E731
    assert replay_entrypoint(bundle, other).matching.status == "DIVERGED"
    result = diff_traces(bundle, recorded(tmp_path / "bug.sftrace", other))
    assert (result.added, result.removed) == (1, 1), str(result)
