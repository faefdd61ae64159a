"""kiln.keras layers against TensorFlow's Keras 3 (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_keras_layers.py [--only SUBSTRING ...] [--keep DIR]

For each case of CASES (a layer or a small model, built from the same code in both), this side
builds the layer in TensorFlow's Keras, gives it random weights, calls it (training=False unless
the case says otherwise) and writes the inputs, weights, outputs, output masks, count_params(),
the weights' names / paths / shapes and get_config() to a folder; then
tests/peers/keras_layers_kiln.py (run with .venv/bin/python) builds the same layer in kiln,
copies the weights, and compares. One line per case; exit status 1 on any mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import warnings  # noqa: E402

import numpy as np  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)  # Keras' deprecation notes
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KILN_PYTHON = os.path.join(REPO, ".venv", "bin", "python")

# (name, build code, inputs, call code, mask code, options). The build code sees `layers`,
# `keras` and `np` and is an expression giving the layer, or statements setting `layer`.
# Inputs "KIND:d0,d1,..": f float normal, p float > 0, z float with some all-zero steps,
# iN ints in [0, N), tN ints in [1, N) then 0 padding, m a bool mask (first step true),
# b random bools; "lit:EXPR" a NumPy expression. Call and mask code see `layer` and `x`.
# Options: train (call with training=True), adapt (code run before the call; weights
# then compared, not copied), no_config (a model), atol.
CALL = "layer(x[0], training=False)"
CALL_M = "layer(x[0], mask=x[1], training=False)"
TRAIN = "layer(x[0], training=True)"
MASK_M = "layer.compute_mask(x[0], x[1])"
LIST2 = "layer([x[0], x[1]])"
STATEFUL2 = "(layer.reset_states(), [layer(x[0]), layer(x[0])])[1]"
STATEFUL2_M = "(layer.reset_states(), [layer(x[0], mask=x[1]), layer(x[0], mask=x[1])])[1]"
STRS = "lit:np.array([['a', 'z', '', 'b'], ['c', 'c', 'b', 'a']])"
TEXT = ("lit:np.array(['The cat sat.', 'A dog, the dog!', '', 'cat  and DOG dog', "
        "'zebra?'])")
STRS2 = "lit:np.array([['a', 'z', '', 'b'], ['c', 'q', 'x', 'yy']])"
INTS = "lit:np.array([[7, 0, 5, 9, -3], [3, 11, 1, -8, 100]])"
CROSS_A = "lit:np.array(['A', 'B', 'A', 'B', 'A'])"
CROSS_B = "lit:np.array([101, 101, 101, 102, 102])"

CASES = [
    ("ReLU", "layers.ReLU()", ["f:2,5"], CALL, None, {}),
    ("ReLU(max,slope,thr)", "layers.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.3)",
     ["f:2,5"], CALL, None, {}),
    ("LeakyReLU", "layers.LeakyReLU(negative_slope=0.2)", ["f:2,5"], CALL, None, {}),
    ("PReLU(shared_axes)", "layers.PReLU(shared_axes=[1])", ["f:2,4,3"], CALL, None, {}),
    ("ELU", "layers.ELU(alpha=0.7)", ["f:2,5"], CALL, None, {}),
    ("Softmax(mask)", "layers.Softmax()", ["f:2,3,5", "b:2,3,5"], CALL_M, None, {}),
    ("Softmax(axis=[1,2])", "layers.Softmax(axis=[1, 2])", ["f:2,3,4"], CALL, None, {}),
    ("Permute", "layers.Permute((3, 1, 2))", ["f:2,3,4,5"], CALL, None, {}),
    ("RepeatVector", "layers.RepeatVector(3)", ["f:2,4"], CALL, None, {}),
    ("Cropping1D", "layers.Cropping1D((1, 2))", ["f:2,6,3"], CALL, None, {}),
    ("Cropping2D", "layers.Cropping2D(((1, 0), (2, 1)))", ["f:2,6,7,3"], CALL, None, {}),
    ("Cropping2D(cf)", "layers.Cropping2D(1, data_format='channels_first')", ["f:2,3,6,7"],
     CALL, None, {}),
    ("ZeroPadding1D", "layers.ZeroPadding1D((2, 1))", ["f:2,4,3"], CALL, None, {}),
    ("ZeroPadding1D(cf)", "layers.ZeroPadding1D(2, data_format='channels_first')",
     ["f:2,3,4"], CALL, None, {}),
    ("ZeroPadding2D", "layers.ZeroPadding2D(((1, 2), (0, 1)))", ["f:2,4,5,3"], CALL, None, {}),
    ("UpSampling1D", "layers.UpSampling1D(3)", ["f:2,4,3"], CALL, None, {}),
    ("UpSampling2D", "layers.UpSampling2D((2, 3))", ["f:2,3,4,2"], CALL, None, {}),
    ("UpSampling2D(bilinear)", "layers.UpSampling2D(2, interpolation='bilinear')",
     ["f:2,3,4,2"], CALL, None, {}),
    ("GaussianNoise", "layers.GaussianNoise(0.3, seed=1)", ["f:2,5"], CALL, None, {}),
    ("GaussianDropout", "layers.GaussianDropout(0.2)", ["f:2,5"], CALL, None, {}),
    ("SpatialDropout1D", "layers.SpatialDropout1D(0.3)", ["f:2,4,3"], CALL, None, {}),
    ("SpatialDropout2D", "layers.SpatialDropout2D(0.3, data_format='channels_first')",
     ["f:2,3,4,4"], CALL, None, {}),
    ("Conv1D(causal,dilated)", "layers.Conv1D(4, 3, padding='causal', dilation_rate=2, "
     "activation='relu')", ["f:2,9,3"], CALL, None, {}),
    ("Conv1D(same,stride,groups)", "layers.Conv1D(4, 3, strides=2, padding='same', groups=2)",
     ["f:2,9,4"], CALL, None, {}),
    ("Conv2D(same,stride)", "layers.Conv2D(5, 3, strides=2, padding='same')", ["f:2,7,8,3"],
     CALL, None, {}),
    ("Conv2D(dilated,groups)", "layers.Conv2D(4, (2, 3), dilation_rate=2, groups=2, "
     "activation='tanh')", ["f:2,7,8,2"], CALL, None, {}),
    ("Conv3D", "layers.Conv3D(3, 2, activation='relu')", ["f:2,4,5,6,2"], CALL, None, {}),
    ("Conv3D(same,strides)", "layers.Conv3D(4, (3, 2, 3), strides=(2, 1, 2), padding='same')",
     ["f:2,5,6,7,3"], CALL, None, {}),
    ("Conv3D(dilated,groups)", "layers.Conv3D(4, 2, dilation_rate=(2, 1, 2), groups=2, "
     "use_bias=False)", ["f:2,5,4,6,2"], CALL, None, {}),
    ("DepthwiseConv2D", "layers.DepthwiseConv2D(3, depth_multiplier=2, padding='same')",
     ["f:2,5,6,3"], CALL, None, {}),
    ("SeparableConv2D", "layers.SeparableConv2D(4, 3, depth_multiplier=2, strides=2)",
     ["f:2,7,8,3"], CALL, None, {}),
    ("Conv2DTranspose(same)", "layers.Conv2DTranspose(3, 3, strides=2, padding='same')",
     ["f:2,4,5,2"], CALL, None, {}),
    ("Conv2DTranspose(out_pad)", "layers.Conv2DTranspose(3, (3, 2), strides=(2, 1), "
     "output_padding=(1, 0), use_bias=False)", ["f:2,4,5,2"], CALL, None, {}),
    ("Dense(rank3)", "layers.Dense(4, activation='tanh')", ["f:2,3,5"], CALL, None, {}),
    ("Dense(no bias)", "layers.Dense(3, use_bias=False)", ["f:2,5"], CALL, None, {}),
    ("Embedding(mask_zero)", "layers.Embedding(10, 4, mask_zero=True)", ["t10:2,6"], CALL,
     "layer.compute_mask(x[0])", {}),
    ("Masking", "layers.Masking(0.0)", ["z:2,5,3"], CALL, "layer.compute_mask(x[0])", {}),
    ("Flatten", "layers.Flatten()", ["f:2,3,4"], CALL, None, {}),
    ("Reshape", "layers.Reshape((4, -1))", ["f:2,3,4"], CALL, None, {}),
    ("Rescaling", "layers.Rescaling(0.5, offset=-1.0)", ["f:2,3"], CALL, None, {}),
    ("Activation(gelu)", "layers.Activation('gelu')", ["f:2,5"], CALL, None, {}),
    ("Dropout", "layers.Dropout(0.5, seed=3)", ["f:2,5"], CALL, None, {}),
    ("MaxPooling1D(same)", "layers.MaxPooling1D(2, strides=1, padding='same')", ["f:2,5,3"],
     CALL, None, {}),
    ("AveragePooling1D(same)", "layers.AveragePooling1D(3, padding='same')", ["f:2,7,3"],
     CALL, None, {}),
    ("MaxPooling2D(same)", "layers.MaxPooling2D((2, 3), padding='same')", ["f:2,5,7,3"],
     CALL, None, {}),
    ("AveragePooling2D", "layers.AveragePooling2D(2, strides=1)", ["f:2,4,5,3"], CALL, None,
     {}),
    ("GlobalAveragePooling1D(mask)", "layers.GlobalAveragePooling1D()", ["f:2,5,3", "m:2,5"],
     CALL_M, MASK_M, {}),
    ("GlobalMaxPooling1D(keepdims)", "layers.GlobalMaxPooling1D(keepdims=True)", ["f:2,5,3"],
     CALL, None, {}),
    ("GlobalAveragePooling2D", "layers.GlobalAveragePooling2D(keepdims=True)",
     ["f:2,4,5,3"], CALL, None, {}),
    ("GlobalMaxPooling2D(cf)", "layers.GlobalMaxPooling2D(data_format='channels_first')",
     ["f:2,3,4,5"], CALL, None, {}),
    ("BatchNormalization", "layers.BatchNormalization()", ["f:2,4,3"], CALL, None, {}),
    ("BatchNormalization(axis=1)", "layers.BatchNormalization(axis=1, epsilon=1e-5)",
     ["f:2,3,4,4"], CALL, None, {}),
    ("LayerNormalization", "layers.LayerNormalization()", ["f:2,3,6"], CALL, None, {}),
    ("LayerNormalization(rms_scaling)", "layers.LayerNormalization(rms_scaling=True)",
     ["f:2,3,6"], CALL, None, {}),
    ("LayerNormalization(axes)", "layers.LayerNormalization(axis=[1, 2])", ["f:2,3,4"],
     CALL, None, {}),
    ("GroupNormalization", "layers.GroupNormalization(groups=2)", ["f:2,5,4"], CALL, None, {}),
    ("GroupNormalization(axis=1)", "layers.GroupNormalization(groups=3, axis=1)",
     ["f:2,6,4"], CALL, None, {}),
    ("SimpleRNN", "layers.SimpleRNN(4)", ["f:2,5,3"], CALL, None, {}),
    ("SimpleRNN(seq,backwards)", "layers.SimpleRNN(4, return_sequences=True, "
     "go_backwards=True)", ["f:2,5,3"], CALL, None, {}),
    ("LSTM(seq,state)", "layers.LSTM(4, return_sequences=True, return_state=True)",
     ["f:2,5,3"], CALL, None, {}),
    ("LSTM(mask)", "layers.LSTM(4)", ["f:2,5,3", "m:2,5"], CALL_M, MASK_M, {}),
    ("LSTM(seq,mask)", "layers.LSTM(3, return_sequences=True)", ["f:2,5,3", "m:2,5"],
     CALL_M, MASK_M, {}),
    ("GRU", "layers.GRU(4)", ["f:2,5,3"], CALL, None, {}),
    ("GRU(reset_after=False)", "layers.GRU(4, reset_after=False, return_sequences=True, "
     "go_backwards=True)", ["f:2,5,3"], CALL, None, {}),
    ("GRU(mask,state)", "layers.GRU(3, return_state=True)", ["f:2,5,3", "m:2,5"], CALL_M,
     MASK_M, {}),
    # stateful: states reset, then two calls (the second starts from the first's states)
    ("LSTM(stateful,seq)", "layers.LSTM(4, stateful=True, return_sequences=True)",
     ["f:2,5,3"], STATEFUL2, None, {}),
    ("GRU(stateful,mask,state)", "layers.GRU(3, stateful=True, return_state=True)",
     ["f:2,5,3", "m:2,5"], STATEFUL2_M, None, {}),
    ("SimpleRNN(unroll,seq)", "layers.SimpleRNN(4, unroll=True, return_sequences=True)",
     ["f:2,5,3"], CALL, None, {}),
    ("LSTM(unroll,mask)", "layers.LSTM(3, unroll=True)", ["f:2,5,3", "m:2,5"], CALL_M,
     MASK_M, {}),
    ("GRU(unroll,backwards,state)", "layers.GRU(3, unroll=True, go_backwards=True, "
     "return_state=True)", ["f:2,4,3"], CALL, None, {}),
    ("Bidirectional(LSTM,mask)", "layers.Bidirectional(layers.LSTM(3, return_sequences=True))",
     ["f:2,5,3", "m:2,5"], CALL_M, MASK_M, {}),
    ("Bidirectional(GRU,sum)", "layers.Bidirectional(layers.GRU(3), merge_mode='sum')",
     ["f:2,5,3"], CALL, None, {}),
    ("Bidirectional(state,None)", "layers.Bidirectional(layers.SimpleRNN(2, "
     "return_state=True), merge_mode=None)", ["f:2,4,3"], CALL, None, {}),
    ("TimeDistributed(Dense)", "layers.TimeDistributed(layers.Dense(3))", ["f:2,4,5"], CALL,
     None, {}),
    ("TimeDistributed(Conv2D)", "layers.TimeDistributed(layers.Conv2D(2, 3))",
     ["f:2,3,6,6,2"], CALL, None, {}),
    ("MultiHeadAttention", "layers.MultiHeadAttention(2, 3)", ["f:2,4,5", "f:2,6,5"],
     "layer(x[0], x[1])", None, {}),
    ("MultiHeadAttention(mask,out)", "layers.MultiHeadAttention(2, 4, value_dim=3, "
     "output_shape=6)", ["f:2,4,5", "f:2,6,5", "b:2,4,6"],
     "layer(x[0], x[1], attention_mask=x[2])", None, {}),
    ("MultiHeadAttention(causal,scores)", "layers.MultiHeadAttention(2, 3)", ["f:2,5,4"],
     "layer(x[0], x[0], use_causal_mask=True, return_attention_scores=True)", None, {}),
    ("MultiHeadAttention(key)", "layers.MultiHeadAttention(3, 2, use_bias=False)",
     ["f:2,4,5", "f:2,6,3", "f:2,6,4"], "layer(x[0], x[1], x[2])", None, {}),
    ("MultiHeadAttention(gate,window)", "layers.MultiHeadAttention(2, 3, use_gate=True, "
     "sliding_window=2)", ["f:2,5,4", "f:2,5,6"], "layer(x[0], x[1])", None, {}),
    ("Attention", "layers.Attention()", ["f:2,4,5", "f:2,6,5"], LIST2, None, {}),
    ("Attention(scale,mask)", "layers.Attention(use_scale=True)",
     ["f:2,4,5", "f:2,6,5", "m:2,4", "m:2,6"], "layer([x[0], x[1]], mask=[x[2], x[3]])",
     "layer.compute_mask([x[0], x[1]], [x[2], x[3]])", {}),
    ("Attention(concat,causal,scores)", "layers.Attention(score_mode='concat')",
     ["f:2,5,3", "f:2,5,3", "f:2,5,3"],
     "layer([x[0], x[1], x[2]], use_causal_mask=True, return_attention_scores=True)", None,
     {}),
    ("Add", "layers.Add()", ["f:2,3", "f:2,3"], LIST2, None, {}),
    ("Concatenate(axis=1)", "layers.Concatenate(axis=1)", ["f:2,3,2", "f:2,4,2"], LIST2,
     None, {}),
    ("Subtract", "layers.Subtract()", ["f:2,3", "f:2,3"], LIST2, None, {}),
    ("Average", "layers.Average()", ["f:2,3", "f:2,3"], LIST2, None, {}),
    ("Normalization(adapt)", "layers.Normalization()", ["f:6,3"], CALL, None,
     {"adapt": "layer.adapt(x[0])"}),
    ("Normalization(mean,var,invert)", "layers.Normalization(mean=[1.0, 2.0, 3.0], "
     "variance=[1.0, 4.0, 9.0], invert=True)", ["f:2,3"], CALL, None, {}),
    ("Resizing(bilinear)", "layers.Resizing(5, 7)", ["f:2,8,9,3"], CALL, None, {}),
    ("Resizing(nearest,unbatched)", "layers.Resizing(6, 4, interpolation='nearest')",
     ["f:8,9,3"], CALL, None, {}),
    ("Resizing(crop_to_aspect)", "layers.Resizing(4, 6, crop_to_aspect_ratio=True)",
     ["f:2,8,7,3"], CALL, None, {}),
    ("Resizing(pad_to_aspect)", "layers.Resizing(4, 6, pad_to_aspect_ratio=True, "
     "fill_value=0.5)", ["f:2,8,7,3"], CALL, None, {}),
    ("RandomRotation(not training)", "layers.RandomRotation(0.2)", ["f:2,5,7,3"], CALL, None,
     {}),
    ("RandomRotation(reflect,bilinear)", "layers.RandomRotation((0.1, 0.1))", ["f:2,5,7,3"],
     TRAIN, None, {}),
    ("RandomRotation(wrap,nearest)", "layers.RandomRotation((-0.15, -0.15), fill_mode='wrap', "
     "interpolation='nearest')", ["f:2,6,7,2"], TRAIN, None, {}),
    ("RandomRotation(constant)", "layers.RandomRotation((0.3, 0.3), fill_mode='constant', "
     "fill_value=0.5)", ["f:2,5,7,3"], TRAIN, None, {}),
    ("RandomRotation(nearest,90deg,unbatched)", "layers.RandomRotation((0.25, 0.25), "
     "fill_mode='nearest')", ["f:5,7,3"], TRAIN, None, {}),
    ("RandomRotation(cf)", "layers.RandomRotation((0.4, 0.4), data_format='channels_first')",
     ["f:2,3,6,5"], TRAIN, None, {}),
    ("CenterCrop", "layers.CenterCrop(4, 5)", ["f:2,8,9,3"], CALL, None, {}),
    ("StringLookup(mask)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], mask_token='')",
     [STRS], CALL, None, {}),
    ("StringLookup(adapt)", "layers.StringLookup(max_tokens=4)", [STRS], CALL, None,
     {"adapt": "layer.adapt(x[0])"}),
    ("StringLookup(invert)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], invert=True)",
     ["i6:2,3"], CALL, None, {}),
    ("StringLookup(multi_hot)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "output_mode='multi_hot', mask_token='')", [STRS], CALL, None, {}),
    ("StringLookup(count,pad)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "output_mode='count', max_tokens=6, pad_to_max_tokens=True)", [STRS], CALL, None, {}),
    ("StringLookup(one_hot)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "output_mode='one_hot')", ["lit:np.array(['a', 'z', 'c', 'b'])"], CALL, None, {}),
    ("StringLookup(tf_idf,adapt)", "layers.StringLookup(output_mode='tf_idf')", [STRS], CALL,
     None, {"adapt": "layer.adapt(x[0])"}),
    ("IntegerLookup(mask)", "layers.IntegerLookup(vocabulary=[7, 3, 9], mask_token=0)",
     ["lit:np.array([[7, 0, 5, 9], [3, 3, 1, 0]])"], CALL, None, {}),
    ("IntegerLookup(adapt,oov2)", "layers.IntegerLookup(num_oov_indices=2)",
     ["lit:np.array([[7, 7, 5, 9, 2], [3, 3, 7, 0, 5]])"], CALL, None,
     {"adapt": "layer.adapt(x[0])"}),
    ("IntegerLookup(invert)", "layers.IntegerLookup(vocabulary=[7, 3, 9], invert=True, "
     "mask_token=0)", ["lit:np.array([[0, 1, 2, 3, 4, 9]])"], CALL, None, {}),
    ("IntegerLookup(count)", "layers.IntegerLookup(vocabulary=[7, 3, 9], output_mode='count')",
     ["lit:np.array([[7, 0, 5, 9], [3, 3, 1, 0]])"], CALL, None, {}),
    ("TextVectorization(int,adapt)", "layers.TextVectorization(output_sequence_length=5)",
     [TEXT], CALL, None, {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(int,vocab)", "layers.TextVectorization(vocabulary=['the', 'dog', "
     "'cat'])", [TEXT], CALL, None, {}),
    ("TextVectorization(multi_hot)", "layers.TextVectorization(max_tokens=5, "
     "output_mode='multi_hot')", [TEXT], CALL, None, {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(count,char)", "layers.TextVectorization(split='character', "
     "standardize='lower', output_mode='count')", [TEXT], CALL, None,
     {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(tf_idf)", "layers.TextVectorization(output_mode='tf_idf')", [TEXT],
     CALL, None, {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(one_hot,no split)", "layers.TextVectorization(split=None, "
     "output_mode='one_hot', vocabulary=['a', 'the cat'])",
     ["lit:np.array(['The cat', 'a', 'b'])"], CALL, None, {}),
    ("CategoryEncoding(multi_hot)", "layers.CategoryEncoding(6)", ["i6:3,4"], CALL, None, {}),
    ("CategoryEncoding(count)", "layers.CategoryEncoding(6, output_mode='count')", ["i6:3,4"],
     CALL, None, {}),
    ("CategoryEncoding(one_hot)", "layers.CategoryEncoding(6, output_mode='one_hot')",
     ["i6:5"], CALL, None, {}),
    # issue 41: ngrams, ragged and sparse outputs, renorm, activity regularizers
    ("TextVectorization(ngrams=2,adapt)", "layers.TextVectorization(ngrams=2)", [TEXT], CALL,
     None, {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(ngrams=(1,3),count)", "layers.TextVectorization(ngrams=(1, 3), "
     "output_mode='count', max_tokens=9)", [TEXT], CALL, None, {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(ngrams=(3,2),seq_len)", "layers.TextVectorization(ngrams=(3, 2), "
     "output_sequence_length=4)", [TEXT], CALL, None, {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(ngrams,char,tf_idf)", "layers.TextVectorization(ngrams=2, "
     "split='character', output_mode='tf_idf', max_tokens=12)", [TEXT], CALL, None,
     {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(ngrams,no split)", "layers.TextVectorization(ngrams=2, split=None, "
     "vocabulary=['a b', 'b'])", ["lit:np.array(['a', 'b', 'c'])"], CALL, None, {}),
    ("TextVectorization(ragged,adapt)", "layers.TextVectorization(ragged=True)", [TEXT], CALL,
     None, {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(ragged,ngrams,seq_len)", "layers.TextVectorization(ragged=True, "
     "ngrams=2, output_sequence_length=3)", [TEXT], CALL, None,
     {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(one_hot,split)", "layers.TextVectorization(output_mode='one_hot', "
     "vocabulary=['the', 'dog', 'cat'])", [TEXT], CALL, None, {}),
    ("TextVectorization(multi_hot,sparse)", "layers.TextVectorization(output_mode="
     "'multi_hot', sparse=True, max_tokens=6)", [TEXT], CALL, None,
     {"adapt": "layer.adapt(x[0])"}),
    ("TextVectorization(count,ngrams,sparse)", "layers.TextVectorization(output_mode='count', "
     "ngrams=2, sparse=True)", [TEXT], CALL, None, {"adapt": "layer.adapt(x[0])"}),
    ("CategoryEncoding(multi_hot,sparse)", "layers.CategoryEncoding(6, sparse=True)",
     ["i6:3,4"], CALL, None, {}),
    ("CategoryEncoding(count,sparse)", "layers.CategoryEncoding(6, output_mode='count', "
     "sparse=True)", ["i6:3,4"], CALL, None, {}),
    ("CategoryEncoding(one_hot,sparse)", "layers.CategoryEncoding(6, output_mode='one_hot', "
     "sparse=True)", ["i6:5,1"], CALL, None, {}),
    ("CategoryEncoding(count,1-D,sparse)", "layers.CategoryEncoding(6, output_mode='count', "
     "sparse=True)", ["i6:7"], CALL, None, {}),
    ("CategoryEncoding(multi_hot,rank3)", "layers.CategoryEncoding(6)", ["i6:2,3,4"], CALL,
     None, {}),
    ("CategoryEncoding(one_hot,scalar)", "layers.CategoryEncoding(6, output_mode='one_hot')",
     ["lit:np.array(4)"], CALL, None, {}),
    ("StringLookup(multi_hot,sparse)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "output_mode='multi_hot', sparse=True)", [STRS], CALL, None, {}),
    ("StringLookup(count,mask,pad,sparse)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "output_mode='count', mask_token='', max_tokens=7, pad_to_max_tokens=True, "
     "sparse=True)", [STRS], CALL, None, {}),
    ("StringLookup(one_hot,sparse)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "output_mode='one_hot', sparse=True)", ["lit:np.array(['a', 'z', 'c', 'b'])"], CALL,
     None, {}),
    ("StringLookup(tf_idf,1-D,sparse)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "output_mode='tf_idf', idf_weights=[0.5, 1.0, 2.0], sparse=True)",
     ["lit:np.array(['a', 'a', 'c', 'z'])"], CALL, None, {}),
    ("IntegerLookup(count,sparse)", "layers.IntegerLookup(vocabulary=[7, 3, 9], "
     "output_mode='count', sparse=True)", ["lit:np.array([[7, 0, 5, 9], [3, 3, 1, 0]])"],
     CALL, None, {}),
    ("BatchNormalization(renorm,train)", "layers.BatchNormalization(renorm=True)",
     ["f:4,3"], "(layer(x[0], training=True), layer.get_weights())", None, {}),
    ("BatchNormalization(renorm,clip,grads)", "layers.BatchNormalization(renorm=True, "
     "renorm_clipping={'rmax': 1.3, 'rmin': 0.8, 'dmax': 0.2}, renorm_momentum=0.9, "
     "momentum=0.8)", ["f:3,2,5"], "(train_grads(layer, x[0]), layer.get_weights())", None,
     {"atol": 1e-4}),
    ("BatchNormalization(renorm,axis=1,grads)", "layers.BatchNormalization(renorm=True, "
     "axis=1, center=False)", ["f:2,3,4"], "(train_grads(layer, x[0]), "
     "layer(x[0], training=False))", None, {"atol": 1e-4}),
    ("BatchNormalization(renorm,inference)", "layers.BatchNormalization(renorm=True, "
     "scale=False)", ["f:2,4,3"], CALL, None, {}),
    ("Dense(activity_regularizer)", "layers.Dense(3, activity_regularizer='l2')", ["f:4,5"],
     "(layer(x[0]), layer.losses)", None, {}),
    ("Conv1D(activity_regularizer)", "layers.Conv1D(2, 3, activity_regularizer="
     "keras.regularizers.L1L2(l1=0.01, l2=0.1), kernel_regularizer='l2')", ["f:2,6,3"],
     "(layer(x[0]), layer.losses)", None, {}),
    ("Activation(activity_regularizer,scalar)", "layers.Activation('tanh', "
     "activity_regularizer=keras.regularizers.L1(0.3))", ["lit:np.float32(0.7)"],
     "(layer(x[0]), layer.losses)", None, {}),
    # issue 41: several OOV indices (FarmHash / SipHash buckets), Hashing, HashedCrossing
    ("StringLookup(oov3,mask)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "num_oov_indices=3, mask_token='')", [STRS2], CALL, None, {}),
    ("StringLookup(oov3,salt)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "num_oov_indices=3, salt=[7, 9])", [STRS2], CALL, None, {}),
    ("StringLookup(oov2,count,adapt)", "layers.StringLookup(num_oov_indices=2, max_tokens=5, "
     "output_mode='count')", [STRS2], CALL, None, {"adapt": "layer.adapt(x[0])"}),
    ("StringLookup(oov3,invert,mask)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "num_oov_indices=3, mask_token='', invert=True)",
     ["lit:np.array([[0, 1, 2, 3, 4, 5, 6, 7, -1]])"], CALL, None, {}),
    ("StringLookup(oov2,one_hot,sparse)", "layers.StringLookup(vocabulary=['a', 'b'], "
     "num_oov_indices=2, output_mode='one_hot', sparse=True)",
     ["lit:np.array(['a', 'z', 'q', 'x', 'b'])"], CALL, None, {}),
    ("StringLookup(oov2,tf_idf,salt)", "layers.StringLookup(vocabulary=['a', 'b', 'c'], "
     "num_oov_indices=2, salt=11, output_mode='tf_idf', idf_weights=[1.0, 2.0, 3.0])",
     [STRS2], CALL, None, {}),
    ("IntegerLookup(oov3,mask,multi_hot)", "layers.IntegerLookup(vocabulary=[7, 3, 9], "
     "num_oov_indices=3, mask_token=0, output_mode='multi_hot')", [INTS], CALL, None, {}),
    ("IntegerLookup(oov3,farmhash)", "layers.IntegerLookup(vocabulary=[7, 3, 9], "
     "num_oov_indices=3, oov_method='farmhash')", [INTS], CALL, None, {}),
    ("IntegerLookup(oov3,farmhash,salt)", "layers.IntegerLookup(vocabulary=[7, 3, 9], "
     "num_oov_indices=3, oov_method='farmhash', salt=(1, 2))", [INTS], CALL, None, {}),
    ("IntegerLookup(oov2,invert)", "layers.IntegerLookup(vocabulary=[7, 3, 9], "
     "num_oov_indices=2, invert=True)", ["lit:np.array([0, 1, 2, 3, 4, 5])"], CALL, None,
     {}),
    ("Hashing(strings)", "layers.Hashing(7)", [STRS2], CALL, None, {}),
    ("Hashing(mask,salt)", "layers.Hashing(7, mask_value='', salt=[133, 137])", [STRS2],
     CALL, None, {}),
    ("Hashing(ints,count)", "layers.Hashing(6, output_mode='count')", [INTS], CALL, None, {}),
    ("Hashing(ints,mask,int32)", "layers.Hashing(6, mask_value=0, dtype='int32')", [INTS],
     CALL, None, {}),
    ("Hashing(floats)", "layers.Hashing(9, salt=5)",
     ["lit:np.array([1.7, -2.5, 0.0, 3.0, 1e6], 'float32')"], CALL, None, {}),
    ("Hashing(one_hot)", "layers.Hashing(5, output_mode='one_hot')",
     ["lit:np.array([['a'], ['b'], ['c']])"], CALL, None, {}),
    ("Hashing(multi_hot,sparse)", "layers.Hashing(6, output_mode='multi_hot', sparse=True)",
     [STRS2], CALL, None, {}),
    ("Hashing(count,rank3)", "layers.Hashing(5, output_mode='count')", ["i9:2,3,2"], CALL,
     None, {}),
    ("HashedCrossing", "layers.HashedCrossing(5)", [CROSS_A, CROSS_B], LIST2, None, {}),
    ("HashedCrossing(one_hot,cols)", "layers.HashedCrossing(7, output_mode='one_hot')",
     ["lit:np.array([['A'], ['B'], ['']])", "lit:np.array([[-1], [2**62], [0]])"], LIST2,
     None, {}),
    ("HashedCrossing(one_hot,sparse)", "layers.HashedCrossing(5, output_mode='one_hot', "
     "sparse=True)", [CROSS_A, CROSS_B], LIST2, None, {}),
    ("HashedCrossing(3 inputs,int32)", "layers.HashedCrossing(1000, dtype='int32')",
     [CROSS_A, CROSS_B, "i50:5"], "layer([x[0], x[1], x[2]])", None, {}),
    ("HashedCrossing(num_bins=0)", "layers.HashedCrossing(0)", [CROSS_A, CROSS_B], LIST2,
     None, {}),
]

MODELS = [
    ("model:text classifier", """
inp = keras.Input((8,), dtype='int32')
h = layers.Embedding(20, 6, mask_zero=True)(inp)
h = layers.Bidirectional(layers.LSTM(5))(h)
layer = keras.Model(inp, layers.Dense(3, activation='softmax')(h))
""", ["t20:3,8"], CALL, None, {"no_config": True}),
    ("model:transformer block", """
inp = keras.Input((6, 8))
a = layers.MultiHeadAttention(2, 4)(inp, inp)
h = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([inp, a]))
f = layers.Dense(8)(layers.Dense(16, activation='relu')(h))
h = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([h, f]))
layer = keras.Model(inp, layers.Dense(2)(layers.GlobalAveragePooling1D()(h)))
""", ["f:3,6,8"], CALL, None, {"no_config": True, "atol": 1e-4}),
    ("model:1-D convnet", """
inp = keras.Input((12, 3))
h = layers.MaxPooling1D()(layers.Conv1D(8, 3, activation='relu')(inp))
h = layers.BatchNormalization()(layers.Conv1D(8, 3, padding='same')(h))
h = layers.Dropout(0.3)(layers.GlobalMaxPooling1D()(h))
layer = keras.Model(inp, layers.Dense(3)(h))
""", ["f:3,12,3"], CALL, None, {"no_config": True}),
    ("model:small U-Net", """
inp = keras.Input((16, 16, 3))
c1 = layers.Conv2D(4, 3, padding='same', activation='relu')(inp)
c2 = layers.Conv2D(8, 3, padding='same', activation='relu')(layers.MaxPooling2D()(c1))
b = layers.Conv2D(16, 3, padding='same', activation='relu')(layers.MaxPooling2D()(c2))
u2 = layers.Concatenate()([layers.Conv2DTranspose(8, 2, strides=2)(b), c2])
c3 = layers.Conv2D(8, 3, padding='same', activation='relu')(u2)
u1 = layers.Concatenate()([layers.UpSampling2D()(c3), c1])
c4 = layers.Conv2D(4, 3, padding='same', activation='relu')(u1)
layer = keras.Model(inp, layers.Conv2D(1, 1, activation='sigmoid')(c4))
""", ["f:2,16,16,3"], CALL, None, {"no_config": True, "atol": 1e-4}),
    ("model:activity regularizers", """
inp = keras.Input((5,))
h = layers.Dense(4, activation='relu', activity_regularizer='l1')(inp)
h = layers.Dense(3, activity_regularizer=keras.regularizers.L2(0.05),
                 kernel_regularizer='l2')(h)
layer = keras.Model(inp, layers.Dense(2)(h))
""", ["f:3,5"], "(layer(x[0]), layer.losses)", None, {"no_config": True}),
]


def make_input(spec, rng):
    if spec.startswith("lit:"):
        return np.asarray(eval(spec[4:], {"np": np}))  # noqa: S307  (the table's own code)
    kind, dims = spec.split(":")
    shape = tuple(int(d) for d in dims.split(","))
    if kind == "f":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "p":
        return (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32)
    if kind == "z":  # some steps all zero (Masking)
        x = rng.standard_normal(shape).astype(np.float32)
        x[:, 1::2][:, ::2] = 0.0
        return x
    if kind == "m":  # the first step true, then random
        m = rng.random(shape) > 0.35
        m[:, 0] = True
        return m
    if kind == "b":
        return rng.random(shape) > 0.4
    if kind[0] in "it":
        n = int(kind[1:])
        if kind[0] == "i":
            return rng.integers(0, n, shape).astype(np.int32)
        x = rng.integers(1, n, shape).astype(np.int32)
        for i in range(shape[0]):  # padding at the end of each row
            x[i, shape[1] - i - 1:] = 0
        return x
    raise ValueError(f"unknown input kind {spec!r}")


def build(code, keras):
    env = {"layers": keras.layers, "keras": keras, "np": np}
    if "layer =" in code:
        exec(code, env)  # noqa: S102  (the table's own code)
        return env["layer"]
    return eval(code, env)  # noqa: S307


def jsonable(v):
    if isinstance(v, dict):
        return {str(k): jsonable(e) for k, e in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(e) for e in v]
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def flat_arrays(v):
    if v is None:
        return [None]
    if hasattr(v, "dense_shape"):  # a SparseTensor: indices, values, dense_shape
        return [np.asarray(v.indices), np.asarray(v.values), np.asarray(v.dense_shape)]
    if hasattr(v, "nested_row_splits"):  # a RaggedTensor: flat values, then the splits
        return [np.asarray(v.flat_values)] + [np.asarray(s) for s in v.nested_row_splits]
    if isinstance(v, (list, tuple)):
        return [a for e in v for a in flat_arrays(e)]
    if isinstance(v, dict):
        return [a for k in sorted(v) for a in flat_arrays(v[k])]
    return [np.asarray(v)]


def plain(a):
    """An output as a NumPy array np.load reads back (strings as unicode, not objects)."""
    a = np.asarray(a)
    if a.dtype == object:
        a = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else str(v))(a)
    return a.astype(str) if a.dtype == object else a


def random_weights(layer, rng):
    out = []
    for w in layer.weights:
        shape, dt = tuple(w.shape), np.dtype(w.dtype)
        if not np.issubdtype(dt, np.floating):
            out.append(np.asarray(w.numpy()))
        elif "variance" in w.name or "stddev" in w.name:
            out.append((np.abs(rng.standard_normal(shape)) + 0.5).astype(dt))
        else:
            out.append((rng.standard_normal(shape) * 0.5).astype(dt))
    return out


def leaves(v):
    if isinstance(v, (list, tuple)):
        return [a for e in v for a in leaves(e)]
    if isinstance(v, dict):
        return [a for k in sorted(v) for a in leaves(v[k])]
    return [v]


def kind_of(v):
    if hasattr(v, "dense_shape"):
        return "sparse"
    return "ragged" if hasattr(v, "nested_row_splits") else "dense"


def train_grads(layer, x, tf):
    """[output, d loss / d x, d loss / d trainable weights...] of a training call, with
    loss = sum(output^2 * [0, 1, 2, ...]) (the same in keras_layers_kiln.py)."""
    with tf.GradientTape() as tape:
        xt = tf.constant(x)
        tape.watch(xt)
        y = layer(xt, training=True)
        w = np.arange(int(np.prod(y.shape)), dtype=np.float32).reshape(tuple(y.shape))
        loss = tf.reduce_sum(y * y * tf.constant(w))
    return [y] + tape.gradient(loss, [xt] + list(layer.trainable_weights))


def run_case(index, case, keras, tf, folder):
    name, code, in_specs, call, mask_code, opts = case
    rng = np.random.default_rng(1000 + index)
    x = [make_input(s, rng) for s in in_specs]
    keras.backend.clear_session()
    keras.utils.set_random_seed(index)
    layer = build(code, keras)
    env = {"layer": layer, "x": x, "np": np, "train_grads": lambda l, v: train_grads(l, v, tf)}
    if opts.get("adapt"):
        exec(opts["adapt"], env)  # noqa: S102
    eval(call, env)  # noqa: S307  (builds)
    if not opts.get("adapt"):
        layer.set_weights(random_weights(layer, rng))
    weights = layer.get_weights()  # before the call: a training call updates them
    result = eval(call, env)  # noqa: S307
    kinds = [kind_of(v) for v in leaves(result)]
    out = flat_arrays(result)
    masks = flat_arrays(eval(mask_code, env)) if mask_code else []  # noqa: S307
    record = {"name": name, "code": code, "call": call, "mask": mask_code, "opts": opts,
              "n_inputs": len(x), "count_params": int(layer.count_params()),
              "weights": [[w.name, w.path, list(w.shape), bool(w.trainable)]
                          for w in layer.weights],
              "n_out": len(out), "out_kinds": kinds, "mask_none": [m is None for m in masks],
              "config": None if opts.get("no_config") else jsonable(layer.get_config()),
              "vocabulary": jsonable([str(t) if isinstance(t, str) else t for t in
                                      layer.get_vocabulary()])
              if hasattr(layer, "get_vocabulary") else None}
    arrays = {f"x{i}": a for i, a in enumerate(x)}
    arrays.update({f"w{i}": w for i, w in enumerate(weights)})
    arrays.update({f"y{i}": plain(a) for i, a in enumerate(out)})
    arrays.update({f"m{i}": np.asarray(m) for i, m in enumerate(masks) if m is not None})
    np.savez(os.path.join(folder, f"case{index:03d}.npz"), **arrays)
    return record


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=None, help="cases whose name has a substring")
    ap.add_argument("--keep", default=None, help="write the cases here (kept)")
    args = ap.parse_args(argv)
    import keras
    import tensorflow as tf
    folder = args.keep or tempfile.mkdtemp(prefix="keras_layers_")
    os.makedirs(folder, exist_ok=True)
    records = []
    for i, case in enumerate(CASES + MODELS):
        if args.only and not any(s.lower() in case[0].lower() for s in args.only):
            continue
        try:
            rec = run_case(i, case, keras, tf, folder)
        except Exception as e:  # noqa: BLE001  (the case is reported, not run)
            rec = {"name": case[0], "tf_error": f"{type(e).__name__}: {str(e)[:300]}"}
        rec["index"] = i
        records.append(rec)
    with open(os.path.join(folder, "cases.json"), "w") as f:
        json.dump({"keras": keras.__version__, "cases": records}, f, indent=1)
    side = os.path.join(HERE, "keras_layers_kiln.py")
    rc = subprocess.call([KILN_PYTHON, side, folder])
    if not args.keep:
        for n in os.listdir(folder):
            os.remove(os.path.join(folder, n))
        os.rmdir(folder)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
