"""``stepfork.analysis.score``: score an exported test's expectation against a mutant battery (spec
"score"; issue 5).

:func:`score_test` reads the test with :mod:`ast` only (nothing is imported, no entrypoint runs) and
returns a :class:`ScoreResult`: ``claim_pinned`` when every claim-drawn mutant is killed, else
``run_pinned`` (docs/score.md). Private modules: ``_score`` (the battery and the verdict), ``_test_reader``
(the test's constants, read with ``ast``).
"""

from stepfork.analysis.score._score import Mutant, ScoreError, ScoreResult, build_battery, score_test

__all__ = ["Mutant", "ScoreError", "ScoreResult", "build_battery", "score_test"]
