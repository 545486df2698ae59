"""The notebook tests need pandas and nbclient (the ``notebook`` extra and the browser environment:
``hatch run browser:test``); the default suite has neither and leaves this folder out."""

from __future__ import annotations

import importlib.util

if not all(importlib.util.find_spec(name) for name in ("pandas", "nbclient", "nbformat", "ipykernel")):
    collect_ignore_glob = ["test_*.py"]
