"""Injection: hostile tool names, model names, agent names, bundle names and values (quotes, triple quotes,
newlines, backslashes, ``__import__``, f-string braces, U+2028) go through export, score and run as data:
generated tests parse to literals only, nothing from a bundle is imported or evaluated, outputs land where
the user pointed, nothing is overwritten without --overwrite (issue 7 part 4; spec/cli-reference.txt
"export", "score", "run"; DESIGN.md "A trace is data").

Every hostile string, if evaluated, would create a ``PWNED-<n>`` file; none may exist afterwards.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rel_support import HERE, child_env, one_clear_failure, record_figure, run_cli_batch

HOSTILE = [
    "'); open('PWNED-1', 'w'); ('",
    '"""); open("PWNED-2", "w"); ("""',
    "'''\nopen('PWNED-3', 'w')\n'''",
    "\\'; open('PWNED-4', 'w') #",
    "__import__('os').system('touch PWNED-5')",
    "{__import__('os').system('touch PWNED-6')}",
    "x\u2028open('PWNED-7', 'w')\u2029",
    "\n\nimport os; os.system('touch PWNED-8')\n",
    "\r\nopen('PWNED-9', 'w')",
    "\\N{BULLET} \\x41 \\u0041 \\",
    "{0} %(x)s ${7*7} {{}} # not a comment",
    "nul\x00byte and \x1b[31mansi",
    "bell\x07 cr\rValidation passed. \u202eevil\u202c",
]
BUNDLE_NAMES = [
    "plain.sftrace",
    "evil'); open('PWNED-10', 'w'); ('.sftrace",
    "new\nline.sftrace",
    'quo"te {x} __import__.sftrace',
    "ünï cödé.sftrace",
]
FORBIDDEN_OUTSIDE_STRINGS = ("PWNED", "__import__", "open(", "system", "import os")


def _source_without_strings(source: str) -> str:
    """The module's code with every string constant emptied: what would run besides data."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            node.value = type(node.value)()
    return ast.unparse(tree)


def _module_level_values_are_literals(source: str) -> list[str]:
    """Names of module-level assignments that are neither literals nor the documented path shapes."""
    allowed_exprs = {"Path(__file__).resolve().parent"}
    bad = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            text = ast.unparse(node.value)
            try:
                ast.literal_eval(node.value)
            except ValueError:
                is_path = text in allowed_exprs or (
                    isinstance(node.value, ast.BinOp)
                    and ast.unparse(node.value.left) == "HERE"
                    and isinstance(node.value.right, ast.Constant)
                )
                if not is_path:
                    bad.append(ast.unparse(node.targets[0]))
    return bad


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "work"
    root.mkdir()
    shutil.copy(HERE / "hostile_agent.py", root / "hostile_agent.py")
    (root / "hostile.json").write_text(json.dumps(HOSTILE), encoding="utf-8")
    script = (
        "import sys, json; from pathlib import Path; import hostile_agent as a\n"
        "for name in json.loads(sys.argv[1]): a.record_into(Path(name), a.HOSTILE[0] + ' agent')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(BUNDLE_NAMES)],
        cwd=root,
        env=child_env(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    expected = {f"k{i}": [h, h] for i, h in enumerate(HOSTILE)} | {
        "keys": {h: i for i, h in enumerate(HOSTILE)}
    }
    expected["k0"] = ["changed", "by the fix"]
    (root / "expected.json").write_text(json.dumps(expected), encoding="utf-8")
    return root


def test_hostile_names_and_values_stay_data_through_export_score_and_run(hostile_root: Path) -> None:
    root = hostile_root
    outside_before = sorted(p.name for p in root.parent.iterdir())
    ep = "hostile_agent:run_agent"
    jobs: list[list[str]] = []
    for i, name in enumerate(BUNDLE_NAMES):
        jobs += [
            ["validate", name],
            ["export", name, "--pytest", "--entrypoint", ep],  # default output: ./test_<trace>_regression.py
            ["export", name, "--pytest", "--entrypoint", ep, "--output", f"t{i}/test_recorded_{i}.py"],
            [
                "export", name, "--pytest", "--entrypoint", ep, "--expect-output", "expected.json",
                "--output", f"t{i}/test_claim_{i}.py",
            ],
            ["score", f"t{i}/test_claim_{i}.py"],
            ["score", "--json", f"t{i}/test_claim_{i}.py"],
        ]  # fmt: skip
    for i in range(len(BUNDLE_NAMES)):
        (root / f"t{i}").mkdir()
        for name in BUNDLE_NAMES:  # the exported test names its bundle relative to itself
            if not (root / f"t{i}" / name).exists():
                (root / f"t{i}" / name).symlink_to(root / name)
    outcomes, _ = run_cli_batch(jobs, cwd=root, per_job_seconds=120)
    tests = sorted(root.rglob("test_*.py"))
    run_jobs = [["run", str(t.relative_to(root)), "--receipt", f"{t.stem}.receipt.json"] for t in tests[:6]]
    run_outcomes, _ = run_cli_batch(run_jobs, cwd=root, per_job_seconds=120)

    problems = [
        f"{o.argv[:2]}: {one_clear_failure(o)}" for o in outcomes + run_outcomes if one_clear_failure(o)
    ]
    exports = [o for o in outcomes if o.argv[0] == "export"]
    assert all(o.code == 0 for o in exports), [(o.argv, o.text[-300:]) for o in exports if o.code]
    assert len(tests) == 3 * len(BUNDLE_NAMES)
    for test in tests:
        source = test.read_text(encoding="utf-8")
        code = _source_without_strings(source)
        leaked = [word for word in FORBIDDEN_OUTSIDE_STRINGS if word in code]
        assert not leaked, f"{test.name}: {leaked} outside string literals"
        assert not _module_level_values_are_literals(source), test.name
        functions = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
        assert len(functions) == 1
        assert functions[0].name.isidentifier()
    assert all(o.code in (0, 1) for o in run_outcomes), [(o.argv, o.text[-400:]) for o in run_outcomes]
    assert not list(root.parent.rglob("PWNED-*")), "a hostile string was executed"
    assert not list(Path.cwd().glob("PWNED-*"))
    assert sorted(p.name for p in root.parent.iterdir()) == outside_before, "a file was written outside"
    assert not problems, problems
    record_figure(
        "injection",
        hostile_strings=len(HOSTILE),
        bundle_names=len(BUNDLE_NAMES),
        exported_tests=len(tests),
        invocations=len(outcomes) + len(run_outcomes),
        executed=0,
    )


def test_nothing_is_overwritten_without_overwrite(hostile_root: Path) -> None:
    root = hostile_root / "overwrite"
    root.mkdir()
    bundle = hostile_root / BUNDLE_NAMES[1]
    shutil.copytree(bundle, root / "b.sftrace", symlinks=True)
    shutil.copy(hostile_root / "hostile_agent.py", root)
    shutil.copy(hostile_root / "hostile.json", root)
    (root / "test_mine.py").write_text("# my own file\n")
    shutil.copytree(bundle, root / "mine.sftrace")
    (root / "expected.json").write_text(json.dumps({"other": 1}))
    before = {p: _sha(p) for p in root.rglob("*") if p.is_file()}
    ep = "hostile_agent:run_agent"
    refused, _ = run_cli_batch(
        [
            ["export", "b.sftrace", "--pytest", "--entrypoint", ep, "--output", "test_mine.py"],
            ["fork", "b.sftrace", "--step", "2", "--entrypoint", ep, "--output", "mine.sftrace"],
            [
                "minimize",
                "b.sftrace",
                "--entrypoint",
                ep,
                "--expect-output",
                "expected.json",
                "-o",
                "mine.sftrace",
            ],
        ],
        cwd=root,
        per_job_seconds=120,
    )
    assert [o.code for o in refused] == [1, 1, 1] or all(o.code in (1, 2) for o in refused), [
        (o.argv[0], o.code, o.text[-200:]) for o in refused
    ]
    after = {p: _sha(p) for p in root.rglob("*") if p.is_file() and p in before}
    assert after == before
    assert not [o for o in refused if one_clear_failure(o)]
    accepted, _ = run_cli_batch(
        [["export", "b.sftrace", "--pytest", "--entrypoint", ep, "--output", "test_mine.py", "--overwrite"]],
        cwd=root,
    )
    assert accepted[0].code == 0, accepted[0].text
    assert _sha(root / "test_mine.py") != before[root / "test_mine.py"]


def test_the_checks_flag_code_outside_string_literals() -> None:
    hostile = "X = 1\nY = open('PWNED-0', 'w')\nZ = 'open(\\'PWNED\\')'\n"
    assert "open(" in _source_without_strings(hostile)
    assert "PWNED" not in _source_without_strings("Z = 'open(\\'PWNED\\')'\n")
    assert _module_level_values_are_literals(hostile) == ["Y"]


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_no_command_prints_a_terminal_control_character_taken_from_a_bundle(hostile_root: Path) -> None:
    """ESC, NUL, CR, BEL or a bidi override inside a name would let a bundle rewrite what the terminal
    shows (a fake "Validation passed.", hidden text): human output shows them escaped."""
    ep = "hostile_agent:run_agent"
    jobs = [
        ["validate", "plain.sftrace"],
        ["inspect", "plain.sftrace"],
        ["inspect", "--events", "plain.sftrace"],
        ["inspect", "--errors-only", "plain.sftrace"],
        ["replay", "plain.sftrace", "--entrypoint", ep, "--verbose"],
        ["replay", "plain.sftrace", "--entrypoint", ep, "--mode", "forbidden"],
        ["diff", "plain.sftrace", "new\nline.sftrace"],
        ["export", "plain.sftrace", "--pytest", "--entrypoint", ep, "--output", "ctl/test_ctl.py"],
    ]
    outcomes, _ = run_cli_batch(jobs, cwd=hostile_root)
    shown = {" ".join(o.argv[:2]): sorted(set(_CONTROL.findall(o.text))) for o in outcomes}
    assert not {k: v for k, v in shown.items() if v}


def test_hostile_raise_as_types_and_classes_are_refused_in_one_line(hostile_root: Path) -> None:
    """``--raise-as TYPE=MODULE:CLASS`` (export and replay): a hostile TYPE, MODULE or CLASS is refused
    before any bundle is read or module imported, in one line with no control character, and nothing is
    written or executed. Hostile type names that reach the library stay data (tests/cli)."""
    root = hostile_root / "raise_as"
    root.mkdir()
    ep = "hostile_agent:run_agent"
    values = [f"{h}=hostile_agent:run_agent" for h in HOSTILE]  # hostile TYPE
    values += [f"ValueError=hostile_agent:{h}" for h in HOSTILE]  # hostile CLASS
    values += [f"ValueError={h}:ValueError" for h in HOSTILE]  # hostile MODULE
    jobs: list[list[str]] = []
    for i, value in enumerate(values):
        jobs.append(["export", "../plain.sftrace", "--pytest", "--entrypoint", ep, "--output", f"t{i}.py"])
        jobs[-1] += ["--raise-as", value]
        jobs.append(["replay", "../plain.sftrace", "--entrypoint", ep, "--raise-as", value])
    outcomes, _ = run_cli_batch(jobs, cwd=root)
    problems = [f"{o.argv[0]}: {one_clear_failure(o)}" for o in outcomes if one_clear_failure(o)]
    assert not problems, problems
    wrong = [(o.argv[-1], o.code, o.text[-200:]) for o in outcomes if o.code != 2]
    assert not wrong, wrong
    assert all(len(o.err.strip().splitlines()) == 1 and o.out == "" for o in outcomes), [
        o.err for o in outcomes if len(o.err.strip().splitlines()) != 1
    ]
    assert all(o.err.startswith("Invalid --raise-as ") for o in outcomes)
    assert not [o.err for o in outcomes if _CONTROL.findall(o.err)]
    assert not list(root.iterdir()), "a refused export wrote a file"
    assert not list(hostile_root.parent.rglob("PWNED-*")), "a hostile string was executed"
