"""Model.summary(): the Keras table of layers, output shapes and parameter counts."""
from kiln.keras.engine.keras_tensor import KerasTensor


def _fmt_shape(t):
    if isinstance(t, KerasTensor):
        return "None" if t.shape.rank is None else \
            "(" + ", ".join("None" if d is None else str(d) for d in t.shape) + \
            ("," if t.shape.rank == 1 else "") + ")"
    if isinstance(t, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt_shape(v)}" for k, v in t.items()) + "}"
    if isinstance(t, (list, tuple)):
        return "[" + ", ".join(_fmt_shape(v) for v in t) + "]"
    return str(t)


def readable_bytes(n):
    """'82.45 MB' style sizes (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.2f} {unit}"
        n /= 1024.0


def _wrap(text, width):
    """Lines of at most width characters, broken after ', ' or ' ' when possible."""
    width = max(width, 4)
    lines = []
    for part in text.split("\n"):
        while len(part) > width:
            cut = max(part.rfind(" ", 0, width + 1), part.rfind(",", 0, width))
            if cut <= 0:
                cut = width
            lines.append(part[:cut].rstrip())
            part = part[cut:].lstrip(", ") if part[cut:cut + 1] in (",", " ") else part[cut:]
        lines.append(part)
    return lines


def _row(fields, widths):
    cols = [_wrap(str(f), w - 1) for f, w in zip(fields, widths)]
    out = []
    for i in range(max(len(c) for c in cols)):
        line = ""
        for c, w in zip(cols, widths):
            line += (c[i] if i < len(c) else "").ljust(w)
        out.append((" " + line).rstrip())
    return out


def _params(layer):
    return layer.count_params() if layer.built else 0


def _weight_size(weights):
    return sum(w.shape.num_elements() * w.dtype.size for w in weights)


def _count(weights):
    return sum(w.shape.num_elements() for w in weights)


def summary_lines(model, line_length=None, positions=None, show_trainable=False):
    """The summary text as a list of lines."""
    graph = model._kiln_graph
    sequential = graph is None or graph.is_sequential_like()
    rows_src = model._kiln_summary_rows()
    line_length = line_length or (65 if sequential else 98)
    if positions is None:
        positions = [0.45, 0.85, 1.0] if sequential else [0.33, 0.55, 0.67, 1.0]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    headers = ["Layer (type)", "Output Shape", "Param #"]
    if not sequential:
        headers.append("Connected to")
    if len(positions) < len(headers):
        raise ValueError(f"summary: positions needs {len(headers)} entries, got {positions}")
    widths = [positions[0]] + [positions[i] - positions[i - 1] for i in range(1, len(headers))]
    if show_trainable:
        headers.append("Trainable")
        widths.append(11)
        line_length += 11
    lines = [f'Model: "{model.name}"', "_" * line_length]
    lines += _row(headers, widths)
    lines.append("=" * line_length)
    for i, (layer, shape, connected) in enumerate(rows_src):
        fields = [f"{layer.name} ({type(layer).__name__})", shape, f"{_params(layer):,}"]
        if not sequential:
            fields.append("\n".join(connected) if connected else "[]")
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        lines += _row(fields, widths)
        if not sequential and i < len(rows_src) - 1:
            lines.append("")
    lines.append("=" * line_length)
    weights = model.weights
    trainable = model.trainable_weights
    ids = {id(w) for w in trainable}
    non_trainable = [w for w in weights if id(w) not in ids]
    lines.append(f"Total params: {_count(weights):,} ({readable_bytes(_weight_size(weights))})")
    lines.append(f"Trainable params: {_count(trainable):,} "
                 f"({readable_bytes(_weight_size(trainable))})")
    lines.append(f"Non-trainable params: {_count(non_trainable):,} "
                 f"({readable_bytes(_weight_size(non_trainable))})")
    lines.append("_" * line_length)
    return lines


def format_shape(outputs):
    return _fmt_shape(outputs)
