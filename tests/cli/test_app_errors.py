"""``stepfork.cli.app.main``: an unexpected error is one line and exit 1; ``--debug`` shows the traceback;
a command is registered by one module plus one line in ``COMMANDS``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stepfork.cli import app

BOOM = '''
import typer

def boom() -> None:
    """Fail unexpectedly."""
    raise RuntimeError("kaboom")

def register(app: typer.Typer) -> None:
    app.command("boom")(boom)
'''


@pytest.fixture
def boom_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "boom_cmd.py").write_text(BOOM, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(app.COMMANDS, "boom", "boom_cmd")
    monkeypatch.delenv("STEPFORK_DEBUG", raising=False)
    yield
    sys.modules.pop("boom_cmd", None)


@pytest.mark.usefixtures("boom_command")
def test_an_unexpected_error_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        app.main(["boom"])
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "RuntimeError: kaboom" in err
    assert "Traceback" not in err


@pytest.mark.usefixtures("boom_command")
def test_debug_lets_the_traceback_through() -> None:
    with pytest.raises(RuntimeError, match="kaboom"):
        app.main(["--debug", "boom"])
