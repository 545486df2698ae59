"""Secrets on a command line: one rule for what is written, printed and refused (CASES C5, NEWCOMER 15).

``stepfork record -- python agent.py --token T`` writes the command into the bundle's ``program.json``,
``stepfork replay BUNDLE -- COMMAND`` prints it on its ``Entrypoint`` line, and ``stepfork export BUNDLE --
COMMAND`` refuses a command holding a secret (a test file would keep it). All three ask
:func:`redact_command`, so a value one of them calls a secret is one the others call a secret too
(docs/redaction.md, "Command lines").

An argument is a secret when:

- the redaction rules of strings change it (credential patterns, registered secrets:
  :meth:`stepfork.trace.redaction.Redactor.redact_text`), as in ``--header "Authorization: Bearer ..."``;
- it is the value of an option named like a secret (:func:`is_secret_option`: a name the key rule calls
  a secret, such as ``--auth``, ``--api-key``, ``--bearer``, ``--credentials``, ``--github-token``, or one
  ending in a secret word), given after it (``--password VALUE``) or in the same argument
  (``--password=VALUE``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from stepfork.trace._redaction_text import REPLACEMENT

__all__ = ["SECRET_OPTION_ENDINGS", "is_secret_option", "redact_command"]

SECRET_OPTION_ENDINGS: Final = frozenset({"key", "keys"})
"""The last words of an option name of several words that make its value a secret beside the names of
the key rule (docs/redaction.md rule 1, which already makes ``--db-password``, ``--client-secret``,
``--github-token`` and ``--openai-api-key`` secrets): on a command line any ``--X-key`` is taken for a
secret (``--sort-key`` too), as it was before the key rule knew which keys are credentials. A one-word
name is a secret only when the key rule calls it one (``--token``, ``--password``, ``--auth``,
``--bearer``, ``--credentials``; ``--key`` is not: a lookup key)."""

_OPTION: Final = re.compile(r"-{1,2}(?P<name>[A-Za-z][A-Za-z0-9_.-]*)")
_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")  # camelCase: apiKey -> api_Key
_WORDS: Final = re.compile(r"[^A-Za-z0-9]+")


def is_secret_option(name: str) -> bool:
    """True when the value of the option ``name`` is a secret.

    Args:
        name: the option's name, with or without its dashes (``--db-password``, ``apiKey``, ``-token``).

    Returns:
        True when the key rule redacts a string under the name (``Redactor.is_sensitive_key`` of
        :data:`stepfork.trace.redaction.default_redactor`, docs/redaction.md rule 1: ``--password``,
        ``--token``, ``--api-key``, ``--auth``, ``--bearer``, ``--credentials``, ``--openai-api-key``,
        ``--github-token``, ``--db-password``, and the keys a user added) or when it has several words
        (split at ``-``, ``_``, ``.`` and camelCase) and the last is one of :data:`SECRET_OPTION_ENDINGS`
        (``--sort-key``). ``--key``, ``--token-file``, ``--max-tokens``, ``--next-page-token``,
        ``--auth-type``: False.
    """
    from stepfork.trace.redaction import default_redactor

    bare = name.lstrip("-")
    if not bare:
        return False
    if default_redactor.is_sensitive_key(bare):
        return True
    words = [w for w in _WORDS.split(_BOUNDARY.sub("_", bare).lower()) if w]
    return len(words) > 1 and words[-1] in SECRET_OPTION_ENDINGS


def _is_option(word: str) -> bool:
    return _OPTION.fullmatch(word.split("=", 1)[0]) is not None


def redact_command(command: Sequence[str]) -> list[str]:
    """``command`` with every secret argument (module docstring) replaced.

    Args:
        command: a command line as a list of str (``["python", "agent.py", "--token", "T"]``).

    Returns:
        A new list of the same length: a secret value becomes ``"[REDACTED]"`` (``--password=VALUE``
        becomes ``--password=[REDACTED]``), a credential inside an argument is replaced as in any string,
        an AWS secret access key among the arguments when one of them holds its access key id
        (:mod:`stepfork.trace._redaction_pairs`), every other argument is kept as given. An argument
        that starts like an option (``-v``, ``--json``) is never taken for the value of the option
        before it. Redacting twice gives the same list.
    """
    from stepfork.trace._redaction_pairs import paired_secrets
    from stepfork.trace.redaction import redact_text

    out: list[str] = []
    for index, given in enumerate(command):
        shown = redact_text(given)
        option = _OPTION.fullmatch(given.split("=", 1)[0])
        if option is not None and "=" in given and is_secret_option(option["name"]):
            name, value = given.split("=", 1)
            if value:
                shown = f"{name}={REPLACEMENT}"
        elif index and given not in ("", "--") and not _is_option(given):
            before = _OPTION.fullmatch(command[index - 1])  # a bare option (no "=") takes the next word
            if before is not None and is_secret_option(before["name"]):
                shown = REPLACEMENT
        out.append(shown)
    for index in paired_secrets(enumerate(command)):  # an AWS secret next to its key id (docs/redaction.md)
        out[index] = REPLACEMENT
    return out
