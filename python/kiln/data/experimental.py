"""kiln.data.experimental: the tf.data.experimental names kiln supports."""
from kiln.data.dataset import INFINITE, UNKNOWN

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN
AUTOTUNE = -1


def cardinality(dataset):
    """dataset.cardinality() (tf.data.experimental.cardinality)."""
    return dataset.cardinality()
