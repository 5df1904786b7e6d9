"""What the graph tests share (graph_cases.py, zoo_cases.py): running `tpu infer` on an ONNX
model, comparing its outputs with onnxruntime's, and the RTL against the functional model."""
import subprocess
import sys
import time


def add_arguments(parser):
    """The options every graph test script takes."""
    from pathlib import Path
    parser.add_argument("--list", action="store_true", help="the cases, one per line")
    parser.add_argument("--case")
    parser.add_argument("--tpu", help="the tpu tool")
    parser.add_argument("--work", type=Path, help="a folder for the files of the run")
    parser.add_argument("--backend", default="model", choices=["model", "rtl"])


def fail(text):
    print(f"FAIL: {text}")
    sys.exit(1)


def infer(tpu, model_path, inputs, work, backend, batch=None, output_count=None):
    """`tpu infer --stats` of the model on the inputs (arrays, in the graph's order) on a
    backend, in runs of `batch` inputs where given: its outputs (arrays) and what it printed.
    `output_count` where the model is no ONNX file (a compiled model)."""
    import numpy as np
    command = [tpu, "infer", "--net", str(model_path), "--backend", backend, "--stats"]
    if batch:
        command += ["--batch", str(batch)]
    for i, value in enumerate(inputs):
        np.save(work / f"x{i}.npy", value)
        command += ["--in", str(work / f"x{i}.npy")]
    if output_count is None:
        output_count = len(outputs_of(model_path))
    outputs = [work / f"y{o}_{backend}.npy" for o in range(output_count)]
    for path in outputs:
        command += ["--out", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        fail(f"tpu infer on {backend}: exit {result.returncode}: {result.stderr.strip()}")
    return [np.load(path) for path in outputs], result.stdout


def weights_once(tpu, model_path, inputs, work, backend, outputs, stdout, what):
    """The inputs again in runs of 16: the same bits as in one run, and the weights written into
    the core's memory no more than in one run (they stay resident), as --stats reports them."""
    import re
    split, split_stdout = infer(tpu, model_path, inputs, work, backend, batch=16)
    for o, (a, b) in enumerate(zip(split, outputs)):
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            fail(f"{what} output {o}: runs of 16 give other bits than one run")
    pattern = r"resident for all (\d+) run\(s\): (\d+) bytes"
    once, split_figures = re.search(pattern, stdout), re.search(pattern, split_stdout)
    if not once or not split_figures:
        fail(f"{what}: no figure of the weights written in --stats")
    runs, written = int(split_figures.group(1)), int(split_figures.group(2))
    if written != int(once.group(2)) or written == 0:
        fail(f"{what}: {written} bytes of weights written in {runs} runs, "
             f"{once.group(2)} in one")
    print(f"{what}: {len(inputs[0])} inputs in {runs} run(s) of 16, the same bits as in one; "
          f"{written} bytes of weights written once, resident")


def outputs_of(model_path):
    import onnx
    return [o.name for o in onnx.load(str(model_path), load_external_data=False).graph.output]


def compare(ours, ref, tolerance, what, agree=None):
    """Every output within `tolerance` of the largest output magnitude of onnxruntime's; for
    rows of scores, the argmax the same on at least `agree` rows (default: every row whose top
    two onnxruntime puts further apart than the tolerance)."""
    import numpy as np
    if ours.shape != ref.shape:
        fail(f"{what}: shape {ours.shape}, onnxruntime's {ref.shape}")
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    worst = float(np.max(np.abs(ours - ref)))
    apart = f"2^{np.log2(worst / scale):.1f}" if worst > 0 else "0"
    line = (f"{what}: largest difference {apart} of the largest output {scale:.3g} "
            f"(bar 2^{np.log2(tolerance):.0f})")
    if not worst <= tolerance * scale:
        print(line)
        fail(f"{what}: largest difference {worst:.3g} > 2^{np.log2(tolerance):.0f} x {scale:.3g}")
    if ref.ndim == 2 and ref.shape[1] > 1:
        same = np.argmax(ours, axis=1) == np.argmax(ref, axis=1)
        line += f"; argmax the same on {int(np.sum(same))} of {len(same)}"
        if agree is None:
            top2 = np.sort(ref, axis=1)[:, -2:]
            decided = (top2[:, 1] - top2[:, 0]) > tolerance * scale
            if not np.all(same | ~decided):
                print(line)
                fail(f"{what}: argmax differs where onnxruntime's top two are apart")
        else:
            line += f" (bar {agree})"
            if int(np.sum(same)) < agree:
                print(line)
                fail(f"{what}: argmax the same on only {int(np.sum(same))} of {len(same)}")
    print(line)


def compare_ints(ours, ref, what, share=1.0):
    """An integer output (indices, classes): its type and shape onnxruntime's, and at least
    `share` of its values the same."""
    import numpy as np
    if ours.dtype != ref.dtype or ours.shape != ref.shape:
        fail(f"{what}: {ours.dtype} {ours.shape}, onnxruntime's {ref.dtype} {ref.shape}")
    same = float(np.mean(ours == ref))
    print(f"{what}: {100 * same:.1f} % of {ref.size} values the same (bar {100 * share:g} %)")
    if same < share:
        fail(f"{what}: only {100 * same:.1f} % of the values the same")


def compiled_matches(tpu, model_path, inputs, work, backend, outputs, batch, what):
    """The model compiled by `tpu compile` for runs of `batch` inputs (the last padded), then the
    compiled file run by `tpu infer` on the inputs: every output the same bits as `outputs` (the
    model's own run), in as many runs as the batch makes. Returns what tpu compile printed."""
    import re
    compiled = work / (model_path.stem + ".tpu")
    result = subprocess.run([tpu, "compile", str(model_path), "-o", str(compiled), "--batch",
                             str(batch)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        fail(f"tpu compile {model_path.name}: exit {result.returncode}: {result.stderr.strip()}")
    ours, stats = infer(tpu, compiled, inputs, work, backend, output_count=len(outputs))
    for o, (a, b) in enumerate(zip(ours, outputs)):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            fail(f"{what}: output {o} of the compiled model differs from the model's")
    count = len(inputs[0])
    runs = re.search(r"resident for all (\d+) run", stats)
    if not runs or int(runs.group(1)) != -(-count // batch):
        fail(f"{what}: {count} inputs in runs of {batch}: not {-(-count // batch)} runs")
    print(f"{what}: compiled for runs of {batch}, {count} inputs: every output the same bits as "
          f"the model's")
    return result.stdout


def rtl_matches_model(tpu, model_path, inputs, work, what, output_count=None):
    """The model on --backend rtl and on model: every output the same bits. Prints the RTL's
    time."""
    start = time.monotonic()
    rtl, _ = infer(tpu, model_path, inputs, work, "rtl", output_count=output_count)
    seconds = time.monotonic() - start
    model, _ = infer(tpu, model_path, inputs, work, "model", output_count=output_count)
    for o, (a, b) in enumerate(zip(rtl, model)):
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            import numpy as np
            fail(f"{what} output {o}: {int(np.sum(a != b))} values differ between rtl and model")
    print(f"{what}: {len(inputs[0])} inputs on the RTL in {seconds:.1f} s, every output "
          f"bit-identical to the functional model's")


# QDQ forms (docs/graph.md, "int8 graphs"): within 2 output steps of onnxruntime on at least
# 99.9 % of the outputs.
QDQ_STEPS = 2
QDQ_SHARE = 0.999


def quantize_qdq(model_path, qdq_path, calibration):
    """The model's QDQ form as onnxruntime's quantize_static writes it: int8 activations and
    weights, the weights per output channel, every range the min-max of the calibration inputs
    (a list of arrays per graph input, one input at a time)."""
    import logging
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    import onnxruntime
    names = [i.name for i in onnxruntime.InferenceSession(
        str(model_path), providers=["CPUExecutionProvider"]).get_inputs()]

    class Reader(CalibrationDataReader):
        def __init__(self):
            count = len(calibration[0])
            self.feeds = iter([{n: c[i:i + 1] for n, c in zip(names, calibration)}
                               for i in range(count)])

        def get_next(self):
            return next(self.feeds, None)

    # Its advice to pre-process the model first, and the like, is not what the test reads.
    logging.getLogger().setLevel(logging.ERROR)
    quantize_static(str(model_path), str(qdq_path), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    per_channel=True)


def run_qdq_reference(qdq_path, inputs):
    """onnxruntime's outputs of a QDQ model with its graph optimisations off (ORT_DISABLE_ALL):
    each DequantizeLinear, float operator and QuantizeLinear as the model writes them."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(qdq_path), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: x for i, x in zip(session.get_inputs(), inputs)})


def output_steps(qdq_path):
    """The step of each graph output: the scale of the DequantizeLinear that computes it (None
    for an output that a float operator computes)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(qdq_path), load_external_data=False)
    scales = {t.name: t for t in model.graph.initializer}
    producers = {out: node for node in model.graph.node for out in node.output}
    steps = []
    for output in model.graph.output:
        node = producers.get(output.name)
        if node is None or node.op_type != "DequantizeLinear" or node.input[1] not in scales:
            steps.append(None)
        else:
            steps.append(float(numpy_helper.to_array(scales[node.input[1]]).reshape(-1)[0]))
    return steps


def compare_steps(ours, ref, step, what, share=QDQ_SHARE):
    """At least `share` of the outputs within QDQ_STEPS output steps of onnxruntime's; for rows
    of scores, how often the argmax is the same."""
    import numpy as np
    if ours.shape != ref.shape:
        fail(f"{what}: shape {ours.shape}, onnxruntime's {ref.shape}")
    steps = np.abs(ours.astype(np.float64) - ref.astype(np.float64)) / step
    # Both sides are whole steps apart up to the float rounding of (q - zero point) * scale.
    within = float(np.mean(steps <= QDQ_STEPS + 1e-3))
    line = (f"{what}: {100 * within:.2f} % of {steps.size} outputs within {QDQ_STEPS} steps of "
            f"{step:.3g} (bar {100 * share:.1f} %), the largest {steps.max():.2f} steps; "
            f"{100 * float(np.mean(steps < 0.5)):.2f} % the same")
    if ref.ndim == 2 and ref.shape[1] > 1:
        same = int(np.sum(np.argmax(ours, axis=1) == np.argmax(ref, axis=1)))
        line += f"; argmax the same on {same} of {len(ref)}"
    print(line)
    if within < share:
        fail(f"{what}: only {100 * within:.2f} % of the outputs within {QDQ_STEPS} steps")


def quantised_products(stats):
    """How many int8 products (QLinearConv, QLinearMatMul, QGemm) --stats shows on the core."""
    import re
    count = 0
    for line in stats.splitlines():
        match = re.match(r"(QLinearConv|QLinearMatMul|QGemm)\s+(\d+)\s+core\b", line)
        if match:
            count += int(match.group(2))
    return count


PRODUCT_STEPS = 1  # each quantised product, fed onnxruntime's inputs


def check_products(tpu, qdq_path, inputs, work, backend):
    """Each matrix product of a QDQ model between a DequantizeLinear and a QuantizeLinear, fed
    the inputs onnxruntime's run of the whole model gives it (ORT_DISABLE_ALL): its quantised
    output within PRODUCT_STEPS step of onnxruntime's on at least QDQ_SHARE of the values, and
    run on the core's int8 datapath. A model's own outputs drift further apart than that over
    many layers, since a one-step difference anywhere moves what follows it; this checks the
    products' arithmetic one by one."""
    import numpy as np
    import onnx
    import onnxruntime
    from onnx import helper
    model = onnx.load(str(qdq_path))
    graph = model.graph
    producers = {out: node for node in graph.node for out in node.output}
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    initializers = {t.name: t for t in graph.initializer}

    def only_reader(name):
        found = readers.get(name, [])
        return found[0] if len(found) == 1 else None

    # Each product: its DequantizeLinear'd activations (one or two), its own nodes (the
    # weights' and bias's DequantizeLinear, the product, an activation, the QuantizeLinear).
    cases = []
    for node in graph.node:
        if node.op_type not in ("Conv", "MatMul", "Gemm"):
            continue
        after = only_reader(node.output[0])
        chain = [node]
        if after is not None and after.op_type in ("Relu", "Clip"):
            chain.append(after)
            after = only_reader(after.output[0])
        if after is None or after.op_type != "QuantizeLinear":
            continue
        chain.append(after)
        activations, own = [], []
        for name in node.input[:2] if node.op_type == "MatMul" else node.input[:1]:
            dq = producers.get(name)
            if dq is None or dq.op_type != "DequantizeLinear":
                break
            if dq.input[0] in initializers:
                own.append(dq)
            else:
                activations.append(name)
        else:
            # Weights and bias: each quantised (a DequantizeLinear of an initializer), or the
            # product is not a quantised one.
            for name in node.input[1:]:
                dq = producers.get(name)
                if name in activations or dq in own or name == "":
                    continue
                if dq is None or dq.op_type != "DequantizeLinear" or \
                        dq.input[0] not in initializers:
                    break
                own.append(dq)
            else:
                cases.append((node, activations, own + chain))
    if not cases:
        fail(f"{qdq_path.name}: no quantised product")

    # onnxruntime's values of every product's activations and quantised result.
    wanted = [a for _, activations, _ in cases for a in activations] + \
             [chain[-1].output[0] for _, _, chain in cases]
    extended = onnx.load(str(qdq_path))
    known = {o.name for o in extended.graph.output}
    for name in dict.fromkeys(wanted):
        if name not in known:
            extended.graph.output.append(helper.make_empty_tensor_value_info(name))
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(extended.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    values = dict(zip([o.name for o in session.get_outputs()],
                      session.run(None, {i.name: x for i, x in zip(session.get_inputs(), inputs)})))

    work = work / "products"
    work.mkdir(exist_ok=True)
    worst_share, worst_name = 1.0, ""
    beyond = same = total = 0
    for node, activations, nodes in cases:
        q = nodes[-1]
        out = q.output[0] + "_dequantized"
        # The activations quantised again as the model quantised them (exactly: they are
        # onnxruntime's dequantised values), the product, its result dequantised.
        requantise = []
        for a in activations:
            dq = producers[a]
            requantise += [helper.make_node("QuantizeLinear", [a + "_given", *dq.input[1:]],
                                            [dq.input[0]]), dq]
        nodes = requantise + nodes + [
            helper.make_node("DequantizeLinear", [q.output[0], *q.input[1:]], [out])]
        used = {name for n in nodes for name in n.input}
        sub = helper.make_graph(
            nodes, "product",
            [helper.make_tensor_value_info(a + "_given", onnx.TensorProto.FLOAT,
                                           values[a].shape) for a in activations],
            [helper.make_tensor_value_info(out, onnx.TensorProto.FLOAT, None)],
            [initializers[name] for name in sorted(used) if name in initializers])
        sub_model = helper.make_model(sub, opset_imports=model.opset_import)
        sub_model.ir_version = model.ir_version
        path = work / "product.onnx"
        path.write_bytes(sub_model.SerializeToString())
        (y,), stats = infer(tpu, path, [values[a] for a in activations], work, backend)
        if quantised_products(stats) == 0:
            fail(f"{qdq_path.name}: {node.name} did not run as an int8 product on the core")
        scale = float(onnx.numpy_helper.to_array(initializers[q.input[1]]).reshape(-1)[0])
        zero = onnx.numpy_helper.to_array(initializers[q.input[2]]) if len(q.input) > 2 else 0
        ref = (values[q.output[0]].astype(np.float64) - float(zero)) * scale
        steps = np.abs(y.astype(np.float64) - ref) / scale
        share = float(np.mean(steps <= PRODUCT_STEPS + 1e-3))
        beyond += int(np.sum(steps > PRODUCT_STEPS + 1e-3))
        same += int(np.sum(steps < 0.5))
        total += steps.size
        if share < worst_share:
            worst_share, worst_name = share, node.name
    worst = f" ({worst_name})" if worst_name else ""
    print(f"{qdq_path.name}: {len(cases)} quantised products, each fed onnxruntime's inputs, on "
          f"{backend}: {100 * same / total:.3f} % of their {total} values the same as "
          f"onnxruntime's, {beyond} more than {PRODUCT_STEPS} step apart; the lowest share within "
          f"{PRODUCT_STEPS} step {100 * worst_share:.3f} %{worst} (bar {100 * QDQ_SHARE:.1f} %)")
    if worst_share < QDQ_SHARE:
        fail(f"{qdq_path.name}: {worst_name}: only {100 * worst_share:.3f} % of its values within "
             f"{PRODUCT_STEPS} step of onnxruntime's")
