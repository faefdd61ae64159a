"""The strategies: MirroredStrategy and OneDeviceStrategy (one CPU replica) and
MultiWorkerMirroredStrategy (one replica per MPI process).

A multi-worker program is launched once per worker, e.g.

    mpirun -np 2 python train.py

Every worker runs the same code; collectives happen where the code asks for
them (gradients, all_reduce, reduce). Without a launcher the strategy has one
worker and every collective is the identity.
"""
import enum
import sys

from kiln import _kiln
from kiln.distribute.distribute_lib import Strategy


def _check_cpu_devices(devices, what):
    for d in devices or ():
        if "GPU" in str(d).upper() or "TPU" in str(d).upper():
            raise ValueError(f"{what}: kiln runs on the CPU; got device {d!r}")


class MirroredStrategy(Strategy):
    """Synchronous training on the devices of one machine: for kiln, one
    replica on the CPU (the values, the variables and the run are the plain
    ones)."""

    def __init__(self, devices=None, cross_device_ops=None):
        _check_cpu_devices(devices, "MirroredStrategy")
        super().__init__()


class OneDeviceStrategy(Strategy):
    """Everything on one device (kiln: the CPU), one replica."""

    def __init__(self, device="/cpu:0"):
        _check_cpu_devices([device], "OneDeviceStrategy")
        super().__init__()


class CommunicationImplementation(enum.Enum):
    """Which collective implementation to use (kiln has one: MPI)."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CommunicationOptions:
    """Options of the collectives: ``bytes_per_pack`` is the size of the
    gradient buckets (0: kiln's default, 4 MB); ``timeout_seconds`` bounds how
    long a collective waits for the other workers (DeadlineExceededError)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be non-negative, got {bytes_per_pack}")
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds}")
        self.bytes_per_pack = int(bytes_per_pack)
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class ClusterResolver:
    """Where this worker stands in the cluster: task_type "worker", task_id
    its rank."""

    def __init__(self, rank, size, backend):
        self.task_type = "worker"
        self.task_id = rank
        self.rpc_layer = backend
        self.environment = ""
        self._size = size

    def cluster_spec(self):
        """{"worker": one entry per worker} (MPI ranks have no addresses)."""
        return {"worker": [f"rank:{r}" for r in range(self._size)]}

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {}

    def __repr__(self):
        return f"<kiln.distribute.ClusterResolver worker {self.task_id} of {self._size}>"


def _report_failures():
    """Installs (once) a sys.excepthook that tells the other workers this one
    failed (they raise UnavailableError naming it) before the usual report."""
    previous = sys.excepthook
    if getattr(previous, "_kiln_reports_failure", False):
        return

    def report_failure(exc_type, exc, tb):
        try:
            _kiln.comm_fail(f"{exc_type.__name__}: {exc}")
        except Exception:  # noqa: BLE001  (the report below must still happen)
            pass
        previous(exc_type, exc, tb)

    report_failure._kiln_reports_failure = True
    sys.excepthook = report_failure


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data-parallel training over the processes of an MPI launch,
    one replica each (tf.distribute.MultiWorkerMirroredStrategy).

    Variables created in ``scope()`` start from worker 0's values; the Keras
    optimizers sum the gradients over the workers (in buckets that overlap the
    backward pass); ``experimental_distribute_dataset`` gives each worker its
    share of each global batch. A worker that dies with an exception tells the
    others, which raise UnavailableError naming it."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        if cluster_resolver is not None:
            raise NotImplementedError("MultiWorkerMirroredStrategy: kiln takes the cluster "
                                      "from the MPI launch; cluster_resolver must be None")
        options = communication_options or CommunicationOptions()
        rank, size, backend = _kiln.comm_info()
        super().__init__(rank, size, collective=True,
                         bucket_bytes=options.bytes_per_pack or None)
        self._cluster_resolver = ClusterResolver(rank, size, backend)
        if options.timeout_seconds is not None:
            _kiln.comm_set_timeout(float(options.timeout_seconds))
        if size > 1:
            _report_failures()

    @property
    def cluster_resolver(self):
        return self._cluster_resolver
