"""OpenVINO running kiln's ONNX export of each model workload (issue 43);
bench/peers/model_pair.py's `openvino` side."""
import model_common as mc
import onnx_engines as oe
from common import Case

_ov = None
_threads = 1


def configure(threads):
    """Imports OpenVINO; the CPU plugin gets `threads` threads, the latency hint and
    float32 inference precision (on CPUs with bf16 units it would otherwise pick bf16)."""
    global _ov, _threads
    import openvino
    _ov, _threads = openvino, threads
    return openvino.__version__, {
        "threads": f"INFERENCE_NUM_THREADS={threads}, PERFORMANCE_HINT=LATENCY, "
                   "INFERENCE_PRECISION_HINT=f32, CPU plugin"}


def _case(name):
    def build():
        core = _ov.Core()
        compiled = core.compile_model(core.read_model(oe.export(name)), "CPU", {
            "INFERENCE_NUM_THREADS": _threads, "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        out = compiled.output(0)

        def run(x):
            return request.infer([x])[out].copy()  # the request reuses its buffer
        return run, (oe.model_input(name),)
    return Case(name, "compiled", build, min_runs=5,
                meta={"model": f"kiln.onnx.export of {name}"})


def model_cases():
    return [_case(n) for n in mc.NAMES]
