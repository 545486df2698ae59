"""The state probe of ``stepfork check``'s batch workers (``stepfork.analysis.check._state``): which changes
to an agent's module state it sees (then the next bundle gets a fresh worker), and which bookkeeping it
skips."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

from stepfork.analysis.check._state import Baseline, agent_module_names, snapshot

AGENT = """
from dataclasses import dataclass, field


class Counter:
    calls = 0


class Slotted:
    __slots__ = ("value",)

    def __init__(self):
        self.value = 1


class Base:
    __slots__ = ("inherited",)


class Child(Base):
    __slots__ = ("own",)

    def __init__(self):
        self.inherited = "a"
        self.own = "b"


@dataclass
class Settings:
    model: str = "gpt"
    tags: list = field(default_factory=list)


SETTINGS = Settings()
SLOTTED = Slotted()
CHILD = Child()
HISTORY = []

import functools, itertools, random


def remember(item, seen=[]):
    seen.append(item)


def counted():
    counted.calls = getattr(counted, "calls", 0) + 1


@functools.cache
def cached(key):
    return key


RNG = random.Random(7)
IDS = itertools.count()
BUFFER = bytearray(b"ab")
LIMITS = {"retries": 1, "model": "gpt"}  # containers of plain scalars take the probe's flat path
FLAGS = [1, "a", None]
TAGS = {"a"}


class Table(dict):
    pass


class OtherTable(dict):
    pass


TABLE = Table(a={"b": 1})


def limited(value, defaults=(1, "a")):
    return value
"""


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, list[str]]:
    (tmp_path / "probe_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "probe_agent", raising=False)
    module = importlib.import_module("probe_agent")
    names = agent_module_names(str(tmp_path))
    assert names == ["probe_agent"]
    yield module, names
    sys.modules.pop("probe_agent", None)


def test_an_unchanged_state_compares_equal(agent) -> None:
    _, names = agent
    assert snapshot(names) == snapshot(names)


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m.Counter, "calls", 1),  # a class-level counter
        lambda m: setattr(m.SLOTTED, "value", 2),  # a slot
        lambda m: setattr(m.CHILD, "inherited", "z"),  # a slot of a base class
        lambda m: m.SETTINGS.tags.append("x"),  # a dataclass instance's list
        lambda m: setattr(m.SETTINGS, "model", "claude"),
        lambda m: m.HISTORY.append({"q": 1}),
        lambda m: setattr(m, "NEW_GLOBAL", 1),
        lambda m: m.remember(1),  # a mutable default argument
        lambda m: m.counted(),  # an attribute set on a function
        lambda m: m.cached("k"),  # a functools.cache entry
        lambda m: m.RNG.random(),
        lambda m: next(m.IDS),
        lambda m: m.BUFFER.append(99),
        lambda m: sys.path.append("/nowhere"),
        lambda m: m.LIMITS.update(retries=True),  # equal in Python (1 == True), not the same state
        lambda m: m.LIMITS.update(retries=2),
        lambda m: m.LIMITS.update(timeout=1),
        lambda m: m.FLAGS.__setitem__(0, True),
        lambda m: m.FLAGS.append(0),
        lambda m: setattr(m.limited, "__defaults__", (True, "a")),
        lambda m: m.TAGS.add("b"),
        lambda m: setattr(m.SETTINGS, "__class__", type("Other", (), {})),
        lambda m: setattr(m.remember, "__module__", "elsewhere"),
        lambda m: setattr(m.TABLE, "__class__", m.OtherTable),
        lambda m: m.HISTORY.append(m.FLAGS.pop()),  # one read grows as another shrinks: same total length
    ],
    ids=[
        "class-attribute",
        "slot",
        "inherited-slot",
        "nested-list",
        "instance-field",
        "global-list",
        "new-global",
        "mutable-default",
        "function-attribute",
        "cache-entry",
        "random-state",
        "counter",
        "bytearray",
        "sys-path",
        "flat-dict-type",
        "flat-dict-value",
        "flat-dict-key",
        "flat-list-type",
        "flat-list-item",
        "flat-defaults",
        "set-item",
        "instance-class",
        "function-module",
        "dict-subclass-class",
        "item-moved-between-lists",
    ],
)
def test_a_change_of_the_agents_state_is_seen(agent, change, monkeypatch: pytest.MonkeyPatch) -> None:
    module, names = agent
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = snapshot(names)
    baseline = Baseline(names)
    change(module)
    assert snapshot(names) != before
    # the worker's quick re-read (what the baseline's walk read, by identity) sees it too, and so does the
    # whole comparison it falls back to
    assert not baseline.quick()
    assert not baseline.unchanged()


def test_an_unchanged_state_is_told_by_the_quick_re_read(agent) -> None:
    _, names = agent
    baseline = Baseline(names)
    assert baseline.quick()
    assert baseline.unchanged()


def test_a_value_replaced_by_an_equal_one_is_unchanged_after_one_walk(agent) -> None:
    module, names = agent
    baseline = Baseline(names)
    module.LIMITS = dict(module.LIMITS)  # another object, the same state
    module.HISTORY = []
    assert not baseline.quick()  # not the objects it read
    assert baseline.unchanged()  # the walk: the same state; its objects are what the re-read reads now
    assert baseline.quick()
    module.LIMITS["retries"] = 2  # and a change of the new object is seen
    assert not baseline.unchanged()


def test_the_entrypoints_own_code_is_the_agents_wherever_it_lives(agent, tmp_path: Path) -> None:
    # imported through PYTHONPATH from another directory than the import root (the working directory)
    elsewhere = tmp_path.parent / "not-the-agent"
    elsewhere.mkdir(exist_ok=True)
    assert agent_module_names(str(elsewhere)) == []
    assert agent_module_names(str(elsewhere), entrypoint="probe_agent:run") == ["probe_agent"]


def test_the_class_machinerys_dunder_attributes_are_not_state(agent) -> None:
    module, names = agent
    before = snapshot(names)
    module.Settings.__doc__ = "changed documentation"  # bookkeeping, as a module's __doc__ is
    assert snapshot(names) == before


def test_the_environment_and_working_directory_are_state(
    agent, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, names = agent
    before = snapshot(names)
    monkeypatch.setenv("STEPFORK_PROBE_TEST", "1")
    assert snapshot(names) != before
    monkeypatch.delenv("STEPFORK_PROBE_TEST")
    assert snapshot(names) == before
    monkeypatch.chdir(tmp_path)
    assert snapshot(names) != before


@pytest.mark.parametrize("table", ["list(range(60_000))", "dict.fromkeys(range(60_000))", "(1,) * 60_000"])
def test_a_state_past_the_budget_is_not_compared_wherever_it_is(
    table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a table of plain scalars takes the probe's flat path; as the module's last global, the budget was
    # never checked after it, and a state past 50,000 values was compared after every replay
    from stepfork.analysis.check._state import TooBig

    (tmp_path / "big_last.py").write_text(f"TABLE = {table}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "big_last", raising=False)
    importlib.import_module("big_last")
    try:
        with pytest.raises(TooBig):
            snapshot(["big_last"])
    finally:
        sys.modules.pop("big_last", None)
