"""SDK and framework integrations of Stepfork (optional extras of stepfork-trace; docs/integrations.md).

Import the submodule you need; each imports its SDK and fails with an install hint when it is missing:

- :mod:`stepfork.integrations.openai`: ``instrument_openai(client)`` (``stepfork-trace[openai]``)
- :mod:`stepfork.integrations.anthropic`: ``instrument_anthropic(client)`` (``stepfork-trace[anthropic]``)
- :mod:`stepfork.integrations.mcp`: ``instrument_mcp(session)`` (``stepfork-trace[mcp]``; importable without
  the SDK, which :func:`~stepfork.integrations.mcp.instrument_mcp` then asks for)

``import stepfork.trace`` never imports this package.
"""

__all__: list[str] = []
