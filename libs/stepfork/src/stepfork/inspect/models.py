"""``stepfork.inspect.models``: the earlier implementation's path of the inspection models (issue 32); the
same classes as :mod:`stepfork.analysis.inspection.models`."""

from stepfork.analysis.inspection.models import EventSummary, TraceInspection

__all__ = ["EventSummary", "TraceInspection"]
