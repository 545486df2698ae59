"""The network seal in the child processes a replay starts (docs/replay.md, "The seal's rules").

A program the agent starts runs in a new process without the seal's hooks: ``subprocess.run([sys.executable,
"-c", "...urlopen(...)"])``, a ``multiprocessing`` pool with the ``spawn`` or ``forkserver`` start method, a
shell tool running ``curl``. (A child made by ``os.fork`` keeps the hooks: :mod:`stepfork.replay.network`.)

- **Python children are sealed.** While a sealed session is active, the process's environment carries the
  seal (:func:`carry`): ``PYTHONPATH`` starts with the folder ``_seal_site`` of this package, whose
  ``sitecustomize.py`` every Python child runs at start-up (standard library only: it loads
  :mod:`stepfork.replay._seal_rules` by its path, and works on an interpreter without Stepfork), and
  ``STEPFORK_SEAL`` says what is allowed (the sessions' ``allow_hosts`` and the addresses of the allowed
  names) and where to report. The child then refuses, with an audit hook, every connection, datagram and
  DNS query the seal would refuse (``PermissionError``, as a firewall would), and appends each refusal to
  the report file; the session reads it when it ends, and each one is its divergence (``network_sealed``,
  "a child process started during the replay"). The child's own sitecustomize, if it has one, still runs.
- **Other children are counted.** A child that is not Python (``curl``, a shell: ``os.system`` runs one),
  or a Python child started without the sealed environment (``env={...}`` without it, ``python -I``/``-E``/
  ``-S``), cannot be sealed from here: each is noted on the session (:func:`note_start`), and the report
  says so (``Network  sealed (child processes not sealed: 1 started (curl))``) instead of a bare "sealed".
  Programs that only read the machine (:data:`LOCAL_PROGRAMS`: ``uname``, ``ldconfig``...) are not counted.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class NetworkSealWarning(UserWarning):
    """A replay passed, but the network seal could not cover all of it (``child processes not sealed: 1
    started (curl)``): warned by an exported test (``run_regression_case``), shown in pytest's summary."""


SITE = str(Path(__file__).resolve().with_name("_seal_site"))
"""The folder put first on a child's ``PYTHONPATH``: it holds only ``sitecustomize.py``."""
ENV = "STEPFORK_SEAL"
"""The environment variable a sealed child reads its seal from (JSON: ``mode``, ``allowed``, ``report``)."""

_saved: dict[str, str | None] | None = None
"""The environment's ``PYTHONPATH`` and :data:`ENV` before :func:`carry` changed them (None: unchanged)."""
_report: str | None = None
"""The report files' path, ``{ppid}`` in it standing for the pid of the process a child reports to
(the one that started it: each ``stepfork check`` worker, forked from one zygote, reads its own)."""
_read: dict[int, int] = {}
"""How far this process read its report file, by pid (a forked worker starts at 0)."""
_values: dict[tuple[str, frozenset[tuple[str, int | None]]], str] = {}  # the JSON of each seal seen
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?[a-z]?(\.exe)?$")
LOCAL_PROGRAMS = frozenset(
    {"uname", "sw_vers", "getconf", "nproc", "lsb_release", "hostname", "id", "whoami", "arch"}
    | {"ldconfig", "ld", "gcc", "cc", "objdump"}
)
"""Programs that only read this machine, never the network, started by the standard library and SDKs
themselves (``platform.processor()`` runs ``uname -p`` in every OpenAI SDK request's headers,
``ctypes.util.find_library`` runs ``ldconfig``): not counted as unsealed children."""


def carry(mode: str, allowed: Iterable[tuple[str, int | None]]) -> None:
    """Make the process's environment carry the seal to Python children (module docstring): ``allowed``
    are ``(host, port or None)`` pairs, normalized. Called whenever the seals change; :func:`release`
    gives the environment back."""
    global _saved, _report
    if _report is None:  # one per process tree, kept between sessions
        _report = _report_template()
    if _saved is None:
        _saved = {"PYTHONPATH": os.environ.get("PYTHONPATH"), ENV: os.environ.get(ENV)}
    before = _saved["PYTHONPATH"]
    key = (mode, frozenset(allowed))
    value = _values.get(key)
    if value is None:
        pairs = sorted(key[1], key=lambda pair: (pair[0], pair[1] or 0))
        value = _values[key] = json.dumps({"mode": mode, "allowed": pairs, "report": _report})
    if os.environ.get(ENV) != value:  # the same seals as the last session's: nothing to write
        os.environ["PYTHONPATH"] = SITE if not before else SITE + os.pathsep + before
        os.environ[ENV] = value


def release() -> None:
    """Give the environment back as it was before :func:`carry` (the report file stays, for the next)."""
    global _saved
    if _saved is not None:
        for name, value in _saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _saved = None


def _after_fork_in_child() -> None:
    """A process forked while sealed keeps the sealed environment, whose report path names the process a
    child reports to by its parent's pid: a ``stepfork check`` worker, forked between sessions from its
    zygote, so reads what its own children report, with no change to its environment (the worker compares
    it with the zygote's after each replay). Forked by a replay (the agent's ``os.fork`` while a session
    is active), its Python children report to the replaying process instead, which reads them."""
    if _report is None or os.environ.get(ENV) is None:
        return
    network = _seal_module()
    if network is None or not any(seal.session is not None for seal in network._seals):
        return
    with contextlib.suppress(ValueError, KeyError):
        settings = json.loads(os.environ[ENV])
        os.environ[ENV] = json.dumps({**settings, "report": _report.replace("{ppid}", str(os.getppid()))})


def _seal_module() -> Any:
    """The seal's module (:mod:`stepfork.replay.network`) when it is loaded (it is whenever a seal exists),
    else None: looked up, not imported, as it imports this module (no import cycle)."""
    return sys.modules.get("stepfork.replay.network")


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _report_template() -> str:
    """The report files' path (:data:`_report`): in the temporary folder, a name no one can guess (the
    children append to it, so it must not be a link planted in advance). Nothing is created: the first
    refusal a child reports creates its file (a replay whose children refuse nothing leaves none), and a
    process removes its own when it exits."""
    import secrets

    return os.path.join(tempfile.gettempdir(), f"stepfork-seal-{secrets.token_hex(8)}-{{ppid}}.log")


def _own_report() -> str | None:
    """This process's report file (its children write there), or None before any seal."""
    if _report is None:
        return None
    pid = os.getpid()
    if pid not in _read:
        _read[pid] = 0
        atexit.register(_remove_report, _report.replace("{ppid}", str(pid)), pid)
    return _report.replace("{ppid}", str(pid))


def _remove_report(path: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child's exit leaves its parent's file alone
        with contextlib.suppress(OSError):
            os.unlink(path)


def refusals() -> list[str]:
    """The ``host:port`` (or the description) of each refusal sealed children reported since the last call."""
    path = _own_report()
    if path is None:
        return []
    pid = os.getpid()
    try:
        if os.stat(path).st_size <= _read[pid]:  # nothing new: no open, no read (once per replay)
            return []
        with open(path, "rb") as handle:
            handle.seek(_read[pid])
            data = handle.read()
    except OSError:
        return []
    complete = data.rfind(b"\n") + 1  # a line a child is still writing is read next time
    _read[pid] += complete
    return [line for line in data[:complete].decode("utf-8", "replace").splitlines() if line]


_last_popen: tuple[int, int] | None = None  # (thread, id of argv): its os.posix_spawn is the same child


def note_start(event: str, args: tuple[Any, ...]) -> None:
    """An audit event that starts a program (``subprocess.Popen``, ``os.system``, ``os.exec``,
    ``os.posix_spawn``, ``os.spawn``): note it on the session when the child will not be sealed."""
    global _last_popen
    import threading

    if event == "subprocess.Popen":  # (executable, args, cwd, env)
        executable, argv, env = args[0], args[1], args[3] if len(args) > 3 else None
        _last_popen = (threading.get_ident(), id(argv))
    elif event == "os.system":  # (command,): a shell
        executable, argv, env = None, args[0] if args else "", None
    else:  # os.exec / os.posix_spawn (path, argv, env); os.spawn (mode, path, args, env)
        rest = args[1:] if event == "os.spawn" else args
        executable, argv = rest[0] if rest else None, rest[1] if len(rest) > 1 else ()
        env = rest[2] if len(rest) > 2 else None
        if event == "os.posix_spawn" and _last_popen == (threading.get_ident(), id(argv)):
            return  # subprocess.Popen's own spawn, noted already
    if event == "os.system":
        program = "sh"
        sealed = False
    else:
        program, sealed = _program(executable, argv), _sealed(executable, argv, env)
    if not sealed and program not in LOCAL_PROGRAMS:
        network = _seal_module()
        seal = network._current_seal()[0] if network is not None else None
        note = getattr(getattr(seal, "session", None), "note_unsealed_child", None)
        if note is not None:
            note(program)


def _words(argv: Any) -> list[str]:
    if isinstance(argv, (str, bytes)):
        text = os.fsdecode(argv)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    try:
        return [os.fsdecode(word) for word in argv]
    except TypeError:
        return []


def _program(executable: Any, argv: Any) -> str:
    """The program's name as the report shows it (``curl``, ``python3``, ``sh``)."""
    words = _words(argv)
    path = os.fsdecode(executable) if isinstance(executable, (str, bytes, os.PathLike)) else None
    return os.path.basename(path or (words[0] if words else "?")) or "?"


def _sealed(executable: Any, argv: Any, env: Any) -> bool:
    """True when the child will be a Python interpreter that reads the sealed environment at start-up."""
    words = _words(argv)
    path = os.fsdecode(executable) if isinstance(executable, (str, bytes, os.PathLike)) else None
    path = path or (words[0] if words else "")
    if not _is_python(path):
        return False
    options = [word for word in words[1:2] if word.startswith("-") and not word.startswith("--")]
    if any(set(word[1:]) & set("IES") for word in options):
        return False  # -I, -E, -S: no PYTHONPATH or no site, so no sitecustomize
    environment: Any = os.environ if env is None else env
    try:
        seal = environment.get(ENV) or environment.get(ENV.encode())
        path_entries = environment.get("PYTHONPATH") or environment.get(b"PYTHONPATH") or ""
    except (AttributeError, TypeError):
        return False
    return bool(seal) and SITE in os.fsdecode(path_entries).split(os.pathsep)


def _is_python(path: str) -> bool:
    name = os.path.basename(path).lower()
    if _PYTHON.fullmatch(name):
        return True
    with contextlib.suppress(OSError):
        return os.path.realpath(path) == os.path.realpath(sys.executable)
    return False
