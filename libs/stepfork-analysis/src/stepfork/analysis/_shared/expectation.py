"""Reading an ``--expect-output`` file: one rule and one wording for export, score and minimize."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def read_expect_output(path: str | os.PathLike[str]) -> Any:
    """The JSON value of the ``--expect-output`` file at ``path`` (read exactly: canonical.loads_json).

    Raises:
        ValueError: with the one-line message to show: ``--expect-output cannot be read: <reason>: <path>.``
            when the file is missing, a directory or unreadable, and the spec's
            ``--expect-output is not valid JSON: <detail>.`` (cli-reference "export") when it does not parse.
    """
    from stepfork.trace.canonical import loads_json

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"--expect-output cannot be read: {exc.strerror or exc}: {path}.") from None
    try:
        return loads_json(data)
    except ValueError as exc:
        raise ValueError(f"--expect-output is not valid JSON: {exc}.") from None
