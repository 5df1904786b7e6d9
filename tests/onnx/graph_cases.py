#!/usr/bin/env python3
"""ONNX models as graphs (`tpu infer --net MODEL.onnx`, docs/graph.md), against onnxruntime.

Each case builds a model with the onnx library, written as today's exporters write them: DAGs
(residual adds, attention), opsets 9 to the newest the pinned onnx defines, inputs of any rank,
several inputs and outputs, weights in external data files, the shape arithmetic of
`x.view(N, -1)`. It runs the model with `tpu infer` on random inputs twice:
  - on --backend host (every operator in fp32): every output within 2^-12 of the largest output
    magnitude of onnxruntime's, so that each operator's semantics are checked closely;
  - on the chosen backend (matrix products in bf16 x bf16 with fp32 sums): within 2^-5 of it,
    and the same argmax wherever onnxruntime's top two are further apart than that.
The refusal cases expect exit status 2, one line naming the problem, and no output file. The
compiled-model checks compile models with `tpu compile` and run the compiled files: the same bits
as the models themselves, and what a compiled model refuses.

Usage:
  graph_cases.py --list                                      the cases, one per line
  graph_cases.py --case NAME --tpu PATH --work DIR [--backend model|rtl]
  graph_cases.py --rtl-matches-model CASE ... --tpu PATH --work DIR
      the cases' models on 4 inputs on --backend rtl and model: the outputs must be the same bits
      (CASE.tpu: the case compiled by tpu compile for its 4 inputs, the compiled file run)
"""
import argparse
import re
import subprocess
from pathlib import Path

from graph_checks import (QDQ_SHARE, add_arguments, check_products, compare, compare_ints,
                          compare_steps, compiled_matches, fail, infer, output_steps, outputs_of,
                          quantize_qdq, quantised_products, rtl_matches_model, run_qdq_reference)

BATCH = 6
NETS = Path(__file__).resolve().parents[2] / "sw" / "nets"  # the project's network files
HOST_TOLERANCE = 2.0 ** -12
TOLERANCE = 2.0 ** -5


class Model:
    """Nodes, constants, inputs and outputs of one model; names are made up as they go."""

    def __init__(self, opset, seed=1):
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper
        self.np, self.helper, self.TensorProto, self.numpy_helper = np, helper, TensorProto, numpy_helper
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.nodes, self.initializers, self.inputs, self.outputs = [], [], [], []
        self.feeds = {}
        self.count = 0

    def name(self, stem):
        self.count += 1
        return f"{stem}{self.count}"

    def input(self, shape, batch=BATCH):
        """A float32 input, its first dimension the batch (left open in the file)."""
        name = self.name("x")
        self.inputs.append(self.helper.make_tensor_value_info(
            name, self.TensorProto.FLOAT, ["N"] + list(shape)))
        self.feeds[name] = self.rng.uniform(-1, 1, [batch] + list(shape)).astype(self.np.float32)
        return name

    def fixed_input(self, shape):
        """A float32 input whose whole shape the file gives (no batch): every run takes it whole."""
        name = self.name("f")
        self.inputs.append(self.helper.make_tensor_value_info(name, self.TensorProto.FLOAT, shape))
        self.feeds[name] = self.rng.uniform(0.5, 1.5, shape).astype(self.np.float32)
        return name

    def ids(self, shape, count, batch=BATCH):
        """An int64 input of indices in [0, count) (token ids), its first dimension the batch."""
        name = self.name("ids")
        self.inputs.append(self.helper.make_tensor_value_info(
            name, self.TensorProto.INT64, ["N"] + list(shape)))
        self.feeds[name] = self.rng.integers(0, count, [batch] + list(shape)).astype(self.np.int64)
        return name

    def const(self, array, stem="c"):
        name = self.name(stem)
        self.initializers.append(self.numpy_helper.from_array(self.np.asarray(array), name))
        return name

    def ints(self, values):
        return self.const(self.np.array(values, dtype=self.np.int64), "i")

    def weights(self, *shape, fan_in):
        return self.const((self.rng.uniform(-1, 1, shape) * (3.0 / fan_in) ** 0.5)
                          .astype(self.np.float32), "w")

    def op(self, op, *inputs, outputs=1, **attributes):
        names = [self.name(op.lower()) for _ in range(outputs)]
        self.nodes.append(self.helper.make_node(op, list(inputs), names, name=self.name(op),
                                                **attributes))
        return names[0] if outputs == 1 else names

    def output(self, name, elem_type=None):
        self.outputs.append(self.helper.make_tensor_value_info(
            name, elem_type or self.TensorProto.FLOAT, None))

    def proto(self):
        graph = self.helper.make_graph(self.nodes, "case", self.inputs, self.outputs,
                                       self.initializers)
        model = self.helper.make_model(
            graph, opset_imports=[self.helper.make_opsetid("", self.opset)],
            producer_name="graph_cases")
        model.ir_version = 8
        return model

    # Pieces as exporters write them.
    def linear(self, x, k, n, gemm=False):
        if gemm:
            return self.op("Gemm", x, self.weights(n, k, fan_in=k), self.weights(n, fan_in=4),
                           transB=1)
        return self.op("Add", self.op("MatMul", x, self.weights(k, n, fan_in=k)),
                       self.weights(n, fan_in=4))

    def conv(self, x, c, m, k, group=1, **attributes):
        return self.op("Conv", x, self.weights(m, c // group, k, k, fan_in=c // group * k * k),
                       self.weights(m, fan_in=4), group=group, **attributes)

    def batch_norm(self, x, channels):
        np = self.np
        params = [self.rng.uniform(0.5, 1.5, channels), self.rng.uniform(-0.2, 0.2, channels),
                  self.rng.uniform(-0.2, 0.2, channels), self.rng.uniform(0.5, 2.0, channels)]
        return self.op("BatchNormalization", x,
                       *[self.const(p.astype(np.float32), "bn") for p in params], epsilon=1e-5)

    def view_flat(self, x):
        """x.view(x.size(0), -1) as PyTorch's exporter writes it: Shape, Gather, Unsqueeze,
        Concat, Reshape."""
        batch = self.op("Gather", self.op("Shape", x), self.const(self.np.int64(0), "i"), axis=0)
        if self.opset >= 13:
            batch = self.op("Unsqueeze", batch, self.ints([0]))
        else:
            batch = self.op("Unsqueeze", batch, axes=[0])
        shape = self.op("Concat", batch, self.ints([-1]), axis=0)
        return self.op("Reshape", x, shape)


# ---------------------------------------------------------------------------------------------
# Cases that run
# ---------------------------------------------------------------------------------------------
def case_mlp_opset20():
    # PyTorch's default exporter today: opset 20, a 784-256-10 MLP after x.view(N, -1).
    m = Model(20)
    x = m.view_flat(m.input([1, 28, 28]))
    h = m.op("Relu", m.linear(x, 784, 256, gemm=True))
    m.output(m.linear(h, 256, 10, gemm=True))
    return m


def case_mlp_external_data():
    # The dynamo exporter's weights in an external data file beside the model.
    m = Model(18)
    h = m.op("Relu", m.linear(m.input([64]), 64, 96))
    m.output(m.linear(h, 96, 10))
    return m


def case_residual_cnn():
    # ResNet's basic block: conv, batch norm (not folded), relu, conv, the skip added, relu;
    # a strided 1x1 projection; global average pooling and a classifier.
    m = Model(17)
    x = m.op("Relu", m.batch_norm(m.conv(m.input([3, 16, 16]), 3, 8, 3, pads=[1, 1, 1, 1]), 8))
    x = m.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = m.op("Relu", m.batch_norm(m.conv(x, 8, 8, 3, pads=[1, 1, 1, 1]), 8))
    y = m.batch_norm(m.conv(y, 8, 8, 3, pads=[1, 1, 1, 1]), 8)
    x = m.op("Relu", m.op("Add", x, y))
    down = m.batch_norm(m.conv(x, 8, 16, 1, strides=[2, 2]), 16)
    y = m.op("Relu", m.conv(x, 8, 16, 3, strides=[2, 2], pads=[1, 1, 1, 1]))
    x = m.op("Relu", m.op("Add", down, m.conv(y, 16, 16, 3, pads=[1, 1, 1, 1])))
    x = m.op("Flatten", m.op("GlobalAveragePool", x))
    m.output(m.linear(x, 16, 10, gemm=True))
    return m


def case_mobilenet_block():
    # MobileNet v2's inverted residual: 1x1 expansion, depthwise 3x3 (group = channels), Clip to
    # [0, 6] from inputs, 1x1 projection, the skip; a dilated strided depthwise conv, HardSwish.
    m = Model(17)
    lo, hi = m.const(m.np.float32(0.0), "lo"), m.const(m.np.float32(6.0), "hi")
    x = m.input([8, 12, 12])
    y = m.op("Clip", m.batch_norm(m.conv(x, 8, 32, 1), 32), lo, hi)
    y = m.op("Clip", m.batch_norm(m.conv(y, 32, 32, 3, group=32, pads=[1, 1, 1, 1]), 32), lo, hi)
    x = m.op("Add", x, m.batch_norm(m.conv(y, 32, 8, 1), 8))
    x = m.op("HardSwish", m.conv(x, 8, 16, 3, group=8, strides=[2, 2], dilations=[2, 2],
                                 pads=[2, 2, 1, 1]))
    x = m.op("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
             ceil_mode=1, count_include_pad=1)
    m.output(m.linear(m.op("Flatten", x), 16 * 4 * 4, 10, gemm=True))
    return m


def attention_block(m, x, tokens, width, heads):
    """A transformer encoder layer as PyTorch exports it (post-norm, GELU): the products of two
    activations Q K^T and scores V, heads by Reshape and Transpose."""
    np = m.np
    head = width // heads
    qkv = m.op("Add", m.op("MatMul", x, m.weights(width, 3 * width, fan_in=width)),
               m.weights(3 * width, fan_in=4))
    q, k, v = m.op("Split", qkv, m.ints([width] * 3), axis=-1, outputs=3)
    split_heads = m.ints([0, tokens, heads, head])
    q, k, v = (m.op("Transpose", m.op("Reshape", t, split_heads), perm=[0, 2, 1, 3])
               for t in (q, k, v))
    scores = m.op("Div", m.op("MatMul", q, m.op("Transpose", k, perm=[0, 1, 3, 2])),
                  m.const(np.float32(np.sqrt(head)), "scale"))
    attended = m.op("MatMul", m.op("Softmax", scores, axis=-1), v)
    merged = m.op("Reshape", m.op("Transpose", attended, perm=[0, 2, 1, 3]),
                  m.ints([0, tokens, width]))
    x = m.op("Add", x, m.linear(merged, width, width))
    x = m.op("LayerNormalization", x, m.const(np.ones(width, np.float32) * 1.1, "g"),
             m.const(np.full(width, 0.05, np.float32), "b"), axis=-1, epsilon=1e-5)
    hidden = m.op("Gelu", m.linear(x, width, 2 * width))
    x = m.op("Add", x, m.linear(hidden, 2 * width, width))
    return m.op("LayerNormalization", x, m.const(np.ones(width, np.float32), "g"),
                m.const(np.zeros(width, np.float32), "b"), axis=-1, epsilon=1e-5)


def case_transformer_encoder():
    # Two encoder layers on a rank-3 input (16 tokens of 32), mean over the tokens, a classifier;
    # two outputs: the logits and the pooled features.
    m = Model(20)
    x = m.input([16, 32])
    x = attention_block(m, attention_block(m, x, 16, 32, 4), 16, 32, 4)
    pooled = m.op("ReduceMean", x, m.ints([1]), keepdims=0)
    m.output(m.linear(pooled, 32, 10, gemm=True))
    m.output(pooled)
    return m


def case_layernorm_decomposed():
    # Layer normalisation as exporters decompose it (ReduceMean with axes as an input, opset
    # 18), on the sum of two inputs, then a product.
    m = Model(18)
    x = m.op("Add", m.input([5, 12]), m.input([5, 12]))
    centred = m.op("Sub", x, m.op("ReduceMean", x, m.ints([-1])))
    var = m.op("ReduceMean", m.op("Pow", centred, m.const(m.np.float32(2.0), "two")), m.ints([-1]))
    x = m.op("Div", centred, m.op("Sqrt", m.op("Add", var, m.const(m.np.float32(1e-5), "e"))))
    x = m.op("Add", m.op("Mul", x, m.weights(12, fan_in=1)), m.weights(12, fan_in=4))
    m.output(m.op("MatMul", x, m.weights(12, 7, fan_in=12)))
    return m


def case_opset13_reductions():
    # ReduceMean with axes as an attribute (opset 13), ReduceSum with them as an input,
    # ReduceMax keeping no dimensions, LogSoftmax on a middle axis, Squeeze with axes input.
    m = Model(13)
    x = m.input([4, 6, 5])
    mean = m.op("ReduceMean", x, axes=[2], keepdims=1)
    total = m.op("ReduceSum", m.op("Sub", x, mean), m.ints([1]), keepdims=1)
    top = m.op("ReduceMax", x, axes=[1, 2], keepdims=0)
    m.output(m.op("LogSoftmax", x, axis=1))
    m.output(m.op("Squeeze", total, m.ints([1])))
    m.output(top)
    return m


def case_opset9_forms():
    # Opset 9's forms: Softmax over everything after axis 1 of a rank-3 input, Unsqueeze and
    # Slice with attributes, Pad with pads as an attribute, Clip's bounds as attributes.
    m = Model(9)
    x = m.input([4, 6])
    y = m.op("Softmax", m.op("Mul", x, m.const(m.np.float32(3.0), "k")), axis=1)
    y = m.op("Unsqueeze", m.op("Flatten", y, axis=1), axes=[1])
    y = m.op("Slice", y, starts=[0, 2], ends=[1, -3], axes=[1, 2])
    y = m.op("Pad", y, pads=[0, 0, 1, 0, 0, 2], mode="constant", value=0.5)
    m.output(m.op("Clip", y, min=0.05, max=0.4))
    return m


def case_shape_arithmetic():
    # Constants exporters compute from shapes: ConstantOfShape, Range, Expand, Where, Equal,
    # Cast, Tile; slices with negative steps; Gather of rows (an embedding table).
    m = Model(17)
    np = m.np
    x = m.input([5, 8])
    shape = m.op("Shape", x)
    ones = m.op("ConstantOfShape", m.op("Slice", shape, m.ints([1]), m.ints([3])),
                value=m.numpy_helper.from_array(np.array([1.0], np.float32)))
    steps = m.op("Cast", m.op("Range", m.const(np.int64(0), "i"), m.const(np.int64(8), "i"),
                              m.const(np.int64(1), "i")), to=1)
    ramp = m.op("Mul", m.op("Expand", steps, m.ints([5, 8])), ones)
    two = m.const(np.float32(2.0), "two")
    even = m.op("Mul", m.op("Floor", m.op("Div", ramp, two)), two)
    mask = m.op("Equal", m.op("Cast", even, to=7), m.op("Cast", ramp, to=7))  # even columns
    y = m.op("Where", mask, x, m.op("Neg", x))
    y = m.op("Slice", y, m.ints([-1]), m.ints([-100]), m.ints([2]), m.ints([-2]))
    table = m.weights(10, 4, fan_in=1)
    rows = m.op("Gather", table, m.ints([[3, 1], [0, 9]]), axis=0)
    m.output(m.op("Tile", y, m.ints([1, 1, 2])))
    m.output(m.op("Add", rows, m.const(np.float32(0.0), "z")))
    return m


def case_activations():
    # The activation functions after any operator, broadcast arithmetic, LRN as AlexNet uses
    # it, GlobalMaxPool, Concat and Split; Gelu of opset 20.
    m = Model(20)
    np = m.np
    x = m.input([6, 5, 5])
    a, b = m.op("Split", x, m.ints([2, 4]), axis=1, outputs=2)
    a = m.op("Sigmoid", m.op("Exp", a))
    b = m.op("PRelu", m.op("LeakyRelu", b, alpha=0.3), m.weights(4, 1, 1, fan_in=1))
    y = m.op("Concat", a, b, axis=1)
    y = m.op("LRN", y, size=3, alpha=1e-3, beta=0.75, bias=2.0)
    y = m.op("Add", y, m.op("HardSigmoid", m.op("Erf", m.op("Tanh", y)), alpha=0.3, beta=0.4))
    y = m.op("Reciprocal", m.op("Add", m.op("Abs", y), m.const(np.float32(1.0), "one")))
    m.output(m.op("Flatten", m.op("GlobalMaxPool", m.op("Gelu", y, approximate="tanh"))))
    m.output(m.op("Elu", m.op("Softplus", m.op("Neg", y)), alpha=0.5))
    return m


def case_logic_and_extremes():
    # Comparisons and logic into Where, variadic Max, Min and Sum with broadcasting, Log, Ceil,
    # ReduceMin, Size.
    m = Model(17)
    np = m.np
    a, b = m.input([3, 4]), m.input([1, 4])
    both = m.op("And", m.op("Greater", a, b), m.op("Not", m.op("LessOrEqual", a,
                                                                m.const(np.float32(0.5), "h"))))
    either = m.op("Or", m.op("Less", a, m.const(np.float32(-0.5), "l")),
                  m.op("GreaterOrEqual", b, m.const(np.float32(0.9), "g")))
    picked = m.op("Where", both, a, m.op("Where", either, b, m.const(np.float32(0.0), "z")))
    extremes = m.op("Sum", m.op("Max", a, b, picked), m.op("Min", a, b), b)
    size = m.op("Cast", m.op("Size", a), to=1)
    positive = m.op("Add", m.op("Abs", extremes), m.const(np.float32(0.25), "q"))
    m.output(m.op("Add", m.op("Log", positive), m.op("Ceil", m.op("Mul", a, size))))
    m.output(m.op("ReduceMin", extremes, axes=[1, 2], keepdims=1))
    return m


def case_batch_and_fixed_inputs():
    # A batch of examples and an input of fixed shape beside it (a per-feature scale the caller
    # chooses): runs of --batch cut the first into runs and give each run the second whole.
    m = Model(17)
    x = m.op("Mul", m.input([12]), m.fixed_input([12]))
    m.output(m.linear(m.op("Relu", m.linear(x, 12, 16)), 16, 5))
    return m


def recurrent_weights(m, gates, directions, inputs, hidden):
    w = m.weights(directions, gates * hidden, inputs, fan_in=inputs)
    r = m.weights(directions, gates * hidden, hidden, fan_in=hidden)
    b = m.weights(directions, 2 * gates * hidden, fan_in=4)
    return w, r, b


def case_lstm_two_layers():
    # nn.LSTM(12, 16, num_layers=2) as exported: two LSTM nodes (the second reads the first's Y
    # squeezed of its direction axis), initial states as inputs of zeros, a classifier on the
    # last step's hidden state; a bidirectional layer with peepholes beside it.
    m = Model(17)
    np = m.np
    x = m.op("Transpose", m.input([8, 12]), perm=[1, 0, 2])  # [steps, batch, inputs]
    w, r, b = recurrent_weights(m, 4, 1, 12, 16)
    y, _, _ = m.op("LSTM", x, w, r, b, "", outputs=3, hidden_size=16)
    w, r, b = recurrent_weights(m, 4, 1, 16, 16)
    _, h, _ = m.op("LSTM", m.op("Squeeze", y, m.ints([1])), w, r, b, outputs=3, hidden_size=16)
    m.output(m.linear(m.op("Squeeze", h, m.ints([0])), 16, 10, gemm=True))
    w, r, b = recurrent_weights(m, 4, 2, 12, 6)
    p = m.weights(2, 18, fan_in=2)
    yb, hb, cb = m.op("LSTM", x, w, r, b, "", "", "", p, outputs=3, hidden_size=6,
                      direction="bidirectional", clip=2.5)
    m.output(yb)
    m.output(cb)
    return m


def case_recurrent_gate_functions():
    # Other gate functions than the defaults, with their alphas and betas consumed in order by
    # the functions that take them: an LSTM, a bidirectional GRU.
    m = Model(17)
    x = m.op("Transpose", m.input([6, 5]), perm=[1, 0, 2])
    w, r, b = recurrent_weights(m, 4, 1, 5, 7)
    y, _, _ = m.op("LSTM", x, w, r, b, outputs=3, hidden_size=7,
                   activations=["HardSigmoid", "ScaledTanh", "LeakyRelu"],
                   activation_alpha=[0.3, 1.5, 0.1], activation_beta=[0.45, 0.8])
    m.output(y)
    w, r, b = recurrent_weights(m, 3, 2, 5, 4)
    y2, _ = m.op("GRU", x, w, r, b, outputs=2, hidden_size=4, direction="bidirectional",
                 activations=["Sigmoid", "Relu", "HardSigmoid", "Tanh"],
                 activation_alpha=[0.25], activation_beta=[0.55])
    m.output(y2)
    return m


def case_gru_forms():
    # GRU as PyTorch exports it (linear_before_reset 1), in reverse, with an initial state; and
    # ONNX's default form (the reset applied before the product), bidirectional; and both forms
    # with a hidden state of whole array rows (16), which keep their state on the core.
    m = Model(14)
    xs = m.input([7, 5])
    x = m.op("Transpose", xs, perm=[1, 0, 2])
    w, r, b = recurrent_weights(m, 3, 1, 5, 9)
    h0 = m.op("Unsqueeze", m.op("ReduceMean", x, axes=[0], keepdims=0), m.ints([0]))
    h0 = m.op("MatMul", h0, m.weights(5, 9, fan_in=5))
    y, h = m.op("GRU", x, w, r, b, "", h0, outputs=2, hidden_size=9, linear_before_reset=1,
                direction="reverse")
    m.output(y)
    w, r, b = recurrent_weights(m, 3, 2, 5, 4)
    y2, h2 = m.op("GRU", x, w, r, b, outputs=2, hidden_size=4, direction="bidirectional")
    m.output(y2)
    m.output(h2)
    w, r, b = recurrent_weights(m, 3, 1, 5, 16)
    y3, _ = m.op("GRU", x, w, r, b, outputs=2, hidden_size=16, linear_before_reset=1)
    m.output(y3)
    w, r, b = recurrent_weights(m, 3, 1, 5, 16)
    y4, _ = m.op("GRU", x, w, r, b, outputs=2, hidden_size=16)
    m.output(y4)
    return m


def case_resize_nearest():
    # Upsampling by Resize, nearest, as nn.Upsample exports it (asymmetric, floor) and with
    # ONNX's defaults (half_pixel, round_prefer_floor) to given sizes.
    m = Model(17)
    np = m.np
    x = m.input([3, 5, 4])
    empty = m.const(np.zeros(0, np.float32), "roi")
    up = m.op("Resize", x, empty, m.const(np.array([1, 1, 2, 2], np.float32), "scales"),
              mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    m.output(m.op("Add", m.conv(up, 3, 2, 3, pads=[1, 1, 1, 1]), m.const(np.float32(0), "z")))
    m.output(m.op("Resize", x, "", "", m.ints([BATCH, 3, 7, 9]), mode="nearest"))
    return m


def case_token_embedding():
    # Token ids (int64) into an embedding table (Gather), with learned positions, averaged and
    # classified; the class (ArgMax, int64) as a second output, each token's smallest feature
    # (ArgMin, the last of equals) as a third.
    m = Model(17)
    np = m.np
    tokens = m.op("Gather", m.weights(50, 16, fan_in=3), m.ids([8], 50), axis=0)
    x = m.op("Add", tokens, m.weights(8, 16, fan_in=3))
    logits = m.linear(m.op("ReduceMean", x, axes=[1], keepdims=0), 16, 10)
    m.output(logits)
    m.output(m.op("ArgMax", logits, axis=1, keepdims=0), m.TensorProto.INT64)
    m.output(m.op("ArgMin", x, axis=2, select_last_index=1), m.TensorProto.INT64)
    return m


def case_qlinear_operators():
    # The standard quantised operators as a file may hold them (onnxruntime's QOperator format
    # with only default-domain nodes): QLinearConv with per-channel weights and an int32 bias,
    # QLinearMatMul with per-column scales, between QuantizeLinear and DequantizeLinear; int8
    # activations on one path, uint8 on the other (with 7-bit weights there: onnxruntime's x86
    # kernels for uint8 x int8 add pairs of products in int16, which saturates beyond them).
    m = Model(13)
    np = m.np
    scale = lambda v: m.const(np.float32(v), "s")
    zero = lambda v, t: m.const(np.array(v, dtype=t), "z")
    x = m.op("QuantizeLinear", m.input([3, 8, 8]), scale(1 / 120), zero(-7, np.int8))
    w = m.const(m.rng.integers(-127, 128, (6, 3, 3, 3)).astype(np.int8), "w")
    w_scale = m.const((m.rng.uniform(0.5, 1.5, 6) / 300).astype(np.float32), "s")
    bias = m.const(m.rng.integers(-400, 400, 6).astype(np.int32), "b")
    y = m.op("QLinearConv", x, scale(1 / 120), zero(-7, np.int8), w, w_scale,
             zero([0] * 6, np.int8), scale(1 / 40), zero(-28, np.int8), bias, pads=[1, 1, 1, 1],
             strides=[2, 2])
    m.output(m.op("DequantizeLinear", y, scale(1 / 40), zero(-28, np.int8)))
    h = m.op("QuantizeLinear", m.input([16]), scale(1 / 100), zero(131, np.uint8))
    b = m.const(m.rng.integers(-63, 64, (16, 8)).astype(np.int8), "w")
    b_scale = m.const((m.rng.uniform(0.5, 1.5, 8) / 400).astype(np.float32), "s")
    z = m.op("QLinearMatMul", h, scale(1 / 100), zero(131, np.uint8), b, b_scale,
             zero([0] * 8, np.int8), scale(1 / 60), zero(120, np.uint8))
    m.output(m.op("DequantizeLinear", z, scale(1 / 60), zero(120, np.uint8)))
    return m


def case_integer_operators():
    # The integer products (MatMulInteger, ConvInteger: int32 sums, zero points taken off, a
    # nonzero one in B by the host) and what follows them in a file that dequantises itself: an
    # int32 Add (a bias) and DequantizeLinear of int32 per channel; MaxPool of uint8 values. The
    # int32 outputs must be onnxruntime's exactly.
    m = Model(13)
    np = m.np
    scale = lambda v: m.const(np.float32(v), "s")
    zero = lambda v, t: m.const(np.array(v, dtype=t), "z")
    x = m.op("QuantizeLinear", m.input([3, 8, 8]), scale(1 / 100), zero(131, np.uint8))
    x = m.op("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])
    w = m.const(m.rng.integers(100, 141, (5, 3, 3, 3)).astype(np.uint8), "w")
    sums = m.op("ConvInteger", x, w, zero(131, np.uint8), zero(120, np.uint8), pads=[1, 1, 1, 1])
    m.output(sums, m.TensorProto.INT32)
    bias = m.const(m.rng.integers(-400, 400, (5, 1, 1)).astype(np.int32), "b")
    m.output(m.op("DequantizeLinear", m.op("Add", sums, bias),
                  m.const((m.rng.uniform(0.5, 1.5, 5) / 3000).astype(np.float32), "s"), axis=1))
    a = m.op("QuantizeLinear", m.input([16]), scale(1 / 120), zero(-5, np.int8))
    b = m.const(m.rng.integers(-63, 64, (16, 8)).astype(np.int8), "w")
    m.output(m.op("MatMulInteger", a, b, zero(-5, np.int8), zero(3, np.int8)),
             m.TensorProto.INT32)
    return m


RUN_CASES = {name[len("case_"):]: fn for name, fn in globals().items()
             if name.startswith("case_")}
# The cases whose QDQ forms (onnxruntime's quantize_static) run too, as qdq_NAME: their products
# on the core's int8 datapath.
QDQ_CASES = {f"qdq_{name}": name for name in
             ("mlp_opset20", "residual_cnn", "mobilenet_block", "transformer_encoder",
              "lstm_two_layers")}
# The QDQ forms' outputs within 2 output steps of onnxruntime's on at least this share (99.9 %
# where not given). Each product is within one step of onnxruntime's (check_products), but a
# step's difference anywhere moves what follows it: through the transformer's two random-weight
# layers a few outputs end up 3 steps apart (1 of its 60 here; zoo_cases.py says more).
STEP_BARS = {"qdq_transformer_encoder": 0.95}


# ---------------------------------------------------------------------------------------------
# Cases that must be refused: (bytes or a Model, the files to write beside it, the words)
# ---------------------------------------------------------------------------------------------
def tiny(opset=17, op="Relu", **attributes):
    m = Model(opset)
    m.output(m.op(op, m.input([4]), **attributes))
    return m


def refuse_unsupported_operator():
    return tiny(op="NonZero"), "operator not supported"


def refuse_opset_too_new():
    return tiny(opset=29), "opset 29"


def refuse_other_domain():
    m = tiny()
    model = m.proto()
    model.graph.node[0].domain = "com.microsoft"
    model.opset_import.append(m.helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString(), 'domain "com.microsoft"'


def refuse_truncated():
    return case_mlp_opset20().proto().SerializeToString()[:3000], "not an ONNX model"


def refuse_external_missing():
    return "external", "external data"


def refuse_external_short():
    return "short", "is short"


def refuse_wrong_input_shape():
    return "shape", "takes float32 Nx64"


def refuse_output_not_batched():
    # Inputs in several runs (--batch 2 of 3), an output whose first dimension is not the batch:
    # its runs cannot be joined.
    m = Model(17)
    m.output(m.op("Transpose", m.input([4]), perm=[1, 0]))
    return m, "first dimension not the batch"


def refuse_asymmetric_weights_per_channel():
    # Weights per output channel must be symmetric: a QLinearMatMul whose B has a zero point of
    # 3 in one column.
    m = Model(13)
    np = m.np
    one = m.const(np.float32(0.01), "s")
    x = m.op("QuantizeLinear", m.input([4]), one, m.const(np.int8(0), "z"))
    b = m.const(np.ones((4, 3), np.int8), "w")
    y = m.op("QLinearMatMul", x, one, m.const(np.int8(0), "z"), b,
             m.const(np.full(3, 0.01, np.float32), "s"), m.const(np.array([0, 3, 0], np.int8), "z"),
             one, m.const(np.int8(0), "z"))
    m.output(m.op("DequantizeLinear", y, one, m.const(np.int8(0), "z")))
    return m, "weight zero point of 3 per channel"


def refuse_ids_as_float():
    # An int64 input given a float32 file.
    m = Model(17)
    m.output(m.op("Gather", m.weights(10, 3, fan_in=3), m.ids([4], 10), axis=0))
    return m, "'<i8' (int64)"


REFUSE_CASES = {name[len("refuse_"):]: fn for name, fn in globals().items()
                if name.startswith("refuse_")}


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
def tpu(args, command):
    return subprocess.run([args.tpu, *command], capture_output=True, text=True, check=False)


def save(m, path, external=False):
    import onnx
    model = m.proto()
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=path.name + ".data", size_threshold=0)
    else:
        path.write_bytes(model.SerializeToString())


def build(name, work):
    """The case's model written into `work`, and its inputs: a QDQ case's the QDQ form of its
    float case, calibrated on other inputs of the same distribution."""
    import numpy as np
    m = RUN_CASES[QDQ_CASES.get(name, name)]()
    model_path = work / f"{name}.onnx"
    save(m, model_path, external=name == "mlp_external_data")
    if name in QDQ_CASES:
        float_path = work / f"{name}_float.onnx"
        model_path.rename(float_path)
        rng = np.random.default_rng(2)
        calibration = [rng.uniform(-1, 1, (16,) + v.shape[1:]).astype(np.float32)
                       for v in m.feeds.values()]
        quantize_qdq(float_path, model_path, calibration)
    return model_path, list(m.feeds.values())


def run_case(args, name, work):
    import onnxruntime
    model_path, inputs = build(name, work)
    host, _ = infer(args.tpu, model_path, inputs, work, "host")
    ours, stats = infer(args.tpu, model_path, inputs, work, args.backend)
    if name in QDQ_CASES or name == "qlinear_operators":
        # Quantised: against onnxruntime's own run of the operators, in output steps.
        refs = run_qdq_reference(model_path, inputs)
        share = STEP_BARS.get(name, QDQ_SHARE)
        for o, (ref, step) in enumerate(zip(refs, output_steps(model_path))):
            if step is None:  # a float output (an operator quantize_static leaves in float)
                compare(host[o], ref, TOLERANCE, f"{name} output {o} on host")
                compare(ours[o], ref, TOLERANCE, f"{name} output {o} on {args.backend}")
            else:
                compare_steps(host[o], ref, step, f"{name} output {o} on host", share)
                compare_steps(ours[o], ref, step, f"{name} output {o} on {args.backend}", share)
        if name in QDQ_CASES:
            check_products(args.tpu, model_path, inputs, work, args.backend)
        if quantised_products(stats) == 0:
            fail(f"{name}: no int8 product ran on the core")
    else:
        session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
        refs = session.run(None, dict(zip([i.name for i in session.get_inputs()], inputs)))
        for o, ref in enumerate(refs):
            if ref.dtype.kind == "i":  # indices: the same on the host, and of the same type
                compare_ints(host[o], ref, f"{name} output {o} on host (fp32)")
                # int32 sums are exact; indices from bf16 products may differ on a few.
                compare_ints(ours[o], ref, f"{name} output {o} on {args.backend}",
                             share=1.0 if ref.dtype.name == "int32" else 0.8)
                continue
            compare(host[o], ref, HOST_TOLERANCE, f"{name} output {o} on host (fp32)")
            compare(ours[o], ref, TOLERANCE, f"{name} output {o} on {args.backend}")
    print(stats.strip())


def refuse_case(args, name, work):
    built, words = REFUSE_CASES[name]()
    model_path = work / f"{name}.onnx"
    x_path = work / "x.npy"
    import numpy as np
    np.save(x_path, np.zeros((3, 4), np.float32))
    if built in ("external", "short"):
        save(case_mlp_external_data(), model_path, external=True)
        data = work / (model_path.name + ".data")
        if built == "external":
            data.unlink()
        else:
            data.write_bytes(data.read_bytes()[:1000])
    elif built == "shape":
        save(case_mlp_external_data(), model_path, external=True)
    elif isinstance(built, bytes):
        model_path.write_bytes(built)
    else:
        save(built, model_path)
    out = work / "y.npy"
    if out.exists():
        out.unlink()
    result = tpu(args, ["infer", "--net", str(model_path), "--in", str(x_path), "--out", str(out),
                        "--backend", "host", "--batch", "2"])
    lines = result.stderr.strip().splitlines()
    if result.returncode != 2 or len(lines) != 1 or words not in lines[0]:
        fail(f"expected exit 2 and one line with '{words}', got exit {result.returncode}: "
             f"{result.stderr.strip()!r}")
    if out.exists():
        fail("the refused run wrote an output file")
    print(f"{name}: refused: {lines[0]}")


# ---------------------------------------------------------------------------------------------
# Compiled models (`tpu compile`, docs/graph.md): the bits of the model itself
# ---------------------------------------------------------------------------------------------
# Float and QDQ models, int64 token ids, an LSTM, several outputs, each compiled for runs of 4,
# so that the cases' 6 inputs run as one run and one padded with zero inputs; the LSTM for one
# run of 6, since its outputs put the steps first and runs cannot be joined.
COMPILED_CASES = {"mlp_opset20": 4, "residual_cnn": 4, "transformer_encoder": 4,
                  "token_embedding": 4, "lstm_two_layers": BATCH, "qdq_mlp_opset20": 4,
                  "qdq_residual_cnn": 4, "qdq_transformer_encoder": 4, "qlinear_operators": 4,
                  "batch_and_fixed_inputs": 4, "mobilenet_block": 4, "qdq_mobilenet_block": 4}
# The results a compiled run keeps in the core's memory for the next product (chains, where a
# product's result is the next one's A and nothing else reads it), as tpu compile reports them:
# the MLP's two layers (float and QDQ) and the two-layer case as one program each, each encoder
# layer's feed-forward pair; 0 for the others (the QDQ transformer adds its feed-forward bias on
# the host, between the products).
KEPT_RESULTS = {"mlp_opset20": 1, "qdq_mlp_opset20": 1, "batch_and_fixed_inputs": 1,
                "transformer_encoder": 2}
# The programs of products a compiled run takes, where fewer than its GEMMs: the chains above as
# one program each; a node's independent products (attention's per input and head), float or
# int8, as one. The others run a program a GEMM. (A depthwise convolution, float or int8, is no
# product: a program of the vector unit, as in the MobileNet blocks.)
PROGRAMS = {"mlp_opset20": 1, "qdq_mlp_opset20": 1, "batch_and_fixed_inputs": 1,
            "transformer_encoder": 11, "qdq_transformer_encoder": 13, "mobilenet_block": 4,
            "qdq_mobilenet_block": 4}

# The host steps of a compiled run, as tpu compile reports them: none for the MLP; for the LSTM
# case its input's Transpose (runs of 12 values, not whole rows of the array) alone: its three
# LSTM nodes run their products on the matrix unit and their gates on the vector unit.
HOST_STEPS = {"mlp_opset20": 0, "lstm_two_layers": 1}


def compile_model(args, model_path, out, *options):
    result = tpu(args, ["compile", str(model_path), "-o", str(out), *options])
    if result.returncode != 0:
        fail(f"tpu compile {model_path.name}: exit {result.returncode}: {result.stderr.strip()}")


def check_compiled_models(args, work):
    """Each model compiled, then run by tpu infer from the compiled file: every output the same
    bits as the model's own run."""
    for name, batch in COMPILED_CASES.items():
        case_work = work / name
        case_work.mkdir(parents=True, exist_ok=True)
        model_path, inputs = build(name, case_work)
        expected, _ = infer(args.tpu, model_path, inputs, case_work, args.backend)
        printed = compiled_matches(args.tpu, model_path, inputs, case_work, args.backend, expected,
                                   batch, name)
        print(printed.strip())
        kept = re.search(r"(\d+) results? kept in the core's memory", printed)
        if not kept or int(kept.group(1)) != KEPT_RESULTS.get(name, 0):
            fail(f"{name}: {kept.group(1) if kept else 'no'} results kept in the core's memory, "
                 f"not {KEPT_RESULTS.get(name, 0)}")
        steps = re.search(r"(\d+) host steps?", printed)
        if name in HOST_STEPS and (not steps or int(steps.group(1)) != HOST_STEPS[name]):
            fail(f"{name}: {steps.group(1) if steps else 'no'} host steps, not {HOST_STEPS[name]}")
        gemms = re.search(r"\((\d+) GEMMs?\)", printed)
        programs = re.search(r"(\d+) programs? a run", printed)
        expected = PROGRAMS.get(name, int(gemms.group(1)) if gemms else -1)
        if not programs or int(programs.group(1)) != expected:
            fail(f"{name}: {programs.group(1) if programs else 'no'} programs a run, not "
                 f"{expected}")
    # On a core without a vector unit the recurrent gates are the host's: the LSTM case's three
    # nodes are host steps too.
    case_work = work / "lstm_two_layers"
    model_path, _ = build("lstm_two_layers", case_work)
    result = tpu(args, ["compile", str(model_path), "-o", str(case_work / "no_vector_unit.tpu"),
                        "--array", "8x8_bus4", "--batch", str(BATCH)])
    steps = re.search(r"(\d+) host steps?", result.stdout)
    if result.returncode != 0 or not steps or int(steps.group(1)) != 4:
        fail(f"lstm_two_layers on 8x8_bus4: exit {result.returncode}, "
             f"{steps.group(1) if steps else 'no'} host steps, not 4: {result.stderr.strip()}")
    print(f"lstm_two_layers on 8x8_bus4 (no vector unit): {steps.group(1)} host steps")


# Programs a run of the compiled network files, float and int8 alike: the MLP's three dense
# layers one chain; the CNN's two convolutions (im2col on the host) and its dense pair.
NETWORK_PROGRAMS = {"mlp": 1, "cnn": 3}


def check_network_files(args, work):
    """The project's network files (sw/nets) and their int8 forms (tpu quantize, calibrated on 16
    training images) as graphs: tpu infer NET.json, then the network compiled by tpu compile and
    run from the compiled file, every output the same bits."""
    import numpy as np
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, (6, 28, 28, 1)).astype(np.float32)
    for name in ("mlp", "cnn"):
        nets = [NETS / f"{name}.json", work / f"{name}_int8.json"]
        result = tpu(args, ["quantize", "--net", str(nets[0]), "--out", str(nets[1]),
                            "--calibration", "16"])
        if result.returncode != 0:
            fail(f"tpu quantize {name}: exit {result.returncode}: {result.stderr.strip()}")
        for net in nets:
            expected, _ = infer(args.tpu, net, [x], work, args.backend, output_count=1)
            if expected[0].shape != (6, 10):
                fail(f"{net.name}: output of shape {expected[0].shape}, not (6, 10)")
            printed = compiled_matches(args.tpu, net, [x], work, args.backend, expected, 4,
                                       net.name)
            print(printed.strip())
            programs = re.search(r"(\d+) programs? a run", printed)
            if not programs or int(programs.group(1)) != NETWORK_PROGRAMS[name]:
                fail(f"{net.name}: {programs.group(1) if programs else 'no'} programs a run, not "
                     f"{NETWORK_PROGRAMS[name]}")


def check_compiled_refusals(args, work):
    """What tpu compile and tpu infer of a compiled model refuse: exit 2, one line, no file."""
    import numpy as np
    model_path, inputs = build("residual_cnn", work)
    compiled = work / "model.tpu"
    compile_model(args, model_path, compiled, "--batch", "2", "--array", "16x16")
    x = work / "x.npy"
    np.save(x, inputs[0])
    out = work / "y.npy"
    bad_x = work / "bad_x.npy"
    np.save(bad_x, inputs[0][:, :, 1:])
    data = compiled.read_bytes()
    truncated, corrupt = work / "truncated.tpu", work / "corrupt.tpu"
    truncated.write_bytes(data[:len(data) // 2])
    corrupt.write_bytes(data[:-5] + bytes([data[-5] ^ 1]) + data[-4:])
    unsupported = work / "unsupported.onnx"
    save(tiny(op="NonZero"), unsupported)
    # A model of two batched inputs, given 6 of one and 5 of the other.
    two_path, (a, b) = build("logic_and_extremes", work)
    two_compiled = work / "two.tpu"
    compile_model(args, two_path, two_compiled, "--batch", "2")
    a_path, b_path = work / "a.npy", work / "b.npy"
    np.save(a_path, a)
    np.save(b_path, b[:-1])
    # A network file without its weights beside it.
    lone_net = work / "mlp.json"
    lone_net.write_text((NETS / "mlp.json").read_text())
    infer_compiled = ["infer", "--net", str(compiled), "--in", str(x), "--out", str(out)]
    refusals = [
        (["compile", str(unsupported), "-o", str(out)], "operator not supported"),
        (["compile", str(model_path), "-o", str(work)], "is a directory"),
        (["compile", str(lone_net), "-o", str(out)], "mlp.1.dense.weights.npy"),
        (infer_compiled + ["--backend", "host"], "not host"),
        (infer_compiled + ["--array", "4x4_m1a1"], "compiled for the 16x16 core, not --array"),
        (infer_compiled + ["--batch", "3"], "compiled for runs of 2 inputs, not --batch 3"),
        (["infer", "--net", str(compiled), "--in", str(bad_x), "--out", str(out)], str(bad_x)),
        (["infer", "--net", str(two_compiled), "--in", str(a_path), "--in", str(b_path), "--out",
          str(out), "--out", str(work / "y2.npy")], "takes as many of each"),
        (["infer", "--net", str(truncated), "--in", str(x), "--out", str(out)], "truncated"),
        (["infer", "--net", str(corrupt), "--in", str(x), "--out", str(out)], "corrupt"),
        (["disasm", str(truncated), "-o", str(out)], "truncated"),
    ]
    for command, words in refusals:
        if out.exists():
            out.unlink()
        result = tpu(args, command)
        lines = result.stderr.strip().splitlines()
        if result.returncode != 2 or len(lines) != 1 or words not in lines[0]:
            fail(f"tpu {' '.join(command[:1])}: expected exit 2 and one line with '{words}', got "
                 f"exit {result.returncode}: {result.stderr.strip()!r}")
        if out.exists():
            fail(f"the refused tpu {command[0]} wrote {out.name}")
        print(f"refused: {lines[0]}")


def check_compiled_listing(args, work):
    """`tpu disasm MODEL.tpu`: as many programs as tpu compile reports, each with the GEMMs it
    runs and its instructions (one HALT each: a chain's are joined), text that `tpu asm` takes
    back, instruction for instruction."""
    for name in ("mlp_opset20", "transformer_encoder"):
        case_work = work / name
        case_work.mkdir(parents=True, exist_ok=True)
        model_path, _ = build(name, case_work)
        compiled = case_work / f"{name}.tpu"
        result = tpu(args, ["compile", str(model_path), "-o", str(compiled), "--batch", "4"])
        if result.returncode != 0:
            fail(f"tpu compile {name}: exit {result.returncode}: {result.stderr.strip()}")
        reported = re.search(r"(\d+) programs? a run", result.stdout)
        listing = tpu(args, ["disasm", str(compiled)])
        if listing.returncode != 0 or not reported:
            fail(f"tpu disasm {name}: exit {listing.returncode}: {listing.stderr.strip()}")
        text = listing.stdout
        headers = re.findall(r"^# program \d+ of (\d+), at 0x[0-9a-f]+: (\d+) instructions",
                             text, re.M)
        programs = int(reported.group(1))
        lines = [line for line in text.splitlines() if line and not line.startswith("#")]
        halts = sum(1 for line in lines if line.split()[0] == "halt")
        if len(headers) != programs or any(int(total) != programs for total, _ in headers) or \
                halts != programs or sum(int(count) for _, count in headers) != len(lines):
            fail(f"{name}: the listing has {len(headers)} programs, {halts} HALTs and "
                 f"{len(lines)} instructions; tpu compile reports {programs} programs")
        source, binary = case_work / "listing.s", case_work / "listing.bin"
        source.write_text(text)
        assembled = tpu(args, ["asm", str(source), "-o", str(binary)])
        if assembled.returncode != 0 or binary.stat().st_size != 32 * len(lines):
            fail(f"{name}: tpu asm of the listing: exit {assembled.returncode}: "
                 f"{assembled.stderr.strip()}")
        print(f"{name}: tpu disasm lists {programs} program(s), {len(lines)} instructions, "
              f"{halts} HALT(s); tpu asm takes them back")


CHECK_CASES = {"compiled_models": check_compiled_models,
               "compiled_refusals": check_compiled_refusals,
               "compiled_listing": check_compiled_listing,
               "network_files": check_network_files}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--rtl-matches-model", nargs="+", metavar="CASE")
    args = parser.parse_args()
    if args.rtl_matches_model:
        if not (args.tpu and args.work):
            parser.error("--tpu and --work are needed")
        for name in args.rtl_matches_model:
            # NAME.tpu: the case compiled for its 4 inputs, the compiled file on both backends.
            case = name[:-len(".tpu")] if name.endswith(".tpu") else name
            case_work = args.work / name
            case_work.mkdir(parents=True, exist_ok=True)
            model_path, inputs = build(case, case_work)
            if case != name:
                compiled = case_work / name
                compile_model(args, model_path, compiled, "--batch", "4")
                rtl_matches_model(args.tpu, compiled, [v[:4] for v in inputs], case_work, name,
                                  output_count=len(outputs_of(model_path)))
            else:
                rtl_matches_model(args.tpu, model_path, [v[:4] for v in inputs], case_work, name)
        return
    if args.list:
        for name in [*RUN_CASES, *QDQ_CASES]:
            print(f"run {name}")
        for name in REFUSE_CASES:
            print(f"refuse {name}")
        for name in CHECK_CASES:
            print(f"check {name}")
        return
    if not (args.case and args.tpu and args.work):
        parser.error("--case, --tpu and --work are needed")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.case in RUN_CASES or args.case in QDQ_CASES:
        run_case(args, args.case, args.work)
    elif args.case in REFUSE_CASES:
        refuse_case(args, args.case, args.work)
    elif args.case in CHECK_CASES:
        CHECK_CASES[args.case](args, args.work)
    else:
        parser.error(f"no case {args.case}")


if __name__ == "__main__":
    main()
