"""The layer graph of a functional model: built from Keras tensors, replayed on
real tensors (eagerly or while a kiln.function traces)."""
import numpy as np

from kiln import _kiln
from kiln import nest
from kiln.keras.engine.keras_tensor import KerasTensor
from kiln.keras.layers.base import call_with_mask
from kiln.tensor_shape import TensorShape


def _check_keras_tensors(structure, what):
    flat = nest.flatten(structure)
    if not flat:
        raise ValueError(f"A functional model needs at least one {what} tensor")
    for t in flat:
        if not isinstance(t, KerasTensor):
            raise TypeError(f"All {what}s of a functional model must be Keras tensors (from "
                            f"kiln.keras.Input and layer calls); got {t!r}")
    return flat


class GraphNetwork:
    """Nodes between ``inputs`` and ``outputs`` in execution order, and the
    layers they call (input layers first)."""

    def __init__(self, inputs, outputs, model_name):
        if isinstance(inputs, tuple):
            inputs = list(inputs)
        if isinstance(outputs, tuple):
            outputs = list(outputs)
        self.input_structure = inputs
        self.output_structure = outputs
        self.inputs = _check_keras_tensors(inputs, "input")
        self.outputs = _check_keras_tensors(outputs, "output")
        self.model_name = model_name
        if len({id(t) for t in self.inputs}) != len(self.inputs):
            raise ValueError("The list of inputs passed to the model contains the same input "
                             "more than once")
        self.nodes = self._collect_nodes()
        self._finish_layers()

    def _collect_nodes(self):
        input_ids = {id(t) for t in self.inputs}
        seen, stack, nodes = set(), list(self.outputs), []
        while stack:
            t = stack.pop()
            if id(t) in input_ids:
                continue
            node = t._node
            if node is None:
                raise ValueError(f"Keras tensor {t!r} was not produced by a layer call")
            if id(node) in seen:
                continue
            seen.add(id(node))
            if not node.input_tensors and node.call_args == ():
                # An InputLayer that is not one of the model's inputs.
                raise ValueError(
                    f"Graph disconnected: cannot obtain value for tensor {t!r} at layer "
                    f'"{node.layer.name}". The following previous layers were accessed '
                    f"without issue: {sorted({n.layer.name for n in nodes})}")
            nodes.append(node)
            stack.extend(node.input_tensors)
        nodes.sort(key=lambda n: n.id)  # creation order is a topological order
        return nodes

    def _keras_order(self):
        """The layers in Keras' order, which fixes the order of model.weights
        (so get_weights/set_weights lists match Keras'): by depth, the longest
        path to an output, deepest first; ties by the order a depth-first walk
        from the outputs (first inputs first) meets them."""
        depth = {}
        for node in reversed(self.nodes):  # creation order reversed: outputs first
            d = depth.setdefault(id(node), 0)
            for parent in node.parent_nodes:
                depth[id(parent)] = max(depth.get(id(parent), 0), d + 1)
        index, seen = {}, set()
        stack = list(reversed(self.outputs))
        input_ids = {id(t) for t in self.inputs}
        while stack:
            t = stack.pop()
            node = t._node
            if node is None or id(node) in seen or id(t) in input_ids:
                continue
            seen.add(id(node))
            index.setdefault(id(node.layer), len(index))
            stack.extend(reversed(node.input_tensors))
        layer_depth = {}
        for node in self.nodes:
            k = id(node.layer)
            layer_depth[k] = max(layer_depth.get(k, 0), depth.get(id(node), 0))
        by_id = {id(n.layer): n.layer for n in self.nodes}
        return [by_id[k] for k in sorted(by_id, key=lambda k: (-layer_depth[k],
                                                                index.get(k, len(index))))]

    def _finish_layers(self):
        layers, seen = [], set()
        for t in self.inputs:
            layer = t._node.layer if t._node is not None else None
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                layers.append(layer)
        for layer in self._keras_order():
            if id(layer) not in seen:
                seen.add(id(layer))
                layers.append(layer)
        names = {}
        for layer in layers:
            if layer.name in names:
                raise ValueError(f'The name "{layer.name}" is used 2 times in the model. All '
                                 "layer names should be unique.")
            names[layer.name] = layer
        self.layers = layers
        self.layer_nodes = {}
        for node in self.nodes:
            self.layer_nodes.setdefault(id(node.layer), []).append(node)
        # How often each tensor is read, to free intermediates as soon as possible.
        uses = {}
        for node in self.nodes:
            for t in node.input_tensors:
                uses[id(t)] = uses.get(id(t), 0) + 1
        for t in self.outputs:
            uses[id(t)] = uses.get(id(t), 0) + 1
        self.uses = uses

    # ---- running ----

    def _flatten_inputs(self, inputs):
        n = len(self.inputs)
        if isinstance(self.input_structure, dict) and isinstance(inputs, dict):
            missing = [k for k in self.input_structure if k not in inputs]
            if missing:
                raise ValueError(f'Model "{self.model_name}" is missing inputs {missing}')
            return nest.flatten({k: inputs[k] for k in self.input_structure})
        if n == 1 and isinstance(self.input_structure, KerasTensor):
            if isinstance(inputs, (list, tuple)) and len(inputs) == 1 and \
                    hasattr(inputs[0], "shape"):
                inputs = inputs[0]  # model([x]) for a one-input model
            return [inputs]
        flat = nest.flatten(inputs)
        if len(flat) != n:
            raise ValueError(f'Layer "{self.model_name}" expects {n} input(s), but it received '
                             f"{len(flat)} input tensors.")
        return flat

    def _prepare(self, index, x, kt):
        if not isinstance(x, (_kiln.Tensor, _kiln.Variable)):
            x = _kiln.convert_to_tensor(np.asarray(x, dtype=kt.dtype.name))
        elif isinstance(x, _kiln.Variable):
            x = x.read_value()
        if x.dtype != kt.dtype:
            x = _kiln.raw.Cast(x, DstT=kt.dtype)
        shape = TensorShape(x.shape)
        if not shape.is_compatible_with(kt.shape):
            raise ValueError(f'Input {index} of layer "{self.model_name}" is incompatible with '
                             f"the layer: expected shape={tuple(kt.shape)}, found "
                             f"shape={tuple(shape) if shape.rank is not None else None}")
        return x

    def run(self, inputs):
        """The outputs for real input tensors (or NumPy arrays)."""
        flat = self._flatten_inputs(inputs)
        values = {}
        for i, (kt, x) in enumerate(zip(self.inputs, flat)):
            values[id(kt)] = self._prepare(i, x, kt)
        uses = dict(self.uses)
        masks = {}  # per KerasTensor: the mask its value carries (Embedding(mask_zero), ...)
        for node in self.nodes:
            args, kwargs = node.substitute(values)
            ins = [masks.get(id(t)) for t in node.input_tensors]
            mask = None if all(m is None for m in ins) else ins[0] if len(ins) == 1 else ins
            out, out_mask = call_with_mask(node.layer, args, kwargs, mask)
            outs = node.output_tensors
            if len(outs) == 1:
                values[id(outs[0])] = out
                masks[id(outs[0])] = out_mask
            else:
                out_masks = out_mask if isinstance(out_mask, (list, tuple)) else \
                    [None] * len(outs)
                for kt, o, m in zip(outs, nest.flatten(out), out_masks):
                    values[id(kt)] = o
                    masks[id(kt)] = m
            for t in node.input_tensors:
                k = id(t)
                uses[k] -= 1
                if uses[k] == 0:
                    del values[k]
                    masks.pop(k, None)
        result = [values[id(t)] for t in self.outputs]
        if isinstance(self.output_structure, KerasTensor):
            return result[0]
        return nest.pack_sequence_as(self.output_structure, result)

    # ---- description ----

    def node_index(self, node):
        return node.layer._kiln_nodes.index(node)

    def is_sequential_like(self):
        """True when every layer has one node reading the previous node's output."""
        if len(self.inputs) != 1 or len(self.outputs) != 1:
            return False
        prev = self.inputs[0]
        for node in self.nodes:
            if len(self.layer_nodes[id(node.layer)]) != 1 or len(node.input_tensors) != 1:
                return False
            if node.input_tensors[0] is not prev or len(node.output_tensors) != 1:
                return False
            prev = node.output_tensors[0]
        return True
