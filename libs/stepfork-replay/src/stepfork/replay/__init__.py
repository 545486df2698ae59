"""stepfork.replay (work in progress)."""
