"""Characters picked from the system's randomness one at a time are minted (``stepfork.trace.minting``).

``"".join(secrets.choice(alphabet) for i in range(n))`` is the Python documentation's recipe for a random
id; a ``SystemRandom``'s ``choices`` and ``sample`` build them too. While a mint log is active each
one-character pick continues its thread's stream, so the id is a minted span wherever it lands in a
string; a pick among words is not noted (a decision, compared exactly).
"""

from __future__ import annotations

import random
import secrets
import string
import threading
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.trace import minting

ALPHABETS = st.sampled_from(
    [string.ascii_letters + string.digits, string.hexdigits.lower(), string.ascii_uppercase, "01", "ab-_"]
)
BUILDERS: dict[str, Callable[[str, int], str]] = {
    "secrets.choice": lambda alphabet, n: "".join(secrets.choice(alphabet) for _ in range(n)),
    "SystemRandom.choice": lambda alphabet, n: "".join(
        random.SystemRandom().choice(alphabet) for _ in range(n)
    ),
    "SystemRandom.choices": lambda alphabet, n: "".join(secrets.SystemRandom().choices(alphabet, k=n)),
    "SystemRandom.sample": lambda alphabet, n: "".join(
        random.SystemRandom().sample(alphabet * n, n)  # a population as long as the id
    ),
}


def minted_in(log: minting.MintLog, text: str) -> list[str]:
    return [text[start:end] for start, end in log.spans(text)]


@settings(max_examples=60, deadline=None)
@given(alphabet=ALPHABETS, length=st.integers(minting.MIN_SPAN, 40), how=st.sampled_from(sorted(BUILDERS)))
def test_an_id_built_from_picks_is_one_minted_span(alphabet: str, length: int, how: str) -> None:
    log = minting.start()
    try:
        before = BUILDERS[how](alphabet, 5)  # picks drawn before the id continue the same stream
        made = BUILDERS[how](alphabet, length)
    finally:
        minting.stop(log)
    assert minted_in(log, f"ticket {made}.") == [made]
    assert minted_in(log, f"{before} {made}") == [made]  # each id alone: 5 picks are under MIN_SPAN


def test_ids_drawn_in_two_threads_at_once_are_each_minted() -> None:
    alphabet = string.ascii_letters + string.digits
    made: dict[str, list[str]] = {"a": [], "b": []}
    go = threading.Barrier(2)

    def draw(name: str) -> None:
        go.wait()
        for _ in range(20):  # interleaved with the other thread's picks
            made[name].append("".join(secrets.choice(alphabet) for _ in range(12)))

    log = minting.start()
    try:
        threads = [threading.Thread(target=draw, args=(name,)) for name in made]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        minting.stop(log)
    for ids in made.values():
        for made_id in ids:
            assert minted_in(log, f"id {made_id}") == [made_id]


def test_a_pick_among_words_and_picks_outside_a_session_are_not_minted() -> None:
    secrets.choice(["outside-the-session"])
    outside = "".join(secrets.choice(string.ascii_letters) for _ in range(16))
    log = minting.start()
    try:
        queue = secrets.choice(["priority-support", "standard-support"])
        numbers = "".join(str(n) for n in secrets.SystemRandom().sample(range(10), 10))
    finally:
        minting.stop(log)
    assert minted_in(log, queue) == []
    assert minted_in(log, numbers) == []  # picks that are not one-character strings
    assert minted_in(log, outside) == []
    assert not log
