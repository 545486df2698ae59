"""``stepfork.export.entrypoint``: the earlier implementation's path of entrypoint resolution (issue 32).

``resolve_entrypoint("MODULE:FUNCTION", import_root=None)`` returns the callable and raises
``EntrypointError`` (a ``ValueError``) for a malformed name or one that cannot be imported; the same
objects as :mod:`stepfork.replay.entrypoint`.
"""

from stepfork.replay.entrypoint import EntrypointError, resolve_entrypoint

__all__ = ["EntrypointError", "resolve_entrypoint"]
