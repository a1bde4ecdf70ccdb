import pytest

import dpnoise


@pytest.fixture
def seeded():
    """A reproducible (NOT secure) generator for deterministic tests."""
    return dpnoise.default_rng(20261122)


@pytest.fixture
def secure():
    return dpnoise.default_rng()
