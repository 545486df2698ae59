"""Record an agent on a fake provider, replay it with the provider sealed, compare field by field."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest
from fake_providers import FakeProvider

from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import record, validate_bundle


def _run(agent: Callable[..., Any], *args: Any) -> Any:
    result = agent(*args)
    if inspect.isawaitable(result):

        async def main() -> Any:
            return await result

        return asyncio.run(main())
    return result


def record_run(bundle: Path, agent: Callable[[Any], Any], client: Callable[[FakeProvider], Any]) -> Any:
    """Run ``agent(client(fake))`` under ``record`` into ``bundle``; return its result."""
    fake = FakeProvider()

    async def arun() -> Any:
        async with record("capture", output=bundle):
            return await agent(client(fake))

    if inspect.iscoroutinefunction(agent):
        live = asyncio.run(arun())
    else:
        with record("capture", output=bundle):
            live = agent(client(fake))
    assert fake.requests, "the agent sent no request"
    assert validate_bundle(bundle).valid
    return live


def replay_run(
    bundle: Path, agent: Callable[[Any], Any], client: Callable[[FakeProvider], Any], **options: Any
) -> Any:
    """Replay ``agent`` (frozen) with a sealed fake provider; every recorded call must be consumed.
    ``options`` go to ``ReplaySession.from_trace`` (``ordering=``)."""
    fake = FakeProvider().seal()

    async def arun() -> Any:
        async with ReplaySession.from_trace(bundle, **options) as session:
            result = await agent(client(fake))
        session.verify_complete()
        return result

    if inspect.iscoroutinefunction(agent):
        return asyncio.run(arun())
    with ReplaySession.from_trace(bundle, **options) as session:
        result = agent(client(fake))
    session.verify_complete()
    return result


def divergence(
    bundle: Path, agent: Callable[[Any], Any], client: Callable[[FakeProvider], Any], **options: Any
) -> ReplayMismatchError:
    """The ReplayMismatchError a replay of ``agent`` (changed) raises; the sealed provider is never called."""
    fake = FakeProvider().seal()
    session = ReplaySession.from_trace(bundle, **options)

    async def arun() -> None:
        async with session:
            await agent(client(fake))

    def run() -> None:
        if inspect.iscoroutinefunction(agent):
            asyncio.run(arun())
        else:
            with session:
                agent(client(fake))

    with pytest.raises(ReplayMismatchError) as info:
        run()
    assert session.divergence is not None
    assert session.divergence.code == info.value.code
    return info.value


def assert_same(live: Any, replayed: Any, where: str = "$") -> None:
    """Equal values of the same types, field by field (pydantic models, lists, dicts, scalars)."""
    assert type(replayed) is type(live), f"{where}: {type(replayed)!r} != {type(live)!r}"
    if isinstance(live, pydantic.BaseModel):
        names = [*type(live).model_fields, *(live.model_extra or {})]
        for name in names:
            assert_same(getattr(live, name), getattr(replayed, name), f"{where}.{name}")
    elif isinstance(live, (list, tuple)):
        assert len(replayed) == len(live), f"{where}: length {len(replayed)} != {len(live)}"
        for index, (a, b) in enumerate(zip(live, replayed, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    elif isinstance(live, dict):
        assert replayed.keys() == live.keys(), where
        for key in live:
            assert_same(live[key], replayed[key], f"{where}.{key}")
    else:
        assert replayed == live, f"{where}: {replayed!r} != {live!r}"
