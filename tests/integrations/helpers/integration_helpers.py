"""Reading recorded bundles in the integration tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def events_of(bundle: Path) -> list[dict[str, Any]]:
    """The events of a bundle as JSON objects, in order."""
    return [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines() if line]


def responses_of(bundle: Path) -> list[dict[str, Any]]:
    """The llm_response events of a bundle."""
    return [e for e in events_of(bundle) if e["type"] == "llm_response"]
