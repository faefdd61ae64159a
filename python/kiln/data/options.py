"""tf.data.Options and Dataset.with_options / Dataset.options.

Every field of TensorFlow 2.21's options is accepted, type-checked and
reported back by dataset.options() (merged over the pipeline: a value set
later wins). kiln's pipelines produce elements one at a time, in order, so
the options change nothing in how they run."""
import enum
import logging

from kiln.data.dataset import DatasetV2, install_methods
from kiln.data.transforms import PassThroughDataset

_log = logging.getLogger("kiln.data")


class AutotuneAlgorithm(enum.Enum):
    DEFAULT = 0
    HILL_CLIMB = 1
    GRADIENT_DESCENT = 2
    MAX_PARALLELISM = 3
    STAGE_BASED = 4


class AutoShardPolicy(enum.IntEnum):
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.Enum):
    WARN = 0
    IGNORE = 1
    FAIL = 2


class OptionsBase:
    """A set of options: typed properties, None (or a default) until set."""

    def __init__(self):
        object.__setattr__(self, "_options", {})
        object.__setattr__(self, "_mutable", True)

    def __eq__(self, other):
        if not isinstance(other, self.__class__):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n)
                   for n in set(self._options) | set(other._options))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __setattr__(self, name, value):
        if not self._mutable:
            raise ValueError("Mutating `tf.data.Options()` returned by "
                             "`tf.data.Dataset.options()` has no effect. Use "
                             "`tf.data.Dataset.with_options(options)` to set or update "
                             "dataset options.")
        if not hasattr(self, name):
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        object.__setattr__(self, name, value)

    def _set_mutable(self, mutable):
        object.__setattr__(self, "_mutable", mutable)


def _option(name, ty, doc, default=lambda: None):
    def get(self):
        if name not in self._options:
            self._options[name] = default()
        return self._options[name]

    def set_(self, value):
        if not isinstance(value, ty):
            raise TypeError(f'Property "{name}" must be of type {ty}, got: {value} (type: '
                            f"{type(value)})")
        self._options[name] = value
    return property(get, set_, None, doc)


class AutotuneOptions(OptionsBase):
    """Autotuning options (tf.data.experimental.AutotuneOptions)."""
    enabled = _option("enabled", bool, "Whether to tune performance knobs.")
    cpu_budget = _option("cpu_budget", int, "CPU budget for autotuning.")
    ram_budget = _option("ram_budget", int, "RAM budget (bytes) for autotuning.")
    autotune_algorithm = _option("autotune_algorithm", AutotuneAlgorithm,
                                 "The autotuning algorithm.")
    initial_parallelism = _option("initial_parallelism", int, "Initial parallelism.")
    min_parallelism = _option("min_parallelism", int, "Minimum parallelism.")


class DistributeOptions(OptionsBase):
    """Distribution options (tf.data.experimental.DistributeOptions)."""
    auto_shard_policy = _option("auto_shard_policy", AutoShardPolicy,
                                "How a distributed dataset is sharded.",
                                lambda: AutoShardPolicy.AUTO)
    num_devices = _option("num_devices", int, "The number of devices.")


class OptimizationOptions(OptionsBase):
    """Static optimization options (tf.data.experimental.OptimizationOptions)."""
    apply_default_optimizations = _option("apply_default_optimizations", bool,
                                          "Whether to apply default optimizations.")
    filter_fusion = _option("filter_fusion", bool, "Fuse filters.")
    filter_parallelization = _option("filter_parallelization", bool, "Parallel filter.")
    inject_prefetch = _option("inject_prefetch", bool, "Inject a final prefetch.")
    seq_interleave_prefetch = _option("seq_interleave_prefetch", bool,
                                      "Prefetching interleave.")
    map_and_batch_fusion = _option("map_and_batch_fusion", bool, "Fuse map and batch.")
    map_and_filter_fusion = _option("map_and_filter_fusion", bool, "Fuse map and filter.")
    map_fusion = _option("map_fusion", bool, "Fuse maps.")
    map_parallelization = _option("map_parallelization", bool, "Parallel map.")
    noop_elimination = _option("noop_elimination", bool, "Remove no-op transformations.")
    parallel_batch = _option("parallel_batch", bool, "Parallel batch copies.")
    shuffle_and_repeat_fusion = _option("shuffle_and_repeat_fusion", bool,
                                        "Fuse shuffle and repeat.")


class ServiceOptions(OptionsBase):
    """tf.data service options (tf.data.experimental.ServiceOptions)."""
    pinned = _option("pinned", bool, "Pinned buffers.")


class ThreadingOptions(OptionsBase):
    """Threading options (tf.data.ThreadingOptions)."""
    max_intra_op_parallelism = _option("max_intra_op_parallelism", int,
                                       "Maximum intra-op parallelism.")
    private_threadpool_size = _option("private_threadpool_size", int,
                                      "Size of a private thread pool.")


class Options(OptionsBase):
    """Options of a dataset (tf.data.Options), set with dataset.with_options()."""
    autotune = _option("autotune", AutotuneOptions, "Autotuning options.", AutotuneOptions)
    deterministic = _option("deterministic", bool, "Whether outputs keep their order.")
    experimental_distribute = _option("experimental_distribute", DistributeOptions,
                                      "Distribution options.", DistributeOptions)
    experimental_external_state_policy = _option(
        "experimental_external_state_policy", ExternalStatePolicy, "External state policy.")
    experimental_optimization = _option("experimental_optimization", OptimizationOptions,
                                        "Optimization options.", OptimizationOptions)
    experimental_slack = _option("experimental_slack", bool, "Slack in the last prefetch.")
    experimental_symbolic_checkpoint = _option("experimental_symbolic_checkpoint", bool,
                                               "Symbolic checkpointing.")
    experimental_service = _option("experimental_service", ServiceOptions,
                                   "tf.data service options.", ServiceOptions)
    experimental_warm_start = _option("experimental_warm_start", bool, "Warm start.")
    dataset_name = _option("dataset_name", str, "A name for the dataset.")
    framework_type = _option("framework_type", list, "Frameworks that made the dataset.")
    threading = _option("threading", ThreadingOptions, "Threading options.",
                        ThreadingOptions)

    experimental_deterministic = property(
        lambda self: self.deterministic,
        lambda self, value: setattr(self, "deterministic", value),
        None, "DEPRECATED. Use `deterministic` instead.")
    experimental_threading = property(
        lambda self: self.threading,
        lambda self, value: setattr(self, "threading", value),
        None, "DEPRECATED. Use `threading` instead.")


def merge_options(*options_list, quiet=False):
    """One options object: each option set in a later one wins (logged
    unless quiet)."""
    result_type = type(options_list[0])
    default, result = result_type(), result_type()
    for options in options_list:
        for name in options._options:
            this, that = getattr(result, name), getattr(options, name)
            if that == getattr(default, name):
                continue
            if this == getattr(default, name):
                setattr(result, name, that)
            elif isinstance(this, OptionsBase):
                setattr(result, name, merge_options(this, that, quiet=quiet))
            elif name == "framework_type":
                setattr(result, name, this + that)
            elif this != that:
                if not quiet:
                        _log.warning("Changing the value of option %s from %r to %r.", name,
                                 this, that)
                setattr(result, name, that)
    return result


class OptionsDataset(PassThroughDataset):
    def __init__(self, parent, options):
        if not isinstance(options, Options):
            raise TypeError(f"with_options: expected a kiln.data.Options, got {options!r}")
        super().__init__(parent, "_OptionsDataset")
        self._dataset_options = merge_options(dataset_options(parent), options)


def dataset_options(dataset):
    """The options of dataset and everything it reads, merged."""
    own = getattr(dataset, "_dataset_options", None)
    if isinstance(own, Options):
        return own  # already merged with its input's
    found = [dataset_options(d) for d in dataset._inputs()]
    return merge_options(Options(), *found, quiet=True)


class _Methods:
    def with_options(self, options, name=None):
        """The same dataset with options (a kiln.data.Options) set; merged with
        options set before, a value set later winning."""
        return OptionsDataset(self, options)

    def options(self):
        """The options of this dataset and its inputs (read-only)."""
        out = dataset_options(self)
        out._set_mutable(False)
        return out


install_methods(DatasetV2, _Methods)
