"""kiln.distribute: data-parallel training over MPI processes (tf.distribute).

    strategy = kiln.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = make_model()          # variables start from worker 0's values
        model.compile(...)
    model.fit(dataset_of_global_batches, ...)   # each worker trains on its share

Run it with ``mpirun -np N python script.py``; as one process it trains alone.
One replica runs per process. docs/DISTRIBUTE.md describes the communicator and
docs/PYTHON.md ("Distribution") the Python API's decisions.
"""
import types

from kiln.distribute.distribute_lib import (
    ReduceOp, ReplicaContext, Strategy, StrategyExtended, get_replica_context, get_strategy,
    has_strategy, in_cross_replica_context)
from kiln.distribute.input_lib import DistributedDataset, InputContext, ValueContext
from kiln.distribute.strategies import (
    ClusterResolver, CommunicationImplementation, CommunicationOptions, MirroredStrategy,
    MultiWorkerMirroredStrategy, OneDeviceStrategy)

experimental = types.SimpleNamespace(
    MultiWorkerMirroredStrategy=MultiWorkerMirroredStrategy,
    CommunicationOptions=CommunicationOptions,
    CommunicationImplementation=CommunicationImplementation,
    ValueContext=ValueContext,
)

__all__ = [
    "ReduceOp", "ReplicaContext", "Strategy", "StrategyExtended", "MirroredStrategy",
    "OneDeviceStrategy", "MultiWorkerMirroredStrategy", "InputContext", "ValueContext",
    "DistributedDataset", "ClusterResolver", "CommunicationOptions",
    "CommunicationImplementation", "get_strategy", "has_strategy",
    "in_cross_replica_context", "get_replica_context", "experimental",
]
