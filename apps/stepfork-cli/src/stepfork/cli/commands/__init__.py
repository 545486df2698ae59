"""One module per command; each defines ``register(app)`` (see stepfork.cli.app.COMMANDS)."""
