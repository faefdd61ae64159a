"""The fields of kiln's ExtensionTypes: checking type annotations, converting values to the
declared types (TensorFlow's rules and error texts), and the encoding of field values as the
items of the ExtensionType's tuple, which the C++ function layer keys and rebuilds.

Encoded items are tensors, composite tensors, Python scalars and tuples of them; a TensorShape,
a DType and a Mapping become tagged tuples, so that equal values give equal trace keys.
"""
import collections.abc
import typing

from kiln import _kiln
from kiln._composite import CompositeTensor
from kiln.tensor_shape import TensorShape, as_shape

Tensor, Variable, TensorSpec, DType = _kiln.Tensor, _kiln.Variable, _kiln.TensorSpec, _kiln.DType
_NoneType = type(None)
_SCALARS = (int, float, bool, str, bytes, _NoneType)


class _Sentinel:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return self._name


NO_DEFAULT = _Sentinel("ExtensionTypeField.NO_DEFAULT")

# How a value is converted: an ExtensionType field, a Spec field, or a class-level default.
VALUE, SPEC, DEFAULT = "value", "spec", "default"


class ImmutableDict(collections.abc.Mapping):
    """The immutable Mapping that Mapping fields hold (TensorFlow's ImmutableDict)."""

    def __init__(self, *args, **kwargs):
        self._dict = dict(*args, **kwargs)

    def __getitem__(self, key):
        return self._dict[key]

    def __contains__(self, key):
        return key in self._dict

    def __iter__(self):
        return iter(self._dict)

    def __len__(self):
        return len(self._dict)

    def __repr__(self):
        return f"ImmutableDict({self._dict})"


class Field(typing.NamedTuple):
    """One declared field: name, type annotation and default (or NO_DEFAULT)."""
    name: str
    value_type: object
    default: object = NO_DEFAULT


# ---- type annotations ----

def _origin(tp):
    return getattr(tp, "__origin__", None)


def is_union(tp):
    return tp is not typing.Union and _origin(tp) is typing.Union or \
        type(tp).__name__ == "UnionType"


def is_tuple(tp):
    return tp not in (tuple, typing.Tuple) and _origin(tp) in (tuple, typing.Tuple)


def is_list(tp):
    return tp not in (list, typing.List) and _origin(tp) in (list, typing.List)


def is_mapping(tp):
    return tp not in (collections.abc.Mapping, typing.Mapping) and \
        _origin(tp) in (collections.abc.Mapping, typing.Mapping)


def is_forward_ref(tp):
    return isinstance(tp, (str, typing.ForwardRef))


def _is_composite_type(tp):
    try:
        return isinstance(tp, type) and issubclass(tp, CompositeTensor)
    except TypeError:
        return False


def validate_annotation(tp, in_mapping_key=False):
    """TypeError (TensorFlow's text) unless `tp` is an annotation ExtensionType fields support."""
    if is_forward_ref(tp):
        return
    if tp in (int, float, str, bytes, bool, None, _NoneType, DType):
        return
    if tp in (Tensor, TensorShape) or _is_composite_type(tp):
        if in_mapping_key:
            raise TypeError(f"Mapping had a key {tp.__name__!r} with type 'type'")
    elif is_tuple(tp) or is_union(tp):
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis and is_tuple(tp):
            validate_annotation(args[0], in_mapping_key)
        else:
            for arg in args:
                validate_annotation(arg, in_mapping_key)
    elif is_mapping(tp):
        key_type, value_type = typing.get_args(tp)
        validate_annotation(key_type, True)
        validate_annotation(value_type, in_mapping_key)
    elif isinstance(tp, type):
        raise TypeError(f"Unsupported type annotation {tp.__name__!r}")
    else:
        raise TypeError(f"Unsupported type annotation {tp!r}")


# ---- converting values to the declared types ----

def convert_fields(fields, values, context=VALUE):
    """values (a dict by field name) converted in place; ValueError for missing or extra
    fields, TypeError for a value of the wrong type (TensorFlow's texts)."""
    names = [f.name for f in fields]
    extra = set(values) - set(names)
    if extra:
        raise ValueError(f"Got unexpected fields: {extra}")
    missing = set(names) - set(values)
    if missing:
        raise ValueError(f"Missing required fields: {missing}")
    for f in fields:
        values[f.name] = convert_value(values[f.name], f.value_type, (f.name,), context)


def convert_value(value, tp, path, context=VALUE):
    """value as the annotation `tp` says (Tensor fields: convert_to_tensor; tuples and
    mappings element by element); a TypeError names the path."""
    where = "".join(path)
    if tp is None:
        tp = _NoneType
    if tp is Tensor:
        return _convert_tensor(value, where, context)
    if _is_composite_type(tp):
        return _convert_composite(value, tp, where, context)
    if tp is TensorShape:
        try:
            return as_shape(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{where}: expected 'tf.TensorShape', got "
                            f"{type(value).__name__!r}") from e
    if tp is DType:
        try:
            return _kiln.as_dtype(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{where}: expected 'tf.DType', got {type(value).__name__!r}") from e
    if tp in _SCALARS:
        if not isinstance(value, tp):
            raise TypeError(f"{where}: expected {tp.__name__!r}, got {type(value).__name__!r}")
        return value
    if is_tuple(tp):
        return _convert_tuple(value, tp, path, context)
    if is_mapping(tp):
        return _convert_mapping(value, tp, path, context)
    if is_union(tp):
        return _convert_union(value, tp, path, context)
    if is_forward_ref(tp):
        raise TypeError(f"{where}: unresolved forward reference {tp!r}")
    raise TypeError(f"{where}: Unsupported type annotation {tp!r}")


def _convert_tensor(value, where, context):
    if context == SPEC:
        if not isinstance(value, TensorSpec):
            raise TypeError(f"{where}: expected a TensorSpec, got {type(value).__name__!r}")
        return value
    if isinstance(value, Variable):
        return value.read_value()
    if isinstance(value, Tensor) or (context == DEFAULT):
        return value  # a default stays a Python value until a constructor converts it
    try:
        return _kiln.convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{where}: expected a Tensor, got {type(value).__name__!r}") from e


def _convert_composite(value, tp, where, context):
    if context == SPEC:
        value_type = getattr(value, "value_type", None)
        if not (isinstance(value_type, type) and issubclass(value_type, tp)):
            raise TypeError(f"{where}: expected a TypeSpec for {tp.__name__!r}, got "
                            f"{type(value).__name__!r}")
        return value
    if not isinstance(value, tp):
        raise TypeError(f"{where}: expected {tp.__name__!r}, got {type(value).__name__!r}")
    return value


def _convert_tuple(value, tp, path, context):
    if not isinstance(value, collections.abc.Sequence):
        raise TypeError(f"{''.join(path)}: expected tuple, got {type(value).__name__!r}")
    types = typing.get_args(tp)
    if len(types) == 2 and types[1] is Ellipsis:
        return tuple(convert_value(v, types[0], path + (f"[{i}]",), context)
                     for i, v in enumerate(value))
    if len(value) != len(types):
        raise TypeError(f"{''.join(path)}: expected tuple with length {len(types)}, got "
                        f"{type(value).__name__!r})")
    return tuple(convert_value(v, t, path + (f"[{i}]",), context)
                 for i, (v, t) in enumerate(zip(value, types)))


def _convert_mapping(value, tp, path, context):
    if not isinstance(value, collections.abc.Mapping):
        raise TypeError(f"{''.join(path)}: expected mapping, got {type(value).__name__!r}")
    key_type, value_type = typing.get_args(tp)
    return ImmutableDict(
        (convert_value(k, key_type, path + ("[<key>]",), context),
         convert_value(v, value_type, path + (f"[{k!r}]",), context)) for k, v in value.items())


def _convert_union(value, tp, path, context):
    for option in typing.get_args(tp):
        try:
            return convert_value(value, option, path, context)
        except TypeError:
            pass
    raise TypeError(f"{''.join(path)}: expected {tp!r}, got {type(value).__name__!r}")


# ---- the tuple items the C++ function layer sees ----

_SHAPE, _DTYPE, _MAPPING = "<TensorShape>", "<DType>", "<Mapping>"


def encode(value):
    """A field value as a tuple item: tensors, composites, scalars and (tagged) tuples."""
    if isinstance(value, (Tensor, CompositeTensor, TensorSpec)) or type(value) in _SCALARS:
        return value
    if isinstance(value, TensorShape):
        return (_SHAPE, None if value.rank is None else tuple(value.as_list()))
    if isinstance(value, DType):
        return (_DTYPE, value.name)
    if isinstance(value, collections.abc.Mapping):
        return (_MAPPING, tuple((k, encode(v)) for k, v in value.items()))
    if isinstance(value, tuple):
        return tuple(encode(v) for v in value)
    return value


def decode(item):
    """The field value of an encoded tuple item (as the C++ layer hands it back)."""
    if type(item) is tuple:
        if len(item) == 2 and type(item[0]) is str:
            tag, body = item
            if tag == _SHAPE:
                return TensorShape(body)
            if tag == _DTYPE:
                return _kiln.as_dtype(body)
            if tag == _MAPPING:
                return ImmutableDict((k, decode(v)) for k, v in body)
        return tuple(decode(x) for x in item)
    return item


# What leaves() and replace_leaves() stop at; _spec adds ExtensionTypeSpec (a nested
# ExtensionType's Spec is one component of its parent's Spec).
_LEAF_TYPES = (Tensor, CompositeTensor, TensorSpec)


def add_leaf_type(cls):
    global _LEAF_TYPES
    _LEAF_TYPES = _LEAF_TYPES + (cls,)


def leaves(value):
    """The tensors and composite tensors in a field value, in order (tuples and mappings
    walked): what tf.nest.flatten(..., expand_composites=True) expands."""
    if isinstance(value, _LEAF_TYPES):
        return [value]
    if isinstance(value, collections.abc.Mapping):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, tuple):
        return [x for v in value for x in leaves(v)]
    return []


def replace_leaves(value, it):
    """value with each tensor / composite leaf replaced by the next of iterator `it`."""
    if isinstance(value, _LEAF_TYPES):
        return next(it)
    if isinstance(value, collections.abc.Mapping):
        return ImmutableDict((k, replace_leaves(v, it)) for k, v in value.items())
    if isinstance(value, tuple):
        return tuple(replace_leaves(v, it) for v in value)
    return value
