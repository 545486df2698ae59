"""``stepfork.analysis.forking``: run an agent again from a step of a recorded run, live from there on
(issue 5, "fork"; docs/fork.md).

:func:`fork` records the whole run into a new bundle with its lineage in ``fork.json``
(:func:`read_fork_info`). The package is ``forking`` because ``stepfork.analysis.fork`` is the function:
a subpackage of that name would replace it as an attribute of ``stepfork.analysis`` once imported.
Private modules: ``_fork`` (the function), ``_handler`` (the boundary handler of the forked run), ``_result``
(:class:`ForkResult`).
"""

from stepfork.analysis.forking._fork import FORK_FILE, ForkError, ForkResult, fork, read_fork_info

__all__ = ["FORK_FILE", "ForkError", "ForkResult", "fork", "read_fork_info"]
