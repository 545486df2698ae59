"""The LlamaIndex and CrewAI examples' tests run in their own environment (``hatch run openai2:test``, which
.ci/run runs): their OpenAI packages need the openai 2.x SDK, which the main lock's openai 3.x excludes. The
default suite has neither framework and leaves this folder out instead of skipping it. The helpers are the
integration tests' (tests/integrations/helpers: the local OpenAI-compatible server, the CLI story)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("llama_index") is None or importlib.util.find_spec("crewai") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations" / "helpers"))
