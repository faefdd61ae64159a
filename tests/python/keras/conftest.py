"""Fixtures for the kiln.keras tests (NumPy references: keras_helpers.py)."""
import pytest

import kiln as tf


@pytest.fixture(autouse=True)
def _fresh_names():
    """Each test starts with default layer names dense, dense_1, ..."""
    tf.keras.backend.clear_session()
    yield
    tf.config.run_functions_eagerly(False)
