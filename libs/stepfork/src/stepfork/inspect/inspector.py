"""``stepfork.inspect.inspector``: the earlier implementation's path of the inspection functions (issue 32);
the same objects as :mod:`stepfork.analysis.inspection`."""

from stepfork.analysis.inspection import filter_timeline, inspect_bundle, inspect_trace

__all__ = ["filter_timeline", "inspect_bundle", "inspect_trace"]
