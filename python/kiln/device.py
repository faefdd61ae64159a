"""tf.device: device placement. kiln runs on the CPU, so a device scope accepts the
names of the one CPU device and rejects every other device with a clear error."""
import contextlib
import re

from kiln import errors

# TensorFlow's device-name forms: "CPU:0", "/CPU:0", "/device:CPU:0", "cpu:0",
# "/job:localhost/replica:0/task:0/device:CPU:0", "" (no constraint).
_NAME = re.compile(r"^(?:/job:(?P<job>[\w-]+))?(?:/replica:(?P<replica>\d+))?"
                   r"(?:/task:(?P<task>\d+))?(?:/?(?:device:)?(?P<type>[A-Za-z_]+)"
                   r"(?::(?P<index>\d+|\*))?)?$")
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def _check(device_name):
    if device_name is None or device_name == "":
        return
    if not isinstance(device_name, str):
        raise ValueError(f"tf.device: the device name must be a string, got {device_name!r}")
    m = _NAME.match(device_name.strip())
    if m is None or (m.group("type") is None and m.group("job") is None):
        raise ValueError(f"tf.device: '{device_name}' is not a device name (e.g. 'CPU:0', "
                         f"'/device:CPU:0')")
    kind = (m.group("type") or "CPU").upper()
    index = m.group("index")
    job_ok = m.group("job") in (None, "localhost") and m.group("replica") in (None, "0") \
        and m.group("task") in (None, "0")
    if kind != "CPU" or index not in (None, "0", "*") or not job_ok:
        raise errors.InvalidArgumentError(
            f"tf.device: device '{device_name}' does not exist: kiln runs on one device, "
            f"{CPU_DEVICE}")


@contextlib.contextmanager
def device(device_name):
    """Places the ops created in the block on `device_name` (tf.device). Only kiln's CPU
    device exists: its names are accepted (and change nothing); another device is an
    InvalidArgumentError, a malformed name a ValueError."""
    _check(device_name)
    yield


__all__ = ["device"]
