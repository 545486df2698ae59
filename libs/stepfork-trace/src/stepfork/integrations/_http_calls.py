"""A request as a boundary call, the same for every HTTP library the capture covers (issues 11, 29, 30).

:class:`Naming` describes one request, given as plain values (method, host, port, path and query,
headers, body bytes), as the session sees it: an ``llm`` call (provider, model, input ``{"method", "path",
"headers", "body"}``) or an ``http`` call (:mod:`stepfork.trace.http_calls`: input ``{"method", "url",
"body"}``), with one rule for every stack (:func:`_http_exchange.is_llm_request`, the ``orphan`` flag of a
thread without the session in its context). It also notes the SDK's version in the recording
(``sdk-versions.json``) and hints at an SDK upgrade when an input diverges.

The httpx capture (:class:`stepfork.integrations._http_boundary.Capture`, a subclass) reads its requests'
fields in its own faster way; the urllib3 and aiohttp captures hand :meth:`Naming.describe` the values
their libraries hold. So a request is the same boundary call whichever library sent it, and a bundle
recorded through one library replays through another. :class:`Replaying` is how every capture replays a
request: the call routed, served from the recording (or sent live), a recorded transport error raised
again as the library's own class.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_naming import model_of, provider_for, sdk_from_headers
from stepfork.trace import executors
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.http_calls import http_call_name

SDK_VERSIONS = "sdk-versions"
"""The bundle extension file (``sdk-versions.json``) holding ``{sdk: version}`` of the recording."""

Header = Callable[[str], "str | None"]
"""A request's header by lower-case name (None when absent)."""

Rebuild = Callable[[str, str], "BaseException | None"]
"""``rebuild(error_type, message)``: a recorded transport failure as the HTTP library's own exception
(``urllib3.exceptions.ReadTimeoutError``...), or None when it names no class of that library."""

_sending: ContextVar[bool] = ContextVar("stepfork_http_sending", default=False)
executors.carry(_sending)  # a library sending from a pool under a capture is still nested in it


def nested() -> bool:
    """True while a capture is sending a request it already describes: an HTTP library used *under*
    another one (LiteLLM's httpx transport sends through aiohttp; requests and botocore through urllib3,
    whose pool calls itself again on a retry) is not a second call: the outer capture records it."""
    return _sending.get()


@contextlib.contextmanager
def sending() -> Iterator[None]:
    """Mark the block as a capture sending its request (:func:`nested`), in this thread or task."""
    token = _sending.set(True)
    try:
        yield
    finally:
        _sending.reset(token)


@dataclass(frozen=True)
class Naming:
    """How a capture names the requests it sees.

    Attributes:
        provider: the provider of hosts no table knows (None: the host name; :func:`provider_for`).
        hosts: ``{HOST or HOST:PORT: provider}`` checked first.
        sdk: ``(distribution, version)`` noted in the bundle's ``sdk-versions.json``, or None: the SDK
            the request's headers name (:func:`sdk_from_headers`).
        library: the HTTP library's name, in the calls' ``function`` when no SDK is known.
    """

    provider: str | None = None
    hosts: Mapping[str, str] = field(default_factory=dict)
    sdk: tuple[str, str] | None = None
    library: str = "http"

    def describe(
        self,
        method: str,
        url: tuple[str, str, int | None, str],
        headers: Iterable[tuple[str, str]],
        content: bytes,
        handler: Any,
        orphan: bool,
    ) -> tuple[BoundaryCall, dict[str, Any] | None]:
        """The boundary call of a request and, for a 0.2.0 recording being replayed, the legacy input it is
        matched with (else None).

        Args:
            method: the HTTP method.
            url: ``(scheme, host, port or None for the scheme's default, path and query as sent)``.
            headers: the request's headers (any case).
            content: the body's bytes.
            handler: the active session (recording or replay).
            orphan: True for a request from a thread without the session in its context.
        """
        scheme, host, port, target = url
        if (scheme, port) in (("http", 80), ("https", 443)):
            port = None  # a URL names no default port (httpx's form, so the URL is the same in every stack)
        bare = target.split("?", 1)[0] or "/"
        kept: dict[str, str] = {}
        content_type: str | None = None
        for name, value in headers:
            low = name.lower()
            if low in wire.ANSWER_HEADERS:
                kept[low] = value
            elif low == "content-type":
                content_type = value if content_type is None else f"{content_type}, {value}"
        data = wire.body_input(method, target, kept, content, content_type)
        legacy_replay = replays_legacy(handler)
        if not legacy_replay and (orphan or not wire.is_llm_request(data["method"], bare, data["body"])):
            netloc = host if port is None else f"{host}:{port}"
            if ":" in host and not host.startswith("["):
                netloc = f"[{host}]" if port is None else f"[{host}]:{port}"
            return self.http_call(data["method"], f"{scheme}://{netloc}{target}", data["body"], bare), None
        legacy = wire.legacy_input(target, data["body"]) if legacy_replay else None
        return self.llm_call(data, bare, host, port, legacy), legacy

    def request_llm_form(
        self,
        method: str,
        url: tuple[str, str, int | None, str],
        headers: Iterable[tuple[str, str]],
        content: bytes,
    ) -> BoundaryCall:
        """The request as an ``llm`` call in the agent's order, whatever it is: how a recording made before
        ``http`` calls existed (issue 29) holds it (``ReplaySession.route_request``)."""
        scheme, host, port, target = url
        if (scheme, port) in (("http", 80), ("https", 443)):
            port = None
        headers = list(headers)
        kept = {n.lower(): v for n, v in headers if n.lower() in wire.ANSWER_HEADERS}
        content_type = next((v for n, v in headers if n.lower() == "content-type"), None)
        data = wire.body_input(method, target, kept, content, content_type)
        return self.llm_call(data, target.split("?", 1)[0] or "/", host, port, None)

    def routed(self, handler: Any, call: BoundaryCall, form: Callable[[], BoundaryCall]) -> BoundaryCall:
        """The call to replay a request as: an ``http`` call the recording does not hold as one is served
        in the agent's order when the recording holds it there as an ``llm`` call ``form()`` (a recording
        made before issue 29: ``ReplaySession.route_request``)."""
        if call.kind == "llm":
            return call
        route = getattr(handler, "route_request", None)
        return call if route is None else route(call, form)

    def llm_call(
        self, data: dict[str, Any], bare: str, host: str, port: int | None, legacy: dict[str, Any] | None
    ) -> BoundaryCall:
        """The ``llm`` call of a request whose input is ``data`` (path without query ``bare``)."""
        model = model_of(data["body"], bare)
        name = model or f"{data['method']} {bare}"
        return BoundaryCall(
            kind="llm",
            name=name,
            model=model or name,
            provider=provider_for(host, self.hosts, self.provider, port=port, path=bare),
            input=legacy if legacy is not None else data,
            return_type=None,
            function=f"{self.sdk[0] if self.sdk else self.library}:{data['method']} {bare}",
            reads_output=True,  # the capture only reads the output to build the response's bytes
        )

    def http_call(self, method: str, whole: str, body: Any, bare: str) -> BoundaryCall:
        """The ``http`` call of a request to the URL ``whole`` (query included)."""
        return BoundaryCall(
            kind="tool",
            name=http_call_name(method, whole),
            input=wire.http_input(method, whole, body),
            return_type=None,
            function=f"{self.sdk[0] if self.sdk else self.library}:{method} {bare}",
            reads_output=True,
        )

    def sdk_of(self, header: Header) -> tuple[str, str] | None:
        """``(distribution, version)`` of the SDK sending a request: the one the capture was given, else
        the one its headers name (:func:`sdk_from_headers`)."""
        if self.sdk is not None:
            return self.sdk
        return sdk_from_headers(header)

    def note_sdk(self, handler: Any, header: Header) -> None:
        """Add the SDK version to the recording's ``sdk-versions.json`` (once per session)."""
        add = getattr(handler, "add_metadata", None)
        if add is None:
            return
        sdk = self.sdk_of(header)
        if sdk is None:
            return
        known = getattr(handler, "metadata", {}).get(SDK_VERSIONS)
        if not (isinstance(known, dict) and sdk[0] in known):
            add(SDK_VERSIONS, {sdk[0]: sdk[1]}, merge=True)

    def hint_sdk_change(self, exc: BaseException, handler: Any, header: Header) -> None:
        """Add to an ``input_diverged`` divergence the hint that the recording was made with another
        version of this SDK (the bundle's ``sdk-versions.json``): an upgrade can change the request the
        SDK builds from the same code, which the divergence's path alone does not say."""
        diagnostic = getattr(exc, "diagnostic", None)
        if diagnostic is None or getattr(exc, "code", None) != "input_diverged":
            return
        sdk = self.sdk_of(header)
        if sdk is None:
            return
        read = getattr(handler, "metadata", None)  # ReplaySession.metadata(name)
        recorded = read(SDK_VERSIONS) if callable(read) else None
        name, version = sdk
        then = recorded.get(name) if isinstance(recorded, dict) else None
        if not isinstance(then, str) or then == version:
            return
        hint = (
            f"the run was recorded with {name} {then}; this replay runs {name} {version}, whose requests may "
            "differ for the same code: if the SDK upgrade is the change, record the run again"
        )
        if diagnostic.hint:
            hint = f"{diagnostic.hint}; {hint}"
        exc.diagnostic = dataclasses.replace(diagnostic, hint=hint)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Replaying:
    """One request a capture replays: what it needs to hand the program the recorded response.

    Attributes:
        naming: the capture's :class:`Naming` (routing, SDK-change hints).
        handler: the replay session.
        call: the request's boundary call (:meth:`Naming.describe`).
        form: the request's ``llm`` form (:meth:`Naming.routed`).
        orphan: True for a request from a thread without the session in its context.
        header: the request's headers.
        serve: ``serve(output, call)``: the library's response for the recorded output of the (routed) call.
        rebuild: a recorded transport failure as the library's exception.
        through: called with the session's error before it propagates (may raise it as another class).
    """

    naming: Naming
    handler: Any
    call: BoundaryCall
    form: Callable[[], BoundaryCall]
    orphan: bool
    header: Header
    serve: Callable[[Any, BoundaryCall], Any]
    rebuild: Rebuild
    through: Callable[[BaseException], None] | None = None

    def run(self, send: Callable[[], Any]) -> Any:
        """The response the capture hands the program: the call is routed (:meth:`Naming.routed`) and
        handed to the session, which serves the recorded output (built by ``serve``) or runs ``send()``
        (the live request of a hybrid replay executing the call), whose response is returned as it is.

        Raises:
            The library's exception ``rebuild`` makes of a recorded transport failure; else the session's
            error (``ReplayMismatchError``...), a hint added when the SDK's version changed
            (:meth:`Naming.hint_sdk_change`), passed to ``through`` first when given.
        """
        call = self.naming.routed(self.handler, self.call, self.form)
        live: list[Any] = []

        def execute() -> None:
            live.append(send())

        try:
            out = self.handler.handle(call, execute, orphan=self.orphan)
        except Exception as exc:
            self._failed(exc)
            raise
        return live[0] if live else self.serve(out, call)

    async def arun(self, send: Callable[[], Awaitable[Any]]) -> Any:
        """The asynchronous :meth:`run` (``handler.ahandle``, an awaitable ``send()``)."""
        call = self.naming.routed(self.handler, self.call, self.form)
        live: list[Any] = []

        async def execute() -> None:
            live.append(await send())

        try:
            out = await self.handler.ahandle(call, execute, orphan=self.orphan)
        except Exception as exc:
            self._failed(exc)
            raise
        return live[0] if live else self.serve(out, call)

    def _failed(self, exc: BaseException) -> None:
        """What happens to the session's error ``exc`` before it propagates: a hint at an SDK change, a
        recorded transport failure raised as the library's class, then ``through(exc)``."""
        self.naming.hint_sdk_change(exc, self.handler, self.header)
        error_type = getattr(exc, "error_type", None)
        if isinstance(error_type, str):
            again = self.rebuild(error_type, str(getattr(exc, "message", "")))
            if again is not None:
                raise again from exc
        if self.through is not None:
            self.through(exc)


_legacy_sessions: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def replays_legacy(handler: Any) -> bool:
    """True when ``handler`` replays a recording of 0.2.0's SDK-level integrations."""
    if not getattr(handler, "is_replay", False):
        return False
    try:
        return _legacy_sessions[handler]
    except (KeyError, TypeError):
        pass
    calls = getattr(handler, "calls", ()) or ()
    legacy = any(
        c.kind == "llm"
        and isinstance(c.input, dict)
        and set(c.input) == {"endpoint", "request"}
        and c.input.get("endpoint") in wire.LEGACY_ENDPOINTS.values()
        for c in calls
    )
    with contextlib.suppress(TypeError):  # a handler that cannot be weakly referenced: not cached
        _legacy_sessions[handler] = legacy
    return legacy
