"""Session fixtures of the unit tests: the spec and the release catalogue, loaded once."""

from __future__ import annotations

import pytest

from csconform.spec import Catalogue, Spec, default_specs_dir, load_catalogue, load_spec


@pytest.fixture(scope="session")
def spec() -> Spec:
    return load_spec()


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    return load_catalogue(default_specs_dir())
