"""Runtime switches (tf.config)."""
from kiln import _kiln


def run_functions_eagerly(run_eagerly):
    """When True, kiln.function calls run the Python function directly (for
    debugging with print and pdb); nothing is traced."""
    _kiln._set_run_eagerly(bool(run_eagerly))


def functions_run_eagerly():
    return _kiln._run_eagerly()


def set_flush_denormals(enabled):
    """Whether kiln's ops flush denormal float results to zero (True, the
    default, as TensorFlow's CPU ops do: arithmetic on them is slow on x86).
    False keeps IEEE denormals. Python's and NumPy's own arithmetic keeps them
    either way. Returns the previous setting."""
    old = _kiln._flush_denormals()
    _kiln._set_flush_denormals(bool(enabled))
    return old


def get_flush_denormals():
    return _kiln._flush_denormals()


def set_jit_excess_precision(enabled):
    """Whether jit_compile=True functions may keep float values unrounded between
    the ops of one fused kernel where each op would round them to float16/bfloat16
    (True, the default, as XLA's xla_allow_excess_precision in TensorFlow): a
    mixed_bfloat16 model runs faster and at least as accurately. False rounds
    after every op, matching graph mode bit for bit (as does
    XLA_FLAGS=--xla_allow_excess_precision=false). Read when a function is
    compiled. Returns the previous setting."""
    old = _kiln._jit_excess_precision()
    _kiln._set_jit_excess_precision(bool(enabled))
    return old


def get_jit_excess_precision():
    return _kiln._jit_excess_precision()


def enable_tensor_float_32_execution(enabled):
    """Whether float32 convolutions and products may trade precision for speed
    (True, the default, as in TensorFlow, where it allows TF32 math on GPUs
    with errors near 1e-3). In kiln, float32 3x3 stride-1 convolutions whose
    filter did not change since their previous call (inference; training steps
    stay direct) then run as Winograd's algorithm: up to 2.8x faster, with errors
    near 1e-5 of the output's scale against 1e-6 computed directly. False
    computes every convolution directly. Checked on every call."""
    _kiln._set_tensor_float_32(bool(enabled))


def tensor_float_32_execution_enabled():
    return _kiln._tensor_float_32()


def set_memoize_variable_values(enabled):
    """Whether functions keep the values they compute from variables alone (a
    batch norm's scale and shift from its moving statistics) between calls,
    recomputing them only after one of those variables changed (True, the
    default; TensorFlow recomputes them on every call). Applies to functions
    that read variables and write no state. Checked on every call. Returns
    the previous setting."""
    old = _kiln._memoize_variable_values()
    _kiln._set_memoize_variable_values(bool(enabled))
    return old


def get_memoize_variable_values():
    return _kiln._memoize_variable_values()


class _Experimental:
    enable_tensor_float_32_execution = staticmethod(enable_tensor_float_32_execution)
    tensor_float_32_execution_enabled = staticmethod(tensor_float_32_execution_enabled)
    run_functions_eagerly = staticmethod(run_functions_eagerly)
    set_flush_denormals = staticmethod(set_flush_denormals)
    get_flush_denormals = staticmethod(get_flush_denormals)
    set_jit_excess_precision = staticmethod(set_jit_excess_precision)
    get_jit_excess_precision = staticmethod(get_jit_excess_precision)
    set_memoize_variable_values = staticmethod(set_memoize_variable_values)
    get_memoize_variable_values = staticmethod(get_memoize_variable_values)


experimental = _Experimental()
experimental_run_functions_eagerly = run_functions_eagerly


class _Optimizer:
    """tf.config.optimizer: whether functions with jit_compile=None compile.
    kiln reads the setting when a kiln.function is created (decorated), so set
    it before defining the functions it should apply to; jit_compile=True or
    False on a function always wins."""

    _jit = ""

    @staticmethod
    def set_jit(enabled):
        """"autoclustering" (True is TensorFlow's deprecated alias): functions
        with jit_compile=None compile their fusible clusters, as with
        jit_compile=True. False (or ""): they run in graph mode (the default)."""
        if enabled is True or enabled == "autoclustering":
            _Optimizer._jit = "autoclustering"
        elif enabled is False or enabled == "":
            _Optimizer._jit = ""
        else:
            raise ValueError(f"set_jit expects 'autoclustering', True or False, got {enabled!r}")

    @staticmethod
    def get_jit():
        """"autoclustering" when set_jit enabled it, else ""."""
        return _Optimizer._jit

    _options = {}  # as given, TensorFlow's dict.update semantics

    @staticmethod
    def set_experimental_options(options):
        """TensorFlow's Grappler switches ({"constant_folding": False, ...}),
        merged into those set before (None unsets one; keys TensorFlow does not
        know are kept and ignored, as TensorFlow does). kiln records them and
        reports them through get_experimental_options(); `_disabled_passes()`
        names the kiln passes they correspond to (_GRAPPLER_TO_KILN), which
        kiln.function skips in the functions made after the call."""
        _Optimizer._options.update(options)

    @staticmethod
    def get_experimental_options():
        """The options set, as TensorFlow reports them: its known switches in its
        order (truthy = on), `disable_model_pruning` and `disable_meta_optimizer`
        always (False by default), `min_graph_nodes` when not 0."""
        opts, out = _Optimizer._options, {}
        for key in _TOGGLES:
            if key in _ALWAYS:
                out[key] = bool(opts.get(key) or False)
            elif opts.get(key) is not None:
                out[key] = bool(opts[key])
        if opts.get("min_graph_nodes"):
            out["min_graph_nodes"] = int(opts["min_graph_nodes"])
        return out

    @staticmethod
    def _disabled_passes():
        """kiln's optimization passes that the options turn off (names as in
        kiln/passes.h): a switch set to False, or disable_model_pruning /
        disable_meta_optimizer set to True."""
        opts = _Optimizer.get_experimental_options()
        if opts.get("disable_meta_optimizer"):
            return set(_KILN_PASSES)
        off = set()
        for key, passes in _GRAPPLER_TO_KILN.items():
            if opts.get(key) is (key == "disable_model_pruning"):
                off.update(passes)
        return off


# TensorFlow's RewriterConfig switches, in the order get_experimental_options lists them.
_TOGGLES = ("layout_optimizer", "constant_folding", "shape_optimization", "remapping",
            "arithmetic_optimization", "dependency_optimization", "loop_optimization",
            "function_optimization", "debug_stripper", "disable_model_pruning",
            "scoped_allocator_optimization", "pin_to_host_optimization",
            "implementation_selector", "auto_mixed_precision", "use_plugin_optimizers",
            "disable_meta_optimizer", "auto_mixed_precision_onednn_bfloat16",
            "auto_mixed_precision_mkl")
_ALWAYS = ("disable_model_pruning", "disable_meta_optimizer")
# Grappler's optimizers with a kiln counterpart (src/passes); the others
# (layout, shape, loop, debug stripper, scoped allocator, host pinning,
# implementation selector, mixed precision) have none on kiln's CPU.
_GRAPPLER_TO_KILN = {
    "constant_folding": ("fold_constants",),
    "arithmetic_optimization": ("cse", "simplify"),
    "remapping": ("fuse_conv", "fuse", "fold_pad", "conv_float_filters", "matmul_float_weights",
                  "fuse_attention", "fuse_rnn"),
    "function_optimization": ("inline",),
    "disable_model_pruning": ("prune",),
}
# What disable_meta_optimizer turns off: every pass a switch names
# (schedule_collectives stays: it orders the collectives every worker must issue alike).
_KILN_PASSES = tuple(sorted({p for passes in _GRAPPLER_TO_KILN.values() for p in passes}))


optimizer = _Optimizer()


class _Threading:
    """tf.config.threading: kiln's intra-op threads are the kernel thread pool
    (fixed once the first large kernel ran); inter-op parallelism is whether a
    function's independent heavy branches run concurrently (1 = in order)."""

    _inter_op = 0

    @staticmethod
    def get_intra_op_parallelism_threads():
        """The pool size asked for; 0 = one thread per core (the default)."""
        return _kiln._num_threads()

    @staticmethod
    def set_intra_op_parallelism_threads(num_threads):
        """Sizes the kernel thread pool; only before it starts (RuntimeError after,
        as in TensorFlow), unless the size does not change."""
        n = _thread_count(num_threads, "set_intra_op_parallelism_threads")
        try:
            _kiln._set_num_threads(n)
        except ValueError as e:
            raise RuntimeError(str(e)) from None

    @staticmethod
    def get_inter_op_parallelism_threads():
        return _Threading._inter_op

    @staticmethod
    def set_inter_op_parallelism_threads(num_threads):
        """1 runs every function's plan in order; 0 (default) or more lets
        independent heavy branches run concurrently on the pool."""
        n = _thread_count(num_threads, "set_inter_op_parallelism_threads")
        _kiln._set_parallel_branches(n != 1)
        _Threading._inter_op = n


def _thread_count(n, what):
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{what}: expected an int >= 0, got {n!r}")
    return n


threading = _Threading()
