"""kiln.keras.layers.Layer: weights created on first call by build().

A layer called on real tensors runs ``call``; called on symbolic Keras tensors
(from ``kiln.keras.Input``) it records a node of a functional model instead
(see kiln.keras.engine.keras_tensor).
"""
import inspect
import re
import threading
import weakref

import numpy as np

from kiln import _kiln, _restore_hooks
from kiln import nest
from kiln.autograph import maybe_convert
from kiln.keras import constraints, dtype_policies, initializers, regularizers
from kiln.keras.engine import keras_tensor
from kiln.keras.layers import _args
from kiln.keras.layers._autocast import autocast_variables, cast_call_args, is_mixed
from kiln.keras.layers._path_scope import layer_scope, scoped_build, current_path
from kiln.keras.variables import Variable as KerasVariable
from kiln.keras.engine.keras_tensor import KerasTensor
from kiln.module import Module
from kiln.ops import math_ops
from kiln.scopes import init_scope, name_scope
from kiln.tensor_shape import TensorShape


def _snake(name):
    """Keras' default layer names (its to_snake_case): Conv2D -> conv2d,
    DepthwiseConv2D -> depthwise_conv2d, LSTMCell -> lstm_cell, PReLU -> p_re_lu."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


_NAME_COUNTS = {}


def _unique(base, zero_based=True):
    n = _NAME_COUNTS.get(base, 0)
    _NAME_COUNTS[base] = n + 1
    if zero_based:
        return base if n == 0 else f"{base}_{n}"
    return f"{base}_{n + 1}"


def reset_names():
    """Restarts default layer names (dense, dense_1, ...); see backend.clear_session."""
    _NAME_COUNTS.clear()


def _input_shape(x):
    if isinstance(x, (list, tuple)):
        return [_input_shape(e) for e in x]
    if isinstance(x, dict):
        return {k: _input_shape(v) for k, v in x.items()}
    shape = getattr(x, "shape", None)
    return TensorShape(shape) if shape is not None else None


def _call_spec(x):
    """The first call's input as a TensorSpec with a free batch dimension (what
    kiln.saved_model traces ``__call__`` over, as TensorFlow records its
    saved-model input spec); None unless the input is one array-like tensor."""
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None or isinstance(x, (list, tuple, dict)):
        return None
    dims = TensorShape(shape).as_list() if TensorShape(shape).rank is not None else None
    if dims:
        dims[0] = None
    try:
        return _kiln.TensorSpec(dims, _kiln.as_dtype(dtype))
    except (TypeError, ValueError):
        return None


# The `training` value of the enclosing layer call, inherited by inner layers.
_CTX = threading.local()
_LOSS_HOLDERS = weakref.WeakSet()  # layers whose last call added losses
_ACCEPTS = {}
_ALLOWED_KWARGS = {"input_shape", "batch_input_shape", "batch_size", "input_dim", "weights",
                   "activity_regularizer", "autocast", "dynamic", "implementation"}


def _call_accepts_training(layer):
    key = type(layer)
    v = _ACCEPTS.get(key)
    if v is None:
        try:
            params = inspect.signature(layer.call).parameters
            v = "training" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
        except (TypeError, ValueError):
            v = False
        _ACCEPTS[key] = v
    return v


def layer_class(name):
    """The Layer subclass called `name` (built-in or user-defined; for
    wrappers' from_config), or a ValueError."""
    stack = [Layer]
    while stack:
        cls = stack.pop()
        if cls.__name__ == name:
            return cls
        stack.extend(cls.__subclasses__())
    raise ValueError(f"Unknown layer: {name!r}")


# Keras 3's form of a nested layer (a wrapper's ``layer``): set by
# kiln.keras.saving.serialization, which sits above the layers and revives
# classes through the registry (custom objects, registered names).
NESTED = {"serialize": None, "deserialize": None}


def serialize_nested(layer):
    """``{"module", "class_name", "config", "registered_name"}`` of ``layer``."""
    if NESTED["serialize"] is not None:
        return NESTED["serialize"](layer)
    return {"module": "keras.layers", "class_name": type(layer).__name__,
            "config": layer.get_config(), "registered_name": None}


def deserialize_nested(spec, custom_objects=None):
    """The layer ``serialize_nested`` (or Keras) described."""
    if NESTED["deserialize"] is not None:
        return NESTED["deserialize"](spec, custom_objects)
    return layer_class(spec["class_name"]).from_config(spec["config"])


_ACCEPTS_MASK = {}


def call_accepts_mask(layer):
    """Whether ``layer.call`` takes a ``mask`` argument (masks flow to it)."""
    key = type(layer)
    v = _ACCEPTS_MASK.get(key)
    if v is None:
        try:
            v = "mask" in inspect.signature(layer.call).parameters
        except (TypeError, ValueError):
            v = False
        _ACCEPTS_MASK[key] = v
    return v


def call_with_mask(layer, args, kwargs, mask):
    """``layer(*args, **kwargs)`` with the inputs' ``mask`` passed on when the
    layer takes one (and none was given), then the outputs' mask
    (``compute_mask``): Keras' mask propagation, as models run their layers."""
    if mask is not None and "mask" not in kwargs and call_accepts_mask(layer):
        kwargs = dict(kwargs, mask=mask)
    out = layer(*args, **kwargs)
    return out, layer.compute_mask(args[0] if args else None, mask)


def _is_keras_tensor(x):
    return isinstance(x, KerasTensor)


def _as_tensor(v, dtype):
    return v if isinstance(v, _kiln.Tensor) else _kiln.convert_to_tensor(
        np.asarray(v, dtype=dtype.name))


def _has_keras_tensor(inputs, args, kwargs):
    if isinstance(inputs, KerasTensor):
        return True
    if isinstance(inputs, (_kiln.Tensor, np.ndarray)) and not args and not kwargs:
        return False
    return any(isinstance(t, KerasTensor) for t in nest.flatten((inputs, args, kwargs)))


class InputSpec:
    """What a layer accepts (tf.keras.layers.InputSpec): ``ndim``, ``min_ndim``,
    ``max_ndim``, ``axes`` ({axis: size}), checked before each call."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None):
        self.dtype = dtype
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = dict(axes or {})
        self.name = name

    def __repr__(self):
        return (f"InputSpec(ndim={self.ndim}, min_ndim={self.min_ndim}, "
                f"max_ndim={self.max_ndim}, axes={self.axes})")


def _check_spec(layer, spec, x, index):
    shape = getattr(x, "shape", None)
    if shape is None:
        return
    shape = TensorShape(shape)
    if shape.rank is None:
        return
    rank = shape.rank

    def fail(what):
        raise ValueError(f'Input {index} of layer "{layer.name}" is incompatible with the '
                         f"layer: {what}, found ndim={rank}. Full shape received: {shape}")

    if spec.ndim is not None and rank != spec.ndim:
        fail(f"expected ndim={spec.ndim}")
    if spec.min_ndim is not None and rank < spec.min_ndim:
        fail(f"expected min_ndim={spec.min_ndim}")
    if spec.max_ndim is not None and rank > spec.max_ndim:
        fail(f"expected max_ndim={spec.max_ndim}")
    for axis, size in spec.axes.items():
        a = axis if axis >= 0 else rank + axis
        if size is not None and 0 <= a < rank and shape[a] is not None and shape[a] != size:
            raise ValueError(
                f'Input {index} of layer "{layer.name}" is incompatible with the layer: '
                f"expected axis {axis} of input shape to have value {size}, but received "
                f"input with shape {shape}")
    if spec.shape is not None:
        for want, got in zip(spec.shape, shape):
            if want is not None and got is not None and want != got:
                raise ValueError(
                    f'Input {index} of layer "{layer.name}" is incompatible with the layer: '
                    f"expected shape={spec.shape}, found shape={shape}")


class Layer(Module):
    """A callable with weights (tf.keras.layers.Layer). Subclasses implement
    build(input_shape) to create weights with add_weight and call(inputs).

    Args: trainable, name, dtype (default float32), and for the first layer of
    a Sequential model input_shape / batch_input_shape / batch_size / input_dim.
    """

    # Built-in layers compute their symbolic output shapes with
    # compute_output_shape; other layers are traced (see engine.keras_tensor).
    _kiln_static_shapes = False
    _any_name = True  # Keras names need not be identifiers

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "build" in cls.__dict__:  # as Keras: build runs in the layer's path scope
            cls.build = scoped_build(cls.__dict__["build"])

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        bad = set(kwargs) - _ALLOWED_KWARGS
        if bad:
            raise TypeError(f"Keyword argument not understood: {sorted(bad)[0]!r} "
                            f"(layer {type(self).__name__})")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"Layer name must be a non-empty string, got {name!r}")
        super().__init__(name=name or _unique(_snake(type(self).__name__)))
        self._trainable = bool(trainable)
        self._set_dtype_policy(dtype)
        self.built = False
        self._kiln_weights = []
        self._kiln_nodes = []
        self._autocast = kwargs.get("autocast", True)
        self.input_spec = None
        self.supports_masking = False
        self._batch_input_shape = self._batch_shape_from_kwargs(kwargs)
        self._kiln_initial_weights = kwargs.get("weights")
        self.activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        self._kiln_losses = []

    @staticmethod
    def _batch_shape_from_kwargs(kwargs):
        if "batch_input_shape" in kwargs:
            return tuple(kwargs["batch_input_shape"])
        shape = kwargs.get("input_shape")
        if shape is None and kwargs.get("input_dim") is not None:
            shape = (kwargs["input_dim"],)
        if shape is None:
            return None
        if isinstance(shape, int):
            shape = (shape,)
        return (kwargs.get("batch_size"),) + tuple(shape)

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)

    # ---- dtypes (Keras 3's dtype policies; _dtype is the compute dtype) ----

    def _set_dtype_policy(self, dtype):
        policy = dtype_policies.get(dtype)
        self._dtype_policy = policy
        self._dtype = _kiln.as_dtype(policy.compute_dtype)
        self._kiln_variable_dtype = _kiln.as_dtype(policy.variable_dtype)

    @property
    def dtype_policy(self):
        """The layer's DTypePolicy (its ``dtype=``, else the global policy)."""
        return self._dtype_policy

    @dtype_policy.setter
    def dtype_policy(self, value):
        self._set_dtype_policy(value)

    @property
    def dtype(self):
        """The variables' dtype (Keras 3: the policy's variable_dtype)."""
        return self._kiln_variable_dtype.name

    @property
    def compute_dtype(self):
        """The dtype inputs are cast to and outputs come in."""
        return self._dtype.name

    @property
    def variable_dtype(self):
        return self._kiln_variable_dtype.name

    @property
    def input_dtype(self):
        return self._dtype.name

    @property
    def autocast(self):
        """Whether floating inputs (and, under a mixed policy, variables) are
        cast to the compute dtype when the layer is called."""
        return self._autocast

    @autocast.setter
    def autocast(self, value):
        self._autocast = bool(value)

    def build(self, input_shape):
        """Creates the weights; called once, before the first call."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        return inputs

    # ---- calling ----

    def __call__(self, inputs, *args, **kwargs):
        # Losses: the outermost call clears them (Keras); calls on Keras tensors (and the
        # traces that find their shapes) add none.
        entry = not getattr(_CTX, "in_call", False)
        outer_symbolic = getattr(_CTX, "symbolic", False)
        symbolic = outer_symbolic or _has_keras_tensor(inputs, args, kwargs)
        if entry and not symbolic:
            self._clear_losses()
        _CTX.in_call, _CTX.symbolic = True, symbolic
        try:
            with layer_scope(self):
                out = self._kiln_call(inputs, args, kwargs)
        finally:
            _CTX.in_call, _CTX.symbolic = not entry, outer_symbolic
        if self.activity_regularizer is not None and not symbolic:
            self._add_activity_losses(out)
        return out

    def _kiln_call(self, inputs, args, kwargs):
        if _has_keras_tensor(inputs, args, kwargs):
            return keras_tensor.symbolic_call(self, inputs, args, kwargs)
        inputs = self._convert_inputs(inputs)
        args, kwargs = cast_call_args(self, args, kwargs)
        if not self.built:
            if self.input_spec is not None:
                self._check_input_spec(inputs)
            if getattr(self, "_kiln_call_spec", None) is None:
                self._kiln_call_spec = _call_spec(inputs)
            self._maybe_build(inputs)
        if self.input_spec is not None:
            self._check_input_spec(inputs)
        training = kwargs.get("training")
        if training is None:
            training = getattr(_CTX, "training", None)
        if _call_accepts_training(self):
            if training is not None:
                kwargs["training"] = training
        else:
            kwargs.pop("training", None)
        call = self.call
        if not _kiln.executing_eagerly() and not type(self).__module__.startswith("kiln."):
            # Inside a traced function, convert the user's call() (AutoGraph):
            # it is user code reached through this library method.
            call = maybe_convert(call)
        outer = getattr(_CTX, "training", None)
        _CTX.training = training
        try:
            if is_mixed(self):  # mixed precision: variables read in the compute dtype
                with autocast_variables(self):
                    return self._run_call(call, inputs, args, kwargs)
            return self._run_call(call, inputs, args, kwargs)
        finally:
            _CTX.training = outer

    def _run_call(self, call, inputs, args, kwargs):
        if _kiln.executing_eagerly():
            return call(inputs, *args, **kwargs)
        # Traced: the layer's ops are named "<layer name>/<op>" (Keras'
        # name scope), e.g. "CharUnpack/StatefulPartitionedCall".
        with name_scope(self.name):
            return call(inputs, *args, **kwargs)

    def _convert_inputs(self, inputs):
        """NumPy arrays and Python floats become tensors; floating tensors are
        cast to the layer's dtype (Keras' autocast)."""
        cast = self._autocast and self._dtype.is_floating

        def conv(x):
            if isinstance(x, (np.ndarray, np.generic, float)):
                x = _kiln.convert_to_tensor(x)
            if cast and isinstance(x, _kiln.Tensor) and x.dtype.is_floating \
                    and x.dtype != self._dtype:
                x = _kiln.raw.Cast(x, DstT=self._dtype)
            return x

        if isinstance(inputs, (_kiln.Tensor, np.ndarray, np.generic, float)):
            return conv(inputs)
        if isinstance(inputs, (list, tuple, dict)):
            return nest.map_structure(conv, inputs)
        return inputs

    def _maybe_build(self, inputs):
        if not self.built:
            with init_scope():
                self.build(_input_shape(inputs))
            self.built = True
            if self._kiln_initial_weights is not None:
                self.set_weights(self._kiln_initial_weights)
                self._kiln_initial_weights = None

    def _check_input_spec(self, inputs):
        specs = self.input_spec
        if isinstance(specs, InputSpec):
            flat = nest.flatten(inputs)
            if len(flat) == 1:
                _check_spec(self, specs, flat[0], 0)
            return
        flat = nest.flatten(inputs)
        for i, (spec, x) in enumerate(zip(specs, flat)):
            if spec is not None:
                _check_spec(self, spec, x, i)

    # ---- losses ----

    def _add_activity_losses(self, outputs):
        """Keras 3: activity_regularizer(output) / batch size for each output tensor."""
        reg = regularizers.get(self.activity_regularizer)  # subclasses may keep a name
        for out in nest.flatten(outputs):
            if not isinstance(out, _kiln.Tensor):
                continue
            loss = _as_tensor(reg(out), out.dtype)
            if len(out.shape) > 0:
                batch = _kiln.raw.Cast(_kiln.raw.Shape(out)[0], DstT=loss.dtype)
                loss = math_ops.divide_no_nan(loss, batch)
            self.add_loss(loss)

    def add_loss(self, loss):
        """Adds scalar loss tensors (from call()) to ``losses``."""
        flat = nest.flatten(loss)
        for x in flat:
            if not isinstance(x, _kiln.Tensor):
                raise ValueError("`add_loss()` can only be called from inside `build()` or "
                                 f"`call()`, on a tensor input. Received invalid value: {x}")
        if getattr(_CTX, "symbolic", False):
            return  # a call on Keras tensors: no losses
        self._kiln_losses.extend(flat)
        _LOSS_HOLDERS.add(self)

    def _clear_losses(self):
        if not _LOSS_HOLDERS:
            return  # nothing to walk: no layer holds losses
        for layer in (self,) + tuple(self._sublayers()):
            layer._kiln_losses.clear()
            _LOSS_HOLDERS.discard(layer)

    @property
    def losses(self):
        """The losses of the last call (add_loss, activity regularizers) of this layer
        and its sublayers, then the trainable weights' regularization penalties."""
        out = list(self._kiln_losses)
        for layer in self._sublayers():
            out.extend(layer._kiln_losses)
        for v in self.trainable_weights:
            reg = getattr(v, "_kiln_regularizer", None)
            if reg is not None:
                out.append(_as_tensor(reg(v), v.dtype))
        return out

    # ---- weights ----

    def _kiln_module_variables(self):
        """The variables a tf.Module holding this layer reports: its weights."""
        return self.weights

    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None, autocast=True, **kwargs):
        """Creates a variable tracked by this layer, initialized by
        ``initializer`` (a name, an Initializer or a callable(shape, dtype)),
        in ``dtype`` (default: the policy's variable dtype). ``autocast``: read
        in the compute dtype during calls under a mixed policy."""
        shape = () if shape is None else tuple(int(d) for d in shape)
        dtype = _kiln.as_dtype(dtype) if dtype is not None else self._kiln_variable_dtype
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        init = initializers.get(initializer)
        with init_scope():
            value = init(shape, dtype=dtype)
            if isinstance(value, _kiln.Variable):
                value = value.read_value()
            if not isinstance(value, _kiln.Tensor):
                value = _kiln.convert_to_tensor(np.asarray(value, dtype=dtype.name))
            elif value.dtype != dtype:
                value = _kiln.raw.Cast(value, DstT=dtype)
            if tuple(value.shape) != shape:
                raise ValueError(f"add_weight {name!r}: the initializer returned shape "
                                 f"{tuple(value.shape)}, expected {shape}")
            short = name or _unique("variable")  # Keras: variable, variable_1, ...
            with layer_scope(self):  # e.g. "seq/dense/kernel", as Keras 3
                path = f"{current_path()}/{short}"
            v = KerasVariable(value, short, path, trainable=trainable)
        v._kiln_regularizer = regularizers.get(regularizer)  # names: 'l2', 'non_neg'
        v._kiln_autocast = bool(autocast)
        v._kiln_constraint = constraints.get(constraint)
        self._kiln_weights.append(v)
        if _restore_hooks.PENDING:  # a kiln.train restore waits for this weight
            _restore_hooks.notify(self, short, v)
        return v

    def _direct_children(self):
        """(sublayers, other variables) held in attributes, in assignment order."""
        layers, variables = [], []
        seen = set()

        def visit(v):
            if id(v) in seen:
                return
            if isinstance(v, Layer):
                seen.add(id(v))
                layers.append(v)
            elif isinstance(v, _kiln.Variable):
                seen.add(id(v))
                variables.append(v)
            elif isinstance(v, Module):
                seen.add(id(v))
                variables.extend(v.variables)
            elif isinstance(v, (list, tuple)):
                seen.add(id(v))
                for e in v:
                    visit(e)
            elif isinstance(v, dict):
                seen.add(id(v))
                for e in v.values():
                    visit(e)

        for k, v in vars(self).items():
            if not k.startswith("_kiln_") and v is not self:
                visit(v)
        return layers, variables

    def _sublayers_direct(self):
        return self._direct_children()[0]

    def _weight_items(self, seen, out, parent_trainable=True):
        trainable = parent_trainable and self.trainable
        _, extra = self._direct_children()
        for v in list(self._kiln_weights) + extra:
            if id(v) not in seen:
                seen.add(id(v))
                out.append((v, trainable and v.trainable))
        for layer in self._sublayers_direct():
            if id(layer) not in seen:
                seen.add(id(layer))
                layer._weight_items(seen, out, trainable)
        return out

    @property
    def weights(self):
        """Every variable of this layer and its sublayers (each once)."""
        return [v for v, _ in self._weight_items(set(), [])]

    @property
    def trainable_weights(self):
        return [v for v, t in self._weight_items(set(), []) if t]

    @property
    def non_trainable_weights(self):
        return [v for v, t in self._weight_items(set(), []) if not t]

    @property
    def variables(self):
        return tuple(self.weights)

    @property
    def trainable_variables(self):
        return tuple(self.trainable_weights)

    @property
    def non_trainable_variables(self):
        return tuple(self.non_trainable_weights)

    def _sublayers(self):
        return [m for m in self.submodules if isinstance(m, Layer)]

    def get_weights(self):
        """The weights' values as NumPy arrays."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        """Assigns NumPy arrays (or tensors) to the weights, in ``weights`` order."""
        ws = self.weights
        if len(weights) != len(ws):
            raise ValueError(f"Layer {self.name} expects {len(ws)} weights, got {len(weights)}")
        for w, v in zip(ws, weights):
            shape = tuple(getattr(v, "shape", np.shape(v)))
            if shape != tuple(w.shape):
                raise ValueError(f"Layer {self.name}: weight {w.name} has shape "
                                 f"{tuple(w.shape)}, got a value of shape {shape}")
        for w, v in zip(ws, weights):
            if not isinstance(v, (_kiln.Tensor, _kiln.Variable)):
                v = _kiln.convert_to_tensor(np.asarray(v, dtype=w.dtype.name))
            w.assign(v)

    def count_params(self):
        """The number of weight elements; the layer must be built."""
        if not self.built:
            raise ValueError(f"You tried to call count_params on layer '{self.name}', but the "
                             "layer isn't built. Build it with layer.build(input_shape) or by "
                             "calling it on data.")
        return int(sum(w.shape.num_elements() for w in self.weights))

    # ---- shapes and the functional graph ----

    def _output_dtype(self, inputs):
        """The dtype of the symbolic output: the layer's dtype, or the input's
        when the input is not floating (e.g. an int tensor through Flatten)."""
        flat = [t for t in nest.flatten(inputs) if hasattr(t, "dtype")]
        if flat and not flat[0].dtype.is_floating:
            return flat[0].dtype
        return self._dtype

    def compute_mask(self, inputs, mask=None):
        """The mask of the layer's output: `mask` passed on by layers that
        support masking, None otherwise (Keras' default). Masks do not yet flow
        between layers on their own: callers pass them."""
        return mask if self.supports_masking else None

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(
            f"Layer {type(self).__name__} does not define compute_output_shape")

    def _node_attr(self, attr):
        if not self._kiln_nodes:
            raise AttributeError(f'The layer "{self.name}" has never been called and thus has '
                                 f"no defined {attr}.")
        if len(self._kiln_nodes) > 1:
            raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes; '
                                 f"{attr} is ill-defined.")
        return self._kiln_nodes[0]

    @property
    def input(self):
        """The symbolic input of this layer's only call on Keras tensors."""
        return self._node_attr("input").input_structure

    @property
    def output(self):
        """The symbolic output of this layer's only call on Keras tensors."""
        return self._node_attr("output").outputs

    @property
    def input_shape(self):
        return nest.map_structure(lambda t: tuple(t.shape), self.input)

    @property
    def output_shape(self):
        return nest.map_structure(lambda t: tuple(t.shape), self.output)

    # ---- config ----

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": dtype_policies.serialize(self._dtype_policy)}
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = _args.serialize(self.activity_regularizer,
                                                             "regularizer")
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_build_config(self):
        """Keras 3's build config: ``{"input_shape": shape}`` for a build with
        one argument, ``{"shapes_dict": {argument: shape}}`` otherwise; None
        before the first build."""
        shapes = getattr(self, "_kiln_build_shapes", None)
        if shapes is None:
            return None
        if len(shapes) == 1:
            return {"input_shape": next(iter(shapes.values()))}
        return {"shapes_dict": dict(shapes)}

    def build_from_config(self, config):
        """Builds the layer as ``get_build_config()`` recorded."""
        if not config:
            return
        if "input_shape" in config:
            self.build(config["input_shape"])
        elif "shapes_dict" in config:
            self.build(**config["shapes_dict"])
        self.built = True

    def __repr__(self):  # Keras 3's form
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


Layer.build = scoped_build(Layer.build)  # layers without their own build record it too
