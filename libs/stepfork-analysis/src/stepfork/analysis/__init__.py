"""stepfork.analysis (work in progress)."""
