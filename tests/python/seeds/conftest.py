"""Fixtures for the seed conformance tests."""
import pytest

import kiln


@pytest.fixture(autouse=True)
def _seed_state():
    """Each seed example starts from kiln's defaults."""
    yield
    kiln.config.run_functions_eagerly(False)
    if hasattr(kiln.debugging, "disable_check_numerics"):
        kiln.debugging.disable_check_numerics()
