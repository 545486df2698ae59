"""The shipped noise rules data (``rules.toml`` beside this module), read once with :mod:`tomllib`."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources
from typing import Any

RULES_FILE = "rules.toml"


@lru_cache(maxsize=1)
def shipped() -> dict[str, Any]:
    """The parsed ``rules.toml`` of this package (docs/diff.md, "Noise rules")."""
    text = resources.files("stepfork.replay.noise").joinpath(RULES_FILE).read_text(encoding="utf-8")
    return tomllib.loads(text)
