"""kiln.data.experimental: the tf.data.experimental names kiln supports.

The transformations here are TensorFlow's deprecated spellings: each returns
a function for dataset.apply(), or (save, load, sample_from_datasets,
choose_from_datasets) calls the Dataset method."""
from kiln.data.dataset import INFINITE, UNKNOWN
from kiln.data.options import (AutoShardPolicy, AutotuneAlgorithm, AutotuneOptions,
                               DistributeOptions, ExternalStatePolicy, OptimizationOptions,
                               ServiceOptions, ThreadingOptions)
from kiln.data.sampling import ChooseFromDatasets, sample_from_datasets  # noqa: F401
from kiln.data.saving import load as _load, save as _save
from kiln.data.selection import assert_cardinality, get_single_element  # noqa: F401
from kiln.data.records import TFRecordWriter  # noqa: F401
from kiln.data.sources import CounterDataset, RandomDataset

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN
AUTOTUNE = -1

__all__ = ["INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "AUTOTUNE", "AutoShardPolicy",
           "AutotuneAlgorithm", "AutotuneOptions", "DistributeOptions", "ExternalStatePolicy",
           "OptimizationOptions", "ServiceOptions", "ThreadingOptions", "cardinality", "scan",
           "group_by_window", "bucket_by_sequence_length", "rejection_resample",
           "sample_from_datasets", "choose_from_datasets", "save", "load", "snapshot",
           "Counter", "RandomDataset", "SHARD_HINT", "assert_cardinality", "get_single_element",
           "ignore_errors", "take_while", "unique"]

SHARD_HINT = -1  # dataset.shard(SHARD_HINT, ...): only a distribution strategy may shard it


def cardinality(dataset):
    """dataset.cardinality() (tf.data.experimental.cardinality)."""
    return dataset.cardinality()


def scan(initial_state, scan_func):
    """For dataset.apply(): dataset.scan(initial_state, scan_func)."""
    return lambda dataset: dataset.scan(initial_state, scan_func)


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    """For dataset.apply(): dataset.group_by_window(...)."""
    return lambda dataset: dataset.group_by_window(key_func, reduce_func, window_size,
                                                   window_size_func)


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """For dataset.apply(): dataset.bucket_by_sequence_length(...)."""
    return lambda dataset: dataset.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
        padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    """For dataset.apply(): dataset.rejection_resample(...)."""
    return lambda dataset: dataset.rejection_resample(class_func, target_dist, initial_dist,
                                                      seed)


def snapshot(path, compression="AUTO", reader_func=None, shard_func=None):
    """For dataset.apply(): dataset.snapshot(...)."""
    return lambda dataset: dataset.snapshot(path, compression, reader_func, shard_func)


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=False):
    """Dataset.choose_from_datasets (here stop_on_empty_dataset defaults to False)."""
    return ChooseFromDatasets(datasets, choice_dataset, stop_on_empty_dataset)


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    """dataset.save(path, ...)."""
    return _save(dataset, path, compression, shard_func, checkpoint_args)


def load(path, element_spec=None, compression=None, reader_func=None):
    """Dataset.load(path, ...)."""
    return _load(path, element_spec, compression, reader_func)


def Counter(start=0, step=1, dtype="int64"):  # noqa: N802 -- TensorFlow's name
    """Dataset.counter(start, step, dtype) (tf.data.experimental.Counter)."""
    return CounterDataset(start, step, dtype)


def ignore_errors(log_warning=False):
    """For dataset.apply(): dataset.ignore_errors(log_warning)."""
    return lambda dataset: dataset.ignore_errors(log_warning)


def take_while(predicate):
    """For dataset.apply(): dataset.take_while(predicate)."""
    return lambda dataset: dataset.take_while(predicate)


def unique():
    """For dataset.apply(): dataset.unique()."""
    return lambda dataset: dataset.unique()
