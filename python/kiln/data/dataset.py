"""kiln.data.Dataset: the base class and the source datasets (tf.data subset).

Every dataset knows its element_spec and how to iterate eagerly. Datasets
whose element i can be computed from i (tensor slices, ranges and map / batch /
take / skip / repeat / enumerate / zip chains of them) are index-addressable:
inside a kiln.function a `for` over them becomes one while_loop over an index.
The others are pulled from Python at run time through PyFunction ops.
"""
import numpy as np

from kiln import _kiln, errors, nest
from kiln.control_flow import TensorArray, while_loop
from kiln.data import composite, composite_slices, extension, loops, structure
from kiln.data.iterator import DatasetIterator
from kiln.tensor_shape import TensorShape, as_shape

_raw = _kiln.raw
TensorSpec = _kiln.TensorSpec

INFINITE = -1
UNKNOWN = -2
_INT64 = _kiln.as_dtype("int64")


def _tracing():
    return not _kiln.executing_eagerly()


class DatasetV2:
    """A sequence of elements, each a nested structure of tensors (tf.data.Dataset).

    Build one with from_tensor_slices, from_tensors, from_generator or range,
    transform it (map, filter, batch, take, skip, repeat, ...) and iterate with
    a Python `for` (eagerly or in a kiln.function) or iter()/next()."""

    _name = "Dataset"
    _indexable = False

    def __init__(self, spec, cardinality, symbolic=False):
        self._spec = spec
        self._card = cardinality
        self._symbolic = symbolic

    # ---- what subclasses provide ----

    def _eager_iter(self):
        """A Python iterator over the elements (eager tensors)."""
        raise NotImplementedError

    def _num_elements(self):
        """The number of elements as an int64 scalar tensor (indexable only)."""
        if self._card >= 0:
            return loops.int64(self._card)
        if self._card == INFINITE:
            return loops.int64(loops.INT64_MAX)
        raise NotImplementedError

    def _element_at(self, i):
        """Element i (int64 scalar tensor), for index-addressable datasets."""
        raise NotImplementedError

    def _slice(self, start, end):
        """Elements [start, end) stacked along a new first dimension."""
        if structure.has_composites(self._spec):
            return composite_slices.slice_elements(self, start, end)
        flat_specs = nest.flatten(self._spec)
        size = _raw.Cast(end - start, DstT=_kiln.as_dtype("int32"))
        tas = tuple(TensorArray(s.dtype, size=size) for s in flat_specs)

        def c(j, tas):
            return _raw.Less(j, size)

        def b(j, tas):
            flat = nest.flatten(self._element_at(start + _raw.Cast(j, DstT=_INT64)))
            return j + 1, tuple(ta.write(j, v) for ta, v in zip(tas, flat))

        _, tas = while_loop(c, b, (structure.to_tensor(np.int32(0)), tas))
        stacked = [structure.ensure_shape(ta.stack(), s)
                   for ta, s in zip(tas, nest.flatten(structure.relax_leading(self._spec)))]
        return nest.pack_sequence_as(self._spec, stacked)

    def _graph_loop(self, body_fn, init_state, extra_test):
        """The traced loop: by index when possible, else pulled at run time."""
        if self._indexable:
            return loops.index_loop(self, body_fn, init_state, extra_test)
        self._check_runnable("iterating")
        self._check_tensor_elements()
        return loops.stream_loop(self._spec, body_fn, init_state, extra_test,
                                 f"{self._name} iterator", make_iterator=self._eager_iter)

    def _inputs(self):
        """The datasets this one reads (for options())."""
        parent = getattr(self, "_parent", None)
        return [parent] if isinstance(parent, DatasetV2) else []

    def _check_tensor_elements(self):
        if any(not isinstance(s, TensorSpec) and not composite.is_composite_spec(s)
               for s in nest.flatten(self._spec)):
            raise NotImplementedError(
                f"iterating a {self._name} whose elements are datasets is not supported "
                "inside a kiln.function; flat_map or interleave them into tensors first")

    def _check_runnable(self, what):
        if self._symbolic:
            raise NotImplementedError(
                f"{what} a {self._name} built from tensors of a traced function is not "
                "supported inside the function (its elements would be pulled in Python at "
                "run time); build the dataset outside the function or use only "
                "from_tensor_slices/range/map/batch/take/skip/repeat/enumerate/filter/zip")

    # ---- the TensorFlow API ----

    @property
    def element_spec(self):
        """The structure of TensorSpecs of one element."""
        return self._spec

    def cardinality(self):
        """Number of elements as an int64 scalar tensor; -1 (INFINITE_CARDINALITY)
        for infinite, -2 (UNKNOWN_CARDINALITY) when unknown without iterating."""
        if self._card != UNKNOWN or not self._indexable:
            return loops.int64(self._card)
        return self._num_elements()

    def __len__(self):
        if _tracing():
            raise TypeError("len() of a dataset is not supported while tracing a function; "
                            "use dataset.cardinality()")
        n = self._card
        if n == UNKNOWN and self._indexable:
            n = int(self._num_elements().numpy())
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True

    def __iter__(self):
        """An iterator over the elements (eagerly; inside a traced function, each
        next() becomes an op pulling one element when the graph runs)."""
        return DatasetIterator(self)

    def as_numpy_iterator(self):
        """Iterates the elements as NumPy values (eager only)."""
        if _tracing():
            raise RuntimeError("as_numpy_iterator() is only supported in eager mode, not "
                               "while tracing a function")
        composite.check_numpy(self._spec)

        def gen():
            for el in self._eager_iter():
                yield nest.map_structure(_numpy, el)
        return gen()

    def _kiln_for_loop(self, body_fn, init_state, extra_test):
        """AutoGraph's `for element in dataset`: body_fn(element, state) -> state;
        extra_test(state) (or None) -> whether to go on. Returns the final state."""
        if not _tracing():
            return loops.eager_loop(self._eager_iter(), body_fn, init_state, extra_test)
        return self._graph_loop(body_fn, init_state, extra_test)

    def reduce(self, initial_state, reduce_func, name=None):
        """Folds the elements: state = reduce_func(state, element)."""
        init = structure.normalize_element(initial_state, "reduce initial_state")
        if not callable(reduce_func):
            raise TypeError(f"reduce: reduce_func must be callable, got {reduce_func!r}")

        def body(element, state):
            out = reduce_func(state[0], element)
            return (structure.normalize_element(out, "reduce_func result"),)
        return self._kiln_for_loop(body, (init,), None)[0]

    def apply(self, transformation_func):
        """transformation_func(self), which must return a dataset."""
        out = transformation_func(self)
        if not isinstance(out, DatasetV2):
            raise TypeError(f"apply: the transformation must return a Dataset, got {out!r}")
        return out

    # Transformations (map, filter, batch, ... in kiln.data.transforms; interleave,
    # window, padded_batch, scan, save, with_options, ... in the modules beside it)
    # are methods too: each module defines its datasets and installs the methods.

    # sources

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """One element per slice along the first dimension of the tensors (a
        tensor, array, list, or a tuple/dict structure of them)."""
        return TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset of one element: tensors."""
        return TensorDataset(tensors)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """Elements yielded by generator(*args) (a callable returning an iterable),
        converted to output_signature (or output_types/output_shapes)."""
        return GeneratorDataset(generator, output_types, output_shapes, args,
                                output_signature)

    @staticmethod
    def range(*args, **kwargs):
        """range(stop), range(start, stop[, step]) like Python's; int64 elements
        unless output_type (or dtype) says otherwise."""
        return RangeDataset(*args, **kwargs)

    def __repr__(self):
        def shape(s):
            return str(s.shape) if isinstance(s, TensorSpec) else repr(s)

        def dtype(s):
            return repr(s.dtype) if isinstance(s, TensorSpec) else repr(s)
        shapes = structure.format_structure(self._spec, shape)
        types = structure.format_structure(self._spec, dtype)
        return f"<{self._name} shapes: {shapes}, types: {types}>"


Dataset = DatasetV2


def install_methods(cls, methods):
    """Copies the methods (and staticmethods) of class `methods` onto cls."""
    for name, value in vars(methods).items():
        if name.startswith("__"):
            continue
        fn = value.__func__ if isinstance(value, staticmethod) else value
        fn.__qualname__ = f"{cls.__name__}.{name}"
        setattr(cls, name, value)


def _numpy(t):
    return t.numpy() if isinstance(t, _kiln.Tensor) else composite.to_numpy(t)


def _symbolic_any(element):
    return any(structure.is_symbolic(t) for t in nest.flatten(element, expand_composites=True))


def _slice_spec(t):
    if isinstance(t, _kiln.Tensor):
        return TensorSpec(t.shape[1:] if t.shape.rank is not None else TensorShape(None),
                          t.dtype)
    return composite.unbatch_spec(structure.spec_of(t))


class TensorSliceDataset(DatasetV2):
    _name = "TensorSliceDataset"
    _indexable = True

    def __init__(self, tensors):
        element = structure.normalize_element(tensors, "from_tensor_slices")
        spec = nest.map_structure(_slice_spec, element)
        flat = nest.flatten(element)
        if not flat:
            raise ValueError("from_tensor_slices: needs at least one tensor")
        n = None
        for i, t in enumerate(composite.sized_leaves(flat)):
            shape = t.shape
            if shape.rank == 0:
                raise errors.InvalidArgumentError(
                    f"from_tensor_slices: component {i} is a scalar (shape ()); slicing needs "
                    "at least one dimension")
            d = shape[0] if shape.rank is not None else None
            if d is not None:
                if n is not None and d != n[0]:
                    raise errors.InvalidArgumentError(
                        "from_tensor_slices: all components must have the same size in their "
                        f"first dimension; component {n[1]} has {n[0]} "
                        f"(shape {n[2]}) but component {i} has {d} (shape {shape})")
                n = (d, i, shape) if n is None else n
        super().__init__(spec, n[0] if n is not None else UNKNOWN, _symbolic_any(element))
        self._flat = flat

    def _num_elements(self):
        if self._card >= 0:
            return loops.int64(self._card)
        return composite.nrows_tensor(self._flat[0])

    def _element_at(self, i):
        return nest.pack_sequence_as(self._spec, [composite.row(t, i) for t in self._flat])

    def _slice(self, start, end):
        return nest.pack_sequence_as(self._spec,
                                     [composite.rows(t, start, end) for t in self._flat])

    def _eager_iter(self):
        n = len(self)
        for i in range(n):
            yield nest.pack_sequence_as(self._spec, [composite.row(t, i) for t in self._flat])


class TensorDataset(DatasetV2):
    _name = "TensorDataset"
    _indexable = True

    def __init__(self, tensors):
        element = structure.normalize_element(tensors, "from_tensors")
        super().__init__(structure.specs_of(element), 1, _symbolic_any(element))
        self._element = element

    def _element_at(self, i):
        return self._element

    def _slice(self, start, end):
        return nest.map_structure(_stack_one, self._element, self._spec)

    def _eager_iter(self):
        yield self._element


def _stack_one(t, spec):
    if composite.is_composite_spec(spec):
        return composite.batch(spec, [t])
    return _raw.Pack([t], axis=0)


def _range_arg(v, what):
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"range: {what} must be an integer, got {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (_kiln.Tensor, _kiln.Variable)):
        t = structure.to_tensor(v)
        if not t.dtype.is_integer or t.shape.rank not in (0, None):
            raise TypeError(f"range: {what} must be an integer scalar, got {t!r}")
        if not t.is_symbolic:
            return int(t.numpy())
        return loops.int64(t)
    raise TypeError(f"range: {what} must be an integer, got {v!r}")


class RangeDataset(DatasetV2):
    _name = "RangeDataset"
    _indexable = True

    def __init__(self, *args, output_type=None, dtype=None, name=None):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range() takes 1 to 3 positional arguments, got {len(args)}")
        if len(args) == 1:
            args = (0, args[0], 1)
        elif len(args) == 2:
            args = (args[0], args[1], 1)
        start, stop, step = (_range_arg(a, w) for a, w in zip(args, ("start", "stop", "step")))
        if isinstance(step, int) and step == 0:
            raise errors.InvalidArgumentError("range: step must be a non-zero integer")
        out = output_type if output_type is not None else dtype
        self._dtype = _kiln.as_dtype(out) if out is not None else _INT64
        if not (self._dtype.is_integer or self._dtype.is_floating):
            raise TypeError(f"range: output_type must be numeric, got {self._dtype.name}")
        static = all(isinstance(a, int) for a in (start, stop, step))
        card = len(range(start, stop, step)) if static else UNKNOWN
        self._args = (start, stop, step)
        super().__init__(TensorSpec([], self._dtype), card, not static)

    def _num_elements(self):
        if self._card >= 0:
            return loops.int64(self._card)
        start, stop, step = (loops.int64(a) for a in self._args)
        n = -_raw.FloorDiv(start - stop, step)  # ceil((stop - start) / step)
        return _raw.Maximum(n, loops.int64(0))

    def _cast(self, t):
        return t if self._dtype == _INT64 else _raw.Cast(t, DstT=self._dtype)

    def _element_at(self, i):
        start, _, step = (loops.int64(a) for a in self._args)
        return self._cast(start + i * step)

    def _slice(self, s, e):
        start, _, step = (loops.int64(a) for a in self._args)
        return self._cast(_raw.Range(start + s * step, start + e * step, step))

    def _eager_iter(self):
        start, stop, step = self._args
        np_dtype = self._dtype.as_numpy_dtype
        for v in range(start, stop, step):
            yield structure.to_tensor(np.asarray(v, dtype=np_dtype), self._dtype)


def _lists_to_tuples(x):
    if isinstance(x, list):
        return tuple(_lists_to_tuples(c) for c in x)
    if isinstance(x, dict):
        return {k: _lists_to_tuples(v) for k, v in x.items()}
    return x


def _signature_from(output_types, output_shapes, output_signature):
    output_types = _lists_to_tuples(output_types)
    output_signature = _lists_to_tuples(output_signature)
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError("from_generator: give either output_signature or "
                            "output_types/output_shapes, not both")
        for s in nest.flatten(output_signature):
            if not isinstance(s, TensorSpec) and not extension.is_spec(s):
                raise TypeError("from_generator: output_signature must be a structure of "
                                f"kiln.TensorSpec or ExtensionType Specs, got {s!r}")
        return output_signature
    if output_types is None:
        if output_shapes is not None:
            raise TypeError("from_generator: output_shapes needs output_types")
        raise TypeError("from_generator: output_signature (or output_types) is required")
    try:
        types = nest.map_structure(_kiln.as_dtype, output_types)
    except (TypeError, ValueError) as e:
        raise TypeError(f"from_generator: output_types must be a structure of dtypes, got "
                        f"{output_types!r}: {e}") from None
    if output_shapes is None:
        return nest.map_structure(lambda t: TensorSpec(TensorShape(None), t), types)
    flat_types = nest.flatten(types)

    def what(t, v):
        return (f"from_generator: output_shapes {output_shapes!r} does not match the "
                f"structure of output_types {output_types!r}")
    if nest.is_nested(types):
        shapes = structure.flatten_up_to(types, output_shapes, what)
    else:
        shapes = [output_shapes]
    specs = []
    for t, s in zip(flat_types, shapes):
        try:
            specs.append(TensorSpec(as_shape(s), t))
        except (TypeError, ValueError) as e:
            raise TypeError(f"from_generator: bad shape {s!r} in output_shapes: {e}") from None
    return nest.pack_sequence_as(types, specs)


class GeneratorDataset(DatasetV2):
    _name = "FlatMapDataset"  # tf.data's name for from_generator datasets

    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError(f"from_generator: generator must be a Python callable, got "
                            f"{generator!r}")
        spec = _signature_from(output_types, output_shapes, output_signature)
        self._generator = generator
        if args is None:
            self._args = ()
        else:
            if not isinstance(args, (list, tuple)):
                raise TypeError("from_generator: args must be a tuple of values")
            self._args = tuple(structure.to_tensor(a) for a in args)
        super().__init__(spec, UNKNOWN, any(structure.is_symbolic(a) for a in self._args))

    def _eager_iter(self):
        args = [a.numpy() for a in self._args]
        values = self._generator(*args)
        try:
            it = iter(values)
        except TypeError:
            raise TypeError(f"from_generator: generator() must return an iterable, got "
                            f"{type(values).__name__}") from None
        for value in it:
            yield self._convert(value)

    def _convert(self, value):
        spec = self._spec

        def what(t, v):
            expected = structure.format_structure(spec, lambda s: repr(s.dtype))
            return ("`generator` yielded an element that did not match the expected "
                    f"structure. The expected structure was {expected}, but the yielded "
                    f"element was {v!r}.")
        if nest.is_nested(spec):
            flat = structure.flatten_up_to(spec, value, what)
        else:
            flat = [value]
        out = []
        for s, v in zip(nest.flatten(spec), flat):
            if extension.is_spec(s):
                out.append(extension.from_generated(v, s))
                continue
            if isinstance(v, (_kiln.Tensor, _kiln.Variable)):
                v = structure.to_tensor(v).numpy()
            arr = structure.check_dtype_conversion(v, s.dtype)
            if arr is None:
                raise TypeError(
                    "`generator` yielded an element that could not be converted to the "
                    f"expected type. The expected type was {s.dtype.name}, but the yielded "
                    f"element was {_short(v)}.")
            if not s.shape.is_compatible_with(TensorShape(arr.shape)):
                raise errors.InvalidArgumentError(
                    f"`generator` yielded an element of shape {TensorShape(arr.shape)} where "
                    f"an element of shape {s.shape} was expected.")
            out.append(structure.to_tensor(arr, s.dtype))
        return nest.pack_sequence_as(spec, out)


def _short(v):
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
