"""kiln.Module (tf.Module): tracks variables and submodules assigned as attributes."""
import re

from kiln import _kiln, _restore_hooks


def tracked_attributes(obj):
    """(name, value) of the attributes tracking walks, sorted by name: an
    object's own ones, kiln's bookkeeping (``_kiln_*``, the name) left out."""
    d = getattr(obj, "__dict__", None) or {}
    return [(k, d[k]) for k in sorted(d)
            if not k.startswith("_kiln_") and k not in ("_name", "_scope_name")]


def _walk(obj, seen, want):
    """Variables (want='v') or modules (want='m') reachable from obj's attributes."""
    out = []
    if id(obj) in seen:
        return out
    seen.add(id(obj))
    values = []
    if isinstance(obj, Module):
        values = [v for _, v in tracked_attributes(obj)]
    elif isinstance(obj, dict):
        values = [obj[k] for k in sorted(obj, key=str)]
    elif isinstance(obj, (list, tuple)):
        values = list(obj)
    for v in values:
        if isinstance(v, _kiln.Variable):
            if want == "v" and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        elif isinstance(v, Module):
            if want == "m" and id(v) not in seen:
                out.append(v)
            if want == "v" and hasattr(v, "_kiln_module_variables"):
                for w in v._kiln_module_variables():  # a Keras layer's weights
                    if id(w) not in seen:
                        seen.add(id(w))
                        out.append(w)
            out.extend(_walk(v, seen, want))
        elif isinstance(v, (list, tuple, dict)):
            out.extend(_walk(v, seen, want))
    return out


class Module:
    """A named container of variables and submodules (tf.Module)."""

    _any_name = False  # Keras layers take any name; tf.Module names are identifiers

    def __init__(self, name=None):
        if name is None:
            name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()
        elif not self._any_name and not (isinstance(name, str) and name.isidentifier()):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be "
                             "valid Python 3 identifiers.")
        self._name = name

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if _restore_hooks.PENDING:  # a kiln.train restore waits for this attribute
            _restore_hooks.notify(self, name, value)

    @property
    def name(self):
        # Subclasses that skip Module.__init__ still get TensorFlow's default name.
        name = self.__dict__.get("_name")
        if name is None:
            name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()
        return name

    @property
    def name_scope(self):
        return self.name

    @property
    def variables(self):
        """Every variable of this module and its submodules (each once)."""
        return tuple(_walk(self, set(), "v"))

    @property
    def trainable_variables(self):
        return tuple(v for v in self.variables if v.trainable)

    @property
    def non_trainable_variables(self):
        return tuple(v for v in self.variables if not v.trainable)

    @property
    def submodules(self):
        return tuple(_walk(self, set(), "m"))

    @classmethod
    def with_name_scope(cls, method):
        return method

    # No __repr__: a module prints as any Python object, as tf.Module does
    # ("<__main__.MyModule object at 0x...>").
