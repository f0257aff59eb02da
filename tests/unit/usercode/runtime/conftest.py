"""Fixtures of the lint --run tests: the release judged (the spec is tests/unit/conftest.py's)."""

from __future__ import annotations

import pytest

from csconform.spec import Catalogue
from csconform.spec.releases import Release


@pytest.fixture(scope="session")
def release(catalogue: Catalogue) -> Release:
    return catalogue.newest
