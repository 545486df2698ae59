"""The state probe of ``stepfork check``'s batch workers: did a replay change state the next replay could see?

A batch worker (a child forked from the zygote, :mod:`._batch`) replays many bundles in one process.
That is only sound when no replay leaves state behind that could change a later replay's verdict. After each
replay the worker compares a :func:`snapshot` taken before its first replay with one taken now; when they
differ, the worker reports that replay's verdict (it started from the zygote's state, so it is right) and
exits, and the next bundle starts in a fresh child forked from the zygote. The verdicts are then those of a
fork per bundle (the isolation ``minimize`` uses) for every agent whose state the probe can see.

What the snapshot covers (docs/check.md, "Isolation"):

- the agent's own modules: every module whose file is under the import root and not in an installed
  package (site-packages, the interpreter's prefix, stepfork itself). The value of each global, walked
  deeply: scalars by value, lists, tuples, dicts, sets and deques by content, instances and the classes
  these modules define by their attributes (``__dict__`` and slots), functions, classes and modules of
  other packages by identity; anything opaque (a C object without attributes) by identity only;
- which of those modules are loaded (a replay importing a new agent module counts as a change);
- the agent's functions by their defaults and attributes (a mutable default argument, a counter set on a
  function), ``functools.cache``/``lru_cache`` wrappers by their size, ``random.Random`` by its state,
  ``itertools.count`` by its next value, ``bytearray`` by content;
- ``os.environ``, the working directory and ``sys.path``.

Not covered: state kept inside installed packages (an SDK's caches, which are what a warm worker keeps on
purpose), files, and C-level state of opaque objects. ``isolation="bundle"`` (``--isolation bundle``)
forks a child per bundle for agents that keep behaviour there. A snapshot larger than
:data:`BUDGET` nodes is not taken: the worker then forks per bundle too (:class:`TooBig`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import os
import random
import sys
import sysconfig
from collections import deque
from collections.abc import Iterable, Mapping
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

__all__ = ["BUDGET", "Baseline", "TooBig", "agent_module_names", "snapshot"]

BUDGET = 50_000  # nodes per snapshot; past it a fork per bundle is cheaper than the walk
_MAX_DEPTH = 64
_SCALARS = (str, bytes, int, bool, type(None), complex)
_REFERENCES = (FunctionType, BuiltinFunctionType, MethodType, ModuleType, type)
_EXACT_SCALARS = frozenset(_SCALARS)
_EXACT_REFERENCES = frozenset((FunctionType, BuiltinFunctionType, MethodType, ModuleType))


class TooBig(Exception):
    """The agent's state is too large (or too deep) to snapshot after every replay."""


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    return tuple(os.path.realpath(r) + os.sep for r in roots)


def agent_module_names(
    import_root: str | None, among: Iterable[str] | None = None, entrypoint: str | None = None
) -> list[str]:
    """The loaded modules that are the agent's own code, not stepfork's: a file under ``import_root``
    (default: the working directory) and not under the interpreter's prefix or an installed-packages
    directory; or, wherever it is installed, the entrypoint's own module or a module of its top-level
    package (an agent imported through ``PYTHONPATH`` or installed with pip).

    Args:
        import_root: as above; among: only these module names (default: every loaded module);
        entrypoint: ``MODULE:FUNCTION`` (its module must be loaded to count).

    Returns:
        Module names, sorted.
    """
    root = _real_root(import_root or os.getcwd())
    home = _entrypoint_home(entrypoint)
    loaded = sys.modules
    names = list(loaded) if among is None else [n for n in among if n in loaded]
    return sorted(n for n in names if _is_agent_module(root, n, loaded[n], home))


def _entrypoint_home(entrypoint: str | None) -> str | None:
    """The real path that holds the entrypoint's code: its top-level package's directory (with a trailing
    separator), or its module's file for a plain module; None when it is not loaded or has no file."""
    if not entrypoint:
        return None
    top = entrypoint.split(":", 1)[0].split(".", 1)[0]
    module = sys.modules.get(top)
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return None
    if hasattr(module, "__path__"):  # a package: everything under its directory
        return _real_root(os.path.dirname(path))
    real = os.path.realpath(path)
    directory = os.path.dirname(real) + os.sep
    # a module beside the user's other files: that directory; one installed alone: that file only
    return real if _is_installed(directory) else directory


def _is_installed(real: str) -> bool:
    """True for a real path under the interpreter's prefix or an installed-packages directory (a virtual
    environment inside the project included)."""
    return (
        real.startswith(_installed_roots())
        or f"{os.sep}site-packages{os.sep}" in real
        or f"{os.sep}dist-packages{os.sep}" in real
    )


@functools.lru_cache(maxsize=16)
def _real_root(path: str) -> str:
    return os.path.realpath(path) + os.sep  # resolved once: realpath is a system call per path component


# (root, entrypoint home, name) -> (the module, verdict): realpath is slow
_SEEN: dict[tuple[str, str | None, str], tuple[Any, bool]] = {}


def _is_agent_module(root: str, name: str, module: Any, home: str | None = None) -> bool:
    seen = _SEEN.get((root, home, name))
    if seen is not None and seen[0] is module:
        return seen[1]
    path = getattr(module, "__file__", None)
    own = False
    if isinstance(path, str) and name not in ("__main__", "stepfork") and not name.startswith("stepfork."):
        real = os.path.realpath(path)
        in_home = home is not None and (real == home or (home.endswith(os.sep) and real.startswith(home)))
        own = in_home or (real.startswith(root) and not _is_installed(real))
    _SEEN[(root, home, name)] = (module, own)
    return own


class _Walker:
    """One snapshot walk: a hashable, comparable description of a value graph, within :data:`BUDGET`."""

    def __init__(self, own: frozenset[str], records: list[_Record] | None = None) -> None:
        self.own = own  # modules whose classes are walked by attribute
        self.nodes = 0
        self.path: set[int] = set()  # ids on the current path: a cycle is named, not followed
        self.records = records  # when a list: what Baseline.quick re-reads (see _Record)

    def record(self, reader: Any, value: Any) -> None:
        """Note that the walk's description of ``value`` rests on what ``reader(value)`` reads."""
        if self.records is not None:
            self.records.append(_record(reader, value))

    def walk(self, value: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > BUDGET or depth > _MAX_DEPTH:
            raise TooBig()
        kind = type(value)
        if kind in _EXACT_SCALARS:  # the common cases first, by exact type
            return (kind, value)
        if kind in _FLAT_KINDS:
            # the nodes a walk would count (a dict: a key and a value per item), checked before the copy
            size = len(value) * 2 if kind is dict else len(value)
            if self.nodes + size > BUDGET:
                raise TooBig()
            flat = _flat(value, kind)
            if flat is not None:
                self.nodes += size
                if kind is not tuple:
                    self.record(_read_mapping if kind is dict else _read_items, value)
                return flat
        if kind in _EXACT_REFERENCES:
            if kind is FunctionType and getattr(value, "__module__", None) in self.own:
                self.record(_read_function, value)
                return self._function(value, depth + 1)
            return ("ref", id(value))
        special = _SPECIAL.get(kind)
        if special is not None:  # C objects whose state shows only through a method
            self.record(special, value)
            return (kind.__name__, special(value))
        if isinstance(value, _SCALARS):
            return (kind.__name__, value)
        if isinstance(value, float):
            return ("float", repr(value))  # NaN equals itself by repr
        key = id(value)
        if key in self.path:
            return ("cycle", key)
        if isinstance(value, type):
            if getattr(value, "__module__", None) not in self.own:
                return ("ref", key)
        elif isinstance(value, _REFERENCES):
            return ("ref", key)
        self.path.add(key)
        try:
            return self._container(value, kind, depth + 1)
        finally:
            self.path.discard(key)

    def _function(self, value: Any, depth: int) -> Any:
        """An agent function: its identity, defaults and attributes (a mutable default, a counter set on
        the function); not its closure (a decorator's cells are the decorating library's state)."""
        extra = _public_items(vars(value))
        if value.__defaults__ is None and value.__kwdefaults__ is None and not extra:
            return ("ref", id(value))
        key = id(value)
        if key in self.path:
            return ("cycle", key)
        self.path.add(key)
        try:
            return (
                "function",
                key,
                self.walk(value.__defaults__, depth),
                self.walk(value.__kwdefaults__, depth),
                tuple((k, self.walk(v, depth)) for k, v in extra),
            )
        finally:
            self.path.discard(key)

    def _container(self, value: Any, kind: type, depth: int) -> Any:
        if isinstance(value, dict):
            self.record(_read_mapping, value)
            pairs = tuple((self.walk(k, depth), self.walk(v, depth)) for k, v in list(value.items()))
            return (kind.__name__, pairs)
        if isinstance(value, (list, tuple, deque)):
            if not isinstance(value, tuple):
                self.record(_read_items, value)
            return (kind.__name__, tuple(self.walk(v, depth) for v in value))
        if isinstance(value, (set, frozenset)):
            if not isinstance(value, frozenset):
                self.record(_read_set, value)
            return (kind.__name__, frozenset(self.walk(v, depth) for v in value))
        if isinstance(value, type):  # a class of the agent's: its attributes (class-level counters...)
            # dunder names are the class machinery's (__dict__, __doc__, a dataclass's __dataclass_fields__)
            self.record(_read_class, value)
            items = _public_items(vars(value))
            return ("class", id(value), tuple((k, self.walk(v, depth)) for k, v in items))
        attributes: list[tuple[str, Any]] = []
        instance_dict = getattr(value, "__dict__", None)
        self.record(_read_instance, value)
        if isinstance(instance_dict, dict):
            attributes += [(k, self.walk(v, depth)) for k, v in list(instance_dict.items())]
        for slot in _slots(kind):
            if hasattr(value, slot):
                attributes.append((slot, self.walk(getattr(value, slot), depth)))
        if not attributes and not isinstance(instance_dict, dict):
            return ("opaque", id(value))  # a C object: identity only
        return ("object", id(kind), tuple(attributes))


_FLAT_KINDS = frozenset((dict, list, tuple))


def _flat(value: Any, kind: type) -> Any:
    """The description of a dict, list or tuple holding only exact scalars (a table of settings, a function's
    defaults), in a few C calls instead of a walk per item; None for any other. The types are part of it:
    ``1``, ``True`` and ``1.0`` are equal in Python but not the same state."""
    if kind is dict:
        types = set(map(type, value.values()))
        types.update(map(type, value))
        if types <= _EXACT_SCALARS:
            return ("dict=", tuple(value.items()), tuple(map(type, value)), tuple(map(type, value.values())))
        return None
    types = set(map(type, value))
    if types <= _EXACT_SCALARS:
        return (kind.__name__ + "=", tuple(value), tuple(map(type, value)))
    return None


def _cache_size(value: Any) -> int:
    return int(value.cache_info().currsize)


def _random_state(value: Any) -> int:
    return hash(value.getstate())  # 625 numbers: one hash keeps the snapshot small


# C objects whose state is not in attributes: read through the method that shows it
_SPECIAL: dict[type, Any] = {
    bytearray: bytes,
    type(functools.lru_cache()(lambda: None)): _cache_size,  # functools.cache / lru_cache wrappers
    random.Random: _random_state,
    itertools.count: repr,  # count(7): its next value
}


@functools.lru_cache(maxsize=4096)
def _slots(kind: type) -> tuple[str, ...]:
    """The slot names of ``kind``'s instances, from every class of its MRO (cached: a class's slots are
    fixed when it is created)."""
    names: list[str] = []
    for klass in kind.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__"):
                names.append(slot)
    return tuple(names)


# One thing a snapshot's walk read: (reader, the object read, what the reader returned then, whether that is
# compared by identity). Holding what was read keeps those objects alive: no other object can take their ids.
_Record = tuple[Any, Any, Any, bool]
_MISSING = object()
_END = object()  # ends each record's reads in Baseline.quick's flat comparison


def _read_mapping(value: Any) -> tuple[Any, ...]:
    """A dict's (or a class's mappingproxy's) type (``__class__`` of a dict subclass can be assigned), keys
    then values: compared by identity."""
    return (type(value), *value, *value.values())


def _read_items(value: Any) -> tuple[Any, ...]:
    return (type(value), *value)  # a list's or a deque's type and items


def _read_set(value: Any) -> tuple[Any, ...]:
    # compared by value: the ids as a set (its order may change alone), the items held to keep their ids
    return (type(value), frozenset(map(id, value)), tuple(value))


def _read_class(value: Any) -> tuple[Any, ...]:
    return _read_mapping(vars(value))  # every attribute: a dunder that changes only sends to the walk


def _read_function(value: Any) -> tuple[Any, ...]:
    """What the walk of an agent function reads: whether it is the agent's (its module), its defaults
    (their items are walked and noted on their own), its namespace and that namespace's items."""
    namespace = vars(value)
    return (value.__module__, value.__defaults__, value.__kwdefaults__, namespace, *_read_mapping(namespace))


def _read_instance(value: Any) -> tuple[Any, ...]:
    """An instance's class, its ``__dict__`` and that dict's items, and its slots."""
    kind: type = type(value)
    namespace = getattr(value, "__dict__", None)
    items = _read_mapping(namespace) if isinstance(namespace, dict) else ()
    slots = _slots(kind)
    if slots:
        items += tuple(getattr(value, s, _MISSING) for s in slots)
    return (kind, namespace, *items)


_IDENTITY_READERS = frozenset((_read_mapping, _read_items, _read_class, _read_function, _read_instance))


def _record(reader: Any, value: Any) -> _Record:
    return (reader, value, reader(value), reader in _IDENTITY_READERS)


def _process_state() -> tuple[Any, str, tuple[str, ...]]:
    """``os.environ``, the working directory and ``sys.path``: the process-wide part of a snapshot."""
    # os.environ's own mapping (bytes on POSIX): a copy of it is a C-level dict copy, decoding each is not
    environ = getattr(os.environ, "_data", None)
    state = dict(environ if isinstance(environ, dict) else os.environ)
    return state, os.getcwd(), tuple(sys.path)


def snapshot(names: list[str], records: list[_Record] | None = None) -> tuple[Any, ...]:
    """A comparable description of the state a replay could leave for the next one (see the module doc).

    Args:
        names: the agent's modules (:func:`agent_module_names`); a replay that imports another is
            noticed by the caller, which sees the new names.
        records: when a list, every mutable object the walk read is noted in it, with what it held
            (:class:`Baseline` re-reads them instead of walking again).

    Returns:
        A tuple; two snapshots compare equal when no covered state changed between them.

    Raises:
        TooBig: the walk passed :data:`BUDGET` nodes or a depth of 64.
    """
    walker = _Walker(frozenset(names), records)
    modules: list[tuple[Any, ...]] = []
    for name in names:
        module = sys.modules.get(name)
        if records is not None:
            records.append((_loaded, name, (module,), True))
        if module is None:
            modules.append((name, None))
            continue
        walker.record(_read_mapping, vars(module))
        # dunder names are the import system's bookkeeping (__spec__, __loader__, __builtins__...)
        items = [(k, walker.walk(v)) for k, v in _public_items(vars(module))]
        modules.append((name, id(module), tuple(items)))
    return (tuple(modules), *_process_state())


def _loaded(name: str) -> tuple[Any]:
    return (sys.modules.get(name),)


class Baseline:
    """The state a batch worker started from, and a quick way to tell that a replay left it unchanged.

    A :func:`snapshot` walks every value of the agent's modules (about 27 us for the quickstart agent,
    most of ``check``'s own per-bundle work). Most replays change nothing, and then every object that walk
    read still holds the very same objects: the namespaces, dicts, lists, sets, instances' ``__dict__``
    and slots, the agent's classes and functions (their defaults, attributes, module). :meth:`quick`
    re-reads only those (by identity; the few C objects read through a method, by value), which implies
    that a new walk would describe the same state. Anything else (an item replaced, even by an equal value)
    goes to the full comparison of :meth:`unchanged`, so the verdict is always the snapshot's.

    Args:
        names: the agent's modules (:func:`agent_module_names`).

    Raises:
        TooBig: as :func:`snapshot`.
    """

    def __init__(self, names: list[str]) -> None:
        self.names = names
        records: list[_Record] = []
        self.snapshot = snapshot(names, records)
        self.records = records

    @property
    def records(self) -> list[_Record]:
        """What the last walk read (see ``_Record``); set from a new walk by :meth:`unchanged`."""
        return self._records

    @records.setter
    def records(self, records: list[_Record]) -> None:
        self._records = records
        # :meth:`quick`'s form of them: the identity reads as (reader, object) pairs and everything they
        # returned then in one flat tuple, each record's part followed by _END, so that one C-level pass
        # compares them all (a part whose length changed puts _END where a read object was, or the reverse:
        # no read returns _END); the few reads compared by value apart
        self._identity_reads = [(reader, value) for reader, value, _, by_identity in records if by_identity]
        then: list[Any] = []
        for _, _, read, by_identity in records:
            if by_identity:
                then.extend(read)
                then.append(_END)
        self._identity_then = tuple(then)
        self._value_reads = [(reader, value, read) for reader, value, read, exact in records if not exact]

    def quick(self) -> bool:
        """True when every object the baseline's walk read holds what it held then (the state is
        unchanged); False when one differs (the state may have changed: :meth:`unchanged` tells).

        Raises:
            Exception: what reading an object raises (a proxy that raises on every attribute).
        """
        environ, cwd, path = self.snapshot[1:]
        current = getattr(os.environ, "_data", None)  # compared in place: no copy (see _process_state)
        if (current if isinstance(current, dict) else dict(os.environ)) != environ:
            return False
        if os.getcwd() != cwd or tuple(sys.path) != path:
            return False
        now: list[Any] = []
        extend, end = now.extend, now.append
        for reader, value in self._identity_reads:
            extend(reader(value))
            end(_END)
        then = self._identity_then
        if len(now) != len(then) or not all(map(operator.is_, now, then)):
            return False
        return all(reader(value) == read for reader, value, read in self._value_reads)

    def unchanged(self) -> bool:
        """True when the agent's state compares equal to the baseline's snapshot: :meth:`quick` first,
        else a new snapshot (which, when equal, becomes what :meth:`quick` re-reads from then on: a dunder
        added to a module or a value replaced by an equal one costs one walk, not one per replay).

        Raises:
            TooBig, Exception: as :func:`snapshot` (the caller then treats the state as changed).
        """
        with contextlib.suppress(Exception):  # a proxy that raises when read: the walk decides
            if self.quick():
                return True
        records: list[_Record] = []
        if snapshot(self.names, records) != self.snapshot:
            return False
        self.records = records
        return True


def _public_items(namespace: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The items of a module's, class's or function's namespace without the dunder names (the import
    system's and the class machinery's bookkeeping: ``__spec__``, ``__wrapped__``...; ``__all__`` is kept).
    One call per namespace, the test inlined: it runs for every global after every replay."""
    items = list(namespace.items())
    return [(k, v) for k, v in items if not (k[:2] == "__" and k[-2:] == "__" and k != "__all__")]
