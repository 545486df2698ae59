"""The seal reads a Python command line's options as CPython does (NEWCOMER5 F5).

``-I`` after ``--check-hash-based-pycs default`` was taken for the script name, so the child ran isolated
(no ``PYTHONPATH``, so no seal) under a MATCHED verdict. Each command line here is run by this very
interpreter, which says through ``sys.flags`` whether it ignored the environment or ``site``; the seal's
verdict (:func:`~stepfork.replay._seal_rules.unsealable_option`) must agree with it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from stepfork.replay._seal_rules import unsealable_option

PROBE = "import sys; f = sys.flags; print(int(bool(f.isolated or f.ignore_environment or f.no_site)))"
OPTIONS = [
    [],
    ["-s"],
    ["-I"],
    ["-sI"],
    ["-Es"],
    ["-S"],
    ["-u", "-B", "-S"],
    ["--check-hash-based-pycs", "default", "-I"],
    ["--check-hash-based-pycs", "always"],
    ["-W", "ignore", "-E"],
    ["-Wignore", "-E"],
    ["-WI"],  # -W's value is I: not isolated
    ["-X", "utf8", "-I"],
    ["-XI"],  # -X's value is I
    ["-bb", "-OO", "-q"],
    ["-P", "-s", "-u"],
]


@pytest.mark.parametrize("options", OPTIONS, ids=[" ".join(options) or "none" for options in OPTIONS])
def test_the_seal_refuses_exactly_the_options_that_keep_it_out(options: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, *options, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    keeps_out = done.stdout.strip() == "1"
    assert (unsealable_option([*options, "-c", PROBE]) is not None) == keeps_out, (options, done.stdout)


@pytest.mark.parametrize(
    "arguments", [["script.py", "-I"], ["-c", "-I"], ["-m", "mod", "-E"], ["-", "-S"], ["--", "-I"]]
)
def test_what_follows_the_script_or_the_code_is_the_programs_own(arguments: list[str]) -> None:
    assert unsealable_option(arguments) is None
