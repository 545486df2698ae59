"""What is noise, by shape and by origin (issue 28; docs/diff.md "Noise rules", docs/replay.md).

One home for the rule that ``diff``, replay's output comparison (``Recorded behavior: MATCHED``), exported
tests' output assertion, ``check`` and minimize's failure signature share:

- :mod:`~stepfork.replay.noise.ids`: what an opaque id looks like (uuids, ``lc_run--``, ``chatcmpl-``,
  ``call_``, ``toolu_``, ULIDs, hex digests...), token by token, by a deterministic shape rule;
- :mod:`~stepfork.replay.noise.origins`: which ids a recording handed out, which values a run minted
  (``stepfork.trace.minting``); fresh values are minted (or uuids of a random or time version) and not
  handed out;
- :mod:`~stepfork.replay.noise.renaming`: equality up to a one-to-one renaming of ids;
- :mod:`~stepfork.replay.noise.timing`: clock and duration shapes;
- :mod:`~stepfork.replay.noise.rules` and the data file ``rules.toml``: the path rules per SDK (OpenAI,
  Anthropic, LangChain, pydantic-ai), timing keys, new SDK fields; a user's rules file adds to them;
- :mod:`~stepfork.replay.noise.streams`: a stream compared as its text when only its chunking differs;
- :mod:`~stepfork.replay.noise.siblings`: concurrent siblings' parts listed in another order;
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


def compare_output(
    expected: Any,
    actual: Any,
    origins: Origins | None = None,
    *,
    live: Origins | None = None,
    exact: bool = False,
    scope: Comparison | None = None,
) -> list[Difference]:
    """Compare a run's output with the expected one (the recorded output, or a reviewed expectation) as
    replay, exported tests, ``check`` and ``minimize`` do: up to a renaming of fresh values and the
    framework-message rules (timing fields, new SDK fields, LangChain and pydantic-ai message ids).

    Args:
        origins: where the expected side's values came from (the recording: what it handed out, what it
            minted); None: no recording.
        live: where the actual side's came from (the recording's handed-out ids and the replay's own
            ``MintLog``: ``Origins(trace, minted=session.minted)``); None: ``origins``.
        exact: compare exactly (no rule, no renaming): a reviewed expectation the user wrote
            (``export --expect-output``).
        scope: the comparison to continue (a replay's, whose input matching already renamed fresh values:
            ``ReplaySession.output_scope``), so one renaming spans the inputs and the output, as ``diff``'s
            spans a whole run (NEWCOMER5 F2); None: a new one from ``origins`` and ``live``.

    Returns:
        Every difference in canonical order (object keys sorted, lists by position); those with ``noise``
        None are real, the others were accepted as noise. Equal values give an empty list.
    """
    if exact:
        return Comparison(None).compare(expected, actual, "run_output")
    if scope is None:
        scope = Comparison(NoiseRules.shipped(), origins, live if live is not None else origins)
    return scope.compare(expected, actual, "run_output")
