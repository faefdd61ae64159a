"""Keras 3's variable paths: a stack of the layers being built or called.

A layer's scope path is fixed the first time it is opened (its parent's path
then, plus its name): weights created while it is open read
``<scope path>/<weight name>``, e.g. ``seq/dense/kernel`` for a Dense built by
a Sequential called "seq" (keras.src.backend.common.name_scope).
"""
import functools
import inspect
import threading

_STATE = threading.local()


def _stack():
    s = getattr(_STATE, "stack", None)
    if s is None:
        s = _STATE.stack = []
    return s


def current_path():
    """The open layers' path ("" at the top level)."""
    s = _stack()
    return s[-1]._kiln_scope_path if s else ""


class layer_scope:
    """Opens ``layer``'s path scope (again opening the top layer is a no-op)."""

    def __init__(self, layer):
        self.layer, self.pushed = layer, False

    def __enter__(self):
        s = _stack()
        if s and s[-1] is self.layer:
            return self
        if getattr(self.layer, "_kiln_scope_path", None) is None:
            parent = current_path()
            name = self.layer.name
            self.layer._kiln_scope_path = f"{parent}/{name}" if parent else name
        s.append(self.layer)
        self.pushed = True
        return self

    def __exit__(self, *exc):
        if self.pushed:
            _stack().pop()


def scoped_build(build):
    """Wraps a Layer subclass' build so that it runs in the layer's scope."""
    if getattr(build, "_kiln_scoped", False):
        return build

    signature = inspect.signature(build)

    @functools.wraps(build)
    def wrapper(self, *args, **kwargs):
        outermost = not self.__dict__.get("_kiln_in_build", False)
        if outermost:  # Keras' build config: the outermost build's shapes
            self._kiln_build_shapes = _shapes_dict(signature, self, args, kwargs)
        self._kiln_in_build = True
        try:
            with layer_scope(self):
                return build(self, *args, **kwargs)
        finally:
            if outermost:
                self._kiln_in_build = False
    wrapper._kiln_scoped = True
    return wrapper


def _shapes_dict(signature, layer, args, kwargs):
    try:
        bound = signature.bind(layer, *args, **kwargs).arguments
    except TypeError:
        return None
    params = signature.parameters
    return {k: plain_shape(v) for k, v in list(bound.items())[1:]
            if params[k].kind not in (params[k].VAR_POSITIONAL, params[k].VAR_KEYWORD)
            and not (v is None and params[k].default is None)}  # as passed, Keras' way


def plain_shape(shape):
    """A shape as Keras records it: a tuple (None for unknown dims), lists of them."""
    if shape is None:
        return None
    if hasattr(shape, "as_list") and hasattr(shape, "rank"):
        return None if shape.rank is None else tuple(shape.as_list())
    if isinstance(shape, dict):
        return {k: plain_shape(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)) and any(_is_shape(e) for e in shape):
        return [plain_shape(e) for e in shape]  # several inputs' shapes
    return tuple(shape) if isinstance(shape, (list, tuple)) else shape


def _is_shape(x):
    return hasattr(x, "rank") or isinstance(x, (list, tuple))
