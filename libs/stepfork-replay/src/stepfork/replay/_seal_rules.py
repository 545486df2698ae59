"""The network seal's rules, standard library only (docs/replay.md, "The seal's rules"): hosts, Unix
sockets (:func:`unix_name`, :func:`is_own_unix`) and child processes (:func:`child_refusal`).

Shared by the seal of a replaying process (:mod:`stepfork.replay.network`) and the seal a Python child
process of a replay puts on itself at start-up (``_seal_site/sitecustomize.py``), which loads this file by
its path: a child must not import the ``stepfork.replay`` package (its pydantic models, a second of start-up
in every ``subprocess.run([sys.executable, ...])``), and may run on an interpreter without it.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import threading

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing in every sealed child's start-up
if TYPE_CHECKING:
    from typing import Any, TypeAlias

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})

Allowance: TypeAlias = "tuple[str, int | None]"  # a string: a sealed Python 3.8 child loads this file
"""``(host, port)``: a normalized host name or address and one port, or None for every port."""


def normal_host(host: str) -> str:
    """A host as the seal compares it: lower case, no trailing dot, no IPv6 zone or brackets; an address in
    its compressed form, an IPv4-mapped IPv6 address as the IPv4 address."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped if mapped is not None else address)


def is_address(host: str) -> bool:
    """True when ``host`` is an IPv4 or IPv6 address (with or without an IPv6 zone)."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def is_local(host: str) -> bool:
    """True for a local host name (``localhost``) or a loopback or unspecified address: resolving it sends
    nothing (the connection that follows is checked like any other)."""
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(normal_host(host))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


_own_names: frozenset[str] | None = None


def is_own_name(host: str) -> bool:
    """True for this machine's own host name (``socket.gethostname()``, with or without its domain): what
    ``socket.getfqdn()`` looks up, answered from ``/etc/hosts`` (a name the machine knows itself by)."""
    global _own_names
    if _own_names is None:
        try:
            name = normal_host(socket.gethostname())
        except OSError:
            name = ""
        _own_names = frozenset(filter(None, (name, name.split(".", 1)[0])))
    return host in _own_names


def port_of(value: Any) -> int | None:
    """A port as given to ``getaddrinfo``/``connect`` (int, digits, bytes), or None (a service name)."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def host_of(address: Any) -> tuple[str, int | None] | None:
    """``(normalized host, port)`` of an AF_INET/AF_INET6 address tuple; None for the rest."""
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], (str, bytes)):
        host = address[0].decode("ascii", "replace") if isinstance(address[0], bytes) else address[0]
        return normal_host(host), port_of(address[1])
    return None


def allows(pools: tuple[Any, ...], host: str, port: int | None) -> bool:
    """True when one of ``pools`` (sets of :data:`Allowance`) lets ``host`` on ``port`` through."""
    return any((host, None) in pool or (port is not None and (host, port) in pool) for pool in pools)


def format_host(host: str, port: Any = None) -> str:
    """``host:port`` as ``--allow-host`` takes it (an IPv6 address in brackets); ``host`` alone without a
    port (an IPv6 address then bare, as ``parse_allowed_host`` reads it)."""
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


vetted = threading.local()
"""``vetted.name``: set by the seal's own ``getaddrinfo``/``getnameinfo`` hooks while they call the C
function they already checked (with the flags the audit event does not carry), so the audit hook
(:mod:`stepfork.replay.network_audit`) does not check it again. Here, a module both import, so neither
imports the other for it."""


# -- Unix sockets ---------------------------------------------------------------------------------------

LOG_SOCKETS = frozenset(
    {"/dev/log", "/run/systemd/journal/socket", "/run/systemd/journal/dev-log"}
    | {"/var/run/syslog", "/var/run/log"}  # macOS, FreeBSD
)
"""The system log's sockets (``logging.handlers.SysLogHandler``, journald): where the agent's log lines go,
never where its input comes from; always open."""


def unix_name(address: Any) -> str | None:
    """The name of an ``AF_UNIX`` address as the seal compares it: a path as given (``str``, ``bytes`` or
    ``os.PathLike``), an abstract name (Linux: a leading NUL) as ``@name``, as ``ss`` and
    ``/proc/net/unix`` show it; None for an unnamed address (``''``: an unbound peer, a socketpair's) and
    for anything else."""
    if isinstance(address, (bytes, bytearray, os.PathLike)):
        try:
            address = os.fsdecode(os.fspath(address) if isinstance(address, os.PathLike) else bytes(address))
        except (TypeError, ValueError):
            return None
    if not isinstance(address, str) or not address:
        return None
    return "@" + address[1:] if address[0] == "\0" else address


def is_own_unix(name: str, also: tuple[int, ...] = ()) -> bool:
    """True for a Unix socket through which the process talks to itself or to ``multiprocessing``'s own
    processes, not to another program: the system log (:data:`LOG_SOCKETS`), a socket in a
    ``multiprocessing`` folder (``pymp-*``, where it names the listeners of the manager and forkserver
    processes it starts), or one this process holds bound itself (a listener it bound, read from Linux's
    ``/proc``; elsewhere only the first two), or one of the processes ``also`` names does (a sealed child
    names the replaying process: its tools talk back to it). A socket another process holds (a database's,
    Docker's, a server a test started) is not the process's own, whoever started that process."""
    if name in LOG_SOCKETS:
        return True
    folder = "" if name.startswith("@") else os.path.basename(os.path.dirname(os.path.abspath(name)))
    if folder.startswith("pymp-"):
        return True
    return _held_here(name, ("self", *also))


def _held_here(name: str, holders: tuple[int | str, ...]) -> bool:
    """True when a socket bound to ``name`` is held by one of ``holders`` (``"self"`` or pids; Linux: the
    inodes ``/proc/net/unix`` lists for the name among the descriptors of ``/proc/PID/fd``); False where
    ``/proc`` cannot be read."""
    names = {name, os.path.abspath(name)} if not name.startswith("@") else {name}
    inodes: set[str] = set()
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as table:
            next(table, None)  # the header
            for line in table:
                fields = line.rstrip("\n").split(None, 7)  # Num RefCount Protocol Flags Type St Inode Path
                if len(fields) == 8 and fields[7] in names:
                    inodes.add(f"socket:[{fields[6]}]")
    except OSError:
        return False
    for holder in holders if inodes else ():
        try:
            descriptors = os.listdir(f"/proc/{holder}/fd")
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(f"/proc/{holder}/fd/{descriptor}") in inodes:
                    return True
            except OSError:
                continue
    return False


# -- child processes ------------------------------------------------------------------------------------

ENV = "STEPFORK_SEAL"
"""The environment variable a sealed child reads its seal from (JSON: ``mode``, ``allowed``, ``commands``,
``report``)."""
SITE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_seal_site")
"""The folder put first on a child's ``PYTHONPATH``: it holds only ``sitecustomize.py``."""

LOCAL_PROGRAMS = frozenset(
    {"uname", "sw_vers", "getconf", "nproc", "lsb_release", "hostname", "id", "whoami", "arch"}
    | {"ldconfig", "ld", "gcc", "cc", "objdump"}
    | {"ifconfig", "ip", "arp", "netstat", "lanscan"}
)
"""Programs that only read this machine, started by the standard library and SDKs themselves
(``platform.processor()`` runs ``uname -p`` in every OpenAI SDK request's headers,
``ctypes.util.find_library`` runs ``ldconfig -p``/``gcc``/``ld``/``objdump``, ``uuid.getnode()`` may run
``ip link``/``ifconfig``/``arp -an``/``netstat -ian``): they start while sealed, and are not counted, in
their read-only forms only (:func:`local_form`). Any other form is judged as any other program (refused:
``ip link set``, ``hostname NAME``, ``ldconfig`` rebuilding its cache, ``gcc -wrapper PROGRAM``, ``arch
-x86_64 PROGRAM``), and ``ip netns exec NAME CMD``/``ip vrf exec NAME CMD`` as ``CMD`` (docs/decisions.md,
"The seal's local programs")."""

_ANY_ARGUMENTS = frozenset({"uname", "sw_vers", "getconf", "nproc", "lsb_release", "id", "whoami", "lanscan"})
"""Local programs that only read, whatever their arguments."""
_HOSTNAME_READS = frozenset(
    {"-s", "--short", "-f", "--fqdn", "--long", "-i", "--ip-address", "-I", "--all-ip-addresses"}
    | {"-d", "--domain", "-a", "--alias", "-y", "--yp", "--nis", "-V", "--version", "-h", "--help"}
)
"""``hostname``'s options that print (``-A`` looks every address up in the DNS: not here); a name or
``-F FILE``/``-b`` sets the host name."""
_GCC_READS = frozenset(
    {"-Wl,-t", "-v", "--version", "-dumpversion", "-dumpfullversion", "-dumpmachine", "-print-search-dirs"}
    | {"-print-multiarch", "-print-libgcc-file-name", "-print-sysroot", "-m32", "-m64"}
)
"""``gcc``/``cc`` options of ``ctypes.util``'s probe (``-Wl,-t -o FILE -lNAME``) and the queries that print
(``-wrapper``, ``-B``, ``-fplugin``, ``-specs``, ``@FILE`` can run or load any program: not here)."""
_OBJDUMP_READS = frozenset(
    {"-p", "--private-headers", "-f", "--file-headers", "-h", "--section-headers", "--headers", "-x"}
    | {"--all-headers", "-t", "--syms", "-T", "--dynamic-syms", "-r", "--reloc", "-R", "--dynamic-reloc"}
    | {"-a", "--archive-headers", "-w", "--wide", "-v", "--version"}
)
"""``objdump``'s options that print headers and symbols (``ctypes.util``: ``-p -j .dynamic FILE``); not
those reading debug information (``-g``, ``-W``, ``-S``, ``-l``), which may fetch it from a debuginfod
server."""
_IP_OPTIONS = frozenset(
    {"-4", "-6", "-0", "-s", "-stats", "-statistics", "-d", "-details", "-h", "-human", "-human-readable"}
    | {"-o", "-oneline", "-br", "-brief", "-j", "-json", "-p", "-pretty", "-c", "-color", "-t", "-timestamp"}
    | {"-a", "-all", "-N", "-Numeric", "-iec"}
)
"""``ip``'s options that take no value and change nothing (``-b``/``-batch FILE`` runs the commands a file
holds, ``-force``: not here)."""
_IP_VALUED = frozenset({"-f", "-family", "-n", "-netns", "-l", "-loops", "-rc", "-rcvbuf"})
"""``ip``'s options that take the next word as their value."""
_IP_READS = frozenset({"show", "list", "ls", "lst", "get"})
"""``ip OBJECT`` commands that print (none, as ``ip link``, prints too)."""


def local_form(program: str, arguments: list[str]) -> tuple[bool, list[str] | None]:
    """Judge the command line of a :data:`LOCAL_PROGRAMS` program.

    Args:
        program: the program's file name (``ip``).
        arguments: its arguments (after the program's own word).

    Returns:
        ``(local, inner)``: ``local`` True when the command only reads this machine (started freely);
        ``inner``: the command ``ip netns exec NAME CMD`` or ``ip vrf exec NAME CMD`` runs (``CMD``'s words,
        judged instead of ``ip``), else None. ``(False, None)``: judged as any other program.
    """
    if program in _ANY_ARGUMENTS:
        return True, None
    options = [word for word in arguments if word.startswith("-")]
    if program == "arch":  # macOS's `arch -x86_64 CMD` runs CMD; alone, it prints
        return not arguments, None
    if program == "hostname":
        return all(word in _HOSTNAME_READS for word in arguments), None
    if program == "ldconfig":  # alone, it rebuilds the cache; -p (Linux), -r (BSD) print it
        return arguments in (["-p"], ["--print-cache"], ["-r"]), None
    if program == "ld":  # its plugins are programs; a response file (@FILE) may name one
        bad = ("-plugin", "--plugin", "@")
        return not any(word.startswith(bad) for word in arguments), None
    if program in ("gcc", "cc"):
        return _gcc_reads(arguments), None
    if program == "objdump":
        return _objdump_reads(arguments), None
    if program == "ifconfig":  # `ifconfig [-a]` or `ifconfig IFACE` print; more words configure
        return (len(options) == len(arguments) and set(options) <= {"-a", "-v", "-av", "-s", "-l"}) or (
            len(arguments) == 1 and not options
        ), None
    if program in ("arp", "netstat"):  # options only, numeric (-n: no reverse DNS query), or netstat -i/-ia
        letters = "".join(word[1:] for word in arguments)
        if len(options) != len(arguments) or any(word.startswith("--") for word in arguments):
            return False, None
        if program == "arp":
            return set(letters) <= set("anev") and "n" in letters, None
        numeric = "n" in letters or ("i" in letters and set(letters) <= set("ia"))  # -i: no addresses
        return set(letters) <= set("ianrsetuwl46") and numeric, None
    if program == "ip":
        return _ip_form(arguments)
    return False, None


def _gcc_reads(arguments: list[str]) -> bool:
    """True for ``ctypes.util``'s probe (``-Wl,-t -o FILE -lNAME``, ``-L DIR``) and printing queries."""
    remaining = iter(arguments)
    for word in remaining:
        if word in ("-o", "-L"):
            if next(remaining, "-").startswith(("-", "@")):
                return False
        elif not (word in _GCC_READS or word.startswith(("-l", "-L", "-print-file-name="))):
            return False
    return True


def _objdump_reads(arguments: list[str]) -> bool:
    """True for ``objdump`` printing headers or symbols (:data:`_OBJDUMP_READS`, ``-j SECTION``) of files."""
    remaining = iter(arguments)
    for word in remaining:
        if word == "-j":
            if next(remaining, "-").startswith("-"):
                return False
        elif word.startswith("@") or (
            word.startswith("-") and word not in _OBJDUMP_READS and not word.startswith("--section=")
        ):
            return False
    return True


def _ip_form(arguments: list[str]) -> tuple[bool, list[str] | None]:
    """``ip``'s command line judged (:func:`local_form`): ``ip [OPTIONS] OBJECT [show|list|get ...]``
    prints; ``ip [OPTIONS] netns|vrf exec NAME CMD...`` runs ``CMD`` (``ip -all netns exec CMD...``: no
    NAME); anything else (``set``, ``add``, ``del``, an abbreviated command, ``-batch FILE``) is not local."""
    remaining = list(arguments)
    every = False
    while remaining and remaining[0].startswith("-"):
        option = "-" + remaining.pop(0).lstrip("-")  # ip reads --json as -json
        if option in _IP_VALUED:
            if not remaining:
                return False, None
            remaining.pop(0)
        elif option.split("=", 1)[0] not in _IP_OPTIONS:  # -color=auto
            return False, None
        every = every or option in ("-a", "-all")
    if not remaining:
        return True, None  # prints its usage
    if remaining[0] in ("netns", "vrf") and len(remaining) > 1 and remaining[1] == "exec":
        inner = remaining[2:] if every else remaining[3:]
        return False, inner or None
    return len(remaining) == 1 or remaining[1] in _IP_READS, None


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash"})
"""Shells whose ``-c COMMAND`` is judged as the program it runs when ``COMMAND`` is a simple command."""
SHELL_BUILTINS = frozenset({"exit", "true", "false", ":", "echo", "printf", "test", "[", "pwd", "cd"})
"""A shell's own commands that run no program and reach nothing (``sh -c "exit 0"``): started freely."""

_PYTHON = r"python(\d+(\.\d+)*)?[a-z]?(\.exe)?"
"""A Python interpreter's file name (``python``, ``python3.11``, ``python3.13t``, ``python.exe``)."""
_SPECIAL = r"[;&|<>()$`\\\n\r*?\[\]{}~!#]"
"""What makes a shell command more than one program with its arguments (lists, pipes, redirections,
expansions, globs, escapes). Both patterns are compiled on first use: ``re`` is not imported at the
start-up of every sealed child."""

NOT_READ_ONLY = (
    "only its forms that read this machine start while sealed, and this one could change the machine, "
    "start another program or reach the network"
)
"""The reason a program of :data:`LOCAL_PROGRAMS` is refused in any other form (:func:`local_form`)."""
SEALED = "sealed"
""":func:`child_refusal`'s verdict on a Python child that inherits the seal."""
LOCAL = "local"
"""... on a program of :data:`LOCAL_PROGRAMS` (started, not counted)."""
ALLOWED = "allowed"
"""... on a program the replay's ``allow_commands`` name (started unsealed, and counted on the report)."""


def words(argv: Any) -> list[str]:
    """A command line as a list of words: ``argv`` as a sequence, or a string split as a shell would."""
    if isinstance(argv, (str, bytes)):
        import shlex

        text = os.fsdecode(argv)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    try:
        return [os.fsdecode(word) for word in argv]
    except TypeError:
        return []


def _simple_command(line: str) -> list[str] | None:
    """The words of ``line`` when it is one program with its arguments, else None."""
    import re

    if re.search(_SPECIAL, line):
        return None
    import shlex

    try:
        found = shlex.split(line)
    except ValueError:
        return None
    return found if found and "=" not in found[0] else None


def _which(name: str, env: Any) -> str | None:
    """The file ``name`` runs as (a path as given; a bare name looked up on the child's ``PATH``)."""
    if os.sep in name or (os.altsep and os.altsep in name):
        return name
    entries = _variable(env, "PATH") if env is not None else None
    search = os.fsdecode(entries) if entries is not None else os.environ.get("PATH", os.defpath)
    for folder in search.split(os.pathsep):
        candidate = os.path.join(folder or os.curdir, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


_BINARY_MAGIC = (
    b"\x7fELF",  # Linux, BSD
    b"\xfe\xed\xfa\xce",
    b"\xce\xfa\xed\xfe",
    b"\xfe\xed\xfa\xcf",
    b"\xcf\xfa\xed\xfe",  # Mach-O
    b"\xca\xfe\xba\xbe",  # a macOS universal binary
    b"MZ",  # Windows
)
"""How a compiled program's file starts: such a file named like Python (:data:`_PYTHON`) is Python."""
_SHIM = r"^[ \t]*exec[ \t]+[\"']?(\S*/)?(pyenv|asdf)[\"']?[ \t]+exec[ \t]"
"""The line of a version manager's shim that hands over to the interpreter it picks (pyenv: ``exec
"/root/.pyenv/libexec/pyenv" exec "$program" "$@"``; asdf: ``exec asdf exec "python3" "$@"``)."""
_MAX_INTERPRETERS = 4
"""How many ``#!`` interpreters deep a script is followed (Linux stops at 4 too); deeper is refused."""

BINARY = "binary"
SCRIPT = "script"
SHIM = "shim"


def program_file(path: str, env: Any) -> tuple[str | None, list[str]]:
    """What the program ``path`` (as started, looked up on the ``PATH`` of ``env``) is, read from its file.

    Returns:
        ``(kind, interpreter)``: :data:`BINARY` (a compiled program: this interpreter's own file, an ELF,
        Mach-O or PE file), :data:`SHIM` (a pyenv/asdf shim named like Python, in a ``shims`` folder:
        judged as the Python it hands over to), :data:`SCRIPT` with the words of its ``#!`` line as Linux
        reads them (the interpreter, then the rest of the line as one word when there is one), or None
        (not found, unreadable, or another kind of file): the interpreter's words are empty but for a
        script.
    """
    found = _which(path, env)
    if found is None:
        return None, []
    try:
        if os.path.realpath(found) == os.path.realpath(sys.executable):
            return BINARY, []
        if not os.path.isfile(found):  # a FIFO or a device would block the read; exec refuses them anyway
            return None, []
        with open(found, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None, []
    if head.startswith(_BINARY_MAGIC):
        return BINARY, []
    if not head.startswith(b"#!"):
        return None, []
    if _is_shim(found, head):
        return SHIM, []
    first = head[2:256].split(b"\n", 1)[0].decode("utf-8", "replace").strip(" \t\r")
    interpreter, _, rest = first.replace("\t", " ").partition(" ")
    rest = rest.strip(" ")
    return SCRIPT, [interpreter, rest] if rest else [interpreter] if interpreter else []


def _is_shim(found: str, head: bytes) -> bool:
    """True for a version manager's shim named like Python (pyenv's, asdf's: a short shell script in a
    ``shims`` folder that hands over to the interpreter the manager picks, which then seals itself)."""
    import re

    if not re.fullmatch(_PYTHON, os.path.basename(found).lower()) or len(head) >= 4096:
        return False
    if os.path.basename(os.path.dirname(os.path.abspath(found))) != "shims":
        return False
    return re.search(_SHIM.encode(), head, re.MULTILINE) is not None


def is_python(path: str, env: Any = None) -> bool:
    """True when ``path`` (a program as started, on the child's ``PATH`` in ``env``) is a Python
    interpreter by its file: this interpreter's own file, a compiled program named like Python
    (``python3.11``), or a version manager's shim named so (:func:`program_file`). A script is not, whatever
    its name: :func:`child_refusal` judges it by its ``#!`` line."""
    import re

    kind, _ = program_file(path, os.environ if env is None else env)
    if kind == SHIM:
        return True
    if kind != BINARY:
        return False
    found = _which(path, os.environ if env is None else env) or path
    names = {os.path.basename(path), os.path.basename(os.path.realpath(found))}
    same = os.path.realpath(found) == os.path.realpath(sys.executable)
    return same or any(re.fullmatch(_PYTHON, name.lower()) for name in names)


_PYTHON_VALUED = "WX"
"""Python's short options whose value is the rest of the word or the next word (CPython's getopt)."""
_PYTHON_LONG_VALUED = frozenset({"--check-hash-based-pycs"})
"""Python's long options whose value is the next word."""


def unsealable_option(arguments: list[str]) -> str | None:
    """The first option of a Python command line (``arguments``: after the interpreter) that keeps the seal
    out: ``-I`` (isolated: no environment, no site), ``-E`` (no ``PYTHON*`` variables) or ``-S`` (no
    ``site``, so no ``sitecustomize``); None when there is none. Read as CPython reads its options
    (Python/getopt.c): flags combine (``-sI``), ``-W``/``-X`` take the rest of the word or the next word,
    ``--check-hash-based-pycs`` the next word, and the options end at ``-c``, ``-m``, ``-``, ``--`` or the
    script. (``-s`` leaves ``PYTHONPATH`` and ``site`` alone: the seal still runs.)"""
    remaining = iter(arguments)
    for word in remaining:
        if word in ("-", "--") or not word.startswith("-"):
            return None
        if word.startswith("--"):
            if word in _PYTHON_LONG_VALUED:
                next(remaining, None)
            continue
        flags = word[1:]
        for index, flag in enumerate(flags):
            if flag in "IES":
                return f"-{flag}"
            if flag in "cm":
                return None  # what follows is the code or the module
            if flag in _PYTHON_VALUED:
                if index == len(flags) - 1:
                    next(remaining, None)
                break
    return None


_ENV_SKIPPED = frozenset({"-v", "--debug"})
"""``env``'s options that change nothing about the program it runs."""


def env_form(arguments: list[str], env: Any) -> tuple[list[str], Any] | None:
    """The command ``env ARGUMENTS`` runs and the environment it runs it with (``env`` given: a mapping),
    as GNU and BSD ``env`` read them: ``-i``/``-``/``--ignore-environment`` (empty), ``-u NAME``/
    ``--unset=NAME``, ``NAME=VALUE``, ``-S STRING``/``--split-string=STRING`` (split into words, as a
    ``#!/usr/bin/env -S python3 -E`` line needs), ``-C DIR``/``--chdir=DIR``; None for anything else (no
    command, an option not read here, a split string with ``$`` or ``\\``): the seal refuses ``env`` then."""
    import shlex

    remaining = list(arguments)
    changed = dict(env) if env is not None else dict(os.environ)
    while remaining:
        word = remaining.pop(0)
        if word in ("-i", "-", "--ignore-environment"):
            changed = {}
        elif word in _ENV_SKIPPED:
            continue
        elif word in ("-u", "-C") or word.startswith(("-u", "--unset=", "-C", "--chdir=")):
            value = word.split("=", 1)[1] if "=" in word else word[2:] if len(word) > 2 else None
            if value is None:
                if not remaining:
                    return None
                value = remaining.pop(0)
            if word.startswith(("-u", "--unset=")):
                for key in (value, value.encode()):
                    changed.pop(key, None)
        elif word.startswith(("-S", "--split-string=")):
            text = word.split("=", 1)[1] if word.startswith("--") else word[2:]
            if not text and remaining:
                text = remaining.pop(0)
            if "$" in text or "\\" in text:
                return None
            try:
                remaining = shlex.split(text) + remaining
            except ValueError:
                return None
        elif word.startswith("-"):
            return None
        elif "=" in word:
            name, _, value = word.partition("=")
            bytes_keys = any(isinstance(key, bytes) for key in changed)
            changed[name.encode() if bytes_keys else name] = value.encode() if bytes_keys else value
        else:
            return [word, *remaining], changed
    return None


def carries_seal(env: Any) -> bool:
    """True when the environment ``env`` (a mapping, str or bytes keys) holds the seal: :data:`ENV` and
    :data:`SITE` on ``PYTHONPATH``."""
    entries = _variable(env, "PYTHONPATH") or ""
    return bool(_variable(env, ENV)) and SITE in os.fsdecode(entries).split(os.pathsep)


def _variable(env: Any, name: str) -> str | bytes | None:
    """``env[name]`` of an environment mapping whose keys are ``str`` or ``bytes`` (``os.environb``), or
    None."""
    for key in (name, name.encode()):
        try:
            value = env.get(key)
        except (AttributeError, TypeError):  # os.environ refuses bytes keys
            continue
        if isinstance(value, (str, bytes)):
            return value
    return None


def allows_command(commands: Any, program: str, path: str) -> bool:
    """True when ``commands`` (``allow_commands`` entries: a program's name, or a path with a ``/``) let
    ``program`` (its name) started as ``path`` run."""
    for entry in commands:
        if os.sep in entry or (os.altsep and os.altsep in entry):
            if os.path.normpath(entry) == os.path.normpath(path):
                return True
        elif entry == program:
            return True
    return False


LOADER_VARIABLES = (
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",  # glibc's, musl's (ld.so)
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "DYLD_FRAMEWORK_PATH",  # macOS's (dyld)
)
"""Environment variables that make the system's loader run other code in any program it starts (a library
preloaded, audited, or found first): native code, which no audit hook sees, so a child started with one of
them changed is refused (docs/decisions.md, "the loader's variables")."""
_loader_baseline: dict[str, str] | None = None
"""Those variables as the process had them when its seal started (:func:`keep_loader_baseline`)."""


def _loader_values(env: Any) -> dict[str, str]:
    found = {}
    for name in LOADER_VARIABLES:
        value = _variable(env, name)
        if value:
            found[name] = os.fsdecode(value)
    return found


def keep_loader_baseline() -> None:
    """Keep this process's :data:`LOADER_VARIABLES` as they are now: a child whose environment sets one to
    another value is refused (:func:`loader_change`). Called when the seal starts (a user whose whole shell
    sets ``LD_PRELOAD`` to an allocator has every child inherit it unchanged)."""
    global _loader_baseline
    _loader_baseline = _loader_values(os.environ)


def loader_change(env: Any) -> str | None:
    """The first of :data:`LOADER_VARIABLES` the environment ``env`` (a mapping) sets otherwise than this
    process had it when its seal started (unset and empty are the same), or None."""
    baseline = _loader_baseline if _loader_baseline is not None else _loader_values(os.environ)
    values = _loader_values(env)
    for name in LOADER_VARIABLES:
        if values.get(name) != baseline.get(name):
            return name
    return None


def child_refusal(
    executable: Any, argv: Any, env: Any, commands: Any, depth: int = 0
) -> tuple[str, list[str], str]:
    """Judge a child process about to start while sealed (docs/replay.md, "The seal's rules").

    Args:
        executable: the file to run, or None (the first word of ``argv``).
        argv: the command line (a sequence of words, or a shell's command string).
        env: the child's environment (a mapping), or None for this process's.
        commands: the ``allow_commands`` in force (names or paths).
        depth: how many ``#!`` interpreters and ``env`` wrappers led here (a script is judged as its
            interpreter running it).

    Returns:
        ``(program, command words, verdict)``: the program's name as the report shows it (for a shell
        running one simple command, that command's program), the words of what it runs, and
        :data:`SEALED` (a Python child that inherits the seal), :data:`LOCAL`, :data:`ALLOWED`, or the
        reason it is refused, one clause (``a program that is not Python cannot be sealed ...``).
    """
    line = words(argv)
    path = os.fsdecode(executable) if isinstance(executable, (str, bytes, os.PathLike)) else ""
    path = path or (line[0] if line else "")
    program = os.path.basename(path) or "?"
    environment = os.environ if env is None else env
    loader = loader_change(environment)
    if loader is not None:
        if allows_command(commands, program, path):
            return program, line, ALLOWED
        return program, line, f"its environment sets {loader}, which loads other code into it (native code)"
    if program in SHELLS and len(line) >= 3 and line[1] == "-c":
        inner = _simple_command(line[2])
        if inner is not None and not allows_command(commands, program, path):
            if inner[0] in SHELL_BUILTINS:
                return inner[0], inner, LOCAL
            line, path = inner, inner[0]
            program = os.path.basename(path)
    local, inner = local_form(program, line[1:]) if program in LOCAL_PROGRAMS else (False, None)
    if local:
        return program, line, LOCAL
    if allows_command(commands, program, path):
        return program, line, ALLOWED
    if inner is not None:  # `ip netns exec NAME CMD`: judged as CMD
        return child_refusal(None, inner, env, commands, depth)
    if program in LOCAL_PROGRAMS:
        return program, line, NOT_READ_ONLY
    if program == "env" and depth < _MAX_INTERPRETERS:  # `env [NAME=VALUE...] CMD`: judged as CMD
        wrapped = env_form(line[1:], environment)
        if wrapped is not None:
            return child_refusal(None, wrapped[0], wrapped[1], commands, depth + 1)
    kind, interpreter = program_file(path, environment)
    if kind == SCRIPT and interpreter:  # judged as `INTERPRETER [ARGUMENT] SCRIPT ARGS...`, as run
        if depth >= _MAX_INTERPRETERS:
            return program, line, "its #! interpreters nest too deep to be judged"
        script = _which(path, environment) or path
        verdict = child_refusal(None, [*interpreter, script, *line[1:]], env, commands, depth + 1)[2]
        return program, line, verdict
    if is_python(path, environment):
        option = unsealable_option(line[1:])
        if option is not None:
            return program, line, f"{option} makes Python ignore the environment the seal travels in"
        if not carries_seal(environment):
            return program, line, "it was started with an environment (env=) that drops the seal"
        return program, line, SEALED
    return program, line, "a program that is not Python cannot be sealed: it could reach anything"
