"""``stepfork.recorder.session``: the earlier implementation's module of the recording session (issue 32).

``record``, ``RecordingSession``, ``active_recorder``, ``LLMCallHandle`` and ``DEFAULT_TRACE_DIR`` at that
path: the same objects as :mod:`stepfork.recorder` and :mod:`stepfork.trace`.
"""

from stepfork.trace.callrecording import LLMCallHandle
from stepfork.trace.recording import DEFAULT_TRACE_DIR, RecordingSession, active_recorder, record

__all__ = ["DEFAULT_TRACE_DIR", "LLMCallHandle", "RecordingSession", "active_recorder", "record"]
