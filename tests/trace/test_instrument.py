"""The instrumentation API (stepfork.trace.instrument): what a boundary handler receives, and C9/C12."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from stepfork.trace.boundary import BoundaryCall, using_handler
from stepfork.trace.instrument import LLMOutput, allm_request, llm_request, trace_tool

T = TypeVar("T")


class Capture:
    """A boundary handler that records the calls it receives and runs the bodies."""

    is_replay = False

    def __init__(self) -> None:
        self.calls: list[BoundaryCall] = []

    def handle(self, call: BoundaryCall, body: Callable[[], T], *, orphan: bool = False) -> T:
        self.calls.append(call)
        return body()

    async def ahandle(
        self, call: BoundaryCall, body: Callable[[], Awaitable[T]], *, orphan: bool = False
    ) -> T:
        self.calls.append(call)
        return await body()


@dataclass
class Booking:
    ref: str


@trace_tool
def search(query: str, limit: int = 10, *, lang: str = "en") -> list[str]:
    return [query] * min(limit, 2)


@trace_tool(name="book", replay_policy="live")
async def book_async(ref: str) -> Booking:
    return Booking(ref)


class Agent:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @trace_tool
    def method(self, x: int, y: int = 2) -> int:
        return x + y

    @trace_tool
    @classmethod
    def class_below(cls, x: int) -> str:
        return f"{cls.__name__}:{x}"

    @classmethod
    @trace_tool
    def class_above(cls, x: int) -> str:
        return f"{cls.__name__}:{x}"

    @trace_tool
    @staticmethod
    def static_below(x: int) -> int:
        return x * 2

    @staticmethod
    @trace_tool
    def static_above(x: int) -> int:
        return x * 3

    @trace_tool
    async def amethod(self, x: int) -> str:
        return self.prefix + str(x)


def test_no_session_calls_the_function_untouched_and_returns_its_value() -> None:
    assert search("q", 1) == ["q"]
    assert asyncio.run(book_async("r1")) == Booking("r1")
    assert llm_request(model="m", input={"a": 1}, call=lambda: "out") == "out"


def test_no_session_unwraps_llm_output_to_its_value() -> None:
    assert llm_request(model="m", input=None, call=lambda: LLMOutput("v", prompt_tokens=3)) == "v"

    async def call() -> LLMOutput:
        return LLMOutput({"text": "hi"}, cost_usd=0.5)

    assert asyncio.run(allm_request(model="m", input=None, call=call)) == {"text": "hi"}


def test_bound_input_has_defaults_applied_and_keyword_only_arguments() -> None:
    capture = Capture()
    with using_handler(capture):
        search("weather")
    (call,) = capture.calls
    assert call.kind == "tool"
    assert call.name == "search"
    assert call.input == {"query": "weather", "limit": 10, "lang": "en"}
    assert call.replay_policy == "frozen"
    assert call.return_type == list[str]
    assert call.function is not None
    assert call.function.endswith(":search")


def test_tool_name_policy_and_return_annotation_reach_the_handler() -> None:
    capture = Capture()

    async def main() -> Booking:
        with using_handler(capture):
            return await book_async("r2")

    assert asyncio.run(main()) == Booking("r2")
    (call,) = capture.calls
    assert (call.name, call.replay_policy, call.return_type) == ("book", "live", Booking)
    assert call.input == {"ref": "r2"}


@pytest.mark.parametrize(
    ("invoke", "expected_input", "expected_result"),
    [
        (lambda a: a.method(1), {"x": 1, "y": 2}, 3),
        (lambda a: Agent.class_below(4), {"x": 4}, "Agent:4"),
        (lambda a: a.class_above(5), {"x": 5}, "Agent:5"),
        (lambda a: Agent.static_below(6), {"x": 6}, 12),
        (lambda a: a.static_above(7), {"x": 7}, 21),
        (lambda a: asyncio.run(a.amethod(8)), {"x": 8}, "p8"),
    ],
    ids=[
        "method",
        "classmethod-below",
        "classmethod-above",
        "staticmethod-below",
        "staticmethod-above",
        "async-method",
    ],
)
def test_methods_drop_self_and_cls_from_the_input(
    invoke: Callable[[Agent], Any], expected_input: dict[str, Any], expected_result: Any
) -> None:
    capture = Capture()
    agent = Agent("p")
    with using_handler(capture):
        assert invoke(agent) == expected_result
    assert [c.input for c in capture.calls] == [expected_input]


def _plain_method(self: Agent, x: int, y: int = 2) -> int:
    return x + y


def test_signatures_are_those_of_the_undecorated_functions() -> None:
    assert inspect.signature(search) == inspect.signature(search.__wrapped__)
    assert list(inspect.signature(Agent.method).parameters) == ["self", "x", "y"]
    assert list(inspect.signature(Agent.class_below).parameters) == ["x"]
    assert list(inspect.signature(Agent.class_above).parameters) == ["x"]
    assert list(inspect.signature(Agent.static_below).parameters) == ["x"]
    assert inspect.signature(Agent.static_above).return_annotation == "int"
    assert inspect.iscoroutinefunction(Agent.amethod)
    assert inspect.iscoroutinefunction(book_async)


def test_bad_arguments_raise_the_undecorated_type_error_before_the_handler_sees_the_call() -> None:
    with pytest.raises(TypeError) as plain:
        search.__wrapped__("a", "b", "c")  # type: ignore[attr-defined]
    capture = Capture()
    with using_handler(capture), pytest.raises(TypeError) as wrapped:
        search("a", "b", "c")  # type: ignore[call-arg]
    assert str(wrapped.value) == str(plain.value)
    with using_handler(capture), pytest.raises(TypeError):
        Agent("p").method()  # type: ignore[call-arg]
    with using_handler(capture), pytest.raises(TypeError):
        asyncio.run(Agent("p").amethod(1, 2))  # type: ignore[call-arg]
    assert capture.calls == []


def test_generator_functions_are_refused_at_decoration() -> None:
    def gen() -> Any:
        yield 1

    async def agen() -> Any:
        yield 1

    with pytest.raises(ValueError, match="generator"):
        trace_tool(gen)
    with pytest.raises(ValueError, match="generator"):
        trace_tool(name="x")(agen)


def test_unknown_replay_policy_is_refused_at_decoration() -> None:
    with pytest.raises(ValueError, match="replay_policy"):
        trace_tool(replay_policy="sometimes")


def test_llm_request_describes_the_call_with_model_provider_and_jsonable_input() -> None:
    capture = Capture()
    with using_handler(capture):
        out = llm_request(
            model="gpt-x",
            provider="openai",
            input={"messages": ({"role": "user", "content": "hi"},)},
            call=lambda: LLMOutput("hello", total_tokens=5),
        )
    assert out == "hello"
    (call,) = capture.calls
    assert (call.kind, call.name, call.model, call.provider) == ("llm", "gpt-x", "gpt-x", "openai")
    assert call.label == "openai/gpt-x"
    # the tuple keeps its tagged form: the input is JSON, not the Python value
    assert call.input["messages"]["$stepfork"] == "tuple"


def test_allm_request_goes_through_the_async_handler() -> None:
    capture = Capture()

    async def call() -> str:
        return "async-out"

    async def main() -> Any:
        with using_handler(capture):
            return await allm_request(model="m", input=[1, 2], call=call)

    assert asyncio.run(main()) == "async-out"
    assert [c.input for c in capture.calls] == [[1, 2]]


@trace_tool
def mixed(a: int, b: str = "x", c: Any = None, *, d: float = 1.5, e: list[int] | None = None) -> None:
    return None


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {}),
        ((1, "y"), {}),
        ((1, "y", [3]), {"d": 2.0}),
        ((), {"a": 4, "e": [1]}),
        ((5,), {"c": {"k": 1}, "b": "z"}),
        ((), {"e": [], "d": 0.5, "a": 6}),
    ],
)
def test_bound_input_equals_signature_bind_with_defaults(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    bound = inspect.signature(mixed.__wrapped__).bind(*args, **kwargs)  # type: ignore[attr-defined]
    bound.apply_defaults()
    capture = Capture()
    with using_handler(capture):
        mixed(*args, **kwargs)
    assert capture.calls[0].input == dict(bound.arguments)
    assert list(capture.calls[0].input) == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((), {}), ((1,), {"a": 2}), ((1,), {"zz": 2}), ((1, "b", None, 4.0), {}), ((), {"b": "only"})],
    ids=["missing", "duplicate", "unknown", "too-many", "missing-with-keyword"],
)
def test_calls_that_do_not_bind_raise_the_undecorated_type_error(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError) as plain:
        mixed.__wrapped__(*args, **kwargs)  # type: ignore[attr-defined]
    capture = Capture()
    with using_handler(capture), pytest.raises(TypeError) as wrapped:
        mixed(*args, **kwargs)
    assert str(wrapped.value) == str(plain.value)
    assert capture.calls == []


def test_variadic_signatures_bind_args_and_kwargs_by_name() -> None:
    @trace_tool
    def variadic(first: int, *rest: int, flag: bool = False, **extra: str) -> None:
        return None

    capture = Capture()
    with using_handler(capture):
        variadic(1, 2, 3, mode="fast")
    (call,) = capture.calls
    assert call.input["first"] == 1
    assert call.input["rest"] == {"$stepfork": "tuple", "value": [2, 3]}
    assert (call.input["flag"], call.input["extra"]) == (False, {"mode": "fast"})


def test_partials_and_callable_objects_can_be_tools() -> None:
    import functools

    class Scorer:
        def __call__(self, text: str, scale: int = 1) -> int:
            return len(text) * scale

    scored = trace_tool(name="score")(Scorer())
    doubled = trace_tool(functools.partial(lambda a, b: a * b, 2))
    capture = Capture()
    with using_handler(capture):
        assert scored("abc") == 3
        assert doubled(b=5) == 10
    assert [(c.name, c.input) for c in capture.calls] == [
        ("score", {"text": "abc", "scale": 1}),
        ("partial", {"b": 5}),
    ]


def test_boundary_call_is_a_frozen_dataclass_built_by_position_or_keyword() -> None:
    import dataclasses

    by_position = BoundaryCall("llm", "gpt", {"q": 1}, "openai", "gpt", "live", dict, "m:f")
    by_keyword = BoundaryCall(
        kind="llm",
        name="gpt",
        input={"q": 1},
        provider="openai",
        model="gpt",
        replay_policy="live",
        return_type=dict,
        function="m:f",
    )
    assert by_position == by_keyword
    assert [f.name for f in dataclasses.fields(BoundaryCall)] == [
        "kind",
        "name",
        "input",
        "provider",
        "model",
        "replay_policy",
        "return_type",
        "function",
        "reads_output",
    ]
    defaults = BoundaryCall("tool", "search", [])
    assert defaults.reads_output is False
    assert dataclasses.replace(defaults, reads_output=True).reads_output is True
    assert (defaults.provider, defaults.model, defaults.replay_policy) == (None, None, "frozen")
    assert (defaults.return_type, defaults.function, defaults.label) == (None, None, "search")
    assert dataclasses.replace(defaults, input=[1]).input == [1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        defaults.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        BoundaryCall("tool", "search")  # type: ignore[call-arg]
