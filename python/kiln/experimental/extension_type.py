"""tf.experimental.ExtensionType: user-defined immutable types with typed fields that work
with kiln's APIs.

An ExtensionType value is a kiln composite tensor (`kiln._composite.CompositeTensor`): a tuple
of its encoded field values (`_fields.encode`) plus a marker item, with `_fields` naming them.
The C++ function layer treats it as a namedtuple: as a `kiln.function` argument it is keyed by
its tensors' dtypes and shapes and by its other fields' values (one trace per Spec), and it is
rebuilt with ``type(**items)``; the marker tells the metaclass that such a call rebuilds a
value from its items (no user constructor, no `__validate__`, as TensorFlow's
`_from_components`). The fields themselves live in the instance `__dict__`.
"""
import inspect
import typing

from kiln import _kiln
from kiln._composite import CompositeTensor
from kiln.experimental import _fields, _spec
from kiln.ops import array_ops, math_ops
from kiln.control_flow import cond

Tensor = _kiln.Tensor
IN_CONSTRUCTOR = _spec.IN_CONSTRUCTOR
_MARKER = "<kiln.ExtensionType>"
_MARKER_FIELD = "_kiln_extension_type"
_RESERVED = ("self", "Spec", "_type_spec", "_fields", _MARKER_FIELD)


class ConversionError(TypeError, ValueError):
    """An ExtensionType value where a Tensor is needed: TensorFlow's ValueError, and a
    TypeError as kiln's other unconvertible values."""


class ExtensionTypeMetaclass(type):
    """Builds each ExtensionType subclass (fields, constructor, Spec) and constructs its
    values (a user constructor runs on a scratch instance, then the value is built)."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        if namespace.get("_tf_extension_type_do_not_transform_this_class", False):
            return
        _check_annotations(cls)
        fields = cls._tf_extension_type_fields()
        cls._fields = tuple(f.name for f in fields) + (_MARKER_FIELD,)
        if "__init__" not in namespace:
            cls.__init__ = _generated_init(cls, fields)
        init = inspect.signature(cls.__init__)
        cls.__signature__ = init.replace(parameters=list(init.parameters.values())[1:])
        base = _spec.BatchableExtensionTypeSpec if issubclass(cls, BatchableExtensionType) \
            else _spec.ExtensionTypeSpec
        cls.Spec = _spec.make_spec_class(cls, namespace.get("Spec"), base)

    def __call__(cls, *args, **kwargs):
        rebuilt = _rebuilt(cls, args, kwargs)
        if rebuilt is not None:
            return rebuilt
        if cls.__dict__.get("_tf_extension_type_do_not_transform_this_class", False):
            raise AssertionError(f"Cannot create an instance of {cls.__name__} because "
                                 f"{cls.__name__} is an abstract base class.")
        scratch = tuple.__new__(cls)
        scratch.__dict__[IN_CONSTRUCTOR] = True
        cls.__init__(scratch, *args, **kwargs)
        del scratch.__dict__[IN_CONSTRUCTOR]
        values = dict(scratch.__dict__)
        _fields.convert_fields(cls._tf_extension_type_fields(), values)
        value = cls._kiln_from_fields(values)
        value.__validate__()
        return value


def _rebuilt(cls, args, kwargs):
    """The value the C++ layer asks for with ``type(**items)`` (or kiln's Python code with
    ``type(*items)``), or None for a user's constructor call."""
    if kwargs.get(_MARKER_FIELD) == _MARKER:
        items = {k: v for k, v in kwargs.items() if k != _MARKER_FIELD}
    elif args and len(args) == len(cls._fields) and type(args[-1]) is str and \
            args[-1] == _MARKER and not kwargs:
        items = dict(zip(cls._fields[:-1], args))
    else:
        return None
    return cls._kiln_from_fields({k: _fields.decode(v) for k, v in items.items()})


def _check_annotations(cls):
    for name, tp in cls.__dict__.get("__annotations__", {}).items():
        if name in _RESERVED or name.lower().startswith("_tf_extension_type"):
            raise ValueError(f"The field annotations for {cls.__name__} are invalid. "
                             f"Field {name} is reserved.")
        try:
            _fields.validate_annotation(tp)
        except TypeError as e:
            raise TypeError(f"In field {name!r}: {e}") from e


def _generated_init(cls, fields):
    """The constructor TensorFlow generates: one parameter per field, in order; fields after
    one with a default and without a default of their own are keyword-only."""
    params, got_default, keyword_only = [], False, False
    for f in fields:
        if got_default and f.default is _fields.NO_DEFAULT:
            keyword_only = True
        got_default = got_default or f.default is not _fields.NO_DEFAULT
        kind = inspect.Parameter.KEYWORD_ONLY if keyword_only else \
            inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = inspect.Parameter.empty if f.default is _fields.NO_DEFAULT else f.default
        params.append(inspect.Parameter(f.name, kind, default=default, annotation=f.value_type))
    signature = inspect.Signature(params, return_annotation=cls)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        self.__dict__.update(bound.arguments)

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + params,
        return_annotation=cls)
    return __init__


def _rebuild(cls, fields):
    return cls._kiln_from_fields(fields)


class ExtensionType(CompositeTensor, metaclass=ExtensionTypeMetaclass):
    """Base class of user-defined extension types (tf.experimental.ExtensionType).

    Declare fields with type annotations (Tensor, int/float/str/bool/None, TensorShape, DType,
    Tuple, Mapping, Union/Optional, nested ExtensionTypes); the class gets a constructor that
    converts and checks them, `__repr__`, `__eq__`, `__validate__`, immutability and a nested
    `Spec` class."""

    _tf_extension_type_do_not_transform_this_class = True
    _fields = ()

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def _tf_extension_type_fields(cls):
        cached = cls.__dict__.get("_tf_extension_type_cached_fields")
        if cached is not None:
            return cached
        hints, resolved = _type_hints(cls)
        fields = []
        for name, tp in hints.items():
            default = _default(cls, name)
            if default is not _fields.NO_DEFAULT and not _fields.is_forward_ref(tp):
                default = _convert_default(name, default, tp)
            fields.append(_fields.Field(name, tp, default))
        fields = tuple(fields)
        if resolved:
            type.__setattr__(cls, "_tf_extension_type_cached_fields", fields)
        return fields

    @classmethod
    def _tf_extension_type_has_field(cls, name):
        return any(f.name == name for f in cls._tf_extension_type_fields())

    @classmethod
    def _kiln_from_fields(cls, fields):
        """A value of cls with these (already converted) fields; no constructor, no checks."""
        names = [f.name for f in cls._tf_extension_type_fields()]
        value = tuple.__new__(cls, [_fields.encode(fields[n]) for n in names] + [_MARKER])
        value.__dict__.update((n, fields[n]) for n in names)
        return value

    def _field_values(self):
        return {f.name: self.__dict__[f.name] for f in self._tf_extension_type_fields()}

    def __validate__(self):
        """Post-construction checks on the converted fields (override to add some)."""

    @property
    def _type_spec(self):
        return type(self).Spec.from_value(self)

    def __setattr__(self, name, value):
        if self.__dict__.get(IN_CONSTRUCTOR) and self._tf_extension_type_has_field(name):
            self.__dict__[name] = value
        else:
            raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom "
                                 "constructor of ExtensionType.")

    def __delattr__(self, name):
        if self.__dict__.get(IN_CONSTRUCTOR) and self._tf_extension_type_has_field(name):
            del self.__dict__[name]
        else:
            raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom "
                                 "constructor of ExtensionType.")

    def __repr__(self):
        text = ", ".join(f"{f.name}={getattr(self, f.name)!r}"
                         for f in self._tf_extension_type_fields())
        return f"{type(self).__qualname__}({text})"

    def __eq__(self, other):
        if type(self) is not type(other) or self._type_spec != other._type_spec:
            return False
        return _all_equal(_flat_tensors(self), _flat_tensors(other))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return math_ops.logical_not(eq) if isinstance(eq, Tensor) else not eq

    __hash__ = None  # unhashable, as TensorFlow's (its __eq__ is elementwise)

    # Not a sequence: Python's own texts for what a plain object lacks.
    def __getitem__(self, key):
        raise TypeError(f"'{type(self).__name__}' object is not subscriptable")

    def __len__(self):
        raise TypeError(f"object of type '{type(self).__name__}' has no len()")

    def __iter__(self):
        # Also what kiln's tensor conversion meets (it walks tuples): TensorFlow's text.
        raise ConversionError(f"Attempt to convert a value ({self!r}) with an unsupported "
                              f"type ({type(self)}) to a Tensor.")

    def __contains__(self, item):
        raise TypeError(f"argument of type '{type(self).__name__}' is not iterable")

    def __bool__(self):
        return True

    def __reduce__(self):
        return (_rebuild, (type(self), self._field_values()))

    def _map_values(self, fn):
        self.__iter__()

    def _kiln_nest_components(self):
        return [x for v in self._field_values().values() for x in _fields.leaves(v)]

    def _kiln_nest_rebuild(self, components):
        it = iter(components)
        return type(self)._kiln_from_fields(
            {k: _fields.replace_leaves(v, it) for k, v in self._field_values().items()})


class BatchableExtensionType(ExtensionType):
    """An ExtensionType whose values can hold a batch of values (every tensor gets a leading
    batch dimension); its Spec has `_batch` / `_unbatch`
    (tf.experimental.BatchableExtensionType)."""

    _tf_extension_type_do_not_transform_this_class = True


def _type_hints(cls):
    """({field name: annotation}, whether every forward reference resolved)."""
    try:
        return typing.get_type_hints(cls, localns={cls.__name__: cls}), True
    except (NameError, AttributeError):
        hints = {}
        for base in reversed(cls.__mro__):
            hints.update(base.__dict__.get("__annotations__", {}))
        return hints, False


def _default(cls, name):
    """The class-level default of a field, from the user's classes only (a field named like
    a tuple method, `count`, has none)."""
    for base in cls.__mro__:
        if issubclass(base, ExtensionType) and name in base.__dict__ and \
                not base.__dict__.get("_tf_extension_type_do_not_transform_this_class"):
            return base.__dict__[name]
    return _fields.NO_DEFAULT


def _convert_default(name, default, tp):
    return _fields.convert_value(default, tp, (f"default value for {name}",), _fields.DEFAULT)


def _flat_tensors(value):
    out = []
    for x in value._kiln_nest_components():
        out.extend(_flat_tensors(x) if isinstance(x, ExtensionType) else [x])
    return out


def _all_equal(xs, ys):
    """A scalar bool tensor: every pair has the same shape and equal elements."""
    conditions = []
    for a, b in zip(xs, ys):
        if not isinstance(a, Tensor):
            return False  # a ragged or sparse field: not compared (kiln has no spec for it)
        if a.shape.is_fully_defined() and b.shape.is_fully_defined():
            conditions.append(math_ops.reduce_all(math_ops.equal(a, b)))
        else:
            conditions.append(_equal_dynamic(a, b))
    if not conditions:
        return _kiln.convert_to_tensor(True)
    return math_ops.reduce_all(array_ops.stack(conditions))


def _equal_dynamic(a, b):
    same_shape = math_ops.reduce_all(math_ops.equal(array_ops.shape(a), array_ops.shape(b)))
    return cond(same_shape, lambda: math_ops.reduce_all(math_ops.equal(a, b)),
                lambda: _kiln.convert_to_tensor(False))


def as_dict(value):
    """The fields of an ExtensionType value as a dict (tf.experimental.extension_type.as_dict)."""
    return {f.name: getattr(value, f.name) for f in value._tf_extension_type_fields()}
