"""A pytest plugin for the meta-tests: draw with Hypothesis' stock provider even under the ci profile.

It undoes csconform.testing.reproducible_examples, so a meta-test can show what that module fixes.
"""

from __future__ import annotations

import pytest
from hypothesis.internal.conjecture import providers


@pytest.hookimpl(trylast=True)
def pytest_configure() -> None:
    providers.AVAILABLE_PROVIDERS["hypothesis"] = providers.HypothesisProvider
