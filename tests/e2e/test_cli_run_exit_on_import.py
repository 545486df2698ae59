"""``stepfork run`` of an exported test whose entrypoint module exits when imported (a script without a
``__main__`` guard: ``sys.exit(3)``, ``os._exit(0)``): a check that could not execute, reason
``entrypoint_unresolvable``, exit 2, as ``replay`` refuses it (docs/cli.md, "run").

Before, the test failed with ``stepfork: entrypoint failed: ...`` and ``run`` read it as ``failed``, "the
check ran and disagreed", exit 1: a regression reported for a check that never ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import InProcess

SCRIPT = "import os, sys\n\n{exit}\n\n\ndef run_agent():\n    return None\n"


@pytest.mark.parametrize(
    ("exit", "said"), [("sys.exit(3)", "exited (SystemExit(3))"), ("os._exit(0)", "os._exit(0)")]
)
def test_an_entrypoint_module_exiting_on_import_could_not_execute(
    quickstart: Path, in_process: InProcess, exit: str, said: str
) -> None:
    (quickstart / "script_agent.py").write_text(SCRIPT.format(exit=exit), encoding="utf-8")
    given = ("-e", "script_agent:run_agent", "-o", "test_s.py")
    exported = in_process("export", "notify.sftrace", *given, cwd=quickstart)
    assert exported.code == 0, exported.text
    result = in_process("run", "test_s.py", "--json", cwd=quickstart)
    assert result.code == 2, result.text
    receipt = json.loads(result.out)
    assert (receipt["verdict"], receipt["reason"]) == ("could_not_execute", "entrypoint_unresolvable")
    where = quickstart.resolve()
    assert f"cannot import module 'script_agent' from {where}: importing it" in receipt["detail"]
    assert said in receipt["detail"]
    assert receipt["detail"].endswith("the check cannot run, so this is not a regression")
