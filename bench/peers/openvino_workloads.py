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


def _case(name, precision="f32"):
    def build():
        core = _ov.Core()
        compiled = core.compile_model(core.read_model(oe.export(name)), "CPU", {
            "INFERENCE_NUM_THREADS": _threads, "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": precision})
        request = compiled.create_infer_request()
        out = compiled.output(0)

        def run(x):
            return request.infer([x])[out].copy()  # the request reuses its buffer
        return run, (oe.model_input(name),)
    mode = "compiled" if precision == "f32" else f"compiled {precision}"
    return Case(name, mode, build, min_runs=5,
                meta={"model": f"kiln.onnx.export of {name}", "precision": precision})


def model_cases():
    """Every workload in float32, and in bf16 (OpenVINO's own bf16 inference, the peer of
    kiln's mixed_bfloat16 side in model_pair)."""
    return [_case(n) for n in mc.NAMES] + [_case(n, "bf16") for n in mc.NAMES]
