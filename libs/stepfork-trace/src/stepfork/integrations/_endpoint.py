"""One instrumented SDK method: the boundary call of its request, and its output recorded and rebuilt.

:class:`Endpoint` is what an integration declares per SDK method (``openai``: ``chat.completions.create``,
``responses.create``; ``anthropic``: ``messages.create``; the LangChain and pydantic-ai models): the call
path (:mod:`stepfork.integrations._common`) and the streams (:mod:`stepfork.integrations._streams`) both
work through it, and it imports neither.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.instrument import LLMOutput
from stepfork.trace.jsonable import to_jsonable

SDK_VERSIONS = "sdk-versions"
"""Name of the bundle extension file (``sdk-versions.json``) holding ``{sdk: version}`` of the recording."""

# Transport options of the SDK call that do not describe the request sent to the model.
_TRANSPORT_OPTIONS = frozenset({"extra_headers", "timeout"})


def wire_json(obj: Any) -> Any:
    """The JSON the provider sent, as the SDK model holds it: ``model_dump(mode="json", by_alias=True,
    exclude_unset=True)`` (fields the provider left out stay out, so the rebuilt object dumps the same)."""
    return obj.model_dump(mode="json", by_alias=True, exclude_unset=True)


@dataclass(frozen=True)
class Endpoint:
    """One instrumented SDK method.

    Attributes:
        provider: ``"openai"``, ``"anthropic"``.
        endpoint: the method's name in the input (``"chat.completions.create"``).
        return_type: the SDK's response type (replay rebuilds into it).
        chunk_type: the SDK's stream chunk/event type (a class or an annotated union).
        usage: response wire JSON -> ``{"prompt_tokens", "completion_tokens", "total_tokens"}`` (ints/None).
        stream_usage: the chunks' wire JSON -> the same dict.
        sdk: ``(distribution name, installed version)``.
        construct: the SDK's own builder ``construct(value=..., type_=...)`` (Stainless SDKs:
            ``_models.construct_type``): how the SDK built the object from the wire in the first place, so
            replay gives the agent the object it got then. None: validate with pydantic instead.
        sentinels: SDK "not given" sentinel types, dropped from the request.
        dump: object -> wire JSON for types that are not pydantic models (default :func:`wire_json`).
    """

    provider: str
    endpoint: str
    return_type: Any
    chunk_type: Any
    usage: Callable[[Any], dict[str, int | None]]
    stream_usage: Callable[[list[Any]], dict[str, int | None]]
    sdk: tuple[str, str]
    construct: Callable[..., Any] | None = None
    sentinels: tuple[type, ...] = ()
    dump: Callable[[Any], Any] | None = None

    def request(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The request parameters: ``kwargs`` without sentinels and transport options (headers, timeout)."""
        return {
            k: v
            for k, v in kwargs.items()
            if k not in _TRANSPORT_OPTIONS and not isinstance(v, self.sentinels)
        }

    def boundary_call(self, kwargs: Mapping[str, Any], *, stream: bool) -> BoundaryCall:
        """The boundary call of one request (input not redacted: the handler redacts)."""
        request = self.request(kwargs)
        model = request.get("model")
        model = model if isinstance(model, str) and model else "unknown"
        return BoundaryCall(
            kind="llm",
            name=model,
            model=model,
            provider=self.provider,
            input=to_jsonable({"endpoint": self.endpoint, "request": request}),
            # None: the recorded JSON comes back as is and rebuild() makes the SDK object (pydantic's
            # validation rejects responses the SDK itself accepts, e.g. fields added by a newer SDK).
            return_type=None,
            function=f"{self.sdk[0]}:{self.endpoint}",
        )

    def rebuild(self, value: Any, type_: Any, call: BoundaryCall, what: str) -> Any:
        """Rebuild recorded wire JSON into the SDK type ``type_`` (response or chunk).

        Raises:
            ReplayMismatchError: code ``sdk_rebuild_failed``, naming the installed SDK version and the
                recorded one (the bundle's ``sdk-versions.json``), when the SDK cannot build the object.
        """
        from stepfork.trace.errors import TraceSerializationError
        from stepfork.trace.jsonable import from_jsonable

        try:
            decoded = from_jsonable(value)
            if self.construct is not None and isinstance(decoded, dict):
                return self.construct(value=decoded, type_=type_)
            return from_jsonable(decoded, type_)
        except (TraceSerializationError, TypeError, ValueError, KeyError, AttributeError) as exc:
            # AttributeError: an SDK validator reading a recorded value of the wrong shape (a string where
            # LangChain's message validator calls .get) must not escape as a traceback from its internals
            from stepfork.replay.errors import ReplayMismatchError

            name, version = self.sdk
            raise ReplayMismatchError(
                f"{call.label}: {name} {version} (installed) cannot rebuild the recorded {what} of "
                f"{self.endpoint}, recorded with {name} {recorded_sdk_version(name)}: {exc}",
                code="sdk_rebuild_failed",
            ) from exc

    def output(self, response: Any) -> LLMOutput:
        """What the recorder stores for a response: its wire JSON and token usage."""
        wire = self.wire(response)
        return LLMOutput(wire, **self.usage(wire))

    def wire(self, obj: Any) -> Any:
        """The wire JSON of a response or chunk (``dump``, else :func:`wire_json`)."""
        return self.dump(obj) if self.dump is not None else wire_json(obj)


def recorded_sdk_version(name: str) -> str:
    """The version of SDK ``name`` the active replay's bundle recorded (its ``sdk-versions.json``).

    Returns ``"(version not recorded)"`` when the session has no bundle path or the file lacks the SDK.
    """
    metadata = getattr(boundary.active_handler(), "metadata", None)
    versions = metadata(SDK_VERSIONS) if callable(metadata) else None
    version = versions.get(name) if isinstance(versions, dict) else None
    return version if isinstance(version, str) else "(version not recorded)"
