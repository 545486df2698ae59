"""The network seal's rules, standard library only (docs/replay.md, "The seal's rules"), one module per
idea, their names gathered here for the seal of a Python child (:mod:`stepfork.replay._seal_child`):

- ``_seal_hosts``: hosts and ports (:func:`normal_host`, :func:`is_local`, :func:`allows`, :data:`vetted`);
- ``_seal_unix_sockets``: Unix sockets (:func:`unix_name`, :func:`is_own_unix`);
- ``_seal_environment``: a child's environment (the seal it carries: :data:`ENV`, :data:`SITE`,
  :func:`carries_seal`; ``env ... CMD``: :func:`env_form`; the loader's variables: :func:`loader_change`);
- ``_seal_local_programs``: the programs that only read this machine (:data:`LOCAL_PROGRAMS`,
  :func:`local_form`);
- ``_seal_python``: what is Python, read from a program's file (:func:`program_file`, :func:`is_python`),
  and CPython's options that keep the seal out (:func:`unsealable_option`);
- ``_seal_commands``: the verdict on a child process (:func:`child_refusal`).

Shared by the seal of a replaying process (:mod:`stepfork.replay.network` and its ``network_*`` modules,
which import the parts as ``stepfork.replay._seal_*``) and the seal a Python child process of a replay puts
on itself at start-up (``_seal_site/sitecustomize.py``), which loads them by their paths: a child must not
import the ``stepfork.replay`` package (its pydantic models, a second of start-up in every
``subprocess.run([sys.executable, ...])``), and may run on an interpreter without it.

How a child loads them (:func:`stepfork.replay._seal_child.load_rules`): it registers a bare package,
``_stepfork_seal``, whose ``__path__`` is this folder (``stepfork/replay/__init__.py`` does not run), and
imports ``_stepfork_seal._seal_rules``. The parts import one another relatively only (``from ._seal_hosts
import normal_host``), which finds the sibling file in the folder of whichever package loaded them:
``stepfork.replay`` in a replaying process, ``_stepfork_seal`` in a child. So each part imports the standard
library and its sibling parts only, never ``stepfork``, and runs on Python 3.8 (no runtime use of 3.9+
syntax such as ``dict[str, str]`` outside annotations).
"""

from __future__ import annotations

from ._seal_commands import (
    ALLOWED,
    LOCAL,
    SEALED,
    SHELL_BUILTINS,
    SHELLS,
    allows_command,
    child_refusal,
    words,
)
from ._seal_environment import (
    ENV,
    LOADER_VARIABLES,
    SITE,
    carries_seal,
    env_form,
    keep_loader_baseline,
    loader_change,
    variable,
)
from ._seal_hosts import (
    LOCAL_NAMES,
    Allowance,
    allows,
    format_host,
    host_of,
    is_address,
    is_local,
    is_own_name,
    normal_host,
    port_of,
    vetted,
)
from ._seal_local_programs import LOCAL_PROGRAMS, NOT_READ_ONLY, local_form
from ._seal_python import (
    BINARY,
    MAX_INTERPRETERS,
    SCRIPT,
    SHIM,
    is_python,
    program_file,
    unsealable_option,
    which,
)
from ._seal_unix_sockets import LOG_SOCKETS, is_own_unix, unix_name

__all__ = [
    "ALLOWED",
    "BINARY",
    "ENV",
    "LOADER_VARIABLES",
    "LOCAL",
    "LOCAL_NAMES",
    "LOCAL_PROGRAMS",
    "LOG_SOCKETS",
    "MAX_INTERPRETERS",
    "NOT_READ_ONLY",
    "SCRIPT",
    "SEALED",
    "SHELLS",
    "SHELL_BUILTINS",
    "SHIM",
    "SITE",
    "Allowance",
    "allows",
    "allows_command",
    "carries_seal",
    "child_refusal",
    "env_form",
    "format_host",
    "host_of",
    "is_address",
    "is_local",
    "is_own_name",
    "is_own_unix",
    "is_python",
    "keep_loader_baseline",
    "loader_change",
    "local_form",
    "normal_host",
    "port_of",
    "program_file",
    "unix_name",
    "unsealable_option",
    "variable",
    "vetted",
    "which",
    "words",
]
