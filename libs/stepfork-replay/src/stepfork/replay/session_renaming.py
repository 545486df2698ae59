"""A replay session's fresh values (docs/replay.md, "Fresh values"; stepfork.replay.noise): where the
replay's values came from (:meth:`FreshValueRenaming.live_origins`), and the one renaming of fresh values its
input matching and its output comparison share (:meth:`FreshValueRenaming.output_scope`). The fresh-values
part of :class:`~stepfork.replay.session.ReplaySession`.
"""

from __future__ import annotations

import time
from typing import Any

from stepfork.replay.matching import LiveInput
from stepfork.replay.noise.origins import Origins
from stepfork.replay.plan import RecordedCall
from stepfork.replay.requests import FreshInputs
from stepfork.trace.bundle import Trace
from stepfork.trace.minting import MintLog


class FreshValueRenaming:
    """The fresh-values methods of :class:`~stepfork.replay.session.ReplaySession`. The session sets
    ``trace``, ``minted`` (None until it is entered), ``_started`` (``time.time_ns()`` when it is entered,
    None before) and ``_inputs`` (None: the renaming is made on first need)."""

    trace: Trace
    minted: MintLog | None
    _started: int | None
    _inputs: Any

    def live_origins(self) -> Origins:
        """Where the replay's values came from: the recording's handed-out ids, the values this process
        minted while the session was active and the replay's own clock window, from its start to now
        (:class:`stepfork.replay.noise.Origins`)."""
        from stepfork.replay.noise.clock import ClockWindow

        return Origins(
            self.trace,
            minted=self.minted if self.minted is not None else MintLog(),
            clock=ClockWindow(self._started if self._started is not None else time.time_ns()),
        )

    def _renamed_inputs(
        self, expected: RecordedCall, value: Any, ignored: set[str]
    ) -> list[tuple[str, Any, Any, str]] | None:
        """:class:`stepfork.replay.noise.inputs.RenamedInputs` of this session (made on first need)."""
        return self._input_renaming()(expected.kind, expected.input, value, ignored)  # type: ignore[no-any-return]

    def _renames_to(self, live: LiveInput, expected: RecordedCall) -> bool:
        """True when ``live``'s input equals ``expected``'s up to the renaming of fresh values, as a trial
        that binds nothing (a concurrent group's member chosen by it: ``ConcurrentCursor.select``)."""
        if expected.input is None:
            return False
        return self._input_renaming().accepts(expected.kind, expected.input, live.value)  # type: ignore[no-any-return]

    def _repeated_inputs(
        self, expected: RecordedCall, value: Any, ignored: set[str]
    ) -> list[tuple[str, Any, Any, str]] | None:
        """:meth:`stepfork.replay.noise.inputs.RenamedInputs.repeats` of this session: the renamed
        differences of ``value`` from ``expected``'s input in a renaming of their own, binding nothing."""
        return self._input_renaming().repeats(expected.kind, expected.input, value, ignored)  # type: ignore[no-any-return]

    def _fresh_inputs(self) -> FreshInputs:
        """This session's renaming of fresh values as the request pool asks it
        (:class:`stepfork.replay.requests.FreshInputs`)."""
        return FreshInputs(self._renames_to, self._renamed_inputs, self._repeated_inputs)

    def _input_renaming(self) -> Any:
        if self._inputs is None:
            from stepfork.replay.noise.inputs import RenamedInputs

            # the recording's side: a clock reading it served is served again as it was (Origins docstring)
            self._inputs = RenamedInputs(Origins(self.trace, readings_given=False), self.live_origins())
        return self._inputs

    def output_scope(self) -> Any:
        """The :class:`stepfork.replay.noise.Comparison` the replay's output is compared in: the one its
        input matching renamed fresh values in, so a fresh value the agent sent as ``x`` (live ``x'``) must
        come back as ``x'`` in the output, and two values never swap (docs/replay.md "Fresh values";
        NEWCOMER5 F2)."""
        return self._input_renaming().scope
