"""Recurrent layers: the cells SimpleRNNCell, LSTMCell, GRUCell, and RNN, SimpleRNN, LSTM, GRU
(Keras 3's arguments, weight names, shapes and gate orders, so weights copy between the two).

The input projection of every step is one matrix product over the whole sequence; the steps
then run as one ``while_loop`` (one While node inside a function), or unrolled when
``unroll=True`` and the length is known.
"""
from kiln import control_flow, dtypes
from kiln.keras.layers._path_scope import current_path, layer_scope
from kiln.keras.variables import Variable as KerasVariable
from kiln.scopes import init_scope
from kiln.keras import activations, initializers
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec, serialize_nested
from kiln.ops import _helpers as h
from kiln.ops import array_ops, linalg_ops, nn_ops
from kiln.tensor_shape import TensorShape


_CELL_EXTRAS = ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                "kernel_constraint", "recurrent_constraint", "bias_constraint")


def _init_config(init):
    return initializers.serialize(init) if isinstance(init, initializers.Initializer) else None


class _Cell(Layer):
    """Arguments and weights the three cells share."""

    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.units = _args.positive_int(units, "units", type(self).__name__)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.recurrent_regularizer = kernel_regularizer, \
            recurrent_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint, self.recurrent_constraint = kernel_constraint, \
            recurrent_constraint
        self.bias_constraint = bias_constraint
        self.dropout = _args.rate(dropout, "dropout")
        self.recurrent_dropout = _args.rate(recurrent_dropout, "recurrent_dropout")
        self.seed = seed

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def _build_kernels(self, input_dim):
        n = self._gates * self.units
        self.kernel = self.add_weight("kernel", (input_dim, n),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, n),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)

    def build(self, input_shape):
        input_dim = TensorShape(input_shape)[-1]
        if input_dim is None:
            raise ValueError(f"{type(self).__name__}: the last dimension of the inputs should "
                             f"be defined. Received: input_shape={input_shape}")
        self._build_kernels(input_dim)
        if self.use_bias:
            self.bias = self.add_weight("bias", self._bias_shape(),
                                        initializer=self._bias_init(),
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        else:
            self.bias = None
        self.built = True

    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_init(self):
        return self.bias_initializer

    def project(self, inputs):
        """The input's share of every step, x @ kernel (+ the input bias), for
        a whole [batch, steps, input_dim] sequence at once."""
        y = linalg_ops.matmul(inputs, self.kernel)
        b = self._input_bias()
        return nn_ops.bias_add(y, b) if b is not None else y

    def _input_bias(self):
        return self.bias

    def get_initial_state(self, batch_size, dtype):
        return [array_ops.zeros([batch_size, self.units], dtype=dtype)]

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": _init_config(self.kernel_initializer),
                "recurrent_initializer": _init_config(self.recurrent_initializer),
                "bias_initializer": _init_config(self.bias_initializer),
                **_args.extras_config(self, _CELL_EXTRAS),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


class SimpleRNNCell(_Cell):
    """h = activation(x @ kernel + h_prev @ recurrent_kernel + bias); kernel
    [input_dim, units], recurrent_kernel [units, units], bias [units]."""

    def step(self, projected, states, r_mask=None):
        h_prev = states[0]
        h_in = h_prev * r_mask if r_mask is not None else h_prev
        h_new = self.activation(projected + linalg_ops.matmul(h_in, self.recurrent_kernel))
        return h_new, [h_new]


class LSTMCell(_Cell):
    """The LSTM step with gates in Keras' order i, f, c, o: kernel
    [input_dim, 4 * units], recurrent_kernel [units, 4 * units], bias
    [4 * units] (the forget gate's quarter starts at 1 with
    ``unit_forget_bias``)."""

    _gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, **kwargs):
        super().__init__(units, activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, u = self.bias_initializer, self.units

        def init(shape, dtype=None):
            return array_ops.concat([h.tensor(base((u,), dtype)),
                                     array_ops.ones([u], dtype=dtype or "float32"),
                                     h.tensor(base((2 * u,), dtype))], 0)
        return init

    def step(self, projected, states, r_mask=None):
        h_prev, c_prev = states
        h_in = h_prev * r_mask if r_mask is not None else h_prev
        z = projected + linalg_ops.matmul(h_in, self.recurrent_kernel)
        zi, zf, zc, zo = array_ops.split(z, 4, axis=1)
        i = self.recurrent_activation(zi)
        f = self.recurrent_activation(zf)
        c = f * c_prev + i * self.activation(zc)
        o = self.recurrent_activation(zo)
        h_new = o * self.activation(c)
        return h_new, [h_new, c]

    def get_initial_state(self, batch_size, dtype):
        return [array_ops.zeros([batch_size, self.units], dtype=dtype) for _ in range(2)]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """The GRU step with gates in Keras' order z, r, h: kernel [input_dim,
    3 * units], recurrent_kernel [units, 3 * units]; with ``reset_after``
    (the default, cuDNN's form) bias [2, 3 * units] (input, recurrent) and
    the reset gate applied after the recurrent product, else bias
    [3 * units] and the reset gate applied to h_prev before it."""

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", reset_after=True, **kwargs):
        super().__init__(units, activation, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self):
        if self.bias is None:
            return None
        return self.bias[0] if self.reset_after else self.bias

    def step(self, projected, states, r_mask=None):
        h_prev = states[0]
        h_in = h_prev * r_mask if r_mask is not None else h_prev
        u = self.units
        x_z, x_r, x_h = array_ops.split(projected, 3, axis=1)
        if self.reset_after:
            inner = linalg_ops.matmul(h_in, self.recurrent_kernel)
            if self.bias is not None:
                inner = inner + self.bias[1]
            r_z, r_r, r_h = array_ops.split(inner, 3, axis=1)
        else:
            inner = linalg_ops.matmul(h_in, self.recurrent_kernel[:, :2 * u])
            r_z, r_r = array_ops.split(inner, 2, axis=1)
        z = self.recurrent_activation(x_z + r_z)
        r = self.recurrent_activation(x_r + r_r)
        if self.reset_after:
            r_h = r * r_h
        else:
            r_h = linalg_ops.matmul(r * h_in, self.recurrent_kernel[:, 2 * u:])
        hh = self.activation(x_h + r_h)
        h_new = z * h_prev + (1.0 - z) * hh
        return h_new, [h_new]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}


class StackedRNNCells(Layer):
    """Cells run one after the other at each step (``RNN([cell, cell])``): a
    cell's output is the next one's input; the states are every cell's, in
    order; the output is the last cell's."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        cells = list(cells)
        if not cells or not all(isinstance(c, _Cell) for c in cells):
            raise ValueError("StackedRNNCells needs a non-empty list of kiln.keras's cells. "
                             f"Received: cells={cells!r}")
        if any(c.dropout or c.recurrent_dropout for c in cells):
            raise NotImplementedError("dropout in stacked cells is not supported yet")
        self.cells = cells
        self.dropout = self.recurrent_dropout = 0.0
        self.seed = None

    @property
    def units(self):
        return self.cells[-1].units

    @property
    def output_size(self):
        return self.cells[-1].output_size

    def _counts(self):
        return [len(c.get_initial_state(1, "float32")) for c in self.cells]

    def build(self, input_shape):
        dim = TensorShape(input_shape)[-1]
        for c in self.cells:
            c.build((None, dim))
            dim = c.output_size
        self.built = True

    def project(self, inputs):
        return self.cells[0].project(inputs)

    def step(self, projected, states, r_mask=None):
        out, new, at = None, [], 0
        for i, (c, n) in enumerate(zip(self.cells, self._counts())):
            p = projected if i == 0 else c.project(out)
            out, s = c.step(p, states[at:at + n])
            new += list(s)
            at += n
        return out, new

    def get_initial_state(self, batch_size, dtype):
        return [s for c in self.cells for s in c.get_initial_state(batch_size, dtype)]

    def get_config(self):
        return {**super().get_config(),
                "cells": [serialize_nested(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cells = [_CELLS[c["class_name"]].from_config(c["config"]) for c in config.pop("cells")]
        return cls(cells, **config)


def _time_major(x):
    return array_ops.transpose(x, [1, 0] + list(range(2, len(x.shape))))


class RNN(Layer):
    """Runs ``cell`` over the steps of [batch, steps, features] inputs: the
    last output ([batch, units]), or every step's (``return_sequences``),
    then the final states (``return_state``). A ``mask`` [batch, steps]
    (true: a real step) keeps the states and repeats the last output over
    masked steps (zeros with ``zero_output_for_mask``)."""

    _kiln_static_shapes = True

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not isinstance(cell, (_Cell, StackedRNNCells)):
            raise ValueError("Argument `cell` should be one of kiln.keras's cells (SimpleRNNCell, "
                             f"LSTMCell, GRUCell, StackedRNNCells) or a list of them. Received: "
                             f"cell={cell!r}")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self._kiln_states = None  # stateful: the states kept between calls (variables)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        if shape.rank != 3:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: '
                             f"expected ndim=3, found ndim={shape.rank}. Full shape received: "
                             f"{shape}")
        self.cell.build((shape[0], shape[2]))
        if self.stateful:
            self._build_states(shape)
        self.built = True

    # ---- stateful=True: the last states start the next call ----

    @property
    def states(self):
        """The kept states (variables) of a stateful layer, else None."""
        return self._kiln_states

    def _build_states(self, shape):
        if self._kiln_states is not None:
            self.reset_state()
            return
        if shape[0] is None:
            raise ValueError("When using `stateful=True` in a RNN, the batch size must be "
                             f"static. Found dynamic batch size: sequence.shape="
                             f"{tuple(shape.as_list())}")
        with init_scope(), layer_scope(self):  # Keras' path: "<layer>/rnn_state"
            path = f"{current_path()}/rnn_state"
            self._kiln_states = [KerasVariable(s, "rnn_state", path, trainable=False)
                                 for s in self.cell.get_initial_state(shape[0], self._dtype)]

    def reset_state(self):
        """Zeroes the kept states of a stateful layer."""
        for v in self._kiln_states or ():
            v.assign(array_ops.zeros_like(v.value()))

    reset_states = reset_state  # Keras' alias

    def _stateful_initial(self, x):
        want = self._kiln_states[0].shape[0]
        got = x.shape[0]
        if got is not None and got != want:
            raise ValueError("If an RNN is stateful, the batch size of the input sequences "
                             "must be the same as the batch size of the initial state. \n"
                             f"- Expected batch size: {want}\n- Received batch size: {got}")
        return [v.value() for v in self._kiln_states]

    def _dropout_masks(self, inputs, training):
        cell = self.cell
        x_mask = r_mask = None
        if training and 0 < cell.dropout < 1:
            x_mask = nn_ops.dropout(array_ops.ones_like(inputs[:, 0, :]), cell.dropout,
                                    seed=cell.seed)
        if training and 0 < cell.recurrent_dropout < 1:
            ones = array_ops.zeros_like(inputs[:, 0, :1]) + array_ops.ones([1, cell.units],
                                                                          dtype=inputs.dtype)
            r_mask = nn_ops.dropout(ones, cell.recurrent_dropout, seed=cell.seed)
        return x_mask, r_mask

    def call(self, inputs, mask=None, training=None, initial_state=None):
        cell = self.cell
        x = h.tensor(inputs)
        # Sizes read from the time-major inputs: between stacked layers the
        # transposes then cancel (the batch-major sequence is not computed).
        xt = _time_major(x)
        batch, steps = array_ops.shape(xt)[1], array_ops.shape(xt)[0]
        if x.shape[0] is not None:  # static states: the step's ops fuse whole under jit
            batch = x.shape[0]
        if initial_state is None:
            states = self._stateful_initial(x) if self._kiln_states is not None \
                else cell.get_initial_state(batch, x.dtype)
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            if len(states) != len(cell.get_initial_state(1, x.dtype)):
                want = len(cell.get_initial_state(1, x.dtype))
                raise ValueError(f"{type(self).__name__}: expected {want} initial states, "
                                 f"received {len(states)}")
            states = [h.tensor(s, x.dtype) for s in states]
        x_mask, r_mask = self._dropout_masks(x, training)
        if x_mask is not None:
            xt = xt * x_mask
        # Every step's input projection in one product of the time-major inputs
        # ([steps, batch, gates]: the gates' width stays static for the step's
        # splits; transposing the inputs moves a quarter of the values, or none
        # between stacked layers, whose transposes cancel).
        proj = cell.project(xt)
        m = None
        if mask is not None:
            m = _time_major(dtypes.cast(h.tensor(mask), "bool"))
        if self.go_backwards:
            proj = array_ops.reverse(proj, [0])
            if m is not None:
                m = array_ops.reverse(m, [0])

        def one_step(t, states, last):
            out, new = cell.step(array_ops.gather(proj, t), states, r_mask)
            if m is not None:
                keep = array_ops.expand_dims(array_ops.gather(m, t), 1)
                new = [array_ops.where(keep, n, s) for n, s in zip(new, states)]
                out = array_ops.where(keep, out, array_ops.zeros_like(out)
                                      if self.zero_output_for_mask else last)
            return out, new

        zero_out = array_ops.zeros([batch, cell.output_size], dtype=x.dtype)
        n_static = x.shape[1]
        if self.unroll:
            if n_static is None:
                raise ValueError("Cannot unroll a RNN if the time dimension is undefined. "
                                 "Set unroll=False or give the inputs a known number of steps.")
            outs, last = [], zero_out
            for t in range(n_static):
                last, states = one_step(t, states, last)
                outs.append(last)
            seq = array_ops.stack(outs, 1) if self.return_sequences else None
        else:
            ta = control_flow.TensorArray(x.dtype, size=steps, element_shape=[None,
                                                                                cell.output_size])

            def body(t, last, ta, *states):
                out, new = one_step(t, list(states), last)
                return (t + 1, out, ta.write(t, out) if self.return_sequences else ta) + \
                    tuple(new)

            result = control_flow.while_loop(lambda t, *rest: t < steps, body,
                                             (h.tensor(0, "int32"), zero_out, ta) + tuple(states))
            last, ta, states = result[1], result[2], list(result[3:])
            seq = array_ops.transpose(ta.stack(), [1, 0, 2]) if self.return_sequences else None
        output = seq if self.return_sequences else last
        for v, s in zip(self._kiln_states or (), states):
            v.assign(s)
        if self.return_state:
            return [output] + list(states)
        return output

    def compute_mask(self, inputs, mask=None):
        out_mask = mask if self.return_sequences else None
        if self.return_state:
            return [out_mask] + [None] * len(self.cell.get_initial_state(1, "float32"))
        return out_mask

    def compute_output_shape(self, input_shape):
        d = list(TensorShape(input_shape))
        u = self.cell.output_size
        out = TensorShape([d[0], d[1], u] if self.return_sequences else [d[0], u])
        if self.return_state:
            n = len(self.cell.get_initial_state(1, "float32"))
            return [out] + [TensorShape([d[0], u])] * n
        return out

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask,
                "cell": serialize_nested(self.cell)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cell = config.pop("cell")
        return cls(_CELLS[cell["class_name"]].from_config(cell["config"]), **config)


_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
             "zero_output_for_mask")
_BASE_ARGS = ("name", "dtype", "trainable", "input_shape", "batch_input_shape", "batch_size",
              "input_dim")


def _split_kwargs(kwargs):
    rnn = {k: kwargs.pop(k) for k in list(kwargs) if k in _RNN_ARGS or k in _BASE_ARGS}
    return kwargs, rnn


class _RNNLayer(RNN):
    """A recurrent layer with its cell's arguments flattened (LSTM(units, ...))."""

    _cell_class = None

    def __init__(self, units, activity_regularizer=None, **kwargs):
        cell_kwargs, rnn_kwargs = _split_kwargs(dict(kwargs))
        if rnn_kwargs.get("dtype") is not None:
            cell_kwargs["dtype"] = rnn_kwargs["dtype"]
        cell = self._cell_class(units, name=self._cell_name, **cell_kwargs)
        super().__init__(cell, **rnn_kwargs)
        self.activity_regularizer = activity_regularizer

    units = property(lambda self: self.cell.units)
    activation = property(lambda self: self.cell.activation)
    use_bias = property(lambda self: self.cell.use_bias)
    dropout = property(lambda self: self.cell.dropout)
    recurrent_dropout = property(lambda self: self.cell.recurrent_dropout)

    def get_config(self):
        cfg = RNN.get_config(self)
        cell_cfg = cfg.pop("cell")["config"]
        for k in ("name", "trainable", "dtype"):
            cell_cfg.pop(k, None)
        return {**cfg, **cell_cfg,
                "activity_regularizer": _args.serialize(self.activity_regularizer,
                                                        "regularizer")}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class SimpleRNN(_RNNLayer):
    """A fully connected RNN: SimpleRNNCell over the steps."""
    _cell_class = SimpleRNNCell
    _cell_name = "simple_rnn_cell"

    def get_config(self):  # Keras' SimpleRNN lists no seed (its cell does)
        cfg = super().get_config()
        cfg.pop("seed", None)
        return cfg


class LSTM(_RNNLayer):
    """Long short-term memory over the steps (LSTMCell; Keras' weights and
    gate order)."""
    _cell_class = LSTMCell
    _cell_name = "lstm_cell"


class GRU(_RNNLayer):
    """Gated recurrent unit over the steps (GRUCell; ``reset_after=True`` by
    default, as Keras)."""
    _cell_class = GRUCell
    _cell_name = "gru_cell"


_CELLS = {"SimpleRNNCell": SimpleRNNCell, "LSTMCell": LSTMCell, "GRUCell": GRUCell,
          "StackedRNNCells": StackedRNNCells}

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN", "SimpleRNN", "LSTM",
           "GRU"]
