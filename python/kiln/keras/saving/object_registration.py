"""Custom objects by name: register_keras_serializable and custom_object_scope."""
import inspect
import threading

_GLOBAL_CUSTOM_OBJECTS = {}   # registered name ("package>Name") -> class or function
_GLOBAL_CUSTOM_NAMES = {}     # class or function -> registered name
_SCOPES = threading.local()


def register_keras_serializable(package="Custom", name=None):
    """Registers a class or function under ``"package>name"`` (name defaults
    to its ``__name__``) so saved models that use it load again."""

    def decorator(arg):
        registered_name = f"{package}>{name if name is not None else arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method.")
        _GLOBAL_CUSTOM_OBJECTS[registered_name] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered_name
        return arg
    return decorator


def get_registered_name(obj):
    """The name ``obj`` was registered under, else its ``__name__``."""
    try:
        return _GLOBAL_CUSTOM_NAMES[obj]
    except (KeyError, TypeError):
        return getattr(obj, "__name__", type(obj).__name__)


def _scoped():
    out = {}
    for objects in getattr(_SCOPES, "stack", []):
        out.update(objects)
    return out


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object registered (or in a custom_object_scope, or in
    ``custom_objects`` / ``module_objects``) under ``name``, else None."""
    for table in (_scoped(), _GLOBAL_CUSTOM_OBJECTS, custom_objects or {},
                  module_objects or {}):
        if name in table:
            return table[name]
    return None


def get_custom_objects():
    """The global registry dict (name -> object); it may be edited directly."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """``with custom_object_scope({'Name': obj}):`` makes names resolvable while
    deserializing."""

    def __init__(self, *args):
        self.custom_objects = {}
        for objects in args:
            self.custom_objects.update(objects or {})

    def __enter__(self):
        if not hasattr(_SCOPES, "stack"):
            _SCOPES.stack = []
        _SCOPES.stack.append(self.custom_objects)
        return self

    def __exit__(self, *exc):
        _SCOPES.stack.pop()


custom_object_scope = CustomObjectScope
