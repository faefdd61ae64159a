"""Datasets as elements (tf.data.DatasetSpec): the materialized datasets that
window() and group_by_window() hand out, and user functions that return a
dataset (interleave, flat_map, group_by_window's reduce_func).

A function returning a dataset is traced once on a stand-in of the element
(symbolic tensors, and a spec-only dataset for each nested dataset) to learn
the element_spec of what it returns; then it is called eagerly, in Python, on
each element. Datasets of datasets iterate eagerly only."""
from kiln import _kiln, errors, nest
from kiln.data import functions, structure
from kiln.data.dataset import UNKNOWN, DatasetV2
from kiln.tensor_shape import as_shape

TensorSpec = _kiln.TensorSpec


class DatasetSpec:
    """The type of a dataset used as a value (tf.data.DatasetSpec): the
    element_spec of its elements."""

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = as_shape(dataset_shape)

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def value_type(self):
        return DatasetV2

    @staticmethod
    def from_value(value):
        """The DatasetSpec of a dataset."""
        return DatasetSpec(value.element_spec)

    def is_compatible_with(self, spec_or_value):
        other = spec_or_value
        if isinstance(other, DatasetV2):
            other = DatasetSpec.from_value(other)
        if not isinstance(other, DatasetSpec):
            return False
        try:
            nest.assert_same_structure(self._element_spec, other._element_spec)
        except (TypeError, ValueError):
            return False
        return all(_compatible(a, b) for a, b in zip(nest.flatten(self._element_spec),
                                                     nest.flatten(other._element_spec)))

    def __eq__(self, other):
        return (isinstance(other, DatasetSpec) and
                repr(self._element_spec) == repr(other._element_spec) and
                self._dataset_shape == other._dataset_shape)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return f"DatasetSpec({self._element_spec!r}, {self._dataset_shape!r})"


def _compatible(a, b):
    if isinstance(a, DatasetSpec):
        return a.is_compatible_with(b)
    return isinstance(b, TensorSpec) and a.is_compatible_with(b)


def has_datasets(spec):
    """Whether any leaf of an element_spec is a DatasetSpec."""
    return any(isinstance(s, DatasetSpec) for s in nest.flatten(spec))


class ListDataset(DatasetV2):
    """A dataset over a Python list of elements already computed (a window,
    a group of group_by_window, the shards of a saved dataset)."""

    _name = "_VariantDataset"  # tf.data's name for datasets passed as values

    def __init__(self, elements, spec):
        super().__init__(spec, len(elements))
        self._elements = list(elements)

    def _eager_iter(self):
        return iter(self._elements)


class SpecDataset(DatasetV2):
    """A stand-in with only an element_spec, for tracing user functions."""

    _name = "_VariantDataset"

    def __init__(self, spec):
        super().__init__(spec, UNKNOWN, symbolic=True)

    def _eager_iter(self):
        raise errors.InternalError("a dataset stand-in of a traced function was iterated")


def _stand_in(spec):
    if isinstance(spec, DatasetSpec):
        return SpecDataset(spec.element_spec)
    raise TypeError(f"unsupported element spec {spec!r}")


def probe(fn, input_spec, who):
    """fn's result on a traced stand-in of an element of input_spec."""
    if not callable(fn):
        raise TypeError(f"{who}: expected a callable, got {fn!r}")
    return functions.probe(fn, input_spec, _stand_in, who)


def type_of(value):
    """What a user function returned, as tf.data names it in errors."""
    if isinstance(value, DatasetV2):
        return DatasetSpec.from_value(value)
    if isinstance(value, (_kiln.Tensor, _kiln.Variable)):
        return structure.spec_of(structure.to_tensor(value))
    return type(value)


class DatasetFunction:
    """A user function from an element to a dataset (interleave, flat_map):
    traced once for the result's element_spec, then called on each element."""

    def __init__(self, fn, input_spec, who):
        out = probe(fn, input_spec, who)
        if not isinstance(out, DatasetV2):
            kind = type(out)
            if isinstance(out, (_kiln.Tensor, _kiln.Variable)):
                kind = _kiln.Tensor
            raise TypeError(f"The `map_func` argument must return a `Dataset` object. Got "
                            f"{kind!r}.")
        self._fn = fn
        self.output_spec = out.element_spec
        self.who = who

    def __call__(self, element):
        out = functions.call_unpacked(self._fn, element)
        if not isinstance(out, DatasetV2):
            raise TypeError(f"{self.who}: map_func returned {type(out).__name__} for an "
                            "element, not a Dataset")
        return out


def _spec_of_result(value):
    if isinstance(value, DatasetV2):
        return DatasetSpec.from_value(value)
    return structure.spec_of(structure.to_tensor(value))


class NestedMapDataset(DatasetV2):
    """map() over elements holding datasets (e.g. window()'s): map_func is
    traced once for the result's spec, then called eagerly on each element."""

    _name = "MapDataset"

    def __init__(self, parent, map_func):
        out = probe(map_func, parent.element_spec, "Dataset.map()")
        out = functions.as_structure(out)
        super().__init__(nest.map_structure(_spec_of_result, out), parent._card,
                         parent._symbolic)
        self._parent, self._fn = parent, map_func

    def _eager_iter(self):
        for element in self._parent._eager_iter():
            out = functions.as_structure(functions.call_unpacked(self._fn, element))
            yield nest.map_structure(
                lambda v: v if isinstance(v, DatasetV2) else structure.to_tensor(v), out)
