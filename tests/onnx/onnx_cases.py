#!/usr/bin/env python3
"""ONNX import and `tpu infer`, tested against onnxruntime (docs/networks.md).

Each case builds an ONNX graph with the onnx library (opsets 9 to 17), then either
  - imports it (`tpu import`), runs it (`tpu infer`) on random inputs, and runs the model itself
    as a graph (`tpu infer --net MODEL.onnx`, tests/onnx/graph_cases.py has the graphs that only
    that path takes), and compares both results with onnxruntime's fp32 evaluation of the graph: every output within 2^-6 of the
    largest output magnitude, and the same argmax wherever onnxruntime's top two differ by more
    than that; or
  - quantises it with onnxruntime's quantiser (QDQ format, int8 weights per channel, int8
    activations), imports and runs it on the int8 path, and compares with onnxruntime running
    the quantised model: the outputs, quantised with the model's output scale and zero point,
    within 1 of onnxruntime's; or
  - expects `tpu import` to refuse it: exit status 2, one line on stderr naming the problem,
    and no output file left behind.
Three more check the tool's other refusals: `tpu infer` of an input of the wrong shape or dtype,
and `tpu import` over existing files without --force (and with it).

Usage:
  onnx_cases.py --list                                 the cases, one per line
  onnx_cases.py --case NAME --tpu PATH --work DIR     run one (exit 1 on a failure)
      [--backend model|host|rtl]
  onnx_cases.py --rtl-matches-model --tpu PATH --work DIR
      a small model on --backend rtl and model: the outputs must be the same bits
"""
import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

TOLERANCE = 2.0 ** -6
BATCH = 5


# ---------------------------------------------------------------------------------------------
# Graph building (onnx is imported only here, so that --list needs nothing installed)
# ---------------------------------------------------------------------------------------------
class Graph:
    """A chain of nodes from one input, with its constants; `x` is the current value's name."""

    def __init__(self, input_shape, opset=13, seed=1):
        import numpy as np
        from onnx import TensorProto, helper
        self.np, self.helper, self.TensorProto = np, helper, TensorProto
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.input_shape = list(input_shape)
        self.nodes, self.initializers, self.count = [], [], 0
        self.x = "input"
        self.inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                     ["N"] + list(input_shape))]
        self.outputs = None

    def name(self, stem):
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, array, stem="w"):
        from onnx import numpy_helper
        name = self.name(stem)
        self.initializers.append(numpy_helper.from_array(self.np.asarray(array), name))
        return name

    def weights(self, *shape, fan_in):
        return (self.rng.uniform(-1, 1, shape) * (3.0 / fan_in) ** 0.5).astype(self.np.float32)

    def node(self, op, *extra_inputs, name=None, outputs=1, **attributes):
        out = [self.name(op.lower())] + [self.name("extra") for _ in range(outputs - 1)]
        self.nodes.append(self.helper.make_node(op, [self.x, *extra_inputs], out,
                                                name=name or self.name(op), **attributes))
        self.x = out[0]
        return self

    def model(self, output_shape=None):
        helper = self.helper
        outputs = self.outputs or [helper.make_tensor_value_info(
            self.x, self.TensorProto.FLOAT, output_shape)]
        graph = helper.make_graph(self.nodes, "case", self.inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="onnx_cases")
        model.ir_version = 8
        return model

    def input(self, batch=BATCH):
        return self.rng.uniform(-1, 1, [batch] + self.input_shape).astype(self.np.float32)

    # Layers, as ONNX models have them.
    def gemm(self, k, n, trans_b=0, bias=True, **attributes):
        w = self.weights(*((n, k) if trans_b else (k, n)), fan_in=k)
        inputs = [self.const(w)] + ([self.const(self.weights(n, fan_in=4))] if bias else [])
        return self.node("Gemm", *inputs, transB=trans_b, **attributes)

    def matmul_add(self, k, n, bias_shape=None):
        self.node("MatMul", self.const(self.weights(k, n, fan_in=k)))
        return self.node("Add", self.const(self.weights(*(bias_shape or [n]), fan_in=4)))

    def conv(self, c, m, kh, kw, bias=True, **attributes):
        w = self.weights(m, c, kh, kw, fan_in=c * kh * kw)
        inputs = [self.const(w)] + ([self.const(self.weights(m, fan_in=4))] if bias else [])
        return self.node("Conv", *inputs, **attributes)

    def batch_norm(self, channels):
        np = self.np
        params = [self.rng.uniform(0.5, 1.5, channels), self.rng.uniform(-0.2, 0.2, channels),
                  self.rng.uniform(-0.2, 0.2, channels), self.rng.uniform(0.5, 2.0, channels)]
        return self.node("BatchNormalization",
                         *[self.const(p.astype(np.float32), "bn") for p in params], epsilon=1e-3)


# ---------------------------------------------------------------------------------------------
# The cases that import and run
# ---------------------------------------------------------------------------------------------
def case_gemm_transposes():
    g = Graph([12])
    g.gemm(12, 16, trans_b=0, alpha=0.5, beta=2.0).node("Relu")
    g.gemm(16, 10, trans_b=1, bias=False).node("Sigmoid")
    return g


def case_matmul_add_functions():
    g = Graph([20])
    g.matmul_add(20, 24).node("Tanh")
    g.matmul_add(24, 16, bias_shape=[1, 16]).node("LeakyRelu", alpha=0.2)
    g.gemm(16, 10).node("Softmax", axis=-1)
    return g


def case_conv_bn_maxpool():
    # Conv with a bias, batch norm folded in, relu, max-pool, a flattened 4-channel image.
    g = Graph([3, 10, 10])
    g.conv(3, 4, 3, 3, pads=[1, 1, 1, 1]).batch_norm(4).node("Relu")
    g.node("MaxPool", kernel_shape=[2, 2], strides=[2, 2]).node("Flatten")
    g.gemm(4 * 5 * 5, 10)
    return g


def case_conv_strided_clip_avgpool():
    # A 5x3 kernel, stride 2, uneven padding, no bias; Clip(0, 6) from inputs (opset 13);
    # average pooling with padding left out of the mean.
    g = Graph([2, 13, 11])
    g.conv(2, 6, 5, 3, bias=False, strides=[2, 2], pads=[2, 1, 1, 0])
    g.node("Clip", g.const(g.np.float32(0.0), "lo"), g.const(g.np.float32(6.0), "hi"))
    g.node("AveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node("Flatten").matmul_add(6 * 3 * 3, 8)
    return g


def case_conv_auto_pad_global_pool():
    # SAME_UPPER padding with stride 2, average pooling counting the padding, global average
    # pooling, and batch normalisation after a Gemm.
    g = Graph([3, 9, 9])
    g.conv(3, 5, 3, 3, strides=[2, 2], auto_pad="SAME_UPPER").node("Relu")
    g.node("AveragePool", kernel_shape=[2, 2], strides=[1, 1], pads=[1, 1, 0, 0],
           count_include_pad=1)
    g.conv(5, 6, 1, 1, auto_pad="VALID").node("GlobalAveragePool").node("Flatten")
    g.gemm(6, 7, trans_b=1).batch_norm(7).node("Relu")
    g.gemm(7, 4)
    return g


def case_conv_add_bias_clip_relu():
    # A conv bias as a separate Add of shape 1 x C x 1 x 1, Clip with a lower bound only (relu),
    # max-pooling with ceil_mode 1 where it changes nothing.
    g = Graph([2, 9, 9])
    g.conv(2, 3, 3, 3, bias=False)
    g.node("Add", g.const(g.weights(1, 3, 1, 1, fan_in=4), "b"))
    g.node("Clip", g.const(g.np.float32(0.0), "lo"))
    g.node("MaxPool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1).node("Flatten")
    g.gemm(3 * 3 * 3, 4)
    return g


def case_maxpool_overlapping():
    # Overlapping windows with padding, SAME_LOWER conv padding, a 2x2 kernel.
    g = Graph([1, 8, 8])
    g.conv(1, 3, 2, 2, auto_pad="SAME_LOWER").node("Relu")
    g.node("MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node("Flatten").gemm(3 * 4 * 4, 5)
    return g


def case_reshape_dropout_identity():
    g = Graph([2, 6, 6])
    g.conv(2, 3, 3, 3).node("Relu")
    g.node("Reshape", g.const(g.np.array([0, -1], dtype=g.np.int64), "shape"))
    g.node("Dropout", g.const(g.np.float32(0.3), "ratio")).node("Identity")
    g.gemm(3 * 4 * 4, 6).node("Softmax", axis=1)
    return g


def case_opset9_attributes():
    # Clip's bounds and Dropout's ratio as attributes, Softmax's old default axis.
    g = Graph([10], opset=9)
    g.gemm(10, 12).node("Clip", min=0.0, max=6.0)
    g.node("Dropout", ratio=0.5).gemm(12, 5).node("Softmax")
    return g


def case_opset17_reshape_flat():
    # Reshape to a flat vector, and a Cast to float32 (as skl2onnx writes at the input).
    g = Graph([1, 5, 5], opset=17)
    g.node("Cast", to=1)
    g.node("Reshape", g.const(g.np.array([-1, 25], dtype=g.np.int64), "shape"))
    g.gemm(25, 9).node("Relu").gemm(9, 3)
    return g


RUN_CASES = {
    "gemm_transposes": case_gemm_transposes,
    "matmul_add_functions": case_matmul_add_functions,
    "conv_bn_maxpool": case_conv_bn_maxpool,
    "conv_strided_clip_avgpool": case_conv_strided_clip_avgpool,
    "conv_auto_pad_global_pool": case_conv_auto_pad_global_pool,
    "conv_add_bias_clip_relu": case_conv_add_bias_clip_relu,
    "maxpool_overlapping": case_maxpool_overlapping,
    "reshape_dropout_identity": case_reshape_dropout_identity,
    "opset9_attributes": case_opset9_attributes,
    "opset17_reshape_flat": case_opset17_reshape_flat,
}


# ---------------------------------------------------------------------------------------------
# The cases that must be refused: (model bytes or a graph, the words the error must contain)
# ---------------------------------------------------------------------------------------------
def refuse_dilations():
    g = Graph([1, 8, 8])
    g.conv(1, 2, 3, 3, name="conv3", dilations=[2, 2]).node("Flatten").gemm(2 * 4 * 4, 3)
    return g, 'node "conv3" (Conv): dilations 2x2 not supported'


def refuse_group():
    g = Graph([2, 6, 6])
    g.node("Conv", g.const(g.weights(2, 1, 3, 3, fan_in=9)), name="dw", group=2)
    return g, 'node "dw" (Conv): group 2 not supported'


def refuse_operator():
    g = Graph([4])
    g.gemm(4, 4).node("Sqrt", name="root")
    return g, 'node "root" (Sqrt): operator not supported'


def refuse_attribute():
    g = Graph([4])
    g.gemm(4, 4).node("Softmax", name="sm", axis=0)
    return g, 'node "sm" (Softmax): only a softmax over the features'


def refuse_trans_a():
    g = Graph([4])
    g.gemm(4, 3, name="g", transA=1)
    return g, 'node "g" (Gemm): transA 1 not supported'


def refuse_clip_range():
    g = Graph([4], opset=13)
    g.gemm(4, 4).node("Clip", g.const(g.np.float32(-1.0), "lo"), g.const(g.np.float32(1.0), "hi"),
                      name="clip")
    return g, 'node "clip" (Clip): only Clip(0, 6)'


def refuse_two_outputs():
    from onnx import TensorProto, helper
    g = Graph([4])
    g.gemm(4, 3)
    g.outputs = [helper.make_tensor_value_info(g.x, TensorProto.FLOAT, None),
                 helper.make_tensor_value_info("input", TensorProto.FLOAT, None)]
    return g, "1 input(s) and 2 output(s)"


def refuse_two_inputs():
    from onnx import TensorProto, helper
    g = Graph([4])
    g.gemm(4, 3)
    g.inputs.append(helper.make_tensor_value_info("other", TensorProto.FLOAT, ["N", 4]))
    return g, "2 input(s) and 1 output(s)"


def refuse_dynamic_shape():
    from onnx import TensorProto, helper
    g = Graph([3])
    g.inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", "features"])]
    g.gemm(3, 2)
    return g, "dimension 1 is not a fixed size"


def refuse_int_input():
    from onnx import TensorProto, helper
    g = Graph([3])
    g.inputs = [helper.make_tensor_value_info("input", TensorProto.INT32, ["N", 3])]
    g.gemm(3, 2)
    return g, "not a float32 tensor"


def refuse_opset():
    g = Graph([4], opset=18)
    g.gemm(4, 3)
    return g, "opset 18 of the default domain not supported (9 to 17)"


def refuse_not_a_chain():
    from onnx import helper
    g = Graph([4])
    g.gemm(4, 4)
    first = g.x
    g.node("Relu")
    g.nodes.append(helper.make_node("Add", [g.x, first], ["sum"], name="residual"))
    g.x = "sum"
    return g, 'node "residual" (Add): input "'


def refuse_softmax_inside():
    g = Graph([4])
    g.gemm(4, 4).node("Softmax", axis=1, name="s").gemm(4, 2, name="after")
    return g, 'node "after" (Gemm): only a final Softmax'


def refuse_flatten_axis():
    g = Graph([2, 3, 3])
    g.conv(2, 2, 3, 3, pads=[1, 1, 1, 1]).node("Flatten", name="f", axis=2)
    return g, 'node "f" (Flatten): only axis 1'


def refuse_cast():
    g = Graph([4])
    g.gemm(4, 3).node("Cast", name="to_int", to=7)
    return g, 'node "to_int" (Cast): only a cast to float32'


def refuse_malformed():
    return b"\x08\x07this is not a protobuf message\xff\xff\xff", "not an ONNX model"


def refuse_truncated():
    return case_conv_bn_maxpool().model().SerializeToString()[:300], "not an ONNX model"


# ---------------------------------------------------------------------------------------------
# Quantised models: a float graph, quantised by onnxruntime's quantiser (QDQ)
# ---------------------------------------------------------------------------------------------
def quantize(g, path, activation="QInt8", quant_format="QDQ"):
    """g's model quantised statically (calibration: 4 batches of 16 random inputs) into `path`."""
    import onnx
    from onnxruntime import quantization as q

    class Calibration(q.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"input": g.input(16)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    float_path = path.with_suffix(".float.onnx")
    onnx.save(g.model(), float_path)
    q.quantize_static(str(float_path), str(path), Calibration(),
                      quant_format=getattr(q.QuantFormat, quant_format), per_channel=True,
                      activation_type=getattr(q.QuantType, activation),
                      weight_type=q.QuantType.QInt8)
    float_path.unlink()


def quant_mlp():
    g = Graph([12])
    g.gemm(12, 16).node("Relu").gemm(16, 8).node("Relu").gemm(8, 5)
    return g


def quant_cnn():
    g = Graph([2, 8, 8])
    g.conv(2, 4, 3, 3, pads=[1, 1, 1, 1]).node("Relu")
    g.node("MaxPool", kernel_shape=[2, 2], strides=[2, 2]).node("Flatten")
    g.gemm(4 * 4 * 4, 6).node("Relu").gemm(6, 5)
    return g


def quant_softmax():
    return quant_mlp().node("Softmax", axis=1)


# name: (graph, gain): the inputs run are `gain` times as large as the calibration's, so that
# with a gain above 1 the int8 outputs saturate.
QUANT_CASES = {"qdq_mlp": (quant_mlp, 1), "qdq_cnn": (quant_cnn, 1),
               "qdq_softmax": (quant_softmax, 1), "qdq_saturating": (quant_mlp, 4)}


def refuse_qdq_uint8_activations():
    return "quantize", quant_mlp(), "QUInt8", "QDQ", "only int8 activations are supported"


def refuse_qlinear_operators():
    return "quantize", quant_mlp(), "QInt8", "QOperator", \
        "operator not supported (quantised models are taken in QDQ format)"


REFUSE_CASES = {name[len("refuse_"):]: fn for name, fn in globals().items()
                if name.startswith("refuse_")}


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
def tpu(args, command):
    return subprocess.run([args.tpu, *command], capture_output=True, text=True, check=False)


def fail(text):
    print(f"FAIL: {text}")
    sys.exit(1)


def expect_ok(result, what):
    if result.returncode != 0:
        fail(f"{what}: exit {result.returncode}: {result.stderr.strip()}")


def compare(y, ref, what):
    import numpy as np
    if y.shape != ref.shape:
        fail(f"{what}: shape {y.shape}, onnxruntime {ref.shape}")
    scale = float(np.max(np.abs(ref)))
    worst = float(np.max(np.abs(y - ref)))
    if worst > TOLERANCE * scale:
        fail(f"{what}: largest difference {worst:.3g} > 2^-6 x {scale:.3g}")
    top2 = np.sort(ref, axis=1)[:, -2:]
    decided = (top2[:, 1] - top2[:, 0]) > TOLERANCE * scale
    same = np.argmax(y, axis=1) == np.argmax(ref, axis=1)
    if not np.all(same | ~decided):
        fail(f"{what}: argmax differs where onnxruntime's top two are apart")
    print(f"{what}: largest difference {worst:.3g} = 2^{np.log2(max(worst, 1e-30) / scale):.1f} "
          f"of the largest output {scale:.3g}; argmax the same on {int(np.sum(same))} of "
          f"{len(same)}")


def run_case(args, name, work):
    import numpy as np
    import onnxruntime
    g = RUN_CASES[name]()
    model = work / f"{name}.onnx"
    model.write_bytes(g.model().SerializeToString())
    net = work / f"{name}.json"
    expect_ok(tpu(args, ["import", str(model), "--out", str(net), "--force"]), "tpu import")
    x = g.input()
    np.save(work / "x.npy", x)
    expect_ok(tpu(args, ["infer", "--net", str(net), "--in", str(work / "x.npy"), "--out",
                         str(work / "y.npy"), "--backend", args.backend]), "tpu infer")
    y = np.load(work / "y.npy")
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    ref = session.run(None, {"input": x})[0].reshape(len(x), -1)
    compare(y, ref, f"{name} on {args.backend}")
    # The same model as a graph, without the network file (tpu infer MODEL.onnx).
    expect_ok(tpu(args, ["infer", "--net", str(model), "--in", str(work / "x.npy"), "--out",
                         str(work / "y_graph.npy"), "--backend", args.backend]),
              "tpu infer MODEL.onnx")
    y_graph = np.load(work / "y_graph.npy").reshape(len(x), -1)
    compare(y_graph, ref, f"{name} as a graph on {args.backend}")


def refuse_case(args, name, work):
    built = REFUSE_CASES[name]()
    model = work / f"{name}.onnx"
    if built[0] == "quantize":
        _, graph, activation, quant_format, words = built
        quantize(graph, model, activation, quant_format)
    else:
        built, words = built
        model.write_bytes(built if isinstance(built, bytes) else built.model().SerializeToString())
    before = sorted(p.name for p in work.iterdir())
    result = tpu(args, ["import", str(model), "--out", str(work / f"{name}.json")])
    lines = result.stderr.strip().splitlines()
    if result.returncode != 2 or len(lines) != 1 or words not in lines[0]:
        fail(f"expected exit 2 and one line with '{words}', got exit {result.returncode}: "
             f"{result.stderr.strip()!r}")
    if sorted(p.name for p in work.iterdir()) != before:
        fail("the refused import left files behind")
    print(f"{name}: refused: {lines[0]}")


def quant_case(args, name, work):
    import numpy as np
    import onnx
    import onnxruntime
    from onnx import numpy_helper
    build, gain = QUANT_CASES[name]
    g = build()
    model = work / f"{name}.onnx"
    quantize(g, model)
    net = work / f"{name}.json"
    expect_ok(tpu(args, ["import", str(model), "--out", str(net), "--force"]), "tpu import")
    x = g.input(200) * np.float32(gain)
    np.save(work / "x.npy", x)
    expect_ok(tpu(args, ["infer", "--net", str(net), "--in", str(work / "x.npy"), "--out",
                         str(work / "y.npy"), "--backend", args.backend]), "tpu infer")
    y = np.load(work / "y.npy")
    # The graph as written: onnxruntime's optimiser fuses QDQ groups into its QLinear kernels,
    # whose rounding is not the graph's (printed below as how many outputs it moves).
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(model), options,
                                           providers=["CPUExecutionProvider"])
    ref = session.run(None, {"input": x})[0]
    fused = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    moved = int(np.sum(fused.run(None, {"input": x})[0] != ref))
    # The model's last DequantizeLinear: the output's scale and zero point.
    graph = onnx.load(model).graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    last = graph.node[-1]
    scale, zero = float(constants[last.input[1]]), int(constants[last.input[2]])
    steps = y / scale
    if np.abs(steps - np.round(steps)).max() > 1e-3:
        fail(f"{name}: outputs that are not whole steps of the output scale (not dequantised int8)")
    ours = np.round(steps) + zero
    if ours.min() < -128 or ours.max() > 127:
        fail(f"{name}: outputs beyond the int8 range of the output quantisation")
    theirs = np.round(ref / scale) + zero
    apart = np.abs(ours - theirs)
    if apart.max() > 1:
        fail(f"{name}: an output {apart.max():.0f} steps of the output scale from onnxruntime's")
    saturated = int(np.sum((theirs == -128) | (theirs == 127)))
    if gain > 1 and saturated == 0:
        fail(f"{name}: no output saturates at gain {gain}: the case checks nothing")
    print(f"{name} on {args.backend}: every output within {apart.max():.0f} step of the output "
          f"scale of onnxruntime's; {int(np.sum(apart > 0))} of {apart.size} differ; "
          f"{saturated} saturate; onnxruntime's optimised session moves {moved}")


def expect_refused(result, words, what):
    lines = result.stderr.strip().splitlines()
    if result.returncode != 2 or len(lines) != 1 or words not in lines[0]:
        fail(f"{what}: expected exit 2 and one line with '{words}', got exit "
             f"{result.returncode}: {result.stderr.strip()!r}")
    print(f"{what}: refused: {lines[0]}")


def imported_small(args, work):
    """case_gemm_transposes imported into work/net.json; its graph."""
    g = case_gemm_transposes()
    (work / "m.onnx").write_bytes(g.model().SerializeToString())
    expect_ok(tpu(args, ["import", str(work / "m.onnx"), "--out", str(work / "net.json")]),
              "tpu import")
    return g


def infer_refused(args, work, x, words, what):
    """`tpu infer` of the small imported model on input x: refused, and no output written."""
    import numpy as np
    imported_small(args, work)
    np.save(work / "x.npy", x)
    expect_refused(tpu(args, ["infer", "--net", str(work / "net.json"), "--in",
                              str(work / "x.npy"), "--out", str(work / "y.npy")]), words, what)
    if (work / "y.npy").exists():
        fail("an output file was written")


def check_infer_wrong_shape(args, work):
    import numpy as np
    infer_refused(args, work, np.zeros((3, 11), dtype=np.float32),
                  "takes float32 Nx12", "a 3 x 11 input")


def check_infer_wrong_dtype(args, work):
    import numpy as np
    infer_refused(args, work, np.zeros((3, 12), dtype=np.float64), "x.npy", "a float64 input")


def check_import_over_existing(args, work):
    imported_small(args, work)
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    expect_refused(tpu(args, ["import", str(work / "m.onnx"), "--out", str(work / "net.json")]),
                   "already exists (--force overwrites)", "an import over existing files")
    if {p.name: p.read_bytes() for p in work.iterdir()} != before:
        fail("the refused import changed the files")
    expect_ok(tpu(args, ["import", str(work / "m.onnx"), "--out", str(work / "net.json"),
                         "--force"]), "tpu import --force")
    print("--force: imported over the existing files")


def check_own_network(args, work):
    """The project's own MLP on 200 Fashion-MNIST test images (N x 28 x 28 x 1, pixel / 255):
    `tpu infer`'s argmax gives the accuracy `tpu eval` reports for the same images."""
    import gzip
    import re
    import numpy as np
    data = Path("/usr/share/datasets/fashion-mnist")
    with gzip.open(data / "t10k-images-idx3-ubyte.gz") as file:
        images = np.frombuffer(file.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)[:200]
    with gzip.open(data / "t10k-labels-idx1-ubyte.gz") as file:
        labels = np.frombuffer(file.read(), np.uint8, offset=8)[:200]
    np.save(work / "x.npy", (images / np.float32(255)).astype(np.float32))
    net = str(Path(__file__).resolve().parents[2] / "sw" / "nets" / "mlp.json")
    expect_ok(tpu(args, ["infer", "--net", net, "--in", str(work / "x.npy"), "--out",
                         str(work / "y.npy"), "--backend", "model"]), "tpu infer")
    correct = int(np.sum(np.argmax(np.load(work / "y.npy"), axis=1) == labels))
    result = tpu(args, ["eval", "--net", net, "--images", "200", "--backend", "model"])
    expect_ok(result, "tpu eval")
    reported = re.search(r"accuracy +[0-9.]+ \((\d+) of 200\)", result.stdout)
    if not reported or int(reported.group(1)) != correct:
        fail(f"tpu infer: {correct} of 200 right; tpu eval says: {result.stdout.strip()}")
    print(f"the project's MLP: {correct} of 200 right by tpu infer, as tpu eval reports")


CHECK_CASES = {name[len("check_"):]: fn for name, fn in globals().items()
               if name.startswith("check_")}


def rtl_matches_model(args, work):
    import numpy as np
    g = case_conv_bn_maxpool()
    model = work / "small.onnx"
    model.write_bytes(g.model().SerializeToString())
    net = work / "small.json"
    expect_ok(tpu(args, ["import", str(model), "--out", str(net), "--force"]), "tpu import")
    np.save(work / "x.npy", g.input(3))
    outputs = {}
    for backend in ("rtl", "model"):
        out = work / f"y_{backend}.npy"
        result = tpu(args, ["infer", "--net", str(net), "--in", str(work / "x.npy"), "--out",
                            str(out), "--backend", backend, "--array", "4x4_m1a1", "--stats"])
        expect_ok(result, backend)
        outputs[backend] = np.load(out)
        if backend == "rtl":
            print(result.stdout.strip())
            counted = re.search(r"[0-9]+ cycles \(([0-9]+) per input\)", result.stdout)
            conv = re.search(r"^Conv +1 +core +[0-9]+ +1 +[0-9]+ +([0-9]+) ", result.stdout,
                             re.M)
            if not counted or not conv or int(conv.group(1)) == 0:
                fail("--stats printed no cycles per input or no Conv row with the RTL's cycles")
    if outputs["rtl"].tobytes() != outputs["model"].tobytes():
        fail("rtl and model outputs differ")
    print(f"rtl and model: the same bits, {outputs['rtl'].size} outputs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--case")
    parser.add_argument("--rtl-matches-model", action="store_true")
    parser.add_argument("--tpu")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--backend", default="model", choices=["model", "host", "rtl"])
    args = parser.parse_args()
    if args.list:
        for name in RUN_CASES:
            print(f"run {name}")
        for name in QUANT_CASES:
            print(f"quant {name}")
        for name in CHECK_CASES:
            print(f"check {name}")
        for name in REFUSE_CASES:
            print(f"refuse {name}")
        return 0
    if not args.tpu or not args.work:
        parser.error("--tpu and --work are needed")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    if args.rtl_matches_model:
        rtl_matches_model(args, args.work)
    elif args.case in RUN_CASES:
        run_case(args, args.case, args.work)
    elif args.case in QUANT_CASES:
        quant_case(args, args.case, args.work)
    elif args.case in CHECK_CASES:
        CHECK_CASES[args.case](args, args.work)
    elif args.case in REFUSE_CASES:
        refuse_case(args, args.case, args.work)
    else:
        parser.error(f"--case {args.case}: no such case (--list shows them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
