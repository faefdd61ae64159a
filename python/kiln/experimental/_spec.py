"""ExtensionType.Spec: the static part of an ExtensionType value (its fields with every
tensor replaced by a TensorSpec and every nested ExtensionType by its Spec), as
tf.experimental.ExtensionTypeSpec. Each ExtensionType class gets its own Spec subclass."""
import collections.abc
import inspect

from kiln import _kiln
from kiln._composite import CompositeTensor
from kiln.experimental import _fields
from kiln.tensor_shape import TensorShape

Tensor, Variable, TensorSpec = _kiln.Tensor, _kiln.Variable, _kiln.TensorSpec
IN_CONSTRUCTOR = "_tf_extension_type_in_constructor"


def spec_of_leaf(x):
    """The TypeSpec of a tensor or an ExtensionType value."""
    if isinstance(x, (Tensor, Variable)):
        return TensorSpec(x.shape, x.dtype)
    spec_class = getattr(type(x), "Spec", None)
    if isinstance(x, CompositeTensor) and spec_class is not None:
        return spec_class.from_value(x)
    raise TypeError(f"kiln has no TypeSpec for {type(x).__name__} values yet")


def type_spec_from_value(value):
    """The TypeSpec of a value (tf.type_spec_from_value): a TensorSpec for tensors and values
    convertible to one, the Spec of an ExtensionType."""
    if isinstance(value, (Tensor, Variable, CompositeTensor)):
        return spec_of_leaf(value)
    try:
        return spec_of_leaf(_kiln.convert_to_tensor(value))
    except (TypeError, ValueError):
        pass
    raise TypeError(f"Could not build a TypeSpec for {value!r} of unsupported type "
                    f"{type(value)}.")


def _spec_fields(value_fields):
    return {k: _fields.replace_leaves(v, iter([spec_of_leaf(x) for x in _fields.leaves(v)]))
            for k, v in value_fields.items()}


def _plain(v):
    """v for a Spec's repr: mappings as dicts."""
    if isinstance(v, collections.abc.Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, tuple) and not isinstance(v, CompositeTensor):
        return tuple(_plain(x) for x in v)
    return v


def _cmp_key(v):
    if isinstance(v, ExtensionTypeSpec):
        return (type(v), tuple((k, _cmp_key(x)) for k, x in v._field_values().items()))
    if isinstance(v, collections.abc.Mapping):
        return ("<mapping>", tuple((k, _cmp_key(x)) for k, x in v.items()))
    if isinstance(v, tuple):
        return tuple(_cmp_key(x) for x in v)
    if isinstance(v, TensorSpec):
        return ("<spec>", v.shape, v.dtype)
    return v


def _compatible(a, b):
    """Whether spec field values a and b are compatible (shapes may be relaxed)."""
    if isinstance(a, TensorSpec):
        return isinstance(b, TensorSpec) and a.dtype == b.dtype and \
            a.shape.is_compatible_with(b.shape)
    if isinstance(a, ExtensionTypeSpec):
        return a.is_compatible_with(b)
    if isinstance(a, TensorShape):
        return isinstance(b, TensorShape) and a.is_compatible_with(b)
    if isinstance(a, collections.abc.Mapping):
        return isinstance(b, collections.abc.Mapping) and list(a) == list(b) and \
            all(_compatible(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and \
            all(_compatible(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


class ExtensionTypeSpec:
    """The base of every ExtensionType's Spec class (tf.experimental.ExtensionTypeSpec)."""

    value_type = None  # the ExtensionType class, set on each generated Spec class

    @classmethod
    def _tf_extension_type_fields(cls):
        return cls.value_type._tf_extension_type_fields()

    @classmethod
    def _tf_extension_type_has_field(cls, name):
        return any(f.name == name for f in cls._tf_extension_type_fields())

    def __setattr__(self, name, value):
        if self.__dict__.get(IN_CONSTRUCTOR) and self._tf_extension_type_has_field(name):
            self.__dict__[name] = value
        else:
            raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom "
                                 "constructor of ExtensionTypeSpec.")

    def __delattr__(self, name):
        if self.__dict__.get(IN_CONSTRUCTOR) and self._tf_extension_type_has_field(name):
            del self.__dict__[name]
        else:
            raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom "
                                 "constructor of ExtensionTypeSpec.")

    def __validate__(self):
        """Post-construction checks (override in a custom Spec)."""

    def _field_values(self):
        return {f.name: self.__dict__[f.name] for f in self._tf_extension_type_fields()}

    @classmethod
    def _from_fields(cls, fields):
        spec = object.__new__(cls)
        spec.__dict__.update(fields)
        return spec

    @classmethod
    def from_value(cls, value):
        """The Spec of an ExtensionType value."""
        return cls._from_fields(_spec_fields(value._field_values()))

    def __repr__(self):
        text = ", ".join(f"{k}={_plain(v)!r}" for k, v in self._field_values().items())
        return f"{type(self).__qualname__}({text})"

    def __eq__(self, other):
        return type(self) is type(other) and _cmp_key(self) == _cmp_key(other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(_cmp_key(self))

    def __reduce__(self):
        return (_spec_from_fields, (type(self), self._field_values()))

    def is_compatible_with(self, spec_or_value):
        """Whether a value or Spec fits this Spec (unknown dims match any size)."""
        other = spec_or_value
        if not isinstance(other, ExtensionTypeSpec):
            if not isinstance(other, CompositeTensor) or not hasattr(type(other), "Spec"):
                return False
            other = type(other).Spec.from_value(other)
        if type(other) is not type(self):
            return False
        mine, theirs = self._field_values(), other._field_values()
        return all(_compatible(mine[k], theirs[k]) for k in mine)

    def _kiln_mismatch(self, value):
        """Why `value` does not fit this Spec (TensorFlow's "Can not cast" reason; the note of
        kiln.function's input_signature error), or None."""
        if not isinstance(value, self.value_type):
            return f"Can not cast {value!r} to {self!r}"
        if self.is_compatible_with(value):
            return None
        theirs = type(self).from_value(value)
        for a, b in zip(self._component_specs, theirs._component_specs):
            if isinstance(a, TensorSpec) and not _compatible(a, b):
                return f"Can not cast {b!r} to {a!r}"
        return f"Can not cast {theirs!r} to {self!r}"

    # -- components: the TypeSpec protocol TensorFlow's internals use --

    @property
    def _component_specs(self):
        return tuple(x for v in self._field_values().values() for x in _fields.leaves(v))

    def _to_components(self, value):
        return tuple(x for v in value._field_values().values() for x in _fields.leaves(v))

    def _from_components(self, components):
        it = iter(components)
        fields = {k: _fields.replace_leaves(v, it) for k, v in self._field_values().items()}
        return self.value_type._kiln_from_fields(fields)

    def _kiln_trace_value(self):
        """A value of value_type whose tensors are this Spec's TensorSpecs: what a traced
        function's placeholders are made from (get_concrete_function, input_signature)."""
        def value(v):
            if isinstance(v, ExtensionTypeSpec):
                return v._kiln_trace_value()
            return v
        fields = {k: _fields.replace_leaves(v, iter([value(x) for x in _fields.leaves(v)]))
                  for k, v in self._field_values().items()}
        return self.value_type._kiln_from_fields(fields)


_fields.add_leaf_type(ExtensionTypeSpec)


class BatchableExtensionTypeSpec(ExtensionTypeSpec):
    """The Spec of a BatchableExtensionType: `_batch` / `_unbatch` add or drop a leading
    dimension on every TensorSpec (nested batchable Specs included)."""

    def _batch(self, batch_size):
        return self._map_specs(lambda s: TensorSpec(TensorShape([batch_size]) + s.shape, s.dtype),
                               lambda s: s._batch(batch_size))

    def _unbatch(self):
        return self._map_specs(lambda s: TensorSpec(s.shape[1:], s.dtype), lambda s: s._unbatch())

    def _map_specs(self, tensor_fn, spec_fn):
        """TensorSpecs through tensor_fn, nested Specs through spec_fn and TensorShape fields
        (a batch shape) through tensor_fn's shape rule."""
        def one(x):
            if isinstance(x, TensorSpec):
                return tensor_fn(x)
            if isinstance(x, TensorShape):
                return tensor_fn(TensorSpec(x, _kiln.as_dtype("bool"))).shape
            if isinstance(x, ExtensionTypeSpec):
                return spec_fn(x)
            if isinstance(x, collections.abc.Mapping):
                return _fields.ImmutableDict((k, one(v)) for k, v in x.items())
            if isinstance(x, tuple):
                return tuple(one(v) for v in x)
            return x
        return type(self)._from_fields({k: one(v) for k, v in self._field_values().items()})


def _spec_from_fields(cls, fields):
    return cls._from_fields(fields)


def make_spec_class(value_type, user_spec, base):
    """The Spec class of ExtensionType `value_type`: `base` plus the body of a nested
    `class Spec` the user wrote (its methods, properties, constructor)."""
    qualname = value_type.__qualname__ + ".Spec"
    namespace = {"value_type": value_type, "__module__": value_type.__module__,
                 "__qualname__": qualname}
    if user_spec is not None:
        for name, v in user_spec.__dict__.items():
            if value_type._tf_extension_type_has_field(name):
                raise ValueError(f"TypeSpec {qualname} defines a variable '{name}' which "
                                 f"shadows a field in {value_type.__qualname__}")
            if name not in ("__module__", "__dict__", "__weakref__", "__qualname__"):
                namespace[name] = v
    cls = type(value_type.__name__ + ".Spec", (base,), namespace)
    cls.__init__ = _wrap_spec_init(cls.__init__) if "__init__" in namespace else \
        _generated_spec_init(value_type)
    return cls


def _finish(spec):
    fields = {f.name: spec.__dict__[f.name] for f in spec._tf_extension_type_fields()
              if f.name in spec.__dict__}
    fields.update({k: v for k, v in spec.__dict__.items() if k not in fields})
    _fields.convert_fields(spec._tf_extension_type_fields(), fields, _fields.SPEC)
    spec.__dict__.update(fields)
    spec.__validate__()


def _wrap_spec_init(user_init):
    def __init__(self, *args, **kwargs):
        self.__dict__[IN_CONSTRUCTOR] = True
        user_init(self, *args, **kwargs)
        del self.__dict__[IN_CONSTRUCTOR]
        _finish(self)
    __init__.__wrapped__ = user_init
    return __init__


def _generated_spec_init(value_type):
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(f.name, kind) for f in value_type._tf_extension_type_fields()]
    signature = inspect.Signature(params)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        self.__dict__.update(bound.arguments)
        _finish(self)
    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", kind)] + params)
    return __init__
