"""``CheckResult``: the verdict of every bundle of a corpus, rendered three ways (STYLE.md "Result objects
that render themselves"): ``str()`` the summary table, ``to_dict()`` the ``--json`` form, ``_repr_html_`` a
notebook table; plus JUnit XML (one testcase per bundle) and one receipt per bundle.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepfork.analysis._shared.atomic import write_text_atomically
from stepfork.analysis._shared.render import escape_controls, html_table, xml_text
from stepfork.analysis.check._groups import group_lines, group_verdicts

__all__ = ["BundleVerdict", "CheckResult", "is_junit_file", "receipt_file_name"]

_SLOWEST = 5  # bundles listed under "Slowest"
_JUNIT_SUITE = 'name="stepfork check"'
_JUNIT_HEAD_BYTES = 4096


def receipt_file_name(bundle: str) -> str:
    """The file name of a bundle's receipt in ``--receipts DIR``: ``<bundle stem>-<8 hex>.json`` (the
    stem made file-safe, at most 80 characters; the hex from SHA-256 of the bundle as named)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", bundle.rstrip("/").rsplit("/", 1)[-1])[:80]
    return f"{stem}-{hashlib.sha256(bundle.encode()).hexdigest()[:8]}.json"


def is_junit_file(path: Path) -> bool:
    """True when ``path`` is a regular file that :meth:`CheckResult.write_junit` wrote: its first 4 KiB
    hold ``<testsuites>`` and the suite ``name="stepfork check"``. Never raises. What ``stepfork check
    --junit`` replaces without ``--overwrite``."""
    try:
        if not path.is_file():
            return False
        with path.open("rb") as handle:
            head = handle.read(_JUNIT_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    return head.lstrip().startswith("<?xml") and "<testsuites>" in head and _JUNIT_SUITE in head


@dataclass(frozen=True)
class BundleVerdict:
    """How one bundle replayed.

    Attributes:
        bundle: the path or URL as listed in the corpus.
        verdict: ``MATCHED``, ``REPRODUCED FAILURE``, ``NOT RECORDED``, ``UNVERIFIABLE`` (passed: exit 0
            of ``stepfork replay``), ``DIVERGED`` (failed: exit 1), ``COULD NOT EXECUTE``.
        outcome: ``passed`` | ``failed`` | ``could_not_execute`` (the receipt's verdict).
        reason: why it could not execute (``receipt.REASONS``), else None.
        detail: one line: the first divergence, the behaviour message, or why it could not execute.
        code: the first divergence's code (a replay error code, ``behavior_mismatch``), else None.
        step: the recorded step of the first divergence when known, else None.
        agent_name, run_id: from the bundle (None when it could not be read).
        duration_ms: wall time of the bundle's replay in its worker process, in milliseconds (a worker's
            first bundle includes its fork).
        host: ``hostname:pid`` of the process that ran the task (the batch holding this bundle).
        worker: pid of the worker process that replayed it (forked from the zygote; one worker replays
            many bundles until a replay changes the agent's state; docs/check.md "Isolation"), None when
            it ran in a fresh subprocess or no worker answered for it (a timeout or a crash, which the zygote
            answers).
    """

    bundle: str
    verdict: str
    outcome: str
    reason: str | None = None
    detail: str = ""
    code: str | None = None
    step: int | None = None
    agent_name: str | None = None
    run_id: str | None = None
    duration_ms: float = 0.0
    host: str = ""
    worker: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BundleVerdict:
        """The verdict from ``check_batch``'s dict (unknown keys ignored)."""
        return cls(
            bundle=str(data["bundle"]),
            verdict=str(data["verdict"]),
            outcome=str(data["outcome"]),
            reason=data.get("reason"),
            detail=str(data.get("detail") or ""),
            code=data.get("code"),
            step=data.get("step"),
            agent_name=data.get("agent_name"),
            run_id=data.get("run_id"),
            duration_ms=float(data.get("duration_ms") or 0.0),
            host=str(data.get("host") or ""),
            worker=data["worker"] if isinstance(data.get("worker"), int) else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON."""
        return {
            "bundle": self.bundle,
            "verdict": self.verdict,
            "outcome": self.outcome,
            "reason": self.reason,
            "detail": self.detail,
            "code": self.code,
            "step": self.step,
            "agent_name": self.agent_name,
            "run_id": self.run_id,
            "duration_ms": self.duration_ms,
            "host": self.host,
            "worker": self.worker,
        }


@dataclass(frozen=True)
class CheckResult:
    """The verdicts of a corpus, in corpus order.

    Attributes:
        corpus: the corpus as given; entrypoint: MODULE:FUNCTION; executor: what ran the replays
            (``local (N jobs)``, ``dask (ADDRESS)``, or the executor's class name).
        verdicts: one per bundle, in the corpus's (sorted) order.
        wall_ms: wall time of the whole check in milliseconds.
        allow_commands: the programs every replay could start unsealed (``--allow-command``), in the order
            given; empty: none (every replay of a check is frozen and sealed).
    """

    corpus: str
    entrypoint: str
    executor: str
    verdicts: tuple[BundleVerdict, ...]
    wall_ms: float = 0.0
    created_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    allow_commands: tuple[str, ...] = ()

    @property
    def network(self) -> str:
        """The ``Network`` sentence of the report (``stepfork.replay.network_notes.network_line``): every
        replay is sealed, with the programs ``allow_commands`` let start."""
        from stepfork.replay.network_notes import network_line

        return network_line("sealed", (), (), self.allow_commands)

    @property
    def counts(self) -> dict[str, int]:
        """Bundles per verdict, most frequent first."""
        return dict(Counter(v.verdict for v in self.verdicts).most_common())

    @property
    def diverged(self) -> tuple[BundleVerdict, ...]:
        """The bundles that diverged (outcome ``failed``)."""
        return tuple(v for v in self.verdicts if v.outcome == "failed")

    @property
    def not_executed(self) -> tuple[BundleVerdict, ...]:
        """The bundles that could not be checked."""
        return tuple(v for v in self.verdicts if v.outcome == "could_not_execute")

    @property
    def slowest(self) -> tuple[BundleVerdict, ...]:
        """The five slowest bundles, slowest first."""
        return tuple(sorted(self.verdicts, key=lambda v: -v.duration_ms)[:_SLOWEST])

    @property
    def exit_code(self) -> int:
        """0 every bundle replays as recorded; 2 nothing could be checked (no bundle replayed); 1 otherwise
        (a bundle diverged, or some could not be checked while others were; docs/decisions.md)."""
        if self.verdicts and all(v.outcome == "passed" for v in self.verdicts):
            return 0
        if not self.verdicts or all(v.outcome == "could_not_execute" for v in self.verdicts):
            return 2
        return 1

    def to_dict(self) -> dict[str, Any]:
        """JSON form: corpus, entrypoint, executor, network (``{policy, allowed_commands}``), exit_code,
        counts, wall_ms, and every verdict."""
        return {
            "corpus": self.corpus,
            "entrypoint": self.entrypoint,
            "executor": self.executor,
            "network": {"policy": "sealed", "allowed_commands": list(self.allow_commands)},
            "exit_code": self.exit_code,
            "total": len(self.verdicts),
            "counts": self.counts,
            "wall_ms": round(self.wall_ms, 3),
            "verdicts": [v.to_dict() for v in self.verdicts],
        }

    def __str__(self) -> str:
        lines = [
            "Stepfork Check",
            "",
            f"{'Corpus':<14}{self.corpus}",
            f"{'Entrypoint':<14}{self.entrypoint}",
            f"{'Executor':<14}{self.executor}",
            *([f"{'Network':<14}{self.network}"] if self.allow_commands else []),  # what was opened
            f"{'Bundles':<14}{len(self.verdicts)} in {self.wall_ms / 1000:.1f} s",
            "",
            "Verdicts",
        ]
        lines += [f"  {name:<22}{count:>7}" for name, count in self.counts.items()] or ["  (no bundles)"]
        # bundles with the same first divergence: one group, its count and first bundles (_groups)
        for title, group in (("Diverged", self.diverged), ("Could not execute", self.not_executed)):
            if group:
                lines += ["", title, *group_lines(group_verdicts(group))]
        if self.verdicts:
            lines += ["", "Slowest"]
            lines += [f"  {v.duration_ms:>10.1f} ms  {v.bundle}" for v in self.slowest]
        status = {0: "PASSED", 1: "FAILED", 2: "NOTHING CHECKED"}[self.exit_code]
        lines += ["", f"Status: {status}"]
        # A detail repeats an agent's stderr or a bundle's data: its controls shown as escapes, not acted on
        return "\n".join(escape_controls(line) for line in lines)

    def _repr_html_(self) -> str:
        rows = [[v.bundle, v.verdict, v.code or v.reason or "", v.detail] for v in self.verdicts]
        caption = f"Check of {self.corpus}: " + ", ".join(f"{k} {n}" for k, n in self.counts.items())
        return html_table(caption, ["Bundle", "Verdict", "Code", "Detail"], rows)

    def junit_xml(self) -> str:
        """JUnit XML: one ``<testsuite name="stepfork check">`` with one ``<testcase>`` per bundle
        (``classname`` the agent, ``name`` the bundle, ``time`` seconds); a divergence is a ``<failure>``
        and a bundle that could not be checked an ``<error>``, each with the verdict's detail. Text from
        the bundles and the agent has what XML 1.0 forbids (NUL, ESC, ...) written as escapes (``\\x1b``)
        so every JUnit reader parses the report."""
        from xml.etree import ElementTree as ET  # only here: every worker process imports this package

        suite = ET.Element(
            "testsuite",
            name="stepfork check",
            tests=str(len(self.verdicts)),
            failures=str(len(self.diverged)),
            errors=str(len(self.not_executed)),
            skipped="0",
            time=f"{self.wall_ms / 1000:.3f}",
            timestamp=self.created_at,
        )
        for v in self.verdicts:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=xml_text(v.agent_name or "stepfork.check"),
                name=xml_text(v.bundle),
                time=f"{v.duration_ms / 1000:.3f}",
            )
            detail = xml_text(v.detail)
            if v.outcome == "failed":
                kind = xml_text(v.code or "DIVERGED")
                ET.SubElement(case, "failure", type=kind, message=detail).text = detail
            elif v.outcome == "could_not_execute":
                ET.SubElement(case, "error", type=xml_text(v.reason or "could_not_execute"), message=detail)
        suites = ET.Element("testsuites")
        suites.append(suite)
        ET.indent(suites)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

    def write_junit(self, path: str | os.PathLike[str], *, overwrite: bool = True) -> Path:
        """Write :meth:`junit_xml` to ``path`` atomically; return the path.

        Raises:
            FileExistsError: ``overwrite`` is false and ``path`` exists. OSError: it cannot be written.
        """
        target = Path(path)
        write_text_atomically(target, self.junit_xml(), replace=overwrite)
        return target

    def receipts(self) -> dict[str, dict[str, Any]]:
        """One receipt per bundle, by file name (``<bundle stem>-<8 hex of the bundle's name>.json``):
        ``{"receipt_version": 1, "kind": "check", "verdict" (passed | failed | could_not_execute),
        "reason", "replay_verdict", "bundle", "entrypoint", "duration_ms", "stepfork_version",
        "created_at", "detail"}``, and ``"allow_commands"`` (a list) when the check was given any, so a re-run
        can ask the same."""
        from stepfork.trace._version import __version__

        out: dict[str, dict[str, Any]] = {}
        for v in self.verdicts:
            out[receipt_file_name(v.bundle)] = {
                "receipt_version": 1,
                "kind": "check",
                "verdict": v.outcome,
                "reason": v.reason,
                "replay_verdict": v.verdict,
                "bundle": v.bundle,
                "entrypoint": self.entrypoint,
                "duration_ms": round(v.duration_ms),
                "stepfork_version": __version__,
                "created_at": self.created_at,
                "detail": v.detail,
            }
            if self.allow_commands:
                out[receipt_file_name(v.bundle)]["allow_commands"] = list(self.allow_commands)
        return out

    def write_receipts(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write :meth:`receipts` into ``directory`` (created; receipts of an earlier check of the same
        bundles are replaced); return the paths written.

        Raises:
            OSError: the directory or a receipt cannot be written.
        """
        from concurrent.futures import ThreadPoolExecutor

        root = Path(directory)
        texts = {
            root / name: json.dumps(receipt, ensure_ascii=False, indent=2) + "\n"
            for name, receipt in self.receipts().items()
        }

        def write(target: Path) -> Path:
            write_text_atomically(target, texts[target], replace=True)
            return target

        # Each receipt is fsynced before its rename (one rule for every file we write, _atomic.py); done one
        # after another, those fsyncs were the parent's biggest per-bundle cost (2-4 ms each, more than a
        # small replay). In threads they overlap (fsync releases the GIL) and the filesystem batches them.
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="stepfork-receipts") as pool:
            return list(pool.map(write, texts))
