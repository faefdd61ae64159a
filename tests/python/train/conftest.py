"""Fixtures for the kiln.train tests."""
import pytest

import kiln as tf


@pytest.fixture(autouse=True)
def _fresh_names():
    """Each test starts with default Keras layer names dense, dense_1, ..."""
    tf.keras.backend.clear_session()
    yield
