"""Run many ``stepfork`` invocations in one process: ``python cli_driver.py JOBS.json`` (rel_support).

Each job is an argv for ``stepfork.cli.app.main``. stdout/stderr are captured per job (binary buffers under
text wrappers, as a real stream has); SIGALRM bounds each job. Prints one JSON report on the real stdout:
``{"outcomes": [{argv, code, out, err, seconds, crashed}], "max_rss_kib": int}``.
"""

from __future__ import annotations

import io
import json
import resource
import signal
import sys
import time
import traceback


class JobTimeout(BaseException):
    """Raised by SIGALRM when a job exceeds its bound (BaseException: commands must not swallow it)."""


def _alarm(signum: int, frame: object) -> None:
    raise JobTimeout


def run_job(argv: list[str], seconds: int) -> dict[str, object]:
    from stepfork.cli.app import main

    out_raw, err_raw = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_raw, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_raw, encoding="utf-8", write_through=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    code, crashed = 0, None
    started = time.perf_counter()
    signal.alarm(seconds)
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except JobTimeout:
        code, crashed = -1, f"timeout after {seconds} s"
    except BaseException as exc:
        code, crashed = -2, "".join(traceback.format_exception_only(exc)).strip()[:2000]
    finally:
        signal.alarm(0)
        sys.stdout, sys.stderr = saved
        out.flush()
        err.flush()
    return {
        "argv": argv,
        "code": code,
        "out": out_raw.getvalue().decode("utf-8", "replace"),
        "err": err_raw.getvalue().decode("utf-8", "replace"),
        "seconds": time.perf_counter() - started,
        "crashed": crashed,
    }


def peak_rss_kib() -> int:
    """This process's peak RSS in KiB (VmHWM), without the parent it was forked from.

    On Linux ``ru_maxrss`` keeps its high-water mark across fork and exec, so a child of a large pytest
    process reported the parent's size; VmHWM belongs to the executed image. ru_maxrss without /proc.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    signal.signal(signal.SIGALRM, _alarm)
    outcomes = [run_job(argv, spec["seconds"]) for argv in spec["jobs"]]
    rss = peak_rss_kib()
    sys.stdout.write(json.dumps({"outcomes": outcomes, "max_rss_kib": rss}))


if __name__ == "__main__":
    main()
