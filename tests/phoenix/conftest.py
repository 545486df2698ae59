"""The Phoenix export test runs in its own hatch environment (``hatch run phoenix:test``, which .ci/run
runs); the default suite has no Arize Phoenix and leaves this folder out instead of skipping it."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("phoenix") is None:
    collect_ignore_glob = ["test_*.py"]
