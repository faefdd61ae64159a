"""onnxruntime running kiln's ONNX export of each model workload (issue 43);
bench/peers/model_pair.py's `onnxruntime` side."""
import model_common as mc
import onnx_engines as oe
from common import Case

_ort = None
_threads = 1


def configure(threads):
    """Imports onnxruntime; sessions use `threads` intra-op threads, one inter-op."""
    global _ort, _threads
    import onnxruntime
    _ort, _threads = onnxruntime, threads
    return onnxruntime.__version__, {
        "threads": f"intra_op_num_threads={threads}, inter_op_num_threads=1, "
                   "ORT_ENABLE_ALL, CPUExecutionProvider"}


def _case(name):
    def build():
        opts = _ort.SessionOptions()
        opts.intra_op_num_threads = _threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = _ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = _ort.InferenceSession(oe.export(name), opts,
                                     providers=["CPUExecutionProvider"])
        feed = sess.get_inputs()[0].name

        def run(x):
            return sess.run(None, {feed: x})[0]
        return run, (oe.model_input(name),)
    return Case(name, "session", build, min_runs=5,
                meta={"model": f"kiln.onnx.export of {name}"})


def model_cases():
    return [_case(n) for n in mc.NAMES]
