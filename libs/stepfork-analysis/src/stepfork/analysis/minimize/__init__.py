"""``stepfork.analysis.minimize``: shrink a failing trace to a 1-minimal set of recorded calls (spec
"minimize"; issue 5; docs/minimize.md).

:func:`minimize_trace` detects the failure's :class:`Signature` (:func:`replay_signature`), searches the
recorded calls with :mod:`.ddmin` (the algorithm, public: no replay, no I/O) and replays each candidate in
its own process: a child of the zygote (:mod:`stepfork.analysis._zygote`, shared with ``check``; this
package's task in ``_zygote``) or a fresh ``python -m stepfork.analysis.minimize._worker``.

Private modules: ``_minimize`` (the search and its checks), ``_signature`` (how one replay ended),
``_subset`` (candidate bundles), ``_attempts`` (where an attempt runs), ``_worker`` and ``_zygote`` (the
processes), ``_result`` (the report).
"""

from stepfork.analysis.minimize._minimize import MODES, MinimizeError, check_options, minimize_trace
from stepfork.analysis.minimize._result import MinimizeResult
from stepfork.analysis.minimize._signature import FAILURE_KINDS, Signature, replay_signature

__all__ = [
    "FAILURE_KINDS",
    "MODES",
    "MinimizeError",
    "MinimizeResult",
    "Signature",
    "check_options",
    "minimize_trace",
    "replay_signature",
]
