"""Dataset.interleave and Dataset.flat_map: a dataset made from each element,
their elements taken in turns.

The order is tf.data's deterministic one: cycle_length slots; the current slot
gives up to block_length elements, then the turn passes on; a slot whose
dataset ends is emptied and the turn passes on; an empty slot takes the next
input element when its turn comes. With num_parallel_calls, eager iteration
fills each open slot ahead on its own thread (kiln.data.parallel.Prefetcher),
keeping that order; deterministic=False changes nothing."""
import warnings

from kiln import errors
from kiln.data import nested, parallel
from kiln.data.dataset import UNKNOWN, DatasetV2, install_methods
from kiln.data.transforms import count_arg

AUTOTUNE = -1


def cpu_count():
    """The CPUs this process may run on (what tf.data's AUTOTUNE cycle_length uses)."""
    return parallel.usable_cpus()


class InterleaveDataset(DatasetV2):
    _name = "InterleaveDataset"

    def __init__(self, parent, map_func, cycle_length, block_length, who, prefetch=False):
        if not isinstance(parent, DatasetV2):
            raise TypeError(f"expected a kiln.data.Dataset, got {parent!r}")
        self._fn = nested.DatasetFunction(map_func, parent.element_spec, who)
        cycle = count_arg(cycle_length, "cycle_length", who)
        block = count_arg(block_length, "block_length", who)
        if cycle == AUTOTUNE:
            cycle = cpu_count()
        if cycle <= 0:
            raise errors.InvalidArgumentError("cycle_length must be greater than zero.")
        if block <= 0:
            raise errors.InvalidArgumentError("block_length must be greater than zero.")
        super().__init__(self._fn.output_spec, UNKNOWN, parent._symbolic)
        self._parent, self._cycle, self._block = parent, cycle, block
        self._ahead = block if prefetch else 0  # elements a slot computes ahead (a thread)

    def _eager_iter(self):
        inputs = self._parent._eager_iter()
        slots = [None] * self._cycle
        index = count = opened = 0
        input_done = False
        while not input_done or opened:
            it = slots[index]
            if it is None and not input_done:
                element = next(inputs, _END)
                if element is _END:
                    input_done = True
                else:
                    slots[index] = self._open(element)
                    opened += 1
                continue
            if it is not None:
                value = next(it, _END)
                if value is not _END:
                    count += 1
                    if count == self._block:
                        index, count = (index + 1) % self._cycle, 0
                    yield value
                    continue
                slots[index] = None
                opened -= 1
            index, count = (index + 1) % self._cycle, 0

    def _open(self, element):
        it = self._fn(element)._eager_iter()
        if self._ahead:
            it = parallel.Prefetcher(it, self._ahead)
            it.start()
        return it


_END = object()


class _Methods:
    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """Maps each element to a dataset (map_func) and takes their elements in
        turns: cycle_length datasets at a time (AUTOTUNE or None: the number of
        CPUs), block_length (default 1) elements from each in a turn."""
        if num_parallel_calls is None and deterministic is not None:
            warnings.warn("The `deterministic` argument has no effect unless the "
                          "`num_parallel_calls` argument is specified.", stacklevel=2)
        if num_parallel_calls is not None:
            n = count_arg(num_parallel_calls, "num_parallel_calls", "interleave")
            if n <= 0 and n != AUTOTUNE:
                raise errors.InvalidArgumentError(
                    "num_parallel_calls must be greater than zero.")
        return InterleaveDataset(self, map_func,
                                 AUTOTUNE if cycle_length is None else cycle_length,
                                 1 if block_length is None else block_length,
                                 "Dataset.interleave()", num_parallel_calls is not None)

    def flat_map(self, map_func, name=None):
        """Maps each element to a dataset (map_func) and chains their elements."""
        return InterleaveDataset(self, map_func, 1, 1, "Dataset.flat_map()")


install_methods(DatasetV2, _Methods)
