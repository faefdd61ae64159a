"""Name lookup shared by kiln.keras.losses and kiln.keras.metrics: classes by
class name, functions by name and alias, configs as Keras' {'class_name',
'config'} dicts."""


class Registry:
    """Classes and functions of one kind ('loss', 'metric') by name."""

    def __init__(self, kind, base, classes, functions):
        self.kind = kind
        self.base = base
        self.classes = {c.__name__: c for c in classes}
        self.functions = dict(functions)

    def serialize(self, obj):
        """A config dict for an instance of the base class, or a function's name."""
        if isinstance(obj, self.base):
            return {"class_name": type(obj).__name__, "config": obj.get_config()}
        name = getattr(obj, "__name__", None)
        if name in self.functions:
            return name
        raise ValueError(f"Cannot serialize {self.kind} {obj!r}")

    def deserialize(self, config, custom_objects=None, what=None):
        """The object named by ``config``: a function for a function name, a
        default instance for a class name, ``from_config`` for a dict."""
        table = dict(self.classes)
        table.update(self.functions)
        table.update(custom_objects or {})
        if isinstance(config, str):
            if config in table:
                obj = table[config]
                return obj() if isinstance(obj, type) else obj
        elif isinstance(config, dict) and "class_name" in config:
            cls = table.get(config["class_name"])
            if isinstance(cls, type):
                return cls.from_config(dict(config.get("config") or {}))
        raise ValueError(f"Could not interpret {what or self.kind} identifier: {config!r}")
