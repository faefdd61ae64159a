"""kiln.saved_model: save traced functions with their variables; load them back
in Python or serve them from C++ (kiln::saved_model::load) with no Python.

The directory follows TensorFlow's SavedModel layout (docs/SAVED_MODEL.md):
``saved_model.pb`` in TensorFlow's published messages and ``variables/`` that the
C++ loader maps. Saving walks the object as tf.saved_model.save does: attributes
that are modules, layers, lists, dicts, variables and kiln.functions; every
concrete function traced so far is saved (a function with an input_signature is
traced first). Loading never runs code from the files.
"""
import os

from kiln import _kiln, nest
from kiln.function import ConcreteFunction, Function
from kiln.keras.engine.training import Model
from kiln.keras.layers.base import Layer
from kiln.module import Module, tracked_attributes

SERVING_DEFAULT = "serving_default"
_LIST = "trackable_list_wrapper"
_DICT = "trackable_dict_wrapper"

__all__ = ["save", "load", "SaveOptions", "LoadOptions"]


class SaveOptions:
    """Accepted for TensorFlow compatibility; kiln has no save options yet."""

    def __init__(self, **kwargs):
        self.options = kwargs


class LoadOptions:
    """Accepted for TensorFlow compatibility; kiln has no load options yet."""

    def __init__(self, **kwargs):
        self.options = kwargs


# ---- saving ----

def _attributes(obj):
    """(name, value) pairs a save walks: public and private attributes of a
    module or plain object (kiln's own bookkeeping left out)."""
    if isinstance(obj, dict):
        return [(str(k), obj[k]) for k in sorted(obj, key=str)]
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj)]
    out = tracked_attributes(obj)
    if hasattr(obj, "_kiln_module_variables"):  # a Keras layer: its weights (TensorFlow's
        out.append(("variables", list(obj._kiln_module_variables())))  # "variables" child)
    # Methods decorated with @kiln.function live on the class.
    for k, v in sorted(vars(type(obj)).items()) if isinstance(obj, Module) else []:
        if isinstance(v, Function) and k not in vars(obj):
            out.append((k, getattr(obj, k)))
    return out


def _trackable(v):
    return isinstance(v, (Module, Function, _kiln.Variable, ConcreteFunction)) or (
        isinstance(v, (list, tuple, dict)) and any(_trackable(x) for x in
                                                   (v.values() if isinstance(v, dict) else v)))


def _concrete_of(fn):
    """Every concrete function of a kiln.function (traced for its
    input_signature first when it has one and no trace yet)."""
    if fn.input_signature is not None and not fn._concrete_functions():
        fn.get_concrete_function()
    return fn._concrete_functions()


class _Builder:
    def __init__(self):
        self.exporter = _kiln._Exporter()
        self.nodes = {}  # id(obj) -> node
        self.functions = []  # (Function, node)

    def node(self, obj):
        key = id(obj)
        if key in self.nodes:
            return self.nodes[key]
        if isinstance(obj, _kiln.Variable):
            n = self.exporter.add_variable(obj)
            self.nodes[key] = n
            return n
        if isinstance(obj, Function):
            n = self.exporter.add_function(_concrete_of(obj))
            self.nodes[key] = n
            self.functions.append((obj, n))
            return n
        if isinstance(obj, ConcreteFunction):
            n = self.exporter.add_function([obj._cf])
            self.nodes[key] = n
            return n
        ident = _LIST if isinstance(obj, (list, tuple)) else (
            _DICT if isinstance(obj, dict) else "_generic_user_object")
        n = 0 if not self.nodes else self.exporter.add_object(ident)
        self.nodes[key] = n
        for name, v in _attributes(obj):
            if _trackable(v):
                self.exporter.add_child(n, name, self.node(v))
        return n


def _spec_names(cf):
    """The signature's input keys: its arguments' names (TensorFlow's)."""
    return [s.name for s in nest.flatten(cf._structured_input_signature)
            if isinstance(s, _kiln.TensorSpec)]


def _output_keys(cf):
    out = cf._structured_outputs
    if isinstance(out, dict):
        keys = sorted(out)
        if all(isinstance(out[k], _kiln.Tensor) for k in keys):
            return [str(k) for k in keys]
        raise ValueError("a signature's dict result must map names to tensors, got "
                         f"{out!r}")
    flat = nest.flatten(out)
    if not all(isinstance(t, _kiln.Tensor) for t in flat):
        raise ValueError("a signature function must return tensors (or a dict or list of "
                         f"them); got {out!r}")
    return [f"output_{i}" for i in range(len(flat))]


def _signature_function(value, key):
    """The concrete function of one `signatures` entry."""
    if isinstance(value, ConcreteFunction):
        cf = value._cf
    elif isinstance(value, Function):
        if value.input_signature is None:
            raise ValueError(
                f"signature '{key}': a kiln.function given as a signature needs an "
                "input_signature (or pass f.get_concrete_function(...))")
        cf = value.get_concrete_function()._cf
    else:
        raise ValueError(f"signature '{key}' must be a kiln.function with an input_signature "
                         f"or a ConcreteFunction, got {value!r}")
    for v in cf._structured_input_signature:
        if any(not isinstance(x, _kiln.TensorSpec) for x in nest.flatten(v)):
            raise ValueError(f"signature '{key}': every argument must be a tensor; "
                             f"the function was traced with {v!r}")
    return cf


def _keras_input_signature(model):
    """The input_signature of a Keras model's serving functions: its Inputs, else
    the input of its first call (a subclassed model, a layer); None when unknown."""
    inputs = model.inputs if isinstance(model, Model) else None
    if not inputs:
        spec = getattr(model, "_kiln_call_spec", None)
        return [spec] if spec is not None else None
    specs = [_kiln.TensorSpec(t.shape, t.dtype, name=t.name or f"input_{i + 1}")
             for i, t in enumerate(inputs)]
    return specs if len(specs) == 1 else [specs]


def _keras_signature(model):
    """serving_default of a Keras model: model(inputs, training=False) over its
    Input specs; outputs named after the output layers (TensorFlow's)."""
    names = model.output_names

    def serve(inputs):
        flat = nest.flatten(model(inputs, training=False))
        return {n: t for n, t in zip(names, flat)}

    sig = _keras_input_signature(model)
    if sig is None:
        raise ValueError(
            f"Model {model.name} cannot be saved: its input shape is unknown. Give it an "
            "Input (or input_shape), or call the model once first.")
    fn = Function(serve, name="serving_default", input_signature=sig)
    return fn.get_concrete_function()._cf


def _keras_call(layer):
    """The loaded layer's __call__ (a model's with training=False), its own
    result; None when its input is unknown."""
    sig = _keras_input_signature(layer)
    if sig is None:
        return None
    call = (lambda x: layer(x, training=False)) if isinstance(layer, Model) else layer
    return Function(call, name="__call__", input_signature=sig).get_concrete_function()._cf


def _default_signatures(obj, builder):
    if isinstance(obj, Model):
        return {SERVING_DEFAULT: _keras_signature(obj)}
    with_sig = [f for f, _ in builder.functions if f.input_signature is not None]
    if len(with_sig) == 1:
        return {SERVING_DEFAULT: with_sig[0].get_concrete_function()._cf}
    return {}


def save(obj, export_dir, signatures=None, options=None):
    """Saves ``obj`` (a kiln.Module, a Keras model or layer, or any object holding
    kiln.functions and variables) to ``export_dir`` (tf.saved_model.save)."""
    del options
    if not hasattr(obj, "__dict__"):
        raise ValueError(f"Expected an object with attributes to save, got {obj!r}")
    b = _Builder()
    b.node(obj)
    if isinstance(obj, Layer) and "__call__" not in vars(obj):
        call = _keras_call(obj)
        if call is not None:
            b.exporter.add_child(0, "__call__", b.exporter.add_function([call]))
    if signatures is None:
        sigs = _default_signatures(obj, b)
    elif isinstance(signatures, dict):
        sigs = {k: _signature_function(v, k) for k, v in signatures.items()}
    else:
        sigs = {SERVING_DEFAULT: _signature_function(signatures, SERVING_DEFAULT)}
    for key in sorted(sigs):
        if not isinstance(key, str) or not key:
            raise ValueError(f"signature keys must be non-empty strings, got {key!r}")
        cf = sigs[key]
        b.exporter.add_signature(key, cf, _spec_names(cf), _output_keys(cf))
    b.exporter.save(os.fspath(export_dir))


def _export_keras_model(model, filepath, format="tf_saved_model", verbose=None,
                        input_signature=None, **kwargs):
    """Keras 3's model.export: a SavedModel whose ``serve`` endpoint (and the
    serving_default signature) is ``model(inputs, training=False)``, with the
    model's variable lists, for TensorFlow Serving, tf.saved_model.load or kiln."""
    if format != "tf_saved_model":
        raise ValueError(f"Unrecognized format={format!r}: kiln exports format="
                         "'tf_saved_model' (kiln.onnx.export writes ONNX)")
    if kwargs:
        raise TypeError(f"export() got unexpected arguments {sorted(kwargs)}")
    sig = input_signature or _keras_input_signature(model)
    if sig is None:
        raise ValueError(f"Model {model.name} cannot be exported: its input shape is unknown. "
                         "Give it an Input, call it once, or pass input_signature.")
    archive = Module(name="export_archive")
    archive._model = model
    archive.serve = Function(lambda inputs: model(inputs, training=False), name="serve",
                             input_signature=list(sig))
    # Saved lists, as Keras' archive saves them (Module's properties of the same
    # names stay for kiln; the saver walks __dict__).
    archive.__dict__.update(variables=list(model.variables),
                            trainable_variables=list(model.trainable_variables),
                            non_trainable_variables=list(model.non_trainable_variables))
    save(archive, filepath, signatures={SERVING_DEFAULT: archive.serve})
    if verbose is None or verbose:
        print(f"Saved artifact at '{os.fspath(filepath)}'. The following endpoints are "
              f"available:\n\n* Endpoint 'serve'\n  args_0: {sig[0]!r}")


Model._kiln_export = staticmethod(_export_keras_model)


# ---- loading ----

class _UserObject(Module):
    """A restored object: its saved attributes (tf.saved_model's _UserObject)."""

    _any_name = True

    def __init__(self):
        super().__init__(name="user_object")

    # A saved attribute of these names (Keras' exports save the lists) is what
    # TensorFlow's restored object gives; otherwise the module's own walk.
    @property
    def variables(self):
        saved = self.__dict__.get("variables")
        return tuple(saved) if isinstance(saved, list) else super().variables

    @property
    def trainable_variables(self):
        saved = self.__dict__.get("trainable_variables")
        return tuple(saved) if isinstance(saved, list) else super().trainable_variables

    @property
    def non_trainable_variables(self):
        saved = self.__dict__.get("non_trainable_variables")
        return tuple(saved) if isinstance(saved, list) else super().non_trainable_variables


class _CallableUserObject(_UserObject):
    """A restored object that had a ``__call__`` function (Python looks that
    up on the type, so it gets a class of its own)."""

    def __call__(self, *args, **kwargs):
        return self.__dict__["__call__"](*args, **kwargs)


class RestoredFunction:
    """A saved kiln.function: calls the concrete function its arguments match."""

    def __init__(self, concrete, name):
        self._concrete = [ConcreteFunction.from_cpp(cf) for cf in concrete]
        self.__name__ = name

    @property
    def concrete_functions(self):
        return list(self._concrete)

    def get_concrete_function(self, *args, **kwargs):
        return self._match(args, kwargs)

    def _match(self, args, kwargs):
        for cf in self._concrete:
            try:
                cf._check_call(args, kwargs)
                return cf
            except (TypeError, ValueError):
                continue
        sigs = "\n".join(f"  Option {i + 1}: {cf.structured_input_signature[0]}"
                         for i, cf in enumerate(self._concrete))
        raise ValueError(
            "Could not find matching concrete function to call loaded from the SavedModel. "
            f"Got positional arguments {args!r} and keyword arguments {kwargs!r}. "
            f"Expected one of:\n{sigs}")

    def __call__(self, *args, **kwargs):
        return self._match(args, kwargs)(*args, **kwargs)

    def __repr__(self):
        return f"<RestoredFunction {self.__name__} with {len(self._concrete)} concrete functions>"


class SignatureFunction:
    """A serving signature: keyword tensors in, a dict of named tensors out."""

    def __init__(self, key, cf, inputs, outputs):
        self._key, self._cf = key, cf
        self._inputs, self._outputs = list(inputs), list(outputs)

    @property
    def structured_outputs(self):
        """{output key: TensorSpec} as TensorFlow's signature functions give it."""
        flat = [t for t in nest.flatten(self._cf._structured_outputs)
                if isinstance(t, _kiln.Tensor)]
        return {k: _kiln.TensorSpec(t.shape, t.dtype, name=k) for k, t in zip(self._outputs, flat)}

    @property
    def structured_input_signature(self):
        specs = [s for s in nest.flatten(self._cf._structured_input_signature)
                 if isinstance(s, _kiln.TensorSpec)]
        return ((), {k: _kiln.TensorSpec(s.shape, s.dtype, name=k)
                     for k, s in zip(self._inputs, specs)})

    def __call__(self, *args, **kwargs):
        if len(args) > len(self._inputs):
            raise TypeError(f"signature '{self._key}' takes {len(self._inputs)} inputs "
                            f"({', '.join(self._inputs)}), got {len(args)} positional")
        values = dict(zip(self._inputs, args))
        for k, v in kwargs.items():
            if k not in self._inputs:
                raise TypeError(f"signature '{self._key}' got an unexpected keyword argument "
                                f"'{k}' (its inputs: {', '.join(self._inputs)})")
            if k in values:
                raise TypeError(f"signature '{self._key}' got multiple values for '{k}'")
            values[k] = v
        missing = [k for k in self._inputs if k not in values]
        if missing:
            raise TypeError(f"signature '{self._key}' is missing inputs: {', '.join(missing)}")
        out = self._cf.call_flat([_kiln.convert_to_tensor(values[k]) for k in self._inputs])
        return dict(zip(self._outputs, out))

    def __repr__(self):
        return f"<SignatureFunction {self._key}({', '.join(self._inputs)})>"


class Asset:
    """A file a SavedModel carries in its assets/ folder (tf.saved_model.Asset):
    ``asset_path`` is the file's path, a string tensor, which the export's
    functions receive. kiln loads assets from TensorFlow's exports; it does not
    write them yet."""

    def __init__(self, path):
        self.asset_path = _kiln.convert_to_tensor(os.fspath(path), dtype=_kiln.as_dtype("string"))

    def __repr__(self):
        return f"<Asset {self.asset_path.numpy().decode()!r}>"


def load(export_dir, tags=None, options=None):
    """Loads an export kiln saved (tf.saved_model.load): an object with the
    saved attributes, functions and variables, and ``.signatures``."""
    del tags, options
    objects, sigs = _kiln._load_saved_model(os.fspath(export_dir))
    built = [None] * len(objects)
    for i, (kind, ident, _children, functions, variable, _sig, asset) in enumerate(objects):
        if kind == "variable":
            built[i] = variable
        elif kind == "asset":
            built[i] = Asset(asset)
        elif kind == "function":
            built[i] = RestoredFunction(functions, f"function_{i}")
        elif ident == _LIST:
            built[i] = []
        elif ident == _DICT:
            built[i] = {}
        elif kind == "user":
            callable_ = any(n == "__call__" for n, _ in _children)
            built[i] = _CallableUserObject() if callable_ else _UserObject()
    for i, (kind, ident, children, _f, _v, _s, _a) in enumerate(objects):
        obj = built[i]
        for name, child in children:
            if ident == "signature_map" or (i == 0 and name == "signatures"):
                continue
            value = built[child]
            if value is None:
                continue
            if isinstance(obj, list):
                obj.append(value)
            elif isinstance(obj, dict):
                obj[name] = value
            elif obj is not None:
                if isinstance(value, RestoredFunction):
                    value.__name__ = name
                obj.__dict__[name] = value  # "variables" stays behind Module's property
    root = built[0]
    if not isinstance(root, _UserObject):
        raise ValueError(f"{export_dir}: the saved root is not an object")
    object.__setattr__(root, "signatures",
                       {k: SignatureFunction(k, cf, i, o) for k, (cf, i, o) in sigs.items()})
    return root
