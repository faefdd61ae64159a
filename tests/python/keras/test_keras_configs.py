"""Configs as Keras 3.15 writes them (values written down from TF 2.21's
Keras): nested initializers, regularizers, constraints and layers in Keras 3's
form, keys kiln accepts when off, and wrappers reviving their inner layer
through the registry."""
import numpy as np
import pytest

import kiln as tf
from kiln.keras.saving import keras_config

keras = tf.keras
L = keras.layers


def nested(module, name, config, registered=None):
    return {"module": module, "class_name": name, "config": config,
            "registered_name": registered}


def test_nested_objects_in_keras_3_form():
    cfg = L.Dense(2, kernel_regularizer="l2", kernel_constraint="non_neg").get_config()
    assert cfg["kernel_initializer"] == nested(
        "keras.initializers", "GlorotUniform",
        {"seed": None, "input_axes": None, "output_axes": None})
    assert cfg["bias_initializer"] == nested("keras.initializers", "Zeros", {})
    assert cfg["kernel_regularizer"] == nested("keras.regularizers", "L2", {"l2": 0.01})
    assert cfg["kernel_constraint"] == nested("keras.constraints", "NonNeg", {})
    assert cfg["quantization_config"] is None
    assert "quantization_config" in L.Embedding(3, 2).get_config()
    td = L.TimeDistributed(L.Dense(2)).get_config()["layer"]
    assert (td["module"], td["class_name"], td["registered_name"]) == \
        ("keras.layers", "Dense", None)
    cell = L.RNN(L.LSTMCell(2)).get_config()["cell"]
    assert (cell["module"], cell["class_name"]) == ("keras.layers", "LSTMCell")


def test_input_layer_config_and_keras_3_arguments():
    layer = L.InputLayer(shape=(3,), name="x")
    assert layer.get_config() == {"batch_shape": (None, 3), "dtype": "float32",
                                  "sparse": False, "ragged": False, "name": "x",
                                  "optional": False}
    assert L.InputLayer.from_config(layer.get_config()).output.shape.as_list() == [None, 3]
    with pytest.raises(NotImplementedError, match="optional"):
        L.InputLayer(shape=(3,), optional=True)


def test_initializers_input_and_output_axes():
    init = keras.initializers.VarianceScaling(2.0, "fan_in", "uniform", seed=1,
                                              input_axes=[0, 1], output_axes=[2])
    v = init((4, 3, 5)).numpy()
    assert np.abs(v).max() <= np.sqrt(3 * 2.0 / 12) and np.abs(v).max() > 0.6
    assert keras.initializers.HeUniform(input_axes=[0], output_axes=[1, 2]).get_config() == \
        {"seed": None, "input_axes": [0], "output_axes": [1, 2]}


def test_quantization_and_lora_accepted_when_off():
    assert L.Dense(2, quantization_config=None, lora_rank=None).units == 2
    with pytest.raises(NotImplementedError, match="quantization"):
        L.Dense(2, quantization_config={"mode": "int8"})
    with pytest.raises(NotImplementedError, match="LoRA"):
        L.Embedding(3, 2, lora_rank=2)


def test_a_keras_written_dense_config_loads():
    policy = nested("keras", "DTypePolicy", {"name": "float32"})
    entry = nested("keras.layers", "Dense", {
        "name": "d", "trainable": True, "dtype": policy, "units": 2, "activation": "linear",
        "use_bias": True,
        "kernel_initializer": nested("keras.initializers", "GlorotUniform",
                                     {"seed": 3, "input_axes": None, "output_axes": None}),
        "bias_initializer": nested("keras.initializers", "Zeros", {}),
        "kernel_regularizer": nested("keras.regularizers", "L2", {"l2": 0.5}),
        "bias_regularizer": None, "kernel_constraint": None, "bias_constraint": None,
        "quantization_config": None})
    layer = keras.saving.deserialize_keras_object(keras_config.from_keras(entry))
    assert layer.kernel_initializer.seed == 3
    layer(np.ones((1, 3), np.float32))
    assert layer.get_config()["kernel_regularizer"]["config"] == {"l2": 0.5}


def test_regularizers_and_constraints_match_keras():
    w = tf.constant(np.array([[1.0, -2.0], [3.0, 0.5]], np.float32))
    assert float(keras.regularizers.L1L2(0.1, 0.2)(w)) == pytest.approx(3.5)
    np.testing.assert_allclose(keras.constraints.MaxNorm(2.0)(w).numpy(),
                               [[0.63245553, -1.9402851], [1.8973666, 0.48507127]], rtol=1e-6)
    np.testing.assert_allclose(keras.constraints.MinMaxNorm(0.5, 2.0, 0.7)(w).numpy(),
                               [[0.74271888, -1.9581995], [2.2281566, 0.48954988]], rtol=1e-6)


def test_string_regularizer_reaches_the_loss():
    i = keras.Input((2,))
    d = L.Dense(1, use_bias=False, kernel_initializer="ones", kernel_regularizer="l2")
    model = keras.Model(i, d(i))
    model.compile("sgd", "mse")
    loss = model.evaluate(np.zeros((2, 2), np.float32), np.zeros((2, 1), np.float32),
                          verbose=0)
    assert loss == pytest.approx(0.02)  # 0.01 * (1 + 1), as Keras


@keras.saving.register_keras_serializable(package="cfgtest")
class Registered(L.Dense):
    pass


class Unregistered(L.Dense):
    pass


def test_wrappers_revive_their_layer_through_the_registry():
    cfg = L.TimeDistributed(Registered(2)).get_config()
    assert cfg["layer"]["registered_name"] == "cfgtest>Registered"
    assert type(L.TimeDistributed.from_config(cfg).layer) is Registered
    cfg = L.TimeDistributed(Unregistered(2)).get_config()
    revived = L.TimeDistributed.from_config(cfg, custom_objects={"Unregistered": Unregistered})
    assert type(revived.layer) is Unregistered
    bi = L.Bidirectional(L.GRU(2))
    assert L.Bidirectional.from_config(bi.get_config()).get_config() == bi.get_config()


def test_build_config_as_keras():
    # each value written down from TF 2.21's Keras
    d = L.Dense(2)
    assert d.get_build_config() is None
    d(np.ones((1, 3), np.float32))
    assert d.get_build_config() == {"input_shape": (1, 3)}
    i = keras.Input((3,))
    assert keras.Model(i, L.Dense(2)(i)).get_build_config() == {"input_shape": None}
    seq = keras.Sequential([keras.Input((3,)), L.Dense(2)])
    assert seq.get_build_config() == {"input_shape": (None, 3)}
    x = np.ones((1, 4, 3), np.float32)
    mha = L.MultiHeadAttention(2, 2)
    mha(x, x)
    assert mha.get_build_config() == {"shapes_dict": {"query_shape": (1, 4, 3),
                                                      "value_shape": (1, 4, 3)}}
    add = L.Add()
    add([x, x])
    assert add.get_build_config() == {"input_shape": [(1, 4, 3), (1, 4, 3)]}
    fresh = L.Dense(2)
    fresh.build_from_config({"input_shape": (None, 5)})
    assert fresh.built and fresh.kernel.shape.as_list() == [5, 2]
    assert fresh.get_build_config() == {"input_shape": (None, 5)}
    again = L.MultiHeadAttention(2, 2)
    again.build_from_config(mha.get_build_config())
    assert len(again.weights) == len(mha.weights)
