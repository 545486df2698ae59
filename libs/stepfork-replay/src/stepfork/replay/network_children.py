"""The network seal in the child processes a replay starts (docs/replay.md, "The seal's rules").

A program the agent starts runs in a new process without the seal's hooks: ``subprocess.run([sys.executable,
"-c", "...urlopen(...)"])``, a ``multiprocessing`` pool with the ``spawn`` or ``forkserver`` start method, a
shell tool running ``curl``. (A child made by ``os.fork`` keeps the hooks: :mod:`stepfork.replay.network`.)

- **Python children are sealed.** While a sealed session is active, the process's environment carries the
  seal (:func:`carry`): ``PYTHONPATH`` starts with the folder ``_seal_site`` of this package, whose
  ``sitecustomize.py`` every Python child runs at start-up (standard library only, valid on Python 2.7
  and 3.x: it loads the seal, :mod:`stepfork.replay._seal_child` and :mod:`stepfork.replay._seal_rules` with
  its parts, by their paths on Python 3.8+, works on an interpreter without Stepfork, and refuses the
  child, exit 126, reported as ``child_process_refused``, when the seal cannot be installed: it fails
  closed), and
  ``STEPFORK_SEAL`` says what is allowed (the sessions' ``allow_hosts`` and the addresses of the allowed
  names, their ``allow_commands``) and where to report. The child then refuses, with an audit hook, every
  connection, datagram and DNS query the seal would refuse (``PermissionError``, as a firewall would) and
  every child of its own the seal would refuse, and appends each refusal to the report file; the session
  reads it when it ends, and each one is its divergence ("a child process started during the replay").
  The child's own sitecustomize, if it has one, still runs. A ``subprocess`` child given an ``env=`` of its
  own gets the seal's two variables added to a copy of it (:func:`popen_hook`), as the agent's mapping is
  left as it was.
- **Other children are refused** (:func:`check_start`, ``ChildProcessRefusedError``, code
  ``child_process_refused``, the session's divergence): a program that is not Python (``curl``, a shell:
  ``os.system`` runs one) could reach anything, and a Python started with ``-I``, ``-E`` or ``-S``, or
  through ``os.exec*``/``os.posix_spawn`` with an environment that drops the seal, cannot be sealed. A
  shell running one simple command (``sh -c "curl -s URL"``) is judged as that command, ``env ... CMD`` as
  ``CMD``, and a script as its ``#!`` interpreter running it; what is Python is read from the program's
  file, not its name. A child whose environment changes the loader's variables (``LD_PRELOAD``...) from
  what this process had when the seal started is refused whatever it is (:func:`carry` keeps them).
  The replay's ``allow_commands`` (``--allow-command NAME``) let a program start unsealed: the report says so
  (``Network  sealed (child processes not sealed: 1 started (curl))``) instead of a bare "sealed".
  Programs that only read the machine (:data:`LOCAL_PROGRAMS`: ``uname``, ``ldconfig -p``...) start
  freely in their read-only forms (``ip netns exec NAME CMD`` is judged as ``CMD``).

**The report files** (``stepfork-seal-<random>-<pid>.log`` in the temporary folder) live only while a
session may still read them, and the process that reads one removes it; no process relies on its exit
handlers, which a forked worker ending with ``os._exit`` (``multiprocessing``, ``stepfork check``) never
runs:

- a file is made by the process its children report to, just before a child that reports starts
  (:func:`check_start`), and only there: a child *forked during* a session reports to the replaying process
  (its environment, and the seal it gives a child an ``env=`` of its own, name that process's file:
  :func:`_after_fork_in_child`), so it makes that file when missing, never one of its own (which nobody
  would read, and where its children's refusals were lost), and tells it of a program ``allow_commands``
  let it start (``{"allowed": program}``), as a sealed Python child does;
- the session reads its process's file when it ends (:func:`refusals`) by moving it aside, reading it
  whole and removing it, empty or not: each session's end leaves no file (a ``check`` worker's included,
  or any process that ends with ``os._exit`` after its session), and the next child started under a seal
  makes a new one;
- a line a child still running writes after that makes the file again; the exit handler removes it when
  the process exits normally. What still leaks is a file made for a child that outlives the process's last
  session (or a process killed while its session runs) in a process ending with ``os._exit``. Files are
  not swept by their pid: a pid that looks gone may be a live process of another pid namespace sharing the
  temporary folder, whose refusals would then be lost (a live call read as MATCHED).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from stepfork.replay._seal_commands import ALLOWED, LOCAL, SEALED, child_refusal
from stepfork.replay._seal_environment import ENV, SITE, carries_seal, keep_loader_baseline
from stepfork.replay._seal_local_programs import LOCAL_PROGRAMS

__all__ = ["ENV", "LOCAL_PROGRAMS", "SITE", "NetworkSealWarning"]


class NetworkSealWarning(UserWarning):
    """A replay passed, but the network seal could not cover all of it (``child processes not sealed: 1
    started (curl)``, a command ``allow_commands`` let run), or a thread it started was refused after its
    verdict: warned by an exported test (``run_regression_case``) and by the session, shown in pytest's
    summary."""


_saved: dict[str, str | None] | None = None
"""The environment's ``PYTHONPATH`` and :data:`ENV` before :func:`carry` changed them (None: unchanged)."""
_report: str | None = None
"""The report files' path, ``{ppid}`` in it standing for the pid of the process a child reports to
(the one that started it: each ``stepfork check`` worker, forked from one zygote, reads its own)."""
_reporting_to: str | None = None
"""In a child forked during a session: the replaying process's report file, where this process's own
children report (:func:`_after_fork_in_child`); None where they report to this process."""
_read: dict[int, int] = {}
"""How far this process read its report file in place, by pid (a forked worker starts at 0): where it
could not be moved aside (:func:`refusals`)."""
_reading = threading.Lock()
_values: dict[tuple[str, frozenset[tuple[str, int | None]], tuple[str, ...]], str] = {}
"""The JSON of each seal seen (:func:`seal_value`)."""


def seal_value(mode: str, allowed: Iterable[tuple[str, int | None]], commands: Iterable[str] = ()) -> str:
    """The :data:`ENV` value that carries a seal to a child: JSON with ``mode``, ``allowed`` (``[host,
    port or null]`` pairs), ``commands`` (``allow_commands``) and ``report`` (the report files' path)."""
    global _report
    if _report is None:  # one per process tree, kept between sessions
        _report = _report_template()
    key = (mode, frozenset(allowed), tuple(sorted(set(commands))))
    value = _values.get(key)
    if value is None:
        pairs = sorted(key[1], key=lambda pair: (pair[0], pair[1] or 0))
        report = _reporting_to or _report
        settings = {"mode": mode, "allowed": pairs, "commands": list(key[2]), "report": report}
        value = _values[key] = json.dumps(settings)
    return value


def carry(mode: str, allowed: Iterable[tuple[str, int | None]], commands: Iterable[str] = ()) -> None:
    """Make the process's environment carry the seal to Python children (module docstring): ``allowed``
    are ``(host, port or None)`` pairs, normalized; ``commands`` the programs allowed to start. Called
    whenever the seals change; :func:`release` gives the environment back."""
    global _saved
    value = seal_value(mode, allowed, commands)
    if _saved is None:  # the seal starts: the loader's variables children may inherit, not change
        keep_loader_baseline()
        _saved = {"PYTHONPATH": os.environ.get("PYTHONPATH"), ENV: os.environ.get(ENV)}
    before = _saved["PYTHONPATH"]
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


def with_seal(env: Any, value: str) -> Any:
    """``env`` (a child's environment mapping, or None for this process's) carrying the seal ``value``: as
    given when it already does, else a new dict with :data:`ENV` set and :data:`SITE` first on
    ``PYTHONPATH`` (bytes keys and values for a mapping with bytes keys)."""
    base: Any = os.environ if env is None else env
    try:
        current = base.get(ENV)
    except (AttributeError, TypeError):
        current = None
    if current == value and carries_seal(base):
        return env
    try:
        copy = dict(base)
    except (TypeError, ValueError):
        return env  # not a mapping: Popen refuses it itself
    if any(isinstance(key, bytes) for key in copy):
        path = os.fsdecode(copy.get(b"PYTHONPATH") or b"")
        copy[ENV.encode()] = value.encode()
        copy[b"PYTHONPATH"] = os.fsencode(SITE if not path else SITE + os.pathsep + path)
        return copy
    path = str(copy.get("PYTHONPATH") or "")
    entries = path.split(os.pathsep) if path else []
    copy[ENV] = value
    copy["PYTHONPATH"] = os.pathsep.join([SITE, *[entry for entry in entries if entry != SITE]])
    return copy


_ENV_POSITION = 9
"""Where ``env`` is among ``subprocess.Popen``'s positional parameters after ``args`` (3.11 to 3.13)."""


def popen_hook(value_of: Callable[[], str | None], original: MutableMapping[str, Any]) -> Callable[..., None]:
    """The wrapper of ``subprocess.Popen.__init__`` while sealed: a child given an ``env=`` of its own (or
    started by a thread an ended session sealed, :mod:`stepfork.replay.network_threads`) gets a copy of
    that environment carrying the seal ``value_of()`` names (None: no seal in force here)
    (:func:`with_seal`), then ``original["Popen.__init__"]`` runs."""

    def init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        value = value_of()
        if value is not None:
            if len(rest) > _ENV_POSITION:
                env = with_seal(rest[_ENV_POSITION], value)
                rest = (*rest[:_ENV_POSITION], env, *rest[_ENV_POSITION + 1 :])
            else:
                kwargs["env"] = with_seal(kwargs.get("env"), value)
        original["Popen.__init__"](self, args, *rest, **kwargs)

    return init


def _after_fork_in_child() -> None:
    """A process forked while sealed keeps the sealed environment, whose report path names the process a
    child reports to by its parent's pid: a ``stepfork check`` worker, forked between sessions from its
    zygote, so reads what its own children report, with no change to its environment (the worker compares
    it with the zygote's after each replay). Forked by a replay (the agent's ``os.fork`` while a session
    is active), its Python children report to the replaying process instead, which reads them."""
    global _reporting_to
    if _report is None or os.environ.get(ENV) is None:
        return
    network = _seal_module()
    if network is None or not any(seal.session is not None for seal in network._seals):
        _reporting_to = None
        _values.clear()
        return
    # a child forked by a forked child still reports to the replaying process, the one that reads
    _reporting_to = _reporting_to or _report.replace("{ppid}", str(os.getppid()))
    _values.clear()  # the seal values made so far name the parent's template: its children say this one
    with contextlib.suppress(ValueError, KeyError):
        settings = json.loads(os.environ[ENV])
        os.environ[ENV] = json.dumps({**settings, "report": _reporting_to})


def _seal_module() -> Any:
    """The seal's module (:mod:`stepfork.replay.network`) when it is loaded (it is whenever a seal exists),
    else None: looked up, not imported, as it imports this module (no import cycle)."""
    return sys.modules.get("stepfork.replay.network")


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _report_template() -> str:
    """The report files' path (:data:`_report`): in the temporary folder, a name no one can guess (the
    children append to it, so it must not be a link planted in advance). A process makes its own (empty,
    private) when it first starts a child under the seal, so that a sealed grandchild started through a
    program the seal let run (an allowed shell) finds the process to report to by walking up its parents;
    a process removes its own when it exits."""
    import secrets

    return os.path.join(tempfile.gettempdir(), f"stepfork-seal-{secrets.token_hex(8)}-{{ppid}}.log")


def _own_report(create: bool = False) -> str | None:
    """This process's report file (its children write there), or None before any seal; ``create`` makes
    it when it does not exist yet (:func:`_make`)."""
    if _report is None:
        return None
    pid = os.getpid()
    path = _report.replace("{ppid}", str(pid))
    if pid not in _read:
        _read[pid] = 0
        atexit.register(_remove_report, path, pid)
    if create:
        _make(path)
    return path


def _make(path: str) -> None:
    """Make the report file ``path`` when it does not exist yet: empty, private to this user, never
    through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(OSError):
        os.close(os.open(path, flags, 0o600))


def _tell(path: str, line: dict[str, str]) -> None:
    """Append ``line`` (one JSON object) to the report file ``path``, as a sealed child does."""
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(OSError):
        handle = os.open(path, flags)
        try:
            os.write(handle, (json.dumps({k: v[:200] for k, v in line.items()}) + "\n").encode())
        finally:
            os.close(handle)


def _remove_report(path: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child's exit leaves its parent's file alone
        with contextlib.suppress(OSError):
            os.unlink(path)


def parse_report_lines(data: bytes) -> list[Any]:
    """The refusals in ``data`` (lines a child wrote): each line's JSON object (``{"refused": "network",
    "where", "what"}``, ``{"refused": "command", "program", "reason"}``), or the line itself when it is
    not JSON."""
    found: list[Any] = []
    for line in data.decode("utf-8", "replace").splitlines():
        if not line:
            continue
        try:
            found.append(json.loads(line))
        except ValueError:
            found.append(line)
    return found


def refusals() -> list[Any]:
    """Each refusal sealed children reported since the last call (:func:`parse_report_lines`); the report
    file, when there is one (empty or not), is moved aside, read whole and removed (module docstring), so
    none is left after the session that reads it. Where it cannot be moved (a child holds it open on
    Windows) it is read in place from where the last read stopped, a line still being written left for
    next time."""
    path = _own_report()
    if path is None:
        return []
    pid = os.getpid()
    with _reading:
        if not os.path.lexists(path):  # no child reported (or none started): nothing to read or remove
            return []
        aside = f"{path}.reading"
        try:
            os.replace(path, aside)
        except FileNotFoundError:
            return []
        except OSError:
            return _read_in_place(path, pid)
        try:
            with open(aside, "rb") as handle:
                handle.seek(_read[pid])  # what an in-place read already took
                data = handle.read()
        except OSError:
            data = b""
        finally:
            _read[pid] = 0
            with contextlib.suppress(OSError):
                os.unlink(aside)
    return parse_report_lines(data)  # a line cut short is reported as it is: a refusal is never dropped


def _read_in_place(path: str, pid: int) -> list[Any]:
    """The complete lines of ``path`` after what this process read of it (:data:`_read`)."""
    try:
        if os.stat(path).st_size <= _read[pid]:  # nothing new: no open, no read
            return []
        with open(path, "rb") as handle:
            handle.seek(_read[pid])
            data = handle.read()
    except OSError:
        return []
    complete = data.rfind(b"\n") + 1  # a line a child is still writing is read next time
    _read[pid] += complete
    return parse_report_lines(data[:complete])


_last_popen: tuple[int, int] | None = None  # (thread, id of argv): its os.posix_spawn is the same child


def check_start(event: str, args: tuple[Any, ...]) -> None:
    """An audit event that starts a program (``subprocess.Popen``, ``os.system``, ``os.exec``,
    ``os.posix_spawn``, ``os.spawn``) while sealed: refuse the child when the seal cannot reach it
    (``ChildProcessRefusedError``, recorded as the divergence), note it when ``allow_commands`` let it run
    unsealed, let a sealed Python child and a local program start (module docstring)."""
    global _last_popen
    if event == "subprocess.Popen":  # (executable, args, cwd, env)
        executable, argv, env = args[0], args[1], args[3] if len(args) > 3 else None
        _last_popen = (threading.get_ident(), id(argv))
    elif event == "os.system":  # (command,): a shell
        executable, argv, env = "sh", ["sh", "-c", os.fsdecode(args[0]) if args else ""], None
    else:  # os.exec / os.posix_spawn (path, argv, env); os.spawn (mode, path, args, env)
        rest = args[1:] if event == "os.spawn" else args
        executable, argv = rest[0] if rest else None, rest[1] if len(rest) > 1 else ()
        env = rest[2] if len(rest) > 2 else None
        if event == "os.posix_spawn" and _last_popen == (threading.get_ident(), id(argv)):
            return  # subprocess.Popen's own spawn, judged already
    network = _seal_module()
    if network is None:
        return
    seals = network._seals_here()
    if not seals:
        return
    commands = frozenset(command for seal in seals for command in seal.commands)
    program, line, verdict = child_refusal(executable, argv, env, commands)
    if verdict == LOCAL:
        return
    if verdict in (SEALED, ALLOWED):
        elsewhere = _reporting_to  # forked during a session: the replaying process's file
        if elsewhere is None:
            _own_report(create=True)  # where a sealed descendant reports, found by walking up its parents
        else:
            _make(elsewhere)
        if verdict == ALLOWED:
            seal = network._current_seal()[0]
            note = getattr(getattr(seal, "session", None), "note_unsealed_child", None)
            if note is not None:
                note(program)
            if elsewhere is not None:  # the session that counts it is the replaying process's
                _tell(elsewhere, {"allowed": program})
        return
    network._refuse_child(program, line, verdict)
