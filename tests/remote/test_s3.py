"""Bundles on a real S3 API (moto's server on 127.0.0.1, s3fs): record to it, list, validate, replay, check a
corpus in it, and a killed upload that leaves an incomplete bundle readers refuse until `stepfork upload`
finishes it (issue 17)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import QUICKSTART, cli


def test_record_list_validate_and_replay(s3: str, recorded: dict[str, str], work: Path) -> None:
    from stepfork.trace import Trace
    from stepfork.trace.remote import list_bundles

    assert list_bundles(f"{s3}/runs/") == sorted(recorded)
    url = next(u for u, v in recorded.items() if v == "MATCHED")
    assert Trace.load(url).agent_name == "notify-agent"
    done = cli("validate", url, "--verify-integrity", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Integrity verified" in done.stdout
    done = cli("replay", url, "--entrypoint", "quickstart:run_agent", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Recorded behavior: MATCHED" in done.stdout


def test_check_a_corpus_in_s3(s3: str, recorded: dict[str, str], work: Path, tmp_path: Path) -> None:
    junit = tmp_path / "check.xml"
    done = cli(
        "check", f"{s3}/runs/", "--entrypoint", "quickstart:run_agent", "--json", "--junit", junit, cwd=work
    )
    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = {v["bundle"]: v["verdict"] for v in json.loads(done.stdout)["verdicts"]}
    assert verdicts == recorded
    assert junit.read_text().count("<testcase") == len(recorded)


def test_a_killed_upload_leaves_an_incomplete_bundle_readers_refuse(
    s3: str, recorded: dict[str, str], work: Path
) -> None:
    # The recorder is SIGKILLed by its own process just before integrity.json, the last file, is uploaded.
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(QUICKSTART)!r})
        import quickstart, s3fs
        real = s3fs.S3FileSystem._put_file
        async def put_file(self, lpath, rpath, **kwargs):
            if rpath.endswith("integrity.json"):
                os.kill(os.getpid(), signal.SIGKILL)
            return await real(self, lpath, rpath, **kwargs)
        s3fs.S3FileSystem._put_file = put_file
        from stepfork import record
        with record("notify-agent", output={s3 + "/killed/{run_id}.sftrace"!r}) as run:
            print(run.output_path, run.url, flush=True)
            run.set_output(quickstart.run_agent())
        print("not reached", flush=True)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == -9, proc.stdout + proc.stderr
    spool, url = proc.stdout.split()
    assert (Path(spool) / "integrity.json").is_file()  # the spool survives the kill

    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(url.removeprefix("s3://")))
    assert names == ["concurrency.json", "events.jsonl", "manifest.json", "minted.json", "redactions.json"]

    done = cli("validate", url, cwd=work)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "incomplete_bundle" in done.stdout + done.stderr  # validate: failures on stderr
    done = cli("replay", url, "--entrypoint", "quickstart:run_agent", cwd=work)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "incomplete bundle" in done.stderr
    done = cli("check", f"{s3}/killed/", "--entrypoint", "quickstart:run_agent", "--json", cwd=work)
    assert done.returncode == 2, done.stdout + done.stderr
    (only,) = json.loads(done.stdout)["verdicts"]
    assert (only["verdict"], only["reason"]) == ("COULD NOT EXECUTE", "bundle_unreadable")

    done = cli("upload", spool, url, cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not Path(spool).exists()
    done = cli("replay", url, "--entrypoint", "quickstart:run_agent", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
