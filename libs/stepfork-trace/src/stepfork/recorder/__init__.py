"""``stepfork.recorder``: the reference's module path for recording (REFERENCE-API.md ``stepfork.recorder``).

The same objects as :mod:`stepfork.trace` (one implementation each; issue 14), kept at this path so programs
written against the earlier implementation run unchanged. Shipped by ``stepfork-trace``, so a production
service that installs only the light recorder has it too.
"""

from stepfork.trace.callrecording import LLMCallHandle
from stepfork.trace.instrument import allm_request, llm_request, trace_tool
from stepfork.trace.recording import DEFAULT_TRACE_DIR, RecordingSession, active_recorder, record

__all__ = [
    "DEFAULT_TRACE_DIR",
    "LLMCallHandle",
    "RecordingSession",
    "active_recorder",
    "allm_request",
    "llm_request",
    "record",
    "trace_tool",
]
