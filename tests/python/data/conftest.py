import warnings

import numpy as np
import pytest

import kiln


def _flat_numpy(element):
    return tuple(np.asarray(x).tolist() for x in kiln.nest.flatten(element))


def eager_elements(ds):
    """Each element as a tuple of its leaves (as Python lists/scalars)."""
    return [_flat_numpy(e) for e in ds.as_numpy_iterator()]


def graph_elements(ds, autograph=True):
    """The elements seen by `for x in ds` inside a kiln.function, recorded at run
    time by a py_function in the loop body (AutoGraph's loop, or the dataset's
    _kiln_for_loop called directly)."""
    got = []

    def record(*xs):
        got.append(tuple(np.asarray(x.numpy()).tolist() for x in xs))

    if autograph:
        @kiln.function
        def run(d):
            for x in d:
                kiln.data.py_function(record, kiln.nest.flatten(x), [])
            return 0
    else:
        @kiln.function(autograph=False)
        def run(d):
            def body(x, state):
                kiln.data.py_function(record, kiln.nest.flatten(x), [])
                return state
            d._kiln_for_loop(body, (), None)
            return 0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kiln.RetracingWarning)
        run(ds)
    return got


def graph_size(f, *args):
    return len(f.get_concrete_function(*args).graph.as_graph_def().node)


def assert_dataset(ds, spec, card, want):
    """ds's element_spec (its repr), cardinality and elements, read eagerly and in a
    kiln.function, are as given (the test files' TensorFlow 2.21 CASES)."""
    assert repr(ds.element_spec) == spec
    assert int(ds.cardinality()) == card
    assert eager_elements(ds) == want
    assert graph_elements(ds) == want


@pytest.fixture
def helpers():
    class H:
        eager = staticmethod(eager_elements)
        graph = staticmethod(graph_elements)
        size = staticmethod(graph_size)
        check = staticmethod(assert_dataset)
    return H
