"""Type-based dispatch for kiln's Python APIs (tf.experimental.dispatch_for_api,
dispatch_for_unary_elementwise_apis, dispatch_for_binary_elementwise_apis,
unregister_dispatch_for).

One registry maps each API to its (signature checker, target) pairs. The first registration
for an API makes it dispatchable: a wrapper that checks the registry and otherwise calls the
API takes its place under every name kiln's modules export it by (kiln.add, kiln.math.add,
...), so APIs nobody dispatches keep their direct call path. As in TensorFlow, a signature
matches only when at least one checked argument is a dispatchable (non-Tensor) type.
"""
import functools
import inspect
import sys
import typing

from kiln import _kiln
from kiln.experimental import _fields
from kiln.ops import math_ops, array_ops, nn_ops, special, complex_ops, bitwise_ops
from kiln import dtypes

_TARGETS = {}      # original API -> [(checker, target as called)]
_WRAPPERS = {}     # original API -> its dispatching wrapper
_ORIGINAL = {}     # wrapper -> original API
_REGISTERED = {}   # target as given -> [(api, target as called)]
_ELEMENTWISE = {}  # (x_type,) or (x_type, y_type) -> (handler, [its per-API targets])
_PLAIN = (_kiln.Tensor, _kiln.Variable, int, float, bool, str, bytes, type(None))


def _original(api):
    return _ORIGINAL.get(api, api)


def _exporting_modules():
    return [m for name, m in list(sys.modules.items())
            if m is not None and (name == "kiln" or name.startswith("kiln."))]


def _homes(api):
    """(module, name) for every kiln module attribute bound to api; ValueError if none."""
    wrapper = _WRAPPERS.get(api, api)
    homes = [(m, k) for m in _exporting_modules() for k, v in list(vars(m).items())
             if v is api or v is wrapper]
    if not homes:
        raise ValueError(f"{api} does not support dispatch.")
    return homes


def _make_dispatchable(api):
    """Installs api's dispatching wrapper under every kiln name bound to api."""
    if api in _WRAPPERS:
        return
    homes = _homes(api)

    @functools.wraps(api)
    def dispatching(*args, **kwargs):
        for checker, target in _TARGETS.get(api, ()):
            if checker(args, kwargs):
                return target(*args, **kwargs)
        return api(*args, **kwargs)

    _WRAPPERS[api] = dispatching
    _ORIGINAL[dispatching] = api
    for module, name in homes:
        setattr(module, name, dispatching)


def _restore(api):
    """Puts api back in place of its wrapper once nothing dispatches it."""
    wrapper = _WRAPPERS.pop(api, None)
    _ORIGINAL.pop(wrapper, None)
    _TARGETS.pop(api, None)
    for module in _exporting_modules():
        for name, v in list(vars(module).items()):
            if v is wrapper:
                setattr(module, name, api)


# ---- type checking of arguments against annotations ----

def _matches(value, annotation):
    """(whether value fits the annotation, whether it holds a dispatchable-type value)."""
    if _fields.is_union(annotation):
        for option in typing.get_args(annotation):
            ok, special_ = _matches(value, option)
            if ok:
                return True, special_
        return False, False
    if _fields.is_list(annotation):
        if not isinstance(value, (list, tuple)):
            return False, False
        (element,) = typing.get_args(annotation)
        found = [_matches(v, element) for v in value]
        return all(ok for ok, _ in found), any(s for _, s in found)
    if annotation is None:
        annotation = type(None)
    if isinstance(annotation, type):
        ok = isinstance(value, annotation) or (
            annotation is _kiln.Tensor and isinstance(value, _kiln.Variable))
        return ok, ok and not isinstance(value, _PLAIN)
    raise ValueError(f"Type annotation {annotation} is not currently supported by dispatch. "
                     "Supported annotations: type objects,  List[...], and Union[...]")


def _checks(api_signature, signature):
    """[(parameter index, name, annotation)] of one {parameter: annotation} signature."""
    if not (isinstance(signature, dict) and all(isinstance(k, (str, int)) for k in signature)):
        raise TypeError("signatures must be dictionaries mapping parameter names to type "
                        "annotations.")
    params = list(api_signature.parameters.values())
    checks = []
    for name, annotation in signature.items():
        if isinstance(name, int) and name < len(params):
            name = params[name].name
        param = api_signature.parameters.get(name)
        if param is None:
            raise ValueError(f"signature includes annotation for unknown parameter {name!r}.")
        if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            raise ValueError("Dispatch currently only supports type annotations for "
                             "positional parameters; can't handle annotation for "
                             f"{param.kind!r} parameter {name}.")
        _matches(None, annotation)  # an unsupported annotation fails now
        checks.append((params.index(param), name, annotation))
    return checks


def _checker(api_signature, signature):
    """A function (args, kwargs) -> bool for one {parameter: annotation} signature."""
    checks = _checks(api_signature, signature)
    params = list(api_signature.parameters.values())

    def check(args, kwargs):
        special_ = False
        for index, name, annotation in checks:
            if index < len(args):
                value = args[index]
            else:
                value = kwargs.get(name, params[index].default)
            ok, s = _matches(value, annotation)
            if not ok:
                return False
            special_ = special_ or s
        return special_
    return check


def _with_name_parameter(target, api_signature):
    """target, accepting (and dropping) the API's `name` argument when it has none, as
    TensorFlow's dispatch wraps targets; and its signature as it is then called."""
    sig = inspect.signature(target)
    params = sig.parameters.values()
    if "name" not in api_signature.parameters or "name" in sig.parameters or \
            any(p.kind == p.VAR_KEYWORD for p in params):
        return target, sig
    index = list(api_signature.parameters).index("name")

    @functools.wraps(target)
    def wrapped(*args, **kwargs):
        if index < len(args):
            args = args[:index] + args[index + 1:]
        kwargs.pop("name", None)
        return target(*args, **kwargs)
    return wrapped, sig.replace(parameters=list(params) + [api_signature.parameters["name"]])


def _check_target_signature(api_signature, sig):
    kinds = [p.kind for p in sig.parameters.values()]
    if kinds == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return
    ok = len(api_signature.parameters) == len(sig.parameters) and all(
        a.name == b.name and a.kind == b.kind
        for a, b in zip(api_signature.parameters.values(), sig.parameters.values()))
    if not ok:
        raise ValueError(f"Dispatch function's signature {sig} does not match API's "
                         f"signature {api_signature}.")


def _annotations_of(target):
    signature = {name: p.annotation for name, p in inspect.signature(target).parameters.items()
                 if p.annotation is not inspect.Parameter.empty}
    if not signature:
        raise ValueError("The dispatch_for_api decorator must be called with at least one "
                         "signature, or applied to a function that has type annotations on "
                         "its parameters.")
    return signature


def dispatch_for_api(api, *signatures):
    """Decorator: the decorated function (the dispatch target) runs instead of `api` when the
    call's arguments match one of `signatures` ({parameter name: type annotation}; without
    any, the target's own annotations) and at least one of them is a non-Tensor type
    (tf.experimental.dispatch_for_api)."""
    api = _original(api)
    _homes(api)
    api_signature = inspect.signature(api)
    checkers = [_checker(api_signature, s) for s in signatures]

    def decorator(target):
        if not callable(target):
            raise TypeError(f"Expected dispatch_target to be callable; got {target!r}")
        wrapped, sig = _with_name_parameter(target, api_signature)
        _check_target_signature(api_signature, sig)
        found = checkers or [_checker(api_signature, _annotations_of(target))]
        _make_dispatchable(api)
        for c in found:
            _TARGETS.setdefault(api, []).append((c, wrapped))
        _REGISTERED.setdefault(target, []).append((api, wrapped))
        return target
    return decorator


def unregister_dispatch_for(dispatch_target):
    """Removes every registration of a dispatch target (or of an elementwise handler)."""
    found = False
    for api, wrapped in _REGISTERED.pop(dispatch_target, []):
        _TARGETS[api] = [(c, t) for c, t in _TARGETS.get(api, ()) if t is not wrapped]
        if not _TARGETS[api]:
            _restore(api)
        found = True
    for key in [k for k, h in _ELEMENTWISE.items() if h[0] is dispatch_target]:
        for target in _ELEMENTWISE.pop(key)[1]:
            unregister_dispatch_for(target)
        found = True
    if not found:
        raise ValueError(f"Function {dispatch_target} was not registered using a "
                         "`@dispatch_for_*` decorator.")


# ---- elementwise APIs ----

def _kind_apis(module, kind):
    return [getattr(module, n) for n in dir(module)
            if not n.startswith("_") and getattr(getattr(module, n), "_kiln_kind", None) == kind]


def unary_elementwise_apis():
    """The APIs dispatch_for_unary_elementwise_apis covers (first argument: the tensor)."""
    apis = _kind_apis(math_ops, "unary") + [
        math_ops.abs, math_ops.is_inf, math_ops.reciprocal, math_ops.softplus,
        math_ops.log_sigmoid, special.erf, special.erfc, complex_ops.real, complex_ops.imag,
        complex_ops.conj, dtypes.cast, array_ops.ones_like, array_ops.zeros_like,
        array_ops.identity, nn_ops.relu, nn_ops.relu6, nn_ops.elu, nn_ops.gelu, nn_ops.sigmoid,
        nn_ops.tanh, nn_ops.leaky_relu, nn_ops.silu, bitwise_ops.invert]
    return _unique(apis)


def binary_elementwise_apis():
    """The APIs dispatch_for_binary_elementwise_apis covers (first two arguments)."""
    apis = _kind_apis(math_ops, "binary") + [
        math_ops.divide, math_ops.divide_no_nan, bitwise_ops.bitwise_and,
        bitwise_ops.bitwise_or, bitwise_ops.bitwise_xor, bitwise_ops.left_shift,
        bitwise_ops.right_shift]
    return _unique(apis)


def _unique(apis):
    out = []
    for a in apis:
        a = _original(a)
        if a not in out:
            out.append(a)
    return out


def _unary_target(api, handler):
    first = next(iter(inspect.signature(api).parameters))

    def target(*args, **kwargs):
        x, rest = (args[0], args[1:]) if args else (kwargs.pop(first), ())
        kwargs.pop("name", None)
        op = api if not (rest or kwargs) else (lambda v: api(v, *rest, **kwargs))
        return handler(op, x)
    return target


def _binary_target(api, handler):
    names = list(inspect.signature(api).parameters)[:2]

    def target(*args, **kwargs):
        vals = list(args[:2]) + [kwargs.pop(n) for n in names[len(args[:2]):]]
        rest = args[2:]
        kwargs.pop("name", None)
        op = api if not (rest or kwargs) else (lambda a, b: api(a, b, *rest, **kwargs))
        return handler(op, vals[0], vals[1])
    return target


def _register_elementwise(key, handler, apis, make_target):
    if key in _ELEMENTWISE:
        raise ValueError(f"A dispatcher for {key} has already been registered "
                         f"({_ELEMENTWISE[key][0]}).")
    targets = []
    for api in apis:
        names = list(inspect.signature(api).parameters)
        signature = dict(zip(names, key))
        target = make_target(api, handler)
        dispatch_for_api(api, signature)(target)
        targets.append(target)
    _ELEMENTWISE[key] = (handler, targets)
    return handler


def dispatch_for_unary_elementwise_apis(x_type):
    """Decorator: handler(api_func, x) runs for every unary elementwise API (tf.abs, tf.exp,
    tf.cast, tf.ones_like, ...) called with an `x` of type x_type."""
    def decorator(handler):
        return _register_elementwise((x_type,), handler, unary_elementwise_apis(),
                                     _unary_target)
    return decorator


def dispatch_for_binary_elementwise_apis(x_type, y_type):
    """Decorator: handler(api_func, x, y) runs for every binary elementwise API (tf.add,
    tf.maximum, tf.equal, ...) called with x of type x_type and y of type y_type."""
    def decorator(handler):
        return _register_elementwise((x_type, y_type), handler, binary_elementwise_apis(),
                                     _binary_target)
    return decorator
