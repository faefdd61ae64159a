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

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN
AUTOTUNE = -1

__all__ = ["INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "AUTOTUNE", "AutoShardPolicy",
           "AutotuneAlgorithm", "AutotuneOptions", "DistributeOptions", "ExternalStatePolicy",
           "OptimizationOptions", "ServiceOptions", "ThreadingOptions", "cardinality", "scan",
           "group_by_window", "bucket_by_sequence_length", "rejection_resample",
           "sample_from_datasets", "choose_from_datasets", "save", "load", "snapshot"]


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
