"""The "Diverged" and "Could not execute" sections of ``stepfork check``'s summary, grouped.

A corpus of 1,000 runs that diverge for one reason gave 1,000 lines alike. Bundles whose first divergence
is the same (the same outcome, code or reason, step and message once the bundle's own path is taken out)
form one group, printed once with its count and its first :data:`SHOWN` bundles; a group of one is the
line it always was (``BUNDLE (step N): CODE: MESSAGE``). Every bundle stays in ``--json``, ``--junit`` and
the receipts (docs/check.md "Output and exit codes").
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["SHOWN", "VerdictGroup", "group_verdicts", "group_lines"]

SHOWN = 3  # bundles named under a group; the rest are counted ("... and N more")
BUNDLE = "<bundle>"  # what stands for a bundle's own path in a group's message


@dataclass(frozen=True)
class VerdictGroup:
    """Bundles with the same first divergence (or the same reason they could not be checked).

    Attributes:
        outcome: ``failed`` or ``could_not_execute`` (the verdicts' outcome).
        why: the divergence code (``input_diverged``, ``behavior_mismatch``...) or the reason it could not
            be checked (``timeout``, ``bundle_unreadable``...).
        step: the recorded step of the first divergence, or None.
        message: the verdicts' detail, each bundle's own path replaced by ``<bundle>``.
        bundles: the bundles, in corpus order (at least one).
        detail: the first bundle's detail as it was (what a group of one prints).
    """

    outcome: str
    why: str | None
    step: int | None
    message: str
    bundles: tuple[str, ...]
    detail: str


def _without_bundle(detail: str, bundle: str) -> str:
    """``detail`` with ``bundle`` (as named, made absolute, and its ``*.sftrace`` directory name) replaced
    by :data:`BUNDLE`, so messages that differ only by the bundle they name compare equal."""
    stripped = bundle.rstrip("/\\")
    names = {stripped}
    if "://" not in stripped:
        names.add(os.path.abspath(stripped))
    name = stripped.replace("\\", "/").rsplit("/", 1)[-1]
    if name.endswith(".sftrace") and len(name) > len(".sftrace"):  # not a short word of the message
        names.add(name)
    for text in sorted(names, key=len, reverse=True):  # the longest first: a name is part of its path
        if text:
            detail = detail.replace(text, BUNDLE)
    return detail


def group_verdicts(verdicts: Iterable[Any]) -> list[VerdictGroup]:
    """Group ``verdicts`` (:class:`~stepfork.analysis.check.BundleVerdict`, all of one section) by first
    divergence: outcome, code or reason, step and the detail without the bundle's path.

    Returns:
        The groups, largest first (ties in corpus order of their first bundle); bundles in the order given.
    """
    order: dict[tuple[Any, ...], list[Any]] = {}
    for verdict in verdicts:
        why = verdict.reason if verdict.outcome == "could_not_execute" else verdict.code
        message = _without_bundle(verdict.detail, verdict.bundle)
        order.setdefault((verdict.outcome, why, verdict.step, message), []).append(verdict)
    groups = [
        VerdictGroup(outcome, why, step, message, tuple(v.bundle for v in members), members[0].detail)
        for (outcome, why, step, message), members in order.items()
    ]
    return sorted(groups, key=lambda g: -len(g.bundles))  # stable: ties keep their first appearance


def group_lines(groups: Iterable[VerdictGroup], shown: int = SHOWN) -> list[str]:
    """The summary's lines for ``groups``: a group of one as ``  BUNDLE (step N): WHY: DETAIL``; a larger
    one as ``  N bundles (step N): WHY: MESSAGE``, then its first ``shown`` bundles indented and
    ``... and M more``."""
    lines: list[str] = []
    for group in groups:
        where = f" (step {group.step})" if group.step is not None else ""
        if len(group.bundles) == 1:
            lines.append(f"  {group.bundles[0]}{where}: {group.why}: {group.detail}")
            continue
        lines.append(f"  {len(group.bundles)} bundles{where}: {group.why}: {group.message}")
        lines += [f"    {bundle}" for bundle in group.bundles[:shown]]
        if len(group.bundles) > shown:
            lines.append(f"    ... and {len(group.bundles) - shown} more")
    return lines
