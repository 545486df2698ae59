"""One C-speed search of a whole payload's JSON text: "does any of these short patterns occur in it?"

The hot path asks this of every recorded payload twice (docs/performance.md "Recording"): does a
redaction needle occur in its lower-cased text (:mod:`stepfork.trace._redaction_text`), and does orjson's
text hold a float it may write otherwise than the canonical rule, or a ``null`` that may be a NaN
(:mod:`stepfork.trace.plainjson`). Python's ``re`` scans such alternations byte by byte (about 1 ns a byte,
0.4x of the recording floor over a 64 KB payload); pydantic-core's Rust regex finds the literals with a
SIMD prefilter first (a tenth of that). pydantic-core comes with pydantic, a dependency of stepfork-trace.
"""

from __future__ import annotations

import re
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (stepfork validate's cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

__all__ = ["TextSearch"]


def _miss(_: object) -> bool:
    return False


class TextSearch:
    """A test "does ``python_pattern`` match somewhere in this UTF-8 text", as fast as available.

    Args:
        rust_pattern: the pattern in the syntax of Rust's ``regex`` crate (no look-around); it must match
            a text exactly when ``python_pattern`` does.
        python_pattern: the same pattern for Python's ``re`` over bytes: the fallback, and the reference.
        hit, miss: texts the pattern must and must not match, checked once: a pydantic-core whose
            ``pattern`` does not search (anchors, or another engine) is not used.

    Calling it with bytes (valid UTF-8, such as orjson's output) returns True when the pattern occurs; it
    never raises (text that is not UTF-8 is searched with ``re``). The Rust search is built on the first
    call made once pydantic-core is imported (recording and replay import it with the models); before that
    Python's ``re`` searches, so that a process that never imports pydantic (``stepfork validate`` of a
    clean bundle, stepfork.cli._quick) does not import it for this.
    """

    __slots__ = ("_checks", "_rust_pattern", "_slow", "fast")

    def __init__(self, rust_pattern: str, python_pattern: bytes, hit: str, miss: str) -> None:
        self._rust_pattern = rust_pattern
        self._slow = re.compile(python_pattern)
        self._checks = ((hit.encode(), True), (miss.encode(), False))
        self.fast: Callable[[bytes], bool] | None = None  # the Rust search, once built

    def __call__(self, text: bytes) -> bool:
        fast = self.fast
        if fast is None:
            if "pydantic_core" not in sys.modules:
                return self._slow.search(text) is not None
            fast = self.fast = self._rust_search()
        return fast(text)

    def _search_slowly(self, text: bytes) -> bool:
        return self._slow.search(text) is not None

    def _rust_search(self) -> Callable[[bytes], bool]:
        try:
            from pydantic_core import SchemaValidator, core_schema

            # A miss returns False from the second choice: raising a ValidationError per miss (the common
            # case) cost twice the search itself.
            validator = SchemaValidator(
                core_schema.union_schema(
                    [
                        core_schema.str_schema(pattern=self._rust_pattern, regex_engine="rust-regex"),
                        core_schema.no_info_plain_validator_function(_miss),
                    ],
                    mode="left_to_right",
                )
            )
        except Exception:  # an older pydantic-core: Python's re
            return self._search_slowly
        validate = validator.validate_python
        search_slowly = self._search_slowly

        def search(text: bytes) -> bool:
            try:
                return validate(text.decode("utf-8")) is not False
            except UnicodeDecodeError:
                return search_slowly(text)

        for text, expected in self._checks:
            if search(text) is not expected or search_slowly(text) is not expected:
                return search_slowly  # not the search semantics relied on
        return search
