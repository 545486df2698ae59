"""The network seal's local programs (docs/replay.md, "The seal's rules"; docs/decisions.md, "The seal's
local programs"): the programs that only read this machine (:data:`LOCAL_PROGRAMS`), started while
sealed in their read-only forms only (:func:`local_form`).

A part of the seal's rules (:mod:`stepfork.replay._seal_rules` says how a sealed child loads them by their
paths): standard library only, runnable on Python 3.8, its sibling parts imported relatively, never through
``stepfork``.
"""

from __future__ import annotations

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


NOT_READ_ONLY = (
    "only its forms that read this machine start while sealed, and this one could change the machine, "
    "start another program or reach the network"
)
"""The reason a program of :data:`LOCAL_PROGRAMS` is refused in any other form (:func:`local_form`)."""
