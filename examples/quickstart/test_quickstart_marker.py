"""The pytest marker on the quickstart (docs/getting-started.md, "Replay inside your own tests").

``@pytest.mark.stepfork("notify.sftrace")`` replays the bundle around the test body: the tool and the
model are served from the recording, so the test needs no order system and no model.
"""

import pytest
import quickstart


@pytest.mark.stepfork("notify.sftrace")
def test_a_shipped_order_is_notified(stepfork):
    assert quickstart.run_agent_fixed()["should_notify"] is True
