"""Trajectory assertions for replayed runs (spec: replay.txt, "Trajectory assertions").

A re-export of :mod:`stepfork.replay.assertions`, kept at ``stepfork.assertions`` so programs written
against the reference implementation run unchanged (interop/REFERENCE-API.md).
"""

from stepfork.replay.assertions import *  # noqa: F403
from stepfork.replay.assertions import __all__ as __all__
