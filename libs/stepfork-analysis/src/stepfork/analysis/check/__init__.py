"""``stepfork.analysis.check``: replay every bundle of a corpus against a candidate build (issue 17,
``stepfork check``; docs/check.md).

:func:`check_corpus` cuts the corpus (:func:`resolve_corpus`) into batches and schedules them through a
``concurrent.futures.Executor`` (a local pool, or a Dask cluster: :func:`dask_executor`); a batch is
replayed by workers forked from a zygote (:mod:`stepfork.analysis._zygote`, shared with ``minimize``) and
its verdicts gathered into a :class:`CheckResult`.

Private modules: ``_corpus`` (the corpus, the batches, the schedule), ``_runner`` (one batch: the zygote
client and the fallback process), ``_zygote`` and ``_zygote_batches`` (the zygote's task and its loop for
batches), ``_batch`` (a forked worker), ``_state`` (the agent's state probe), ``_worker`` (one replay's
verdict; the fallback process), ``_result`` and ``_groups`` (the result and its rendering).
"""

from stepfork.analysis.check._corpus import (
    ISOLATION,
    CorpusError,
    check_corpus,
    dask_executor,
    python_file_problem,
    resolve_corpus,
    task_config,
)
from stepfork.analysis.check._result import BundleVerdict, CheckResult, is_junit_file, receipt_file_name

__all__ = [
    "ISOLATION",
    "BundleVerdict",
    "CheckResult",
    "CorpusError",
    "check_corpus",
    "dask_executor",
    "is_junit_file",
    "python_file_problem",
    "receipt_file_name",
    "resolve_corpus",
    "task_config",
]
