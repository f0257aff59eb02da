"""Fixtures of the lint --run tests: the spec and the release judged."""

from __future__ import annotations

import pytest

from csconform.spec import Spec, default_specs_dir, load_catalogue, load_spec
from csconform.spec.releases import Release


@pytest.fixture(scope="session")
def spec() -> Spec:
    return load_spec()


@pytest.fixture(scope="session")
def release() -> Release:
    return load_catalogue(default_specs_dir()).newest
