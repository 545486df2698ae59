"""C8 with ``raise_as``: a recorded failure raised as the user's own exception class, so the agent's
``except`` path runs under replay, while it stays a RecordedDependencyError carrying what was recorded.
Nothing named by the bundle is imported (docs/replay.md, "Raising recorded failures as your own
exceptions"; stepfork/replay/raise_as.py)."""

from __future__ import annotations

import asyncio
import re
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from stepfork.replay import (
    RaiseAsWarning,
    RecordedDependencyError,
    ReplaySession,
    run_regression_case,
)
from stepfork.trace import trace_tool

from .conftest import golden

SECRET = "sk-live0123456789abcdefghijKLMN"


class RateLimited(Exception):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


RATE_LIMITED = f"{RateLimited.__module__}.{RateLimited.__qualname__}"


@trace_tool(name="fetch_rates")
def fetch_rates(currency: str) -> dict[str, Any]:
    try:
        raise TimeoutError(f"upstream timed out, token {SECRET}")
    except TimeoutError as exc:
        raise RateLimited(f"slow down {SECRET}", retry_after=3) from exc


def agent() -> str:
    try:
        fetch_rates("EUR")
    except RateLimited as exc:
        return f"fallback after: {exc}"
    return "unreachable"


@pytest.fixture
def bundle(recorder) -> Path:
    path = recorder(agent)
    assert path.is_dir()
    return path


def test_with_raise_as_the_agents_own_except_branch_runs(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle, raise_as={RATE_LIMITED: RateLimited}) as replay:
        result = agent()
        replay.verify_complete()
    assert result.startswith("fallback after: slow down ")  # str(exc) is the recorded message...
    assert SECRET not in result  # ...sanitized
    assert replay.divergence is None


def test_the_raised_exception_is_also_a_recorded_dependency_error_with_the_recorded_fields(
    bundle: Path,
) -> None:
    with ReplaySession.from_trace(bundle, raise_as={RATE_LIMITED: RateLimited}) as replay:
        with pytest.raises(RecordedDependencyError) as info:  # existing handling still catches it
            fetch_rates("EUR")
        replay.verify_complete()
    err = info.value
    assert isinstance(err, RateLimited)
    assert type(err).__name__ == "RateLimited"
    assert (err.kind, err.name, err.error_type, err.short_type) == (
        "tool",
        "fetch_rates",
        RATE_LIMITED,
        "RateLimited",
    )
    assert err.message.startswith("slow down ")
    assert SECRET not in err.message
    assert str(err) == err.message
    assert err.args == (err.message,)
    assert [entry["type"] for entry in err.chain] == ["TimeoutError"]
    assert SECRET not in str(err.chain)
    assert err.code == "recorded_failure"
    assert err.diagnostic is not None
    assert err.diagnostic.expected_label == "fetch_rates"
    assert any("recorded tool failure for 'fetch_rates'" in note for note in err.__notes__)
    assert not hasattr(
        err, "retry_after"
    )  # RateLimited.__init__ did not run: its arguments were not recorded


def test_without_raise_as_the_behaviour_is_unchanged(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle) as replay:
        with pytest.raises(RecordedDependencyError) as info:
            agent()  # its `except RateLimited` does not catch
        replay.verify_complete()
    assert not isinstance(info.value, RateLimited)
    assert type(info.value) is RecordedDependencyError
    assert str(info.value).startswith(f"recorded tool failure for 'fetch_rates': {RATE_LIMITED}: slow down")
    assert replay.raise_as == {}


def test_a_short_key_matches_the_recorded_qualified_type(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle, raise_as={"RateLimited": RateLimited}) as replay:
        assert agent().startswith("fallback after: slow down")
        replay.verify_complete()


def test_a_qualified_key_of_another_module_does_not_match(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle, raise_as={"vendor.sdk.RateLimited": RateLimited}) as replay:
        with pytest.raises(RecordedDependencyError) as info:
            fetch_rates("EUR")
        replay.verify_complete()
    assert not isinstance(info.value, RateLimited)


class ToolTimeout(Exception):
    pass


@trace_tool
def flight_search(query: str, api_key: str) -> dict[str, Any]:
    raise AssertionError("a frozen replay must not run the tool body")


def flight_agent() -> dict[str, Any]:
    try:
        return flight_search(query="Kathmandu flights", api_key="live-key-123")
    except ToolTimeout as exc:
        return {"status": "retry later", "why": str(exc)}


def test_a_qualified_key_matches_an_interop_bundles_short_recorded_type() -> None:
    # the reference's golden bundle stores the short name "ToolTimeout"
    raise_as = {"app.errors.ToolTimeout": ToolTimeout}
    with ReplaySession.from_trace(golden("failed_tool_run"), raise_as=raise_as) as replay:
        assert flight_agent() == {"status": "retry later", "why": "flight_search timed out"}
        replay.verify_complete()
    with (
        ReplaySession.from_trace(golden("failed_tool_run"), raise_as=raise_as),
        pytest.raises(ToolTimeout) as info,
    ):
        flight_search(query="Kathmandu flights", api_key="live-key-123")
    err = info.value
    assert isinstance(err, RecordedDependencyError)
    assert (err.error_type, err.message, err.details) == (
        "ToolTimeout",
        "flight_search timed out",
        {"retryable": True},
    )


def test_two_keys_matching_one_recorded_type_by_short_name_are_refused_before_the_run() -> None:
    class Other(Exception):
        pass

    with pytest.raises(ValueError, match="all match the recorded error type 'ToolTimeout'"):
        ReplaySession.from_trace(
            golden("failed_tool_run"), raise_as={"a.ToolTimeout": ToolTimeout, "b.ToolTimeout": Other}
        )


@pytest.mark.parametrize(
    "raise_as",
    [
        {"RateLimited": int},
        {"RateLimited": "app.errors:RateLimited"},
        {"": RateLimited},
        [("RateLimited", RateLimited)],
    ],
    ids=["not-an-exception-class", "a-string", "empty-key", "not-a-mapping"],
)
def test_an_invalid_mapping_is_refused_before_the_run(bundle: Path, raise_as: Any) -> None:
    with pytest.raises(ValueError, match="raise_as"):
        ReplaySession.from_trace(bundle, raise_as=raise_as)


class SlottedError(Exception):
    __slots__ = ("extra",)


class StrictNewError(Exception):
    def __new__(cls, message: str, code: int) -> StrictNewError:  # required args: never called by replay
        return super().__new__(cls, message, code)


class QuotedKeyError(KeyError):  # KeyError's own str() would quote the message
    pass


class DiskTimeout(TimeoutError):  # an OSError, whose instances have their own lay-out
    pass


class ReadOnlyName(Exception):
    @property
    def name(self) -> str:
        return "mine"


@pytest.mark.parametrize("cls", [SlottedError, StrictNewError, QuotedKeyError, DiskTimeout, ReadOnlyName])
def test_classes_with_their_own_layout_or_constructor_are_combined_too(bundle: Path, cls: type) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RaiseAsWarning)  # no fallback, no warning
        with ReplaySession.from_trace(bundle, raise_as={"RateLimited": cls}) as replay:
            with pytest.raises(cls) as info:
                fetch_rates("EUR")
            replay.verify_complete()
    err = info.value
    assert isinstance(err, RecordedDependencyError)
    assert str(err) == err.message
    assert err.message.startswith("slow down")
    assert err.error_type == RATE_LIMITED
    # a read-only property of the user's class keeps its value; every other recorded field is set
    assert err.name == ("mine" if cls is ReadOnlyName else "fetch_rates")


class FinalError(Exception):
    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("FinalError cannot be subclassed")


def test_a_class_that_refuses_subclasses_is_raised_itself_with_the_recording_as_its_cause(
    bundle: Path,
) -> None:
    with pytest.warns(RaiseAsWarning, match="cannot be combined"):
        replay = ReplaySession.from_trace(bundle, raise_as={"RateLimited": FinalError})

    def caught() -> str:
        try:
            fetch_rates("EUR")
        except FinalError as exc:
            return str(exc)
        return "unreachable"

    with replay:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RaiseAsWarning)  # said once, at construction, not again per raise
            text = caught()
        replay.verify_complete()
    assert text.startswith("slow down")
    assert SECRET not in text

    with (
        pytest.warns(RaiseAsWarning),  # at construction
        ReplaySession.from_trace(bundle, raise_as={"RateLimited": FinalError}),
        pytest.raises(FinalError) as info,
    ):
        fetch_rates("EUR")
    assert not isinstance(info.value, RecordedDependencyError)
    cause = info.value.__cause__
    assert isinstance(cause, RecordedDependencyError)
    assert (cause.error_type, cause.name) == (RATE_LIMITED, "fetch_rates")


class Grouped(ExceptionGroup):  # needs (message, exceptions): neither combinable nor Grouped(message)
    pass


def test_a_class_that_cannot_be_built_from_the_message_gives_the_plain_error_with_a_note(
    bundle: Path,
) -> None:
    with ReplaySession.from_trace(bundle, raise_as={"RateLimited": Grouped}) as replay:
        with (
            pytest.warns(RaiseAsWarning, match="could not build"),
            pytest.raises(RecordedDependencyError) as info,
        ):
            fetch_rates("EUR")
        replay.verify_complete()
    assert type(info.value) is RecordedDependencyError
    assert any("could not build" in note for note in info.value.__notes__)


def test_a_factory_builds_the_users_exception_with_the_recording_as_its_cause(bundle: Path) -> None:
    seen: list[RecordedDependencyError] = []

    def factory(error: RecordedDependencyError) -> Exception:
        seen.append(error)
        return RateLimited(error.message, retry_after=3)

    with ReplaySession.from_trace(bundle, raise_as={RATE_LIMITED: factory}) as replay:
        with pytest.raises(RateLimited) as info:
            fetch_rates("EUR")
        replay.verify_complete()
    err = info.value
    assert err.retry_after == 3
    assert not isinstance(err, RecordedDependencyError)
    assert err.__cause__ is seen[0]
    assert seen[0].error_type == RATE_LIMITED
    assert SECRET not in str(err)


def test_a_factory_that_returns_no_exception_gives_the_plain_error(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle, raise_as={"RateLimited": lambda error: "oops"}) as replay:
        with (
            pytest.warns(RaiseAsWarning, match="returned str"),
            pytest.raises(RecordedDependencyError) as info,
        ):
            fetch_rates("EUR")
        replay.verify_complete()
    assert type(info.value) is RecordedDependencyError


class Cancelled(BaseException):  # a BaseException that is not an Exception, like asyncio.CancelledError
    pass


@pytest.mark.parametrize("cls", [BaseException, KeyboardInterrupt, SystemExit, GeneratorExit, Cancelled])
def test_a_class_that_is_not_an_exception_subclass_is_refused_before_the_run(bundle: Path, cls: type) -> None:
    refused = rf"raise_as\['RateLimited'\] must be an Exception subclass, not {cls.__name__}"
    with pytest.raises(ValueError, match=refused):
        ReplaySession.from_trace(bundle, raise_as={"RateLimited": cls})


@pytest.mark.parametrize(
    "factory",
    [lambda error: KeyboardInterrupt(error.message), lambda error: Cancelled(error.message)],
    ids=["keyboard-interrupt", "own-base-exception"],
)
def test_a_factory_returning_a_base_exception_gives_the_plain_error(bundle: Path, factory: Any) -> None:
    with ReplaySession.from_trace(bundle, raise_as={"RateLimited": factory}) as replay:
        with (
            pytest.warns(RaiseAsWarning, match="a BaseException that is not an Exception"),
            pytest.raises(RecordedDependencyError) as info,
        ):
            fetch_rates("EUR")
        replay.verify_complete()
    assert type(info.value) is RecordedDependencyError
    assert any("not an Exception" in note for note in info.value.__notes__)


def test_a_factory_raising_system_exit_gives_the_plain_error(bundle: Path) -> None:
    def factory(error: RecordedDependencyError) -> Exception:
        raise SystemExit(4)

    with ReplaySession.from_trace(bundle, raise_as={"RateLimited": factory}) as replay:
        with (
            pytest.warns(RaiseAsWarning, match="the factory raised SystemExit"),
            pytest.raises(RecordedDependencyError),
        ):
            fetch_rates("EUR")
        replay.verify_complete()


def test_a_failing_entry_warns_once_however_often_its_failure_is_raised(recorder) -> None:
    def twice() -> list[str]:
        caught = []
        for _ in range(2):
            try:
                fetch_rates("EUR")
            except Exception as exc:  # RateLimited while recording, the fallback under replay
                caught.append(type(exc).__name__)
        return caught

    path = recorder(twice)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # as the CLI shows them: every warning emitted is printed
        with ReplaySession.from_trace(path, raise_as={"RateLimited": lambda error: 42}) as replay:
            assert twice() == ["RecordedDependencyError", "RecordedDependencyError"]
            replay.verify_complete()
    messages = [str(w.message) for w in shown if w.category is RaiseAsWarning]
    assert len(messages) == 1, messages
    assert "could not build the exception (it returned int, not an exception)" in messages[0]


def test_async_tools_raise_the_users_class_too(recorder) -> None:
    @trace_tool(name="afetch")
    async def afetch(currency: str) -> dict[str, Any]:
        raise RateLimited("slow", retry_after=3)

    async def aagent() -> str:
        try:
            await afetch("EUR")
        except RateLimited as exc:
            return f"fallback: {exc}"
        return "unreachable"

    path = recorder.run_async(aagent)

    async def replayed() -> str:
        async with ReplaySession.from_trace(path, raise_as={"RateLimited": RateLimited}) as replay:
            result = await aagent()
            replay.verify_complete()
        return result

    assert asyncio.run(replayed()) == "fallback: slow"


CANARY = """
import pathlib

pathlib.Path(__file__).with_name("imported.flag").write_text("imported")


class Boom(Exception):
    pass


def boom() -> None:
    raise Boom("kaboom")
"""


def test_nothing_named_by_the_bundle_is_imported(recorder, tmp_path: Path, monkeypatch) -> None:
    # A module that leaves a flag file whenever it is imported; the recorded error type names it.
    root = tmp_path / "canary"
    root.mkdir()
    (root / "sf_canary_errors.py").write_text(textwrap.dedent(CANARY))
    monkeypatch.syspath_prepend(str(root))
    import sf_canary_errors  # recording runs the real code

    @trace_tool(name="risky")
    def risky() -> None:
        sf_canary_errors.boom()

    def canary_agent() -> str:
        try:
            risky()
        except Exception as exc:
            return type(exc).__name__
        return "unreachable"

    path = recorder(canary_agent)
    monkeypatch.delitem(sys.modules, "sf_canary_errors")
    (root / "imported.flag").unlink()

    class LocalBoom(Exception):
        pass

    with ReplaySession.from_trace(path, raise_as={"sf_canary_errors.Boom": LocalBoom}) as replay:
        with pytest.raises(LocalBoom) as info:
            risky()
        replay.verify_complete()
    assert info.value.error_type == "sf_canary_errors.Boom"
    assert "sf_canary_errors" not in sys.modules
    assert not (root / "imported.flag").exists()


REGRESSION_MODULE = """
from stepfork.trace import trace_tool


class RateLimited(Exception):
    def __init__(self, message, retry_after):
        super().__init__(message)
        self.retry_after = retry_after


@trace_tool
def quote(symbol: str) -> dict:
    raise RateLimited("slow", retry_after=3)


def run():
    try:
        return quote("ACME")
    except RateLimited:
        return {"status": "degraded"}


def run_uncaught():
    return quote("ACME")
"""


def test_run_regression_case_passes_raise_as_to_the_session(recorder, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "raise_as_agent.py").write_text(textwrap.dedent(REGRESSION_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    import raise_as_agent

    path = recorder(raise_as_agent.run)
    raise_as = {"raise_as_agent.RateLimited": raise_as_agent.RateLimited}
    expectation = {"status": "degraded"}
    assert (
        run_regression_case(
            "raise_as_agent:run", path, expectation=expectation, import_root=tmp_path, raise_as=raise_as
        )
        == expectation
    )
    with pytest.raises(AssertionError, match=r"^stepfork: entrypoint failed: recorded tool failure"):
        run_regression_case("raise_as_agent:run", path, expectation=expectation, import_root=tmp_path)
    # uncaught, the sentence stays the reference's even though str() of the raised error is the message
    sentence = "recorded tool failure for 'quote': raise_as_agent.RateLimited: slow"
    with pytest.raises(AssertionError, match=f"^stepfork: entrypoint failed: {re.escape(sentence)}$"):
        run_regression_case(
            "raise_as_agent:run_uncaught",
            path,
            import_root=tmp_path,
            has_expectation=False,
            raise_as=raise_as,
        )


def test_run_regression_case_resolves_module_class_strings_against_the_import_root(
    recorder, tmp_path: Path, monkeypatch
) -> None:
    (tmp_path / "raise_as_agent_str.py").write_text(textwrap.dedent(REGRESSION_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    import raise_as_agent_str

    path = recorder(raise_as_agent_str.run)
    expectation = {"status": "degraded"}
    raise_as = {"RateLimited": "raise_as_agent_str:RateLimited"}  # a literal, as in an exported test
    assert (
        run_regression_case(
            "raise_as_agent_str:run", path, expectation=expectation, import_root=tmp_path, raise_as=raise_as
        )
        == expectation
    )
    with pytest.raises(ValueError, match=r"raise_as\['RateLimited'\]: .*no attribute"):
        run_regression_case(
            "raise_as_agent_str:run",
            path,
            expectation=expectation,
            import_root=tmp_path,
            raise_as={"RateLimited": "raise_as_agent_str:Missing"},
        )


def test_replay_entrypoint_imports_module_class_strings_and_reports_unmatched_keys(
    recorder, tmp_path: Path, monkeypatch
) -> None:
    """The CLI's replay report (``stepfork replay --raise-as``): strings resolved like the entrypoint; a key
    matching no recorded failure is reported, not refused; an unresolvable string is a RaiseAsClassError
    (an EntrypointError) naming its key, raised before the entrypoint runs."""
    from stepfork.replay import EntrypointError, replay_entrypoint
    from stepfork.replay.raise_as import RaiseAsClassError

    (tmp_path / "raise_as_agent_report.py").write_text(textwrap.dedent(REGRESSION_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    import raise_as_agent_report

    path = recorder(raise_as_agent_report.run)
    target = "raise_as_agent_report:RateLimited"
    mapping = {"RateLimited": target, "Typo": target}
    outcome = replay_entrypoint(path, "raise_as_agent_report:run", import_root=tmp_path, raise_as=mapping)
    assert (outcome.exit_code, outcome.execution.status) == (0, "COMPLETED")
    assert outcome.behavior.status == "MATCHED"
    assert outcome.raise_as_unmatched == ("Typo",)
    assert outcome.to_dict()["raise_as_unmatched"] == ["Typo"]
    without = replay_entrypoint(path, "raise_as_agent_report:run", import_root=tmp_path)
    assert (without.exit_code, without.behavior.status, without.raise_as_unmatched) == (1, "DIVERGED", ())

    with pytest.raises(RaiseAsClassError) as info:
        replay_entrypoint(
            path,
            "raise_as_agent_report:run",
            import_root=tmp_path,
            raise_as={"RateLimited": "raise_as_agent_report:Missing"},
        )
    assert isinstance(info.value, EntrypointError)
    assert (info.value.key, info.value.code) == ("RateLimited", "missing_attribute")
    assert info.value.detail == "module 'raise_as_agent_report' has no attribute 'Missing'"
    assert str(info.value) == f"raise_as['RateLimited']: {info.value.detail}"


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ("builtins:len", "'builtins:len' is not a class but a builtin_function_or_method"),
        ("os.path:join", "'os.path:join' is not a class but a function"),
        ("builtins:int", "'builtins:int' is a class that does not derive from BaseException"),
        ("builtins:dict", "'builtins:dict' is a class that does not derive from BaseException"),
        ("sys:maxsize", "'sys:maxsize' is not a class"),  # not even callable (before: "is not callable")
    ],
)
def test_a_module_class_string_must_name_an_exception_class(value: str, detail: str) -> None:
    """``"MODULE:CLASS"`` (``--raise-as``, an exported test's RAISE_AS) names a class: a function or any
    other callable is refused when resolved, before anything runs, not called as a factory at the first
    recorded failure (which gave a warning and the plain error; s9-cli 3). A factory stays the Python API's,
    passed as the callable itself."""
    from stepfork.replay.raise_as import RaiseAsClassError, resolve_raise_as

    with pytest.raises(RaiseAsClassError) as info:
        resolve_raise_as({"RateLimited": value})
    error = info.value
    assert (error.key, error.code, error.spec) == ("RateLimited", "not_an_exception_class", value)
    assert error.detail == f"{detail}; expected an Exception subclass"
    assert str(error) == f"raise_as['RateLimited']: {error.detail}"


def test_a_module_class_string_naming_an_exception_class_resolves_to_it() -> None:
    from stepfork.replay.raise_as import resolve_raise_as

    assert resolve_raise_as({"A": "builtins:LookupError", "B": "builtins:KeyboardInterrupt"}) == {
        "A": LookupError,
        "B": KeyboardInterrupt,  # a BaseException: RaiseAs refuses it with its own reason (below)
    }
    factory = lambda error: LookupError(error.message)  # noqa: E731 - a callable given in code stays a factory
    assert resolve_raise_as({"A": factory}) == {"A": factory}
