"""``python -m stepfork``: the stepfork command (needs stepfork-cli)."""

from stepfork.cli.app import main

if __name__ == "__main__":
    main()
