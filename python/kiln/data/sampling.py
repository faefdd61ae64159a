"""Elements drawn from several datasets: Dataset.choose_from_datasets,
sample_from_datasets and rejection_resample.

The random draws use NumPy generators: seeded ones repeat the same draws each
iteration (unless rerandomize_each_iteration), unseeded ones differ each time.
They follow tf.data's semantics, not its random streams.

rejection_resample is tf.data's: with p the class distribution of the input
(initial_dist, or estimated as it goes: counts from 10 per class, updated
every 32 elements) and t the target, r = t / p, m = min(r); an element is
taken from the input as it is with probability m, else from a pass that keeps
an element of class i with probability (r_i - m) / (max(r) - m)."""
import os

import numpy as np

from kiln import _kiln, errors, nest
from kiln.data import functions, structure
from kiln.data.dataset import INFINITE, UNKNOWN, DatasetV2, install_methods

TensorSpec = _kiln.TensorSpec
_INT64 = _kiln.as_dtype("int64")
_FLOAT32 = _kiln.as_dtype("float32")


def _merged_spec(datasets):
    """The most specific spec compatible with every dataset's element_spec."""
    spec = datasets[0].element_spec
    for d in datasets[1:]:
        other = d.element_spec
        try:
            nest.assert_same_structure(spec, other)
        except (TypeError, ValueError):
            raise TypeError("Invalid `datasets`. `datasets` must have compatible element "
                            "specs.") from None
        pairs = list(zip(nest.flatten(spec), nest.flatten(other)))
        if any(not isinstance(a, TensorSpec) or a.dtype != b.dtype for a, b in pairs):
            raise TypeError("Invalid `datasets`. `datasets` must have compatible element "
                            "specs.")
        spec = nest.pack_sequence_as(spec, [
            TensorSpec(a.shape.most_specific_compatible_shape(b.shape), a.dtype)
            for a, b in pairs])
    return spec


def _check_datasets(datasets, who):
    datasets = list(datasets)
    if not datasets:
        raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
    for d in datasets:
        if not isinstance(d, DatasetV2):
            raise TypeError(f"{who}: expected a list of kiln.data.Dataset, got {d!r}")
    return datasets


def _card(datasets):
    return INFINITE if any(d._card == INFINITE for d in datasets) else UNKNOWN


class _Seeded:
    """NumPy generators for one dataset's iterations."""

    def __init__(self, seed, rerandomize):
        self._seed = None if seed is None else int(structure.to_tensor(seed).numpy())
        self._rerandomize = bool(rerandomize)
        self._epoch = 0

    def generator(self, stream=0):
        if self._seed is None:
            return np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
        epoch = self._epoch if self._rerandomize else 0
        return np.random.default_rng([self._seed, epoch, stream])

    def next_epoch(self):
        self._epoch += 1


class ChooseFromDatasets(DatasetV2):
    _name = "DirectedInterleaveDataset"

    def __init__(self, datasets, choice_dataset, stop_on_empty_dataset):
        datasets = _check_datasets(datasets, "choose_from_datasets")
        spec = choice_dataset.element_spec
        if nest.is_nested(spec) or spec.dtype != _INT64 or spec.shape.rank != 0:
            raise TypeError("Invalid `choice_dataset`. Elements of `choice_dataset` must be "
                            f"scalar `tf.int64` tensors but are {spec}.")
        super().__init__(_merged_spec(datasets), _card(datasets),
                         any(d._symbolic for d in datasets + [choice_dataset]))
        self._datasets, self._choices = datasets, choice_dataset
        self._stop = bool(stop_on_empty_dataset)

    def _inputs(self):
        return [self._choices] + self._datasets

    def _eager_iter(self):
        return _directed(self._datasets, (int(c.numpy()) for c in self._choices._eager_iter()),
                         self._stop)


def _directed(datasets, choices, stop):
    """Elements of datasets[i] for each i of choices; an empty one ends all
    (stop) or is skipped, and all of them empty ends it."""
    its = [d._eager_iter() for d in datasets]
    alive = len(its)
    for i in choices:
        if not 0 <= i < len(its):
            raise errors.InvalidArgumentError(f"Selector index out of range: {i} >= "
                                              f"{len(its)}")
        if its[i] is None:
            continue
        element = next(its[i], _END)
        if element is not _END:
            yield element
            continue
        if stop:
            return
        its[i], alive = None, alive - 1
        if not alive:
            return


_END = object()


def _weights_of(weights, n):
    """Weights as a float NumPy vector (checked like tf.data)."""
    if isinstance(weights, (_kiln.Tensor, _kiln.Variable)):
        t = structure.to_tensor(weights)
        if not t.shape.is_compatible_with([n]):
            raise ValueError("Invalid `weights`. The shape of `weights` should be compatible "
                             f"with `[len(datasets)]` but is {t.shape}.")
    else:
        if len(weights) != n:
            raise ValueError("Invalid `weights`. `weights` should have the same length as "
                             f"`datasets` but got `len(weights)={len(weights)}` vs. "
                             f"`len(datasets)={n}`.")
        t = structure.to_tensor(weights)
    if t.dtype.name not in ("float32", "float64"):
        raise TypeError("Invalid `weights`. `weights` type must be either `tf.float32` or "
                        f"`tf.float64` but is {t.dtype}.")
    return np.asarray(t.numpy(), dtype=np.float64)


class SampleFromDatasets(DatasetV2):
    """weights: a NumPy vector, or a dataset of weight vectors (one per draw)."""

    _name = "DirectedInterleaveDataset"

    def __init__(self, datasets, weights, seed, stop_on_empty_dataset, rerandomize):
        super().__init__(_merged_spec(datasets), _card(datasets),
                         any(d._symbolic for d in datasets))
        self._datasets, self._weights = datasets, weights
        self._stop = bool(stop_on_empty_dataset)
        self._rng = _Seeded(seed, rerandomize)

    def _inputs(self):
        extra = [self._weights] if isinstance(self._weights, DatasetV2) else []
        return extra + self._datasets

    def _eager_iter(self):
        rng = self._rng.generator()
        self._rng.next_epoch()
        return _directed(self._datasets, self._draws(rng), self._stop)

    def _draws(self, rng):
        if isinstance(self._weights, DatasetV2):
            stream = (np.concatenate([np.asarray(x.numpy(), dtype=np.float64).reshape(-1)
                                      for x in nest.flatten(w)])
                      for w in self._weights._eager_iter())
        else:
            stream = _forever(self._weights)
        for w in stream:
            total = w.sum()
            if not total > 0:
                return
            yield int(rng.choice(len(w), p=w / total))


def _forever(value):
    while True:
        yield value


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                         rerandomize_each_iteration=None):
    datasets = _check_datasets(datasets, "sample_from_datasets")
    if isinstance(weights, DatasetV2):
        return SampleFromDatasets(datasets, weights, seed, stop_on_empty_dataset,
                                  rerandomize_each_iteration)
    if weights is None:
        w = np.ones(len(datasets))
    else:
        w = _weights_of(weights, len(datasets))
        if not isinstance(weights, (_kiln.Tensor, _kiln.Variable)):
            keep = [i for i in range(len(datasets)) if w[i] > 0]
            datasets = [datasets[i] for i in keep] if keep else [datasets[0].take(0)]
            w = w[keep] if keep else np.ones(1)
    if len(datasets) == 1:
        return datasets[0]
    return SampleFromDatasets(datasets, w, seed, stop_on_empty_dataset,
                              rerandomize_each_iteration)


# ---- rejection_resample ----

_TINY32 = np.finfo(np.float32).tiny


def acceptance(initial, target):
    """(per-class acceptance probabilities, probability of the original)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (target / (initial + _TINY32)).astype(np.float32)
        m = ratio.min()
        return (ratio - m) / (ratio.max() - m), m


def estimated_dists(classes, num_classes, batch=32, smoothing=10):
    """For each class of the stream, the class distribution estimated so far
    (updated a batch of elements at a time, as tf.data does)."""
    counts = np.full(num_classes, smoothing, dtype=np.int64)
    block = []
    for c in classes:
        block.append(c)
        if len(block) == batch:
            yield from _update(counts, block)
            block = []
    if block:
        yield from _update(counts, block)


def _update(counts, block):
    for c in block:
        if 0 <= c < len(counts):
            counts[c] += 1
    dist = (counts / counts.sum()).astype(np.float32)
    for _ in block:
        yield dist


class RejectionResampleDataset(DatasetV2):
    _name = "RejectionResampleDataset"

    def __init__(self, parent, class_func, target, initial, seed):
        self._class = functions.StructuredFunction(class_func, parent.element_spec,
                                                   "rejection_resample")
        cspec = self._class.output_spec
        if nest.is_nested(cspec) or not cspec.dtype.is_integer:
            got = cspec if nest.is_nested(cspec) else cspec.dtype.name
            raise TypeError(f"Value passed to parameter 'indices' has DataType {got} not in "
                            "list of allowed values: int16, int32, int64")
        super().__init__((cspec, parent.element_spec), UNKNOWN, parent._symbolic)
        self._parent, self._target, self._initial = parent, target, initial
        self._rng = _Seeded(seed, False)

    def _labelled(self):
        for element in self._parent._eager_iter():
            c = self._class(element)
            yield int(c.numpy()), (c, element)

    def _dists(self):
        if self._initial is not None:
            return _forever(self._initial)
        classes = (c for c, _ in self._labelled())
        return estimated_dists(classes, len(self._target))

    def _filtered(self, rng):
        for (c, pair), dist in zip(self._labelled(), self._dists()):
            accept, _ = acceptance(dist, self._target)
            if not 0 <= c < len(accept):
                raise errors.InvalidArgumentError(
                    f"indices = {c} is not in [0, {len(accept)})")
            if rng.uniform() < accept[c]:
                yield pair

    def _eager_iter(self):
        if self._initial is not None and _static_mix(self._initial, self._target) == 0:
            return self._filtered(self._rng.generator(0))
        mix = (float(acceptance(d, self._target)[1]) for d in self._dists())
        return self._mixed(self._rng.generator(0), self._rng.generator(1), mix)

    def _mixed(self, rng_filter, rng_mix, mix):
        original = (pair for _, pair in self._labelled())
        sources = [original, self._filtered(rng_filter)]
        for m in mix:
            i = 0 if rng_mix.uniform() < m else 1
            element = next(sources[i], _END)
            if element is _END:
                return
            yield element


def _static_mix(initial, target):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.min(target / initial)


def _with_class(class_func):
    def add_class_value(*x):
        return class_func(*x), (x[0] if len(x) == 1 else x)
    return add_class_value


def _dist(value, who):
    t = structure.to_tensor(value)
    if not t.dtype.is_floating and not t.dtype.is_integer:
        raise TypeError(f"rejection_resample: {who} must be numbers, got {t.dtype.name}")
    return np.asarray(t.numpy(), dtype=np.float32).reshape(-1)


class _Methods:
    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """For each index i of choice_dataset (int64 scalars), the next element
        of datasets[i]."""
        return ChooseFromDatasets(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Each element from datasets[i], i drawn at random with probabilities
        weights (a list, tensor, or a dataset of them; default uniform)."""
        return sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset,
                                    rerandomize_each_iteration)

    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None,
                           name=None):
        """(class, element) pairs resampled (dropping or repeating elements) so
        the classes (class_func, int scalars) follow target_dist."""
        target = _dist(target_dist, "target_dist")
        initial = None if initial_dist is None else _dist(initial_dist, "initial_dist")
        if initial is not None and _static_mix(initial, target) == 1:
            return self.map(_with_class(class_func))
        return RejectionResampleDataset(self, class_func, target, initial, seed)


install_methods(DatasetV2, _Methods)
