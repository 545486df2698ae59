"""Stepfork's network seal, entry of a Python child process of a sealed replay (docs/replay.md, "The
seal's rules"; stepfork.replay.network_children).

A replay that seals the network puts this folder first on ``PYTHONPATH`` and the seal in ``STEPFORK_SEAL``,
so every Python interpreter it starts runs this file at start-up, before the child's own code: whatever
that interpreter is (Python 2.7, 3.7, a future one), so this file stays valid Python 2.7 and 3.x and does
little: it reads the seal, resolves the report file, loads the real seal (``stepfork/replay/
_seal_child.py``, by its path: Python 3.8 and later, which have audit hooks) and installs it. It FAILS
CLOSED: when the seal cannot be installed (an interpreter without audit hooks, a seal that does not load or
raises), the child is refused before it runs anything: one line on stderr, the refusal appended to the
report file (the replay reads it as its ``child_process_refused`` divergence), exit status 126 (the
shell's "cannot execute"). Only an ``allow_commands`` entry naming this interpreter lets it run on,
unsealed, as the replay already counted it. Then the next ``sitecustomize`` on ``sys.path`` (the child's
own) runs, as it would have without this one.
"""

import os
import sys

REFUSED_STATUS = 126
"""The exit status of a child refused here: the shell's "found but cannot execute"."""
_TEXT = (str, type(b"".decode("ascii")))  # Python 2.7: unicode, which its json gives (not str)


class _Unsealable(Exception):
    """This interpreter cannot hold the seal (its message is the reason, as the report shows it)."""


def _seal():  # type: () -> None
    """Install the seal ``STEPFORK_SEAL`` describes, or refuse this process (module docstring)."""
    value = os.environ.get("STEPFORK_SEAL")
    if not value:
        return  # no seal travels with this environment: nothing to install
    settings = {}  # type: dict[str, object]
    try:
        import json

        loaded = json.loads(value)
        if not isinstance(loaded, dict):
            raise _Unsealable("STEPFORK_SEAL is not a JSON object")
        settings = loaded
        replaying = _resolve(settings)
        if sys.version_info < (3, 8) or not hasattr(sys, "addaudithook"):
            version = "%d.%d" % sys.version_info[:2]
            raise _Unsealable("Python %s has no audit hooks (PEP 578: Python 3.8+)" % version)
        import importlib.util

        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.path.join(here, "_seal_child.py")
        spec = importlib.util.spec_from_file_location("_stepfork_seal_child", path)
        if spec is None or spec.loader is None:
            raise _Unsealable("the seal is missing from " + here)
        seal = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(seal)
        seal.install(settings, replaying)
    except BaseException as error:  # whatever failed, nothing runs unsealed
        if _allowed(settings):
            return
        why = str(error) if isinstance(error, _Unsealable) else "%s: %s" % (type(error).__name__, error)
        _refuse(settings, why)


def _resolve(settings):  # type: (dict[str, object]) -> int
    """Resolve ``settings``' report file for this process (``{ppid}``: the process it reports to, which
    this process's own children report to as well, so ``STEPFORK_SEAL`` is rewritten) and return the pid
    of the process the replay runs in."""
    import json

    report = settings.get("report")
    replaying = settings.get("replaying")
    if isinstance(report, _TEXT) and "{ppid}" in report:
        replaying = _reporter(report)
        settings["report"] = report.replace("{ppid}", str(replaying))
        settings["replaying"] = replaying
        os.environ["STEPFORK_SEAL"] = json.dumps(settings)
    return replaying if isinstance(replaying, int) and not isinstance(replaying, bool) else os.getppid()


def _reporter(template):  # type: (str) -> int
    """The pid of the process this one reports to: the nearest ancestor with a report file of its own (the
    replaying process makes one when it starts a child: a shell it let run may stand between), else the
    parent."""
    pid = os.getppid()
    for _ in range(32):
        if pid <= 1:
            break
        if os.path.exists(template.replace("{ppid}", str(pid))):
            return pid
        try:
            with open("/proc/%d/stat" % pid, "rb") as handle:
                data = handle.read()
            pid = int(data[data.rindex(b")") + 2 :].split()[1])  # "pid (name) state ppid ..."
        except (OSError, IOError, ValueError, IndexError):  # IOError: Python 2.7's
            break
    return os.getppid()


def _allowed(settings):  # type: (dict[str, object]) -> bool
    """True when the seal's ``allow_commands`` name this interpreter (its file's name, or its path): the
    replay let it start unsealed and counted it on its report."""
    commands = settings.get("commands")
    executable = sys.executable or ""
    names = (os.path.basename(executable), os.path.normpath(executable))
    if not isinstance(commands, list):
        return False
    entries = [str(entry) for entry in commands]
    return any((os.path.normpath(entry) if os.sep in entry else entry) in names for entry in entries)


def _refuse(settings, why):  # type: (dict[str, object], str) -> None
    """Refuse this process before it runs anything: report it (a ``{"refused": "command"}`` line, as the
    real seal writes), say it on stderr in one line, exit :data:`REFUSED_STATUS`."""
    program = os.path.basename(sys.executable or "") or "python"
    reason = "the seal cannot be installed in this Python (%s)" % why
    report = settings.get("report")
    if isinstance(report, _TEXT) and "{ppid}" not in report:
        try:
            import json

            line = json.dumps({"refused": "command", "program": program[:200], "reason": reason[:200]})
            with open(report, "a") as handle:
                handle.write(line + "\n")
        except Exception:  # noqa: S110  refused all the same: stderr and the exit status say it
            pass
    mode = settings.get("mode") or "frozen"
    sys.stderr.write(
        "child process refused during %s replay: %s was refused before it ran: %s (Stepfork)\n"
        % (mode, sys.executable or program, reason)
    )
    sys.stderr.flush()
    os._exit(REFUSED_STATUS)


def _chain():  # type: () -> None
    """Run the next ``sitecustomize`` on ``sys.path``, the one this child would have run."""
    if sys.version_info < (3, 4):
        return  # importlib.util: only an allowed Python 2.7 gets here, and it runs without
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or os.curdir) == here:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = module
            spec.loader.exec_module(module)
            return


_seal()
_chain()
