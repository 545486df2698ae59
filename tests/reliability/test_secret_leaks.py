"""Secrets never leave redaction: a corpus of >= 30 secret shapes placed in tool arguments, outputs, errors
and their chained causes, nested values, bytes (UTF-8 and not), headers, dict keys, LLM prompts and
responses, the run output, the agent name and an escaped failure; then every artifact is scanned: bundle
bytes, the output of every CLI command (human, --json, --verbose), exported tests, diffs, minimized and
forked bundles, receipts (issue 7 part 3; DESIGN.md "Errors and output"; CASES.md C5).

The figure is zero occurrences of any needle, also inside base64 runs (tagged bytes) of every artifact.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from rel_support import HERE, child_env, one_clear_failure, record_figure, run_cli_batch
from secret_corpus import CORPUS, REGISTERED

_B64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{16,}={0,2}")


def _decoded_runs(data: bytes) -> list[bytes]:
    """Every base64 run of ``data`` decoded (standard and URL-safe alphabets), for tagged bytes."""
    found = []
    for match in _B64_RUN.finditer(data):
        run = match.group()
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                found.append(decode(run + b"=" * (-len(run) % 4)))
            except (binascii.Error, ValueError):
                continue
    return found


def leaks(data: bytes) -> list[str]:
    """Shapes whose needle occurs in ``data`` or in a base64 run decoded from it."""
    decoded = _decoded_runs(data)
    return [
        shape
        for shape, _text, needle, _header in CORPUS
        if needle.encode() in data or any(needle.encode() in d for d in decoded)
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the agent, its corpus and the three bundles it recorded."""
    root = tmp_path_factory.mktemp("secrets")
    shutil.copy(HERE / "secret_agent.py", root / "secret_agent.py")
    (root / "corpus.json").write_text(json.dumps(CORPUS), encoding="utf-8")
    (root / "registered.json").write_text(json.dumps(REGISTERED), encoding="utf-8")
    (root / "expected.json").write_text(json.dumps({"count": 0}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "secret_agent.py", str(root)],
        cwd=root,
        env=child_env(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    return root


def test_the_corpus_has_at_least_30_distinct_secret_shapes() -> None:
    assert len({shape for shape, *_ in CORPUS}) == len(CORPUS) >= 30
    assert len({needle for _s, _t, needle, _h in CORPUS}) == len(CORPUS)


def test_the_scanner_finds_a_needle_in_plain_and_in_base64_form() -> None:
    needle = CORPUS[0][2].encode()
    assert leaks(b"xx" + needle + b"yy") == [CORPUS[0][0]]
    assert CORPUS[0][0] in leaks(base64.b64encode(b"\xff\xfe" + needle))


def test_no_bundle_file_holds_any_secret_of_the_corpus(recorded: Path) -> None:
    found: Counter[str] = Counter()
    files = 0
    for bundle in ("good", "candidate", "failing", "small"):
        for path in sorted((recorded / f"{bundle}.sftrace").iterdir()):
            files += 1
            for shape in leaks(path.read_bytes()):
                found[f"{bundle}/{path.name}: {shape}"] += 1
    record_figure("secrets-bundles", shapes=len(CORPUS), files=files, occurrences=sum(found.values()))
    assert not found, sorted(found)


def test_no_cli_output_or_written_artifact_holds_any_secret_of_the_corpus(recorded: Path) -> None:
    ep = "secret_agent:run_agent"
    jobs = [
        ["validate", "good.sftrace"],
        ["validate", "--verify-integrity", "failing.sftrace"],
        ["inspect", "good.sftrace"],
        ["inspect", "--events", "good.sftrace"],
        ["inspect", "--json", "--events", "good.sftrace"],
        ["inspect", "--errors-only", "failing.sftrace"],
        ["inspect", "--json", "failing.sftrace"],
        ["inspect", "--events", "failing.sftrace"],
        ["replay", "good.sftrace", "--entrypoint", ep],
        ["replay", "good.sftrace", "--entrypoint", ep, "--verbose"],
        ["replay", "candidate.sftrace", "--entrypoint", "secret_agent:missing", "--verbose"],
        ["replay", "failing.sftrace", "--entrypoint", ep, "--verbose"],
        ["replay", "good.sftrace", "--entrypoint", ep, "--mode", "forbidden", "--verbose"],
        ["diff", "good.sftrace", "candidate.sftrace"],
        ["diff", "--json", "good.sftrace", "candidate.sftrace"],
        ["diff", "good.sftrace", "failing.sftrace"],
        ["export", "good.sftrace", "--pytest", "--entrypoint", ep, "--output", "test_good_regression.py"],
        [
            "export", "good.sftrace", "--pytest", "--entrypoint", ep,
            "--expect-output", "expected.json", "--output", "test_expected_regression.py",
        ],
        ["score", "test_good_regression.py"],
        ["score", "--json", "test_expected_regression.py"],
        ["run", "test_good_regression.py", "--receipt", "receipt.json"],
        ["run", "--json", "test_expected_regression.py"],
        [
            "minimize", "small.sftrace", "--entrypoint", "secret_agent:run_small",
            "--expect-output", "expected.json", "--output", "minimal.sftrace",
        ],
        [
            "fork", "good.sftrace", "--step", "4", "--entrypoint", ep, "--output", "forked.sftrace", "--json",
            "--allow-live-tool", "fetch", "--allow-live-tool", "failing", "--live-llm", "m-1",
        ],
        ["fork", "good.sftrace", "--step", "4", "--entrypoint", ep, "--output", "forked2.sftrace"],
        ["view", "good.sftrace", "-o", "good.html"],
        ["view", "failing.sftrace", "-o", "failing.html"],
        ["view", "good.sftrace", "candidate.sftrace", "-o", "diff.html"],
        ["replay", "failing.sftrace", "--entrypoint", ep, "--html", "replay.html"],
    ]  # fmt: skip
    outcomes, _ = run_cli_batch(jobs, cwd=recorded, per_job_seconds=120)
    found: Counter[str] = Counter()
    for outcome in outcomes:
        for shape in leaks(outcome.text.encode()):
            found[f"`stepfork {' '.join(outcome.argv[:2])}`: {shape}"] += 1
    inputs = {"corpus.json", "registered.json", "secret_agent.py"}
    recorded_bundles = {"good.sftrace", "candidate.sftrace", "failing.sftrace", "small.sftrace"}
    written = [
        p
        for p in recorded.rglob("*")
        if p.is_file() and p.suffix in (".py", ".json", ".jsonl", ".html") and p.name not in inputs
        and not recorded_bundles & set(p.parts)
    ]  # fmt: skip
    for path in written:
        for shape in leaks(path.read_bytes()):
            found[f"{path.relative_to(recorded)}: {shape}"] += 1
    record_figure(
        "secrets-artifacts",
        shapes=len(CORPUS),
        commands=len(outcomes),
        files=len(written),
        occurrences=sum(found.values()),
    )
    problems = {" ".join(o.argv[:2]): one_clear_failure(o) for o in outcomes if one_clear_failure(o)}
    assert not found, sorted(found)
    assert not problems, problems
    # the campaign must really have produced what it scans
    assert {"test_good_regression.py", "receipt.json", "good.html", "diff.html", "replay.html"} <= {
        p.name for p in written
    }
    assert (recorded / "minimal.sftrace" / "events.jsonl").exists()
    assert (recorded / "forked.sftrace" / "events.jsonl").exists()
