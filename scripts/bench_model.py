#!/usr/bin/env python3
"""make bench-model: the functional model's GEMMs and networks beside onnxruntime's CPU provider.

For each GEMM shape, the same random float32 A and B go to `tpu gemm --backend model` (bf16
operands, fp32 sums in the contract's order; the 16x16 and the 128x128 core's programs, one
thread and all the host's) and to an onnxruntime MatMul (fp32, one thread and all). The model's
time is its run alone, as `--time` reports it (the program on the functional model, not the
files or the planning), the best of the three runs `--time` makes of the program; onnxruntime's
its best run after a warm-up (of three, or of as many as 0.2 s takes). Peak memory is the tool's
most resident memory (VmHWM), its operands and results included.

Then the networks: the zoo's float models (tests/onnx/zoo, their weights written from the
recorded moments as the zoo tests write them) on 64 random inputs, and a VGG-19 (224 x 224,
random weights, written here with onnx's helper) on 8, through `tpu infer --backend model
--time` on the 16x16 core, four runs of that batch: the best of the three later runs (the
weights already resident; the first run's, which writes them, is recorded too; the portable
path's VGG-19 runs twice, the later once) beside onnxruntime's best run of the same file on the
same inputs, one thread and all; the model's outputs must be the same bits on one thread and on
all. Writes model.json and model.md into the output folder and prints the tables.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

SHAPES = [(512, 512, 512), (4096, 4096, 1024), (1, 768, 3072)]
CORES = ["16x16", "128x128_bus64"]
ZOO_MODELS = ["resnet18.onnx", "mobilenet_v2.onnx", "transformer.onnx", "lstm.onnx"]
ZOO_BATCH = 64
VGG_BATCH = 8
REPO = Path(__file__).resolve().parent.parent


def matmul_model(m, k, n):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [k, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def ort_best(model, feed, threads):
    """onnxruntime's best run of the model (a file or its bytes) on `feed` (input name to array),
    after a warm-up, on `threads` threads: of three runs, or of as many as 0.2 s takes where they
    are shorter (a batch of one's tenth of a millisecond varies from run to run)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    session.run(None, feed)
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or (spent < 0.2 and runs < 1000):
        start = time.perf_counter()
        session.run(None, feed)
        seconds = time.perf_counter() - start
        best, spent, runs = min(best, seconds), spent + seconds, runs + 1
    return best


def ort_seconds(a, b, threads):
    return ort_best(matmul_model(*a.shape, b.shape[1]), {"a": a, "b": b}, threads)


def model_run(tpu, work, core, path, threads):
    """The model's run time in seconds, the tool's peak memory in MiB and its result's path."""
    env = dict(os.environ, TPU_MODEL_THREADS=str(threads))
    if path:
        env["TPU_FOLD_PATH"] = path
    out = work / f"out_{core}_{path}_{threads}.npy"
    log = work / "tpu.log"
    with open(log, "w") as output:
        process = subprocess.Popen(
            [tpu, "gemm", "--a", str(work / "a.npy"), "--b", str(work / "b.npy"), "--out", str(out),
             "--backend", "model", "--array", core, "--time"],
            stdout=output, stderr=subprocess.STDOUT, env=env)
        process.wait()
    text = log.read_text()
    if process.returncode != 0:
        sys.exit(f"bench_model: tpu gemm failed: {text.strip()}")
    found = re.search(r"^run time +([\d.]+) s", text, re.M)
    peak = re.search(r"^peak memory +(\d+) MiB", text, re.M)
    if not found or not peak:
        sys.exit(f"bench_model: no run time or peak memory in:\n{text}")
    return float(found.group(1)), float(peak.group(1)), out


def vgg19(path):
    """VGG-19 (configuration E) for 224 x 224 images, He-normal random weights, zero biases."""
    from onnx import numpy_helper, save
    layers = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"]
    rng = np.random.default_rng(19)
    nodes, weights = [], []
    x, channels = "x", 3
    for i, width in enumerate(layers):
        if width == "M":
            nodes.append(helper.make_node("MaxPool", [x], [f"pool{i}"], kernel_shape=[2, 2],
                                          strides=[2, 2]))
            x = f"pool{i}"
            continue
        w = rng.standard_normal((width, channels, 3, 3), dtype=np.float32)
        w *= np.float32(np.sqrt(2 / (channels * 9)))
        weights += [numpy_helper.from_array(w, f"conv{i}.w"),
                    numpy_helper.from_array(np.zeros(width, np.float32), f"conv{i}.b")]
        nodes += [helper.make_node("Conv", [x, f"conv{i}.w", f"conv{i}.b"], [f"conv{i}"],
                                   kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"])]
        x, channels = f"relu{i}", width
    nodes.append(helper.make_node("Flatten", [x], ["flat"]))
    x = "flat"
    for j, (inputs, outputs) in enumerate([(512 * 7 * 7, 4096), (4096, 4096), (4096, 1000)]):
        w = rng.standard_normal((outputs, inputs), dtype=np.float32)
        w *= np.float32(np.sqrt(2 / inputs))
        weights += [numpy_helper.from_array(w, f"fc{j}.w"),
                    numpy_helper.from_array(np.zeros(outputs, np.float32), f"fc{j}.b")]
        y = "y" if j == 2 else f"fc{j}"
        nodes.append(helper.make_node("Gemm", [x, f"fc{j}.w", f"fc{j}.b"], [y], transB=1))
        if j < 2:
            nodes.append(helper.make_node("Relu", [y], [f"fc{j}.relu"]))
            x = f"fc{j}.relu"
    graph = helper.make_graph(
        nodes, "vgg19", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1000])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    save(model, str(path), save_as_external_data=True, location=path.name + ".data")


def network_ort(model_path, inputs, threads):
    import onnx
    name = onnx.load(str(model_path), load_external_data=False).graph.input[0].name
    return ort_best(str(model_path), {name: inputs}, threads)


def network_model(tpu, work, model_path, inputs, batch, path, threads, runs):
    """tpu infer's first run time and the best of the later ones (`runs` runs of `batch` inputs in
    all, as onnxruntime's is its best run), peak memory in MiB and the outputs of the last run."""
    env = dict(os.environ, TPU_MODEL_THREADS=str(threads))
    if path:
        env["TPU_FOLD_PATH"] = path
    x = work / "net_x.npy"
    np.save(x, np.concatenate([inputs] * runs))
    out = work / f"net_y_{path}_{threads}.npy"
    run = subprocess.run([tpu, "infer", "--net", str(model_path), "--in", str(x), "--out", str(out),
                          "--backend", "model", "--batch", str(batch), "--time"],
                         capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"bench_model: tpu infer {model_path.name} failed: {run.stderr.strip()}")
    first = re.search(r"^first run +([\d.]+) s", run.stdout, re.M)
    later = re.search(r"^later runs +[\d.]+ s a run .*, the best ([\d.]+) s\)$", run.stdout, re.M)
    peak = re.search(r"^peak memory +(\d+) MiB", run.stdout, re.M)
    if not first or not later or not peak:
        sys.exit(f"bench_model: no run times or peak memory in:\n{run.stdout}")
    outputs = np.load(out)
    return float(first.group(1)), float(later.group(1)), float(peak.group(1)), outputs[-batch:]


def networks(tpu, work, thread_counts):
    """The zoo's float models and VGG-19 on the model backend beside onnxruntime."""
    sys.path.insert(0, str(REPO / "tests" / "onnx"))
    import zoo_cases
    cases = []
    for name in ZOO_MODELS:
        model_path, entry = zoo_cases.materialise(name, work)
        cases.append((name.replace(".onnx", ""), model_path,
                      zoo_cases.inputs_of(entry, ZOO_BATCH), ZOO_BATCH))
    vgg = work / "vgg19.onnx"
    vgg19(vgg)
    cases.append(("vgg19", vgg, np.random.default_rng(8).standard_normal(
        (VGG_BATCH, 3, 224, 224), dtype=np.float32), VGG_BATCH))
    rows = []
    for name, model_path, inputs, batch in cases:
        ort_times = {t: network_ort(model_path, inputs, t) for t in thread_counts}
        reference = None
        # The portable fold on one thread (as before the vector paths) for VGG-19 alone: the
        # smaller models' runs are mostly the host's own work, which the path does not change.
        runs = ([("portable", 1)] if name == "vgg19" else []) + [("", t) for t in thread_counts]
        for path, threads in runs:
            # The portable VGG-19's run, a minute, once after the first.
            first, later, peak, outputs = network_model(tpu, work, model_path, inputs, batch,
                                                        path, threads, 2 if path else 4)
            if reference is None:
                reference = outputs.view(np.uint32)
            elif not np.array_equal(outputs.view(np.uint32), reference):
                sys.exit(f"bench_model: {name} differs on path {path or 'default'}, {threads} "
                         "threads")
            row = {"model": name, "inputs": batch, "path": path or "fastest", "threads": threads,
                   "model_first_s": first, "model_s": later, "peak_mib": peak,
                   "ort_s": ort_times[threads], "ratio": ort_times[threads] / later}
            rows.append(row)
            print(f"{name}, {batch} inputs, {row['path']} path, {threads} thread(s): model "
                  f"{later:.6f} s a run ({first:.6f} s the first, {peak:.0f} MiB), onnxruntime "
                  f"{row['ort_s']:.6f} s: ratio {row['ratio']:.2f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tpu", required=True, help="the tpu tool")
    parser.add_argument("--work", required=True, help="a folder for the operands")
    parser.add_argument("--out", required=True, help="where model.json and model.md go")
    args = parser.parse_args()
    work, out_dir = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_threads = os.cpu_count() or 1
    thread_counts = sorted({1, all_threads})
    rng = np.random.default_rng(1)
    rows = []
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        np.save(work / "a.npy", a)
        np.save(work / "b.npy", b)
        macs = m * k * n
        ort_times = {t: ort_seconds(a, b, t) for t in thread_counts}
        reference = None
        for core in CORES:
            # The portable path on one thread (the scalar fold, as before the vector paths), then
            # the fastest path this CPU has on one thread and on all.
            for path, threads in [("portable", 1)] + [("", t) for t in thread_counts]:
                seconds, peak_mib, result = model_run(args.tpu, work, core, path, threads)
                bits = np.load(result).view(np.uint32)
                if reference is None:
                    reference = bits
                elif not np.array_equal(bits, reference):
                    sys.exit(f"bench_model: {m}x{k}x{n} differs on {core}, path "
                             f"{path or 'default'}, {threads} threads")
                row = {"m": m, "k": k, "n": n, "core": core, "path": path or "fastest",
                       "threads": threads,
                       "model_s": seconds, "model_gmacs": macs / seconds / 1e9,
                       "peak_mib": peak_mib, "ort_s": ort_times[threads],
                       "ort_gmacs": macs / ort_times[threads] / 1e9,
                       "ratio": ort_times[threads] / seconds}
                rows.append(row)
                print(f"{m}x{k}x{n} {core} {row['path']} path, {threads} thread(s): model {seconds:.6f} s "
                      f"({row['model_gmacs']:.1f} GMAC/s, {peak_mib:.0f} MiB), onnxruntime "
                      f"{ort_times[threads]:.6f} s ({row['ort_gmacs']:.1f} GMAC/s): "
                      f"ratio {row['ratio']:.2f}", flush=True)
    network_rows = networks(args.tpu, work, thread_counts)
    (out_dir / "model.json").write_text(
        json.dumps({"gemms": rows, "networks": network_rows}, indent=1) + "\n")
    lines = ["| GEMM (M x K x N) | core | fold path | threads | model s | model GMAC/s | model peak MiB "
             "| onnxruntime s | onnxruntime GMAC/s | ratio (onnxruntime time / model time) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['m']} x {r['k']} x {r['n']} | {r['core']} | {r['path']} | {r['threads']} "
                     f"| {r['model_s']:.6f} | {r['model_gmacs']:.1f} | {r['peak_mib']:.0f} "
                     f"| {r['ort_s']:.6f} | {r['ort_gmacs']:.1f} | {r['ratio']:.2f} |")
    header = [
        "# The functional model's GEMMs and networks beside onnxruntime",
        "",
        "Written by `make bench-model` (`scripts/bench_model.py`); do not edit. Each GEMM's float32",
        "A and B go to `tpu gemm --backend model` (the compiled program of the 16x16 and of the",
        "128x128 core on the functional model: bf16 operands, fp32 sums in the contract's order, the",
        "same bits on every path and thread count, which the script checks) and to an onnxruntime",
        "MatMul (fp32, CPU provider). The model's time is its run alone (`--time`: the program, not",
        "the files or the planning), the best of the three runs `--time` makes of the program;",
        "onnxruntime's its best run (of three, or of as many as 0.2 s takes). The fold path",
        "`portable` is the scalar fold with explicit flushes (the model before its vector paths);",
        "`fastest` the",
        "vector path this CPU has (`TPU_FOLD_PATH`), on one thread and on all (`TPU_MODEL_THREADS`).",
        "The ratio is onnxruntime's time over the model's on as many threads. Peak memory is the",
        "tool's (its operands and results included).",
        f"Host: {os.cpu_count()} threads.",
        "",
    ]
    net_lines = [
        "## Networks",
        "",
        "The zoo's float models (64 inputs a run) and VGG-19 (224 x 224, 8 inputs a run) through",
        "`tpu infer --backend model --time` on the 16x16 core: the time of a run once the weights",
        "are resident (the best of the three after the first; the portable path's VGG-19 the one",
        "after it), the first run's (which writes them) beside it, and onnxruntime's run of the same",
        "file on the same inputs (fp32, CPU provider, its best run). The ratio is",
        "onnxruntime's time over the model's later run on as many threads.",
        "",
        "| model | inputs | fold path | threads | model s a run | first run s | model peak MiB "
        "| onnxruntime s | ratio |",
        "|---|---|---|---|---|---|---|---|---|"]
    for r in network_rows:
        net_lines.append(f"| {r['model']} | {r['inputs']} | {r['path']} | {r['threads']} "
                         f"| {r['model_s']:.6f} | {r['model_first_s']:.6f} | {r['peak_mib']:.0f} "
                         f"| {r['ort_s']:.6f} | {r['ratio']:.2f} |")
    (out_dir / "model.md").write_text("\n".join(header + lines + [""] + net_lines) + "\n")
    print("\n".join(lines + [""] + net_lines))


if __name__ == "__main__":
    main()
