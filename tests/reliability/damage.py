"""A hypothesis-driven generator of damaged bundles (issue 7 part 1).

A bundle is modelled as ``{file name: content}`` where content is bytes, :data:`DIR` (a directory in place of
the file) or :data:`SYMLINK` (a symlink to a valid-looking file outside the bundle). :func:`damages` draws
one to three :class:`Damage` operations; :func:`apply` turns a healthy model into a damaged one and
:func:`materialize` writes it as a ``.sftrace`` directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

DIR = "<directory>"
SYMLINK = "<symlink out of the bundle>"
FILES = ("manifest.json", "events.jsonl", "redactions.json", "integrity.json")
Model = dict[str, "bytes | str"]


@dataclass(frozen=True)
class Damage:
    """One operation on a bundle model: the campaign counts ``kind``; a failure shows ``name``."""

    kind: str
    name: str
    apply: Callable[[Model], None]

    def __repr__(self) -> str:
        return self.name


def _file(model: Model, name: str) -> bytes | None:
    content = model.get(name)
    return content if isinstance(content, bytes) else None


def _edit_lines(model: Model, name: str, edit: Callable[[list[bytes]], None]) -> None:
    data = _file(model, name)
    if data is None:
        return
    lines = data.split(b"\n")
    edit(lines)
    model[name] = b"\n".join(lines)


def _set_value(model: Model, name: str, line: int, key: str, raw: bytes) -> None:
    """Replace ``key``'s value with ``raw``: in events.jsonl on line ``line`` (0-based), else in the file."""
    if name == "events.jsonl":

        def edit(lines: list[bytes]) -> None:
            if line < len(lines):
                lines[line] = _replace_value(lines[line], key, raw, 0)

        _edit_lines(model, name, edit)
    else:
        data = _file(model, name)
        if data is not None:
            model[name] = _replace_value(data, key, raw, 0)


def _replace_value(data: bytes, key: str, raw: bytes, occurrence: int) -> bytes:
    """Replace the JSON value after the ``occurrence``-th ``"key":`` with the raw bytes ``raw``."""
    obj_text = data.decode("utf-8", "replace")
    try:
        obj = json.loads(obj_text)
    except (ValueError, RecursionError):
        return data
    if not isinstance(obj, dict) or key not in obj:
        return data
    marker = f'"{key}":'.encode()
    spaced = f'"{key}": '.encode()
    for needle in (marker, spaced):
        start = -1
        for _ in range(occurrence + 1):
            start = data.find(needle, start + 1)
            if start < 0:
                break
        if start >= 0:
            value_start = start + len(needle)
            value_text = data[value_start:].decode("utf-8", "replace")
            decoder = json.JSONDecoder()
            try:
                _, end = decoder.raw_decode(value_text.lstrip())
            except (ValueError, RecursionError):
                return data
            skipped = len(value_text) - len(value_text.lstrip())
            end_bytes = len(value_text[: skipped + end].encode("utf-8"))
            return data[:value_start] + raw + data[value_start + end_bytes :]
    return data


# -- primitive damages -----------------------------------------------------------------------------------

files = st.sampled_from(FILES)
json_values = st.sampled_from(
    [
        b"null",
        b"true",
        b"0",
        b"-1",
        b"1.5",
        b'""',
        b'"x"',
        b"[]",
        b"{}",
        b'{"$stepfork":"bytes","value":"!!"}',
    ]
)
hostile_numbers = st.sampled_from(
    [
        b"1e400",
        b"-1e400",
        b"1" + b"0" * 5000,
        b"123456789012345678901234567890",
        b"1.7976931348623157e309",
        b"-0",
        b"1E-400",
        b"NaN",
        b"Infinity",
        b"0x10",
        b"01",
    ]
)
keys = st.sampled_from(
    ["id", "run_id", "parent_id", "step", "type", "timestamp", "duration_ms", "status", "input", "output",
     "name", "input_hash", "output_hash", "redactions", "schema_version", "format", "totals", "events",
     "created_at", "failure", "entries", "files", "algorithm", "agent_name", "model", "message"]
)  # fmt: skip


@st.composite
def truncate(draw: st.DrawFn) -> Damage:
    name = draw(files)
    frac = draw(st.floats(0, 1))

    def op(model: Model) -> None:
        data = _file(model, name)
        if data is not None:
            model[name] = data[: int(len(data) * frac)]

    return Damage("truncate", f"truncate {name}", op)


@st.composite
def flip(draw: st.DrawFn) -> Damage:
    name = draw(files)
    frac = draw(st.floats(0, 1, exclude_max=True))
    mask = draw(st.integers(1, 255))

    def op(model: Model) -> None:
        data = _file(model, name)
        if data:
            at = int(len(data) * frac)
            model[name] = data[:at] + bytes([data[at] ^ mask]) + data[at + 1 :]

    return Damage("flip", f"flip a byte of {name}", op)


@st.composite
def wrong_type(draw: st.DrawFn) -> Damage:
    name = draw(files)
    key = draw(keys)
    raw = draw(json_values | hostile_numbers)
    line = draw(st.integers(0, 12))
    return Damage(
        "wrong type",
        f"wrong JSON value for {key} in {name}",
        lambda model: _set_value(model, name, line, key, raw),
    )


@st.composite
def remove(draw: st.DrawFn) -> Damage:
    name = draw(files)
    return Damage("remove", f"remove {name}", lambda model: model.pop(name, None))


@st.composite
def extra_file(draw: st.DrawFn) -> Damage:
    name = draw(st.sampled_from(["extra.json", "__init__.py", "conftest.py", "events.jsonl.bak", ".hidden"]))
    content = draw(st.sampled_from([b"", b"import os; os._exit(9)\n", b'{"x": 1}\n']))
    return Damage("extra file", f"extra file {name}", lambda model: model.__setitem__(name, content))


@st.composite
def directory_in_place(draw: st.DrawFn) -> Damage:
    name = draw(files)
    return Damage("directory", f"directory in place of {name}", lambda model: model.__setitem__(name, DIR))


@st.composite
def symlink_out(draw: st.DrawFn) -> Damage:
    name = draw(files)
    return Damage(
        "symlink", f"symlink out of the bundle for {name}", lambda model: model.__setitem__(name, SYMLINK)
    )


@st.composite
def deep_nesting(draw: st.DrawFn) -> Damage:
    depth = draw(st.sampled_from([200, 1_000, 10_000, 100_000]))
    key = draw(st.sampled_from(["input", "output"]))
    kind = draw(st.sampled_from(["list", "dict"]))
    nested = b"[" * depth + b"]" * depth if kind == "list" else b'{"a":' * depth + b"1" + b"}" * depth
    line = draw(st.integers(0, 8))
    return Damage(
        "deep nesting",
        f"{depth}-deep {kind} in {key}",
        lambda model: _set_value(model, "events.jsonl", line, key, nested),
    )


@st.composite
def bad_text(draw: st.DrawFn) -> Damage:
    name = draw(files)
    raw = draw(
        st.sampled_from(
            [b'"\xff\xfe"', b'"\xc3\x28"', b'"\xed\xa0\x80"', b'"\\ud800"', b'"\\udfff x"', b'"a\x00b"',
             b'"\\u0000"', b'"\xe2\x80\xa8"']
        )
    )  # fmt: skip
    key = draw(
        st.sampled_from(["id", "name", "agent_name", "run_id", "message", "input", "output", "timestamp"])
    )
    line = draw(st.integers(0, 8))
    return Damage(
        "invalid text",
        f"invalid text {raw!r} for {key} in {name}",
        lambda model: _set_value(model, name, line, key, raw),
    )


@st.composite
def duplicate_key(draw: st.DrawFn) -> Damage:
    name = draw(files)
    key = draw(keys)
    line = draw(st.integers(0, 8))

    def op(model: Model) -> None:
        insert = f'"{key}":"dup",'.encode()
        if name == "events.jsonl":

            def edit(lines: list[bytes]) -> None:
                if line < len(lines) and lines[line].startswith(b"{"):
                    lines[line] = b"{" + insert + lines[line][1:]

            _edit_lines(model, name, edit)
        else:
            data = _file(model, name)
            if data and data.startswith(b"{"):
                model[name] = b"{" + insert + data[1:]

    return Damage("duplicate key", f"duplicate key {key} in {name}", op)


@st.composite
def line_shuffle(draw: st.DrawFn) -> Damage:
    kind = draw(st.sampled_from(["duplicate", "drop", "swap", "blank", "crlf", "bom", "nul"]))
    line = draw(st.integers(0, 8))

    def op(model: Model) -> None:
        def edit(lines: list[bytes]) -> None:
            if line + 1 >= len(lines):
                return
            if kind == "duplicate":
                lines.insert(line, lines[line])
            elif kind == "drop":
                del lines[line]
            elif kind == "swap":
                lines[line], lines[line + 1] = lines[line + 1], lines[line]
            elif kind == "blank":
                lines.insert(line, b"")
            elif kind == "crlf":
                lines[line] += b"\r"
            elif kind == "bom":
                lines[line] = b"\xef\xbb\xbf" + lines[line]
            else:
                lines[line] = lines[line][:5] + b"\x00" + lines[line][5:]

        _edit_lines(model, "events.jsonl", edit)

    return Damage("line edit", f"{kind} events.jsonl line", op)


@st.composite
def huge_line(draw: st.DrawFn, megabytes: int) -> Damage:
    line = draw(st.integers(0, 8))
    closed = draw(st.booleans())
    blob = b'"' + b"A" * (megabytes * 2**20) + (b'"' if closed else b"")

    def op(model: Model) -> None:
        if closed:
            _set_value(model, "events.jsonl", line, "output", blob)
        else:
            _edit_lines(model, "events.jsonl", lambda lines: _append(lines, line, blob))

    return Damage("huge line", f"{megabytes} MB {'string' if closed else 'unterminated string'} line", op)


def _append(lines: list[bytes], line: int, blob: bytes) -> None:
    if line < len(lines):
        lines[line] += blob


def damages(huge_mb: int) -> st.SearchStrategy[list[Damage]]:
    """One to three damages; ``huge_mb`` sizes the huge-line damage (2 in CI, 100 in soak mode)."""
    one = st.one_of(
        truncate(), flip(), wrong_type(), remove(), extra_file(), directory_in_place(), symlink_out(),
        deep_nesting(), bad_text(), duplicate_key(), line_shuffle(), huge_line(huge_mb),
    )  # fmt: skip
    return st.lists(one, min_size=1, max_size=3)


def apply(healthy: Model, ops: list[Damage]) -> Model:
    """A damaged copy of ``healthy``."""
    model = dict(healthy)
    for op in ops:
        op.apply(model)
    return model


def read_model(bundle: Path) -> Model:
    """The model of a healthy bundle directory."""
    return {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()}


def materialize(model: Model, path: Path, outside: Path) -> Path:
    """Write ``model`` as the directory ``path``; symlinks point to copies in ``outside`` (not the bundle)."""
    path.mkdir(parents=True)
    for name, content in model.items():
        target = path / name
        if content == DIR:
            target.mkdir()
            (target / "inner.json").write_bytes(b"{}")
        elif content == SYMLINK:
            decoy = outside / f"decoy-{name}"
            if not decoy.exists():
                decoy.write_bytes(b'{"schema_version": "0.1", "secret": "OUTSIDE-THE-BUNDLE"}\n')
            os.symlink(decoy, target)
        else:
            assert isinstance(content, bytes)
            target.write_bytes(content)
    return path


def changed_payload(healthy: Model, damaged: Model) -> bool:
    """True when a payload file covered by integrity.json differs (integrity.json itself untouched)."""
    return damaged.get("integrity.json") == healthy.get("integrity.json") and any(
        damaged.get(name) != healthy.get(name)
        for name in ("manifest.json", "events.jsonl", "redactions.json")
    )


def describe(ops: list[Damage]) -> Any:
    return [op.name for op in ops]
