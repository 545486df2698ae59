"""Capture every HTTP client and MCP session a program creates (zero-code recording; issues 11, 29, 30).

:func:`enable` makes each ``Client``/``AsyncClient`` of ``httpx`` and ``httpx2`` created from then on
instrumented at construction (:func:`stepfork.integrations._http_capture.install`), every urllib3 request
captured (and so ``requests`` and botocore/boto3: :mod:`stepfork.integrations._urllib3_capture`), every
``urllib.request`` request (:mod:`stepfork.integrations._urllib_capture`), every request a program sends
with ``http.client`` itself (:mod:`stepfork.integrations._httpclient_capture`), each
``aiohttp.ClientSession`` created from then on given the capture middleware
(:mod:`stepfork.integrations._aiohttp_capture`), and each ``mcp.ClientSession``
(:func:`stepfork.integrations.mcp.enable`): the modules already imported are patched now, the others right
after their import (:func:`stepfork.trace._after_import.after_import`; nothing is imported ahead of the
program, so ``httpx2.alias_httpx()`` keeps working). ``enable(providers={"HOST": "NAME"})`` names the
provider of other hosts for every capture (``stepfork record --provider HOST=NAME``,
:func:`stepfork.integrations._http_naming.name_providers`). Used by
``stepfork record -- python agent.py`` and ``stepfork replay BUNDLE -- python agent.py``; the program itself
needs no Stepfork import. In a program of your own, call :func:`enable` before importing the libraries whose
requests you want captured (LiteLLM's model-cost-map fetch uses a fresh ``httpx`` client of its own).

A bundle recorded by ``stepfork record --`` says so in its extension file ``program.json``
(:func:`note_program`, :func:`recorded_program`; issue 29): its requests were captured in every client of the
program, so a test of the bundle must install the same capture (``stepfork export BUNDLE -- python ...``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from stepfork.integrations._http_capture import install

TARGETS = ("httpx", "httpx2", "mcp", "urllib3", "aiohttp", "urllib.request", "http.client")
_MARK = "__stepfork_autocapture__"


def _patch_class(cls: Any) -> None:
    if getattr(cls.__init__, _MARK, False):
        return
    original = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        install(self)

    setattr(__init__, _MARK, True)
    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    cls.__init__ = __init__


def patch_module(module: ModuleType) -> None:
    """Instrument the clients of an imported ``httpx``/``httpx2`` module from now on (the sessions of
    ``mcp`` and ``aiohttp``, every request of ``urllib3``, ``urllib.request`` and ``http.client``)."""
    if module.__name__ == "mcp":
        from stepfork.integrations.mcp import enable as enable_mcp

        enable_mcp()
        return
    if module.__name__ == "urllib3":
        from stepfork.integrations._urllib3_capture import install as install_urllib3

        install_urllib3()
        return
    if module.__name__ == "urllib.request":
        from stepfork.integrations._urllib_capture import install as install_urllib

        install_urllib()
        return
    if module.__name__ == "http.client":
        from stepfork.integrations._httpclient_capture import install as install_http_client

        install_http_client()
        return
    if module.__name__ == "aiohttp":
        from stepfork.integrations._aiohttp_capture import install as install_aiohttp

        if hasattr(module, "ClientSession"):  # a partial module (an import that failed half way)
            install_aiohttp()
        return
    for name in ("Client", "AsyncClient"):
        cls = getattr(module, name, None)
        if isinstance(cls, type):
            _patch_class(cls)


PROGRAM_EXTENSION = "program"
"""The extension file of a bundle recorded from a program: ``program.json``, ``{"format":
"stepfork-program/1", "command": ["python", SCRIPT, ARGS...], "providers"?: {HOST: NAME}}`` (redacted)."""
PROGRAM_FORMAT = "stepfork-program/1"


def note_program(session: Any, command: Sequence[str], providers: Mapping[str, str] | None = None) -> None:
    """Write ``program.json`` into the bundle ``session`` records (a ``RecordingSession``): the program
    ``command`` ran with every HTTP client captured (redacted by
    :func:`stepfork.trace.command_redaction.redact_command`: ``--token VALUE`` is written ``--token
    [REDACTED]``), and the ``providers`` it was recorded with (``--provider``; the key is left out when
    there are none), which a replay of the program names the same way (:func:`recorded_providers`)."""
    from stepfork.trace.command_redaction import redact_command

    data: dict[str, Any] = {"format": PROGRAM_FORMAT, "command": redact_command(command)}
    if providers:
        data["providers"] = dict(providers)
    session.add_metadata(PROGRAM_EXTENSION, data)


def recorded_providers(bundle: str | os.PathLike[str]) -> dict[str, str]:
    """The ``{HOST: NAME}`` providers a program bundle was recorded with (``program.json``'s
    ``providers``), or ``{}``."""
    from stepfork.trace.errors import TraceError
    from stepfork.trace.reading import read_extension

    try:
        data = read_extension(Path(bundle), PROGRAM_EXTENSION)
    except (TraceError, ValueError, OSError):
        return {}
    providers = data.get("providers") if isinstance(data, dict) else None
    if not isinstance(providers, dict):
        return {}
    return {str(k): str(v) for k, v in providers.items() if isinstance(v, str)}


def recorded_program(bundle: str | os.PathLike[str]) -> list[str] | None:
    """The command of the program the bundle at ``bundle`` was recorded from (``["python", "agent.py",
    ...]``, redacted), or None when it was not recorded by ``stepfork record --`` (or the file is
    unreadable: it informs, it never decides a replay)."""
    from stepfork.trace.errors import TraceError
    from stepfork.trace.reading import read_extension

    try:
        data = read_extension(Path(bundle), PROGRAM_EXTENSION)
    except (TraceError, ValueError, OSError):
        return None
    command = data.get("command") if isinstance(data, dict) else None
    if data is None or not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        return None
    return list(command)


def enable(providers: Mapping[str, str] | None = None) -> None:
    """Instrument every httpx/httpx2 client, aiohttp and MCP session created from now on in this process,
    and every urllib3, ``urllib.request`` and ``http.client`` request (idempotent).

    Args:
        providers: ``{"HOST" or "HOST:PORT": NAME}``: the provider of requests to those hosts (a gateway, a
            local server), for every capture of the process (``stepfork record --provider HOST=NAME``).
            A replay must name them as the recording did: the provider is matched.

    Raises:
        ValueError: a provider entry with an empty host or name.
    """
    if providers:
        from stepfork.integrations._http_naming import name_providers

        name_providers(providers)
    from stepfork.trace._after_import import after_import

    for name in TARGETS:
        after_import(name, patch_module)
