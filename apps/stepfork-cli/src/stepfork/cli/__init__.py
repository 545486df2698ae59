"""stepfork.cli."""
