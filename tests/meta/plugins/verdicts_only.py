"""A pytest plugin for the meta-tests: the ci profile without Hypothesis' shrink and explain phases.

A meta-test that runs the suite against a broken engine needs only which rules failed, not the
smallest example that fails them. Shrinking a failing GradScaler state machine costs over a minute
of a CI core for a verdict the first failing example already gives (the shrinker keeps only
examples that fail at the same place, so the failed rules are the same). ``csconform check`` itself
still shrinks: a user wants the short example.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings


@pytest.hookimpl(trylast=True)  # after the csconform plugin has loaded the ci profile
def pytest_configure() -> None:
    fast = [phase for phase in settings.default.phases if phase not in (Phase.shrink, Phase.explain)]
    settings.register_profile("ci-verdicts-only", settings.default, phases=fast)
    settings.load_profile("ci-verdicts-only")
