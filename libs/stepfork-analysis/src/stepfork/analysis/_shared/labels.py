"""``--live-llm LABEL`` checked against a recording (``fork`` and ``export --mode hybrid``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def live_llm_problem(live_llms: Iterable[str] | None, trace: Any) -> str | None:
    """The one line refusing the ``--live-llm`` labels among ``live_llms`` that are not the label
    (``provider/model``, or the model) of an LLM call of ``trace`` (a ``Trace``), naming the recording's
    labels; None when every label is one (or none is given). With labels given, every LLM call not named
    is refused, so a typo would refuse them all (``ReplaySession`` refuses such a label in hybrid mode)."""
    from stepfork.replay.plan import extract_all_calls

    given = sorted(set(live_llms or ()))
    if not given:
        return None
    labels = sorted({call.label for call in extract_all_calls(list(trace.events)) if call.kind == "llm"})
    unknown = [label for label in given if label not in labels]
    if not unknown:
        return None
    recorded = ", ".join(labels) if labels else "none: the run made no LLM call"
    listed = ", ".join(unknown)
    return f"--live-llm names an LLM the recording never calls: {listed} (its LLM labels: {recorded})"
