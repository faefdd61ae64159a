"""What Model.compile / fit / evaluate / train_on_batch run (kiln.keras.Model).

compile() stores a CompiledState on the model: the optimizer, a loss container
(one loss per output, summed with loss_weights) and metrics. fit() slices the
data into batches and calls the train step once per batch; the train step
(forward under a GradientTape, loss, gradients, optimizer.apply_gradients,
metric updates) is one kiln.function, so each batch runs one graph. The
function is made with reduce_retracing=True: full batches trace once, and a
different batch size (the last, partial batch) traces one more time with the
batch dimension unknown, which then serves every batch size.

A model created in a kiln.distribute strategy's scope trains with it: each
worker takes its share of every global batch, runs the step under
strategy.run (the optimizer sums the gradients over the workers) and reports
the logs averaged over the workers, so every worker prints the same numbers.
"""
import contextlib
import types
import weakref

import numpy as np

from kiln import _kiln
from kiln import nest
from kiln.autograph import convert_for_trace, maybe_convert
from kiln.data.dataset import DatasetV2
from kiln.distribute import distribute_lib
from kiln.dtypes import cast
from kiln.function import Function
from kiln.gradient import GradientTape
from kiln.keras import _sparse_rows
from kiln.keras import callbacks as callbacks_mod
from kiln.keras import losses as losses_mod
from kiln.keras import metrics as metrics_mod
from kiln.keras import optimizers
from kiln.ops import array_ops, math_ops

_NOT_COMPILED = ("You must compile your model before training/testing. Use "
                 "`model.compile(optimizer, loss)`.")


# ---- compile ----

def _loss_object(identifier, name=None):
    """A Loss for a name, a function or a Loss (ValueError when unknown)."""
    loss = losses_mod.get(identifier)
    if loss is None or isinstance(loss, losses_mod.Loss):
        return loss
    if not callable(loss):
        raise ValueError(f"Could not interpret loss function identifier: {identifier!r}")
    return losses_mod.LossFunctionWrapper(
        loss, name=name or getattr(loss, "__name__", None) or "loss")


def _per_output(value, names, what):
    """value spread over the outputs: a list (one per output), a dict keyed
    by output name, or one value for every output."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"compile: {what} has keys {unknown} that are not output names "
                             f"of the model ({names})")
        return [value.get(n) for n in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"compile: {what} has {len(value)} entries but the model has "
                             f"{len(names)} outputs ({names})")
        return list(value)
    return [value] * len(names)


class CompiledState:
    """The compile() arguments, resolved: optimizer, losses, metrics."""

    def __init__(self, model, optimizer, loss, loss_weights, metrics, weighted_metrics,
                 run_eagerly, jit_compile):
        self.optimizer = optimizers.get(optimizer)
        self.loss = loss
        self.run_eagerly = bool(run_eagerly)
        self.jit_compile = None if jit_compile == "auto" else jit_compile
        names = model.output_names
        self.output_names = names
        self.multi = len(names) > 1
        if self.multi and not isinstance(loss, (list, tuple, dict)):
            self.loss_fns = [_loss_object(loss)] * len(names)
        elif self.multi:
            self.loss_fns = [_loss_object(item) for item in _per_output(loss, names, "loss")]
        else:
            if isinstance(loss, (list, tuple)) and len(loss) == 1:
                loss = loss[0]
            elif isinstance(loss, dict) and len(loss) == 1:
                loss = next(iter(loss.values()))
            self.loss_fns = [_loss_object(loss)]
        if loss_weights is None:
            self.loss_weights = [1.0] * len(names)
        else:
            self.loss_weights = [1.0 if w is None else float(w)
                                 for w in _per_output(loss_weights, names, "loss_weights")]
        self.metric_specs = [self._check_metrics(metrics, "metrics"),
                             self._check_metrics(weighted_metrics, "weighted_metrics")]
        self.loss_tracker = metrics_mod.Mean(name="loss")
        self.output_loss_trackers = ([metrics_mod.Mean(name=f"{n}_loss") for n in names]
                                     if self.multi else [])
        self.metrics = None  # [(output index, metric, weighted)], built on the first step
        self.train_function = None
        self.test_function = None

    def _check_metrics(self, metrics, what):
        """Metric specs per output, checked now (unknown names raise here)."""
        if metrics is None:
            return [[] for _ in self.output_names]
        if isinstance(metrics, dict) or (self.multi and isinstance(metrics, (list, tuple)) and
                                         any(isinstance(m, (list, tuple)) for m in metrics)):
            per = _per_output(metrics, self.output_names, what)
        elif isinstance(metrics, (list, tuple)):
            per = [list(metrics)] * len(self.output_names)
        else:
            raise TypeError(f"compile: {what} must be a list (or a dict by output name), got "
                            f"{metrics!r}")
        out = []
        for specs in per:
            specs = [] if specs is None else (
                list(specs) if isinstance(specs, (list, tuple)) else [specs])
            for m in specs:
                if isinstance(m, str) and m not in ("accuracy", "acc", "crossentropy", "ce"):
                    metrics_mod.get(m)  # ValueError for unknown names
                elif not isinstance(m, (str, metrics_mod.Metric)) and not callable(m):
                    raise ValueError(f"Could not interpret metric identifier: {m!r}")
            out.append(specs)
        return out

    def _resolve(self, spec, index, y_true, y_pred):
        """A Metric for one compile() entry; 'accuracy' / 'crossentropy' pick
        the binary, sparse or categorical form from the loss and the shapes."""
        if isinstance(spec, metrics_mod.Metric):
            return spec
        name = spec if isinstance(spec, str) else getattr(spec, "__name__", None)
        if isinstance(spec, str) and spec in ("accuracy", "acc", "crossentropy", "ce"):
            kind = self._label_kind(index, y_true, y_pred)
            acc = spec in ("accuracy", "acc")
            fn = {"binary": (metrics_mod.binary_accuracy, metrics_mod.binary_crossentropy),
                  "sparse": (metrics_mod.sparse_categorical_accuracy,
                             metrics_mod.sparse_categorical_crossentropy),
                  "categorical": (metrics_mod.categorical_accuracy,
                                  metrics_mod.categorical_crossentropy)}[kind][0 if acc else 1]
        else:
            fn = metrics_mod.get(spec)
            if isinstance(fn, metrics_mod.Metric):
                return fn
        if self.multi:
            name = f"{self.output_names[index]}_{name}"
        return metrics_mod.MeanMetricWrapper(fn, name=name)

    def _label_kind(self, index, y_true, y_pred):
        loss = self.loss_fns[index]
        fn = getattr(loss, "fn", None)
        if isinstance(loss, losses_mod.BinaryCrossentropy) or fn is losses_mod.binary_crossentropy:
            return "binary"
        if fn is losses_mod.sparse_categorical_crossentropy:
            return "sparse"
        if fn is losses_mod.categorical_crossentropy:
            return "categorical"
        pred_last = losses_mod.last_dim(y_pred)
        if pred_last == 1:
            return "binary"
        rt, rp = losses_mod.rank(y_true), losses_mod.rank(y_pred)
        if rt is not None and rp is not None and (rt == rp - 1 or (
                rt == rp and losses_mod.last_dim(y_true) == 1)):
            return "sparse"
        return "categorical"

    def build_metrics(self, y_true, y_pred):
        """Creates the metric objects (variables are created eagerly even
        when this runs while the first step traces)."""
        if self.metrics is not None:
            return
        built = []
        for weighted, per in ((False, self.metric_specs[0]), (True, self.metric_specs[1])):
            for i, specs in enumerate(per):
                for spec in specs:
                    built.append((i, self._resolve(spec, i, y_true[i], y_pred[i]), weighted))
        names = set()
        for _, m, _ in built:
            if m.name in names or m.name == "loss":
                raise ValueError(f"compile: two metrics are named {m.name!r}; give the "
                                 "metric objects distinct names")
            names.add(m.name)
        self.metrics = built

    def all_metrics(self):
        out = [self.loss_tracker] + list(self.output_loss_trackers)
        return out + [m for _, m, _ in (self.metrics or [])]


# ---- the steps ----

def unpack(data):
    """(x, y, sample_weight) of a batch: a tuple (x,), (x, y) or (x, y, sw),
    or x alone."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be (x,), (x, y) or (x, y, sample_weight); got a "
                     f"tuple of {len(data)} elements")


def class_weight_fn(class_weight, what):
    """A function that gives each batch (x, y[, sw]) the sample weights
    class_weight[class of y] (times sw when given), as Keras does: the class is
    argmax(y) for one-hot rows, else y itself."""
    if not isinstance(class_weight, dict):
        raise ValueError(f"{what}: class_weight must be a dict, got {type(class_weight).__name__}")
    keys = list(class_weight)
    if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) for k in keys) or \
            sorted(int(k) for k in keys) != list(range(len(keys))):
        raise ValueError("Expected `class_weight` to be a dict with keys from 0 to one less "
                         f"than the number of classes, found {class_weight}")
    table = _kiln.convert_to_tensor(
        np.array([float(class_weight[k]) for k in sorted(keys, key=int)], np.float32))

    def apply(batch):
        x, y, sw = unpack(batch)
        if y is None:
            raise ValueError(f"{what}: class_weight needs targets (y)")
        if isinstance(y, (list, tuple, dict)):
            raise ValueError("`class_weight` is only supported for Models with a single output.")
        y = _kiln.convert_to_tensor(y)
        rank = len(y.shape)
        if rank > 2:
            raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
        if rank == 2 and y.shape[1] is not None and y.shape[1] > 1:
            classes = math_ops.argmax(y, axis=1)
        else:
            classes = cast(array_ops.reshape(y, [-1]), "int64")
        weights = array_ops.gather(table, classes)
        if sw is not None:
            sw = cast(_kiln.convert_to_tensor(sw), "float32")
            extra = max(len(sw.shape) - 1, 0)  # per-timestep weights: [batch, T, ...]
            weights = sw * array_ops.reshape(weights, [-1] + [1] * extra)
        return x, y, weights

    return apply


def _flat_outputs(state, y, y_pred, what):
    """y and y_pred as equal-length lists, one entry per model output."""
    if not state.multi:
        return [y], [y_pred]
    preds = nest.flatten(y_pred)
    if isinstance(y, dict):
        missing = [n for n in state.output_names if n not in y]
        if missing:
            raise ValueError(f"{what}: y has no entry for the outputs {missing}")
        ys = [y[n] for n in state.output_names]
    else:
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
    if len(ys) != len(preds):
        raise ValueError(f"{what}: the model has {len(preds)} outputs but y has {len(ys)} "
                         "entries")
    return ys, preds


def _batch_size(x):
    first = nest.flatten(x)[0]
    return cast(array_ops.shape(first)[0], "float32")


def _additional_losses(model):
    """The sum of model.losses (add_loss, activity and weight regularizers), or None."""
    total = None
    for loss in model.losses:
        if not loss.dtype.is_floating or loss.dtype.name in ("float16", "bfloat16"):
            loss = cast(loss, "float32")  # activity losses of mixed-precision layers too
        loss = math_ops.reduce_sum(loss)
        total = loss if total is None else total + loss
    return total


def compute_loss(model, x, y, y_pred, sample_weight):
    """The total loss: the outputs' losses times loss_weights, summed, plus
    model.losses (regularization penalties, add_loss). Updates the per-output
    trackers."""
    state = model._kiln_compiled
    extra = _additional_losses(model)
    if extra is not None:
        extra = distribute_lib.scale_loss_for_distribution(extra)
    if all(fn is None for fn in state.loss_fns):
        if extra is not None:
            return extra
        raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
    if y is None:
        raise ValueError("The model needs targets y to compute its loss; fit/evaluate got "
                         "y=None")
    ys, preds = _flat_outputs(state, y, y_pred, "compute_loss")
    total = None
    for i, (fn, w, yt, yp) in enumerate(zip(state.loss_fns, state.loss_weights, ys, preds)):
        if fn is None:
            continue
        value = fn(yt, yp, sample_weight=sample_weight)
        if state.output_loss_trackers:
            state.output_loss_trackers[i].update_state(
                distribute_lib.unscale_loss_for_distribution(value),
                sample_weight=_batch_size(x))
        if w != 1.0:
            value = value * w
        total = value if total is None else total + value
    return total if extra is None else total + extra


def compute_metrics(model, x, y, y_pred, sample_weight):
    """Updates the compiled metrics and returns every metric's result, by name."""
    state = model._kiln_compiled
    ys, preds = _flat_outputs(state, y, y_pred, "compute_metrics")
    if y is not None:
        state.build_metrics(ys, preds)
        for i, m, weighted in state.metrics:
            _update(m, ys[i], preds[i], sample_weight if weighted else None)
    return {m.name: m.result() for m in state.all_metrics()}


def _update(metric, y_true, y_pred, sample_weight):
    update = metric.update_state
    if not type(metric).__module__.startswith("kiln."):
        update = maybe_convert(update)  # user code inside the trace
    if sample_weight is None:
        update(y_true, y_pred)
    else:
        update(y_true, y_pred, sample_weight=sample_weight)


def train_step(model, data):
    """One optimization step on a batch; returns the metrics' results."""
    x, y, sw = unpack(data)
    with _sparse_rows.collecting():  # embeddings' gradients as TF's sparse rows
        with GradientTape() as tape:
            y_pred = model(x, training=True)
            loss = model.compute_loss(x, y, y_pred, sw)
            scale = getattr(model.optimizer, "scale_loss", None)  # loss scaling (float16)
            scaled = scale(loss) if scale is not None else loss
        variables = list(model.trainable_variables)
        if not variables:
            raise ValueError(f"Model {model.name!r} has no trainable variables to train")
        grads = tape.gradient(scaled, variables)
        model.optimizer.apply_gradients(zip(grads, variables))
    model._kiln_compiled.loss_tracker.update_state(
        distribute_lib.unscale_loss_for_distribution(loss), sample_weight=_batch_size(x))
    return model.compute_metrics(x, y, y_pred, sw)


def test_step(model, data):
    """Loss and metric updates on a batch, no training; returns the results."""
    x, y, sw = unpack(data)
    y_pred = model(x, training=False)
    loss = model.compute_loss(x, y, y_pred, sw)
    model._kiln_compiled.loss_tracker.update_state(
        distribute_lib.unscale_loss_for_distribution(loss), sample_weight=_batch_size(x))
    return model.compute_metrics(x, y, y_pred, sw)


def _compiled(model):
    state = getattr(model, "_kiln_compiled", None)
    if state is None:
        raise RuntimeError(_NOT_COMPILED)
    return state


# ---- distribution ----

def strategy_of(model):
    """The kiln.distribute strategy the model was created under, or None."""
    return getattr(model, "_kiln_strategy", None)


def strategy_scope(model):
    """The scope of the model's strategy (nothing without one)."""
    strategy = strategy_of(model)
    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def _replicated(strategy):
    return strategy is not None and strategy.num_replicas_in_sync > 1


def _run(model, fn, batch):
    """fn(batch), in the replica context of the model's strategy."""
    strategy = strategy_of(model)
    return fn(batch) if strategy is None else strategy.run(fn, args=(batch,))


def _step_with_mean_logs(name):
    """model.<name>(data) with its logs averaged over the replicas (one
    collective per dtype), so every worker reports the same numbers."""
    def step(model, data):
        method = getattr(model, name)
        if not _kiln.executing_eagerly():
            method = convert_for_trace(method)  # a user's train_step, converted
        logs = method(data)
        context = distribute_lib.get_replica_context()
        return context.all_reduce(distribute_lib.ReduceOp.MEAN, logs)
    return step


def _distribute_data(model, data):
    """data cut to this worker's share of each batch (shuffled alike on every
    worker) when the model's strategy has several replicas."""
    strategy = strategy_of(model)
    if not _replicated(strategy):
        return data
    if isinstance(data, DatasetData):
        data.dataset = strategy.experimental_distribute_dataset(data.dataset)
    else:
        data.local_rows = strategy._local_rows
        data.permutation = strategy._same_permutation
    return data


def make_function(model, which):
    """The train or test function: model.train_step / test_step wrapped in one
    kiln.function (or the plain method when run_eagerly). The function holds
    the model by a weak reference, as a kiln.function method does, so the
    model -> function -> model cycle does not keep the model alive. Under a
    strategy with several replicas the step's logs are averaged over them."""
    state = _compiled(model)
    attr = f"{which}_function"
    fn = getattr(state, attr)
    if fn is None and _replicated(strategy_of(model)):
        step = _step_with_mean_logs(f"{which}_step")
        if state.run_eagerly:
            fn = types.MethodType(step, model)
        else:
            fn = Function(step, name=f"{which}_function", jit_compile=state.jit_compile,
                          reduce_retracing=True, _self_ref=weakref.ref(model))
        setattr(state, attr, fn)
    if fn is None:
        name = f"{which}_step"
        method = getattr(type(model), name, None)
        if state.run_eagerly:
            fn = getattr(model, name)
        elif isinstance(method, types.FunctionType) and name not in vars(model):
            fn = Function(method, name=f"{which}_function", jit_compile=state.jit_compile,
                          reduce_retracing=True, _self_ref=weakref.ref(model))
        else:  # a step set on the instance
            fn = Function(getattr(model, name), name=f"{which}_function",
                          jit_compile=state.jit_compile, reduce_retracing=True)
        setattr(state, attr, fn)
    return fn


# ---- data ----

def _is_dataset(x):
    return isinstance(x, DatasetV2)


def _as_arrays(x, what):
    """x as NumPy arrays in the same structure (float64 becomes float32)."""
    if x is None:
        return None
    if isinstance(x, (_kiln.Tensor, _kiln.Variable)):
        a = x.numpy()
    elif isinstance(x, dict):
        return {k: _as_arrays(v, what) for k, v in x.items()}
    elif isinstance(x, (list, tuple)) and x and all(
            isinstance(e, (np.ndarray, _kiln.Tensor, _kiln.Variable, dict)) for e in x):
        return type(x)(_as_arrays(e, what) for e in x)
    else:
        try:
            a = np.asarray(x)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{what}: cannot use {type(x).__name__} as data ({e})") from None
        if a.dtype == object:
            raise ValueError(f"{what}: expected NumPy arrays, kiln tensors or a "
                             f"kiln.data.Dataset, got {type(x).__name__}")
    if a.ndim == 0:
        raise ValueError(f"{what}: data must have a batch dimension, got a scalar")
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    return a


def _num_samples(arrays, what):
    sizes = {a.shape[0] for a in nest.flatten(arrays) if a is not None}
    if len(sizes) != 1:
        shapes = [a.shape for a in nest.flatten(arrays) if a is not None]
        raise ValueError(f"{what}: data cardinality is ambiguous: x, y and sample_weight "
                         f"must have the same number of samples, got shapes {shapes}")
    return sizes.pop()


def _trim(data):
    while len(data) > 1 and data[-1] is None:
        data = data[:-1]
    return tuple(data)


class ArrayData:
    """In-memory data, cut into batches (shuffled each epoch when asked)."""

    def __init__(self, x, y, sample_weight, batch_size, shuffle, steps, what):
        self.arrays = _trim((_as_arrays(x, what), _as_arrays(y, what),
                             _as_arrays(sample_weight, what)))
        self.n = _num_samples(self.arrays, what)
        if self.n == 0:
            raise ValueError(f"{what}: the data has 0 samples")
        self.batch_size = _check_positive(batch_size, "batch_size", what, default=32)
        self.shuffle = bool(shuffle)
        self.local_rows = None  # n -> (start, end) of this worker's rows (kiln.distribute)
        self.permutation = np.random.permutation
        full = -(-self.n // self.batch_size)
        self.steps = full if steps is None else min(full, _check_positive(steps, "steps",
                                                                          what))

    def split(self, fraction):
        """(training part, validation arrays): the last `fraction` of the samples
        (before shuffling) is kept for validation, as Keras does."""
        at = int(np.floor(self.n * (1.0 - fraction)))
        if at <= 0 or at >= self.n:
            raise ValueError(f"validation_split={fraction} leaves no samples for training or "
                             f"validation ({self.n} samples)")
        head = nest.map_structure(lambda a: a[:at], self.arrays)
        tail = nest.map_structure(lambda a: a[at:], self.arrays)
        self.arrays, self.n = head, at
        self.steps = -(-at // self.batch_size)
        return tail

    def peek(self):
        """The first batch, without shuffling (to build the model)."""
        n = min(self.n, self.batch_size)
        return nest.map_structure(lambda a: _kiln.convert_to_tensor(a[:n]), self.arrays)

    def batches(self):
        order = self.permutation(self.n) if self.shuffle else None
        conv = _kiln.convert_to_tensor
        for step in range(self.steps):
            lo, hi = step * self.batch_size, min(self.n, (step + 1) * self.batch_size)
            if self.local_rows is not None:  # this worker's share of the global batch
                start, end = self.local_rows(hi - lo)
                lo, hi = lo + start, lo + end
            if order is None:
                pick = (lambda a: conv(a[lo:hi]))  # noqa: E731
            else:
                idx = order[lo:hi]
                pick = (lambda a: conv(np.ascontiguousarray(a[idx])))  # noqa: E731
            yield nest.map_structure(pick, self.arrays)


class DatasetData:
    """A kiln.data.Dataset of batches: (x, y[, sample_weight]) tuples or x."""

    def __init__(self, dataset, steps, what):
        self.dataset = dataset
        self.steps_limit = None if steps is None else _check_positive(steps, "steps", what)
        card = int(dataset.cardinality().numpy())
        if card == -1 and self.steps_limit is None:
            raise ValueError(f"{what}: the dataset is infinite; pass steps_per_epoch (or "
                             "steps) to say how many batches make an epoch")
        self.steps = self.steps_limit or (card if card >= 0 else None)
        self._iter = None

    def peek(self):
        for batch in self.dataset:
            return batch
        raise ValueError("The dataset yields no batch")

    def batches(self):
        if self.steps_limit is None:
            for batch in self.dataset:
                yield batch
            return
        # With an explicit step count the iterator carries over between epochs.
        if self._iter is None:
            self._iter = iter(self.dataset)
        for _ in range(self.steps_limit):
            try:
                yield next(self._iter)
            except StopIteration:
                self._iter = None
                return


def _check_positive(value, name, what, default=None):
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{what}: {name} must be a positive int, got {value!r}")
    return int(value)


def make_data(x, y, sample_weight, batch_size, shuffle, steps, what):
    if _is_dataset(x):
        if y is not None:
            raise ValueError(f"{what}: `y` argument is not supported when using a dataset as "
                             "input (the dataset yields (x, y) pairs)")
        if sample_weight is not None:
            raise ValueError(f"{what}: `sample_weight` argument is not supported when using "
                             "a dataset as input")
        return DatasetData(x, steps, what)
    if x is None:
        raise ValueError(f"{what}: no input data (x is None)")
    return ArrayData(x, y, sample_weight, batch_size, shuffle, steps, what)


# ---- the loops ----

def prepare(model, first_batch, train):
    """Builds the model (eagerly, on ``first_batch()``), the optimizer's variables
    and the compiled metrics before a step is traced, so the steps create no
    variables (a trace that creates some runs twice and counts twice)."""
    if not model.built or any(not layer.built for layer in model._sublayers()):
        was_built = model.built
        model(unpack(first_batch())[0], training=False)
        shapes = getattr(model, "_kiln_build_shapes", None)
        shape = shapes.get("input_shape") if not was_built and shapes else None
        if isinstance(shape, tuple) and shape:  # Keras' fit builds without the batch size
            model._kiln_build_shapes = {"input_shape": (None,) + shape[1:]}
    opt = model.optimizer
    if train and not getattr(opt, "built", True):
        opt.build(list(model.trainable_variables))
    state = getattr(model, "_kiln_compiled", None)
    if state is not None and state.metrics is None:  # Keras builds its metrics first too
        x, y, _ = unpack(first_batch())
        if y is not None:
            ys, preds = _flat_outputs(state, y, model(x, training=False), "compute_metrics")
            state.build_metrics(ys, preds)


def _to_floats(logs, model):
    """The step's results as floats, in metrics_names order (a traced
    function returns dicts with sorted keys)."""
    order = {n: i for i, n in enumerate(model.metrics_names)}
    keys = sorted(logs, key=lambda k: (order.get(k, len(order)), k))
    return {k: float(np.asarray(logs[k].numpy() if hasattr(logs[k], "numpy") else logs[k]))
            for k in keys}


def reset_metrics(model):
    state = getattr(model, "_kiln_compiled", None)
    if state is not None:
        for m in state.all_metrics():
            m.reset_state()


def fit(model, *args):
    """Model.fit: the loop below, in the scope of the model's strategy."""
    with strategy_scope(model):
        return _fit(model, *args)


def _fit(model, x, y, batch_size, epochs, verbose, callbacks, validation_split,
         validation_data, shuffle, class_weight, sample_weight, initial_epoch,
         steps_per_epoch, validation_steps, validation_batch_size, validation_freq):
    _compiled(model)
    weigh = None if class_weight is None else class_weight_fn(class_weight, "fit")
    epochs = _check_positive(epochs, "epochs", "fit") if epochs else 0
    if isinstance(validation_freq, bool) or not isinstance(validation_freq, int) or \
            validation_freq < 1:
        raise ValueError(f"fit: validation_freq must be a positive int, got {validation_freq!r}")
    data = make_data(x, y, sample_weight, batch_size, shuffle, steps_per_epoch, "fit")
    val = None
    if validation_split:
        if not 0.0 < float(validation_split) < 1.0:
            raise ValueError(f"fit: validation_split must be in [0, 1), got {validation_split}")
        if validation_data is not None:
            pass  # validation_data wins over validation_split, as in Keras
        elif isinstance(data, DatasetData):
            raise ValueError("fit: validation_split is only supported for NumPy arrays and "
                             "tensors, not datasets")
        else:
            vx, vy, vsw = (data.split(float(validation_split)) + (None, None))[:3]
            val = ArrayData(vx, vy, vsw, validation_batch_size or data.batch_size, False,
                            validation_steps, "fit (validation_split)")
    if validation_data is not None:
        val = _validation(validation_data, validation_batch_size or batch_size,
                          validation_steps)
    prepare(model, data.peek, train=True)
    data = _distribute_data(model, data)
    val = None if val is None else _distribute_data(model, val)
    train_fn = make_function(model, "train")
    verbose = 1 if verbose == "auto" else int(verbose)
    history = callbacks_mod.History()
    progbar = callbacks_mod.ProgbarLogger(verbose=verbose, mode="train")
    cbs = callbacks_mod.CallbackList([history, progbar] + list(callbacks or []), model=model,
                                     epochs=epochs, steps=data.steps, verbose=verbose)
    model.stop_training = False
    model.history = history
    cbs.on_train_begin()
    logs = {}
    for epoch in range(initial_epoch, epochs):
        reset_metrics(model)
        cbs.on_epoch_begin(epoch)
        out, steps = None, 0
        for step, batch in enumerate(data.batches()):
            cbs.on_train_batch_begin(step)
            out = _run(model, train_fn, batch if weigh is None else weigh(batch))
            cbs.on_train_batch_end(step, out)
            steps += 1
        if out is None:
            raise ValueError("Unexpected result of `train_function` (Empty logs): the "
                             "training data yielded no batch")
        if data.steps is None:
            data.steps = steps
            for c in cbs.callbacks:
                c.params["steps"] = steps
        logs = _to_floats(out, model)
        if val is not None and (epoch + 1) % validation_freq == 0:
            val_logs = evaluate_data(model, val, cbs)
            logs.update({f"val_{k}": v for k, v in val_logs.items()})
        cbs.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    cbs.on_train_end(logs)
    return history


def _validation(validation_data, batch_size, steps):
    if _is_dataset(validation_data):
        return DatasetData(validation_data, steps, "fit (validation_data)")
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
        raise ValueError("fit: validation_data must be (x_val, y_val), (x_val, y_val, "
                         f"sample_weight_val) or a dataset; got {type(validation_data)!r}")
    vx, vy = validation_data[0], validation_data[1]
    vsw = validation_data[2] if len(validation_data) == 3 else None
    return ArrayData(vx, vy, vsw, batch_size, False, steps, "fit (validation_data)")


def evaluate_data(model, data, callbacks):
    """Runs the test function over every batch; returns the final logs."""
    prepare(model, data.peek, train=False)
    test_fn = make_function(model, "test")
    reset_metrics(model)
    callbacks.on_test_begin()
    out, steps = None, 0
    for step, batch in enumerate(data.batches()):
        callbacks.on_test_batch_begin(step)
        out = _run(model, test_fn, batch)
        callbacks.on_test_batch_end(step, out)
        steps += 1
    if out is None:
        raise ValueError("Unexpected result of `test_function` (Empty logs): the data "
                         "yielded no batch")
    logs = _to_floats(out, model)
    callbacks.on_test_end(logs)
    return logs


def _results(model, logs, return_dict):
    if return_dict:
        return logs
    names = model.metrics_names
    values = [logs[n] for n in names if n in logs]
    return values[0] if len(values) == 1 else values


def evaluate(model, x, y, batch_size, verbose, sample_weight, steps, callbacks,
             return_dict):
    _compiled(model)
    data = make_data(x, y, sample_weight, batch_size, False, steps, "evaluate")
    verbose = 1 if verbose == "auto" else int(verbose)
    progbar = callbacks_mod.ProgbarLogger(verbose=verbose, mode="test")
    cbs = callbacks_mod.CallbackList([progbar] + list(callbacks or []), model=model,
                                     steps=data.steps, verbose=verbose)
    with strategy_scope(model):
        logs = evaluate_data(model, _distribute_data(model, data), cbs)
    return _results(model, logs, return_dict)


def on_batch(model, which, x, y, sample_weight, reset, return_dict):
    """train_on_batch / test_on_batch: one step on x as a single batch."""
    _compiled(model)
    what = f"{which}_on_batch"
    if _is_dataset(x):
        raise ValueError(f"{what}: pass arrays or tensors, not a dataset")
    arrays = _trim((_as_arrays(x, what), _as_arrays(y, what),
                    _as_arrays(sample_weight, what)))
    _num_samples(arrays, what)
    batch = nest.map_structure(_kiln.convert_to_tensor, arrays)
    with strategy_scope(model):
        prepare(model, lambda: batch, train=which == "train")
        out = _run(model, make_function(model, which), batch)
    logs = _to_floats(out, model)
    if reset:
        reset_metrics(model)
    return _results(model, logs, return_dict)

