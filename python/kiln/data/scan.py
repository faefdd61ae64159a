"""Dataset.scan (and tf.data.experimental.scan): a running state threaded
through the elements, scan_func(state, element) -> (new_state, output).

scan_func is traced like map's function; when it changes the state's static
shape, the state spec is relaxed to both shapes and it is traced again (as
tf.data does). Inside a kiln.function the state is a loop variable."""
from kiln import nest
from kiln.data import functions, loops, structure
from kiln.data.dataset import DatasetV2, install_methods
from kiln.data.transforms import UnaryDataset


def _types(spec):
    """As str() of tf.data's legacy types structure prints it."""
    if not nest.is_nested(spec):
        return str(spec.dtype)
    return structure.format_structure(spec, lambda s: repr(s.dtype))


def _same(a, b):
    return a.rank == b.rank and (a.rank is None or a.as_list() == b.as_list())


def _check_state(old, new):
    """The relaxed state spec, or None when new matches old exactly."""
    try:
        nest.assert_same_structure(old, new)
    except (TypeError, ValueError):
        raise TypeError("Invalid `scan_func`. The element classes for the new state must "
                        f"match the initial state. Expected {_types(old)}, got "
                        f"{_types(new)}.") from None
    flat_old, flat_new = nest.flatten(old), nest.flatten(new)
    if any(a.dtype != b.dtype for a, b in zip(flat_old, flat_new)):
        raise TypeError("Invalid `scan_func`. The element types for the new state must "
                        f"match the initial state. Expected {_types(old)}, got "
                        f"{_types(new)}.")
    relaxed = [a.shape.most_specific_compatible_shape(b.shape) for a, b in
               zip(flat_old, flat_new)]
    if all(_same(r, a.shape) for r, a in zip(relaxed, flat_old)):
        return None
    return nest.pack_sequence_as(old, [type(a)(r, a.dtype) for a, r in zip(flat_old, relaxed)])


class ScanDataset(UnaryDataset):
    _name = "ScanDataset"

    def __init__(self, parent, initial_state, scan_func):
        init = structure.normalize_element(initial_state, "scan initial_state")
        state_spec = structure.specs_of(init)
        while True:
            fn = functions.StructuredFunction(scan_func, (state_spec, parent.element_spec),
                                              "scan")
            out = fn.output_spec
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("Invalid `scan_func`. `scan_func` should return a pair "
                                "consisting of new state and the output value but its "
                                f"return type is {out}.")
            relaxed = _check_state(state_spec, out[0])
            if relaxed is None:
                break
            state_spec = relaxed
        super().__init__(parent, out[1], parent._card)
        self._fn, self._init = fn, init
        self._symbolic = self._symbolic or fn.inline or \
            any(structure.is_symbolic(t) for t in nest.flatten(init))

    def _eager_iter(self):
        state = self._init
        for element in self._parent._eager_iter():
            state, out = self._fn((state, element))
            yield out

    def _graph_loop(self, body_fn, init_state, extra_test):
        def body(element, st):
            state, s = st
            state, out = self._fn((state, element))
            return state, tuple(body_fn(out, s))

        def test(st):
            return loops.test_value(extra_test, st[1])

        out = self._parent._graph_loop(body, (self._init, tuple(init_state)), test)
        return tuple(out[1])


class _Methods:
    def scan(self, initial_state, scan_func, name=None):
        """Threads a state through the elements: scan_func(state, element)
        returns (new_state, output element)."""
        return ScanDataset(self, initial_state, scan_func)


install_methods(DatasetV2, _Methods)
