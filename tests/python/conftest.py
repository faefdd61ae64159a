import pytest

import kiln


@pytest.fixture(autouse=True)
def _eager_functions_off():
    kiln.config.run_functions_eagerly(False)
    yield
    kiln.config.run_functions_eagerly(False)
