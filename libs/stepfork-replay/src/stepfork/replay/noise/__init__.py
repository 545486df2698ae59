"""What is noise, by shape and by origin (issue 28; docs/diff.md "Noise rules", docs/replay.md).

One home for the rule that ``diff``, replay's output comparison (``Recorded behavior: MATCHED``), exported
tests' output assertion, ``check`` and minimize's failure signature share:

- :mod:`~stepfork.replay.noise.ids`: what an opaque id looks like (uuids, ``lc_run--``, ``chatcmpl-``,
  ``call_``, ``toolu_``, ULIDs, hex digests...), token by token;
- :mod:`~stepfork.replay.noise.origins`: which ids a recording handed out; the others are *fresh*;
- :mod:`~stepfork.replay.noise.renaming`: equality up to a one-to-one renaming of ids;
- :mod:`~stepfork.replay.noise.timing`: clock and duration shapes;
- :mod:`~stepfork.replay.noise.rules` and the data file ``rules.toml``: the path rules per SDK (OpenAI,
  Anthropic, LangChain, pydantic-ai), timing keys, new SDK fields; a user's rules file adds to them;
- :mod:`~stepfork.replay.noise.compare`: the walk that applies all of it (:class:`Comparison`).
"""

from __future__ import annotations

from typing import Any

from stepfork.replay.noise.compare import ABSENT, WHERES, Comparison, Difference, same_json
from stepfork.replay.noise.ids import is_opaque_id
from stepfork.replay.noise.origins import Origins
from stepfork.replay.noise.renaming import Renaming
from stepfork.replay.noise.rules import NoiseRules, Rule, read_rules_file

__all__ = [
    "ABSENT",
    "WHERES",
    "Comparison",
    "Difference",
    "NoiseRules",
    "Origins",
    "Renaming",
    "Rule",
    "compare_output",
    "is_opaque_id",
    "read_rules_file",
    "same_json",
]


def compare_output(expected: Any, actual: Any, origins: Origins | None = None) -> list[Difference]:
    """Compare a run's output with the expected one (the recorded output, or a reviewed expectation) as
    replay, exported tests, ``check`` and ``minimize`` do: up to a renaming of fresh ids (ids ``origins``
    did not hand out; None: every id is fresh) and the framework-message rules (timing fields, new SDK
    fields, LangChain and pydantic-ai message ids).

    Returns:
        Every difference in canonical order (object keys sorted, lists by position); those with ``noise``
        None are real, the others were accepted as noise. Equal values give an empty list.
    """
    scope = Comparison(NoiseRules.shipped(), origins, origins)
    return scope.compare(expected, actual, "run_output")
