#!/usr/bin/env python3
"""make bench-model: the functional model's GEMMs beside onnxruntime's CPU provider.

For each GEMM shape, the same random float32 A and B go to `tpu gemm --backend model` (bf16
operands, fp32 sums in the contract's order; the 16x16 and the 128x128 core's programs, one
thread and all the host's) and to an onnxruntime MatMul (fp32, one thread and all). The model's
time is its run alone, as `--time` reports it (the program on the functional model, not the
files or the planning); onnxruntime's the best of three runs after a warm-up. Peak memory is the
tool's most resident memory (VmHWM), its operands and results included. Writes model.json and model.md into the output folder and prints
the table; the model's results must be the same bits on every core and thread count.
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


def matmul_model(m, k, n):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [k, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def ort_seconds(a, b, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(matmul_model(*a.shape, b.shape[1]), options,
                                   providers=["CPUExecutionProvider"])
    feed = {"a": a, "b": b}
    session.run(None, feed)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        session.run(None, feed)
        best = min(best, time.perf_counter() - start)
    return best


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
                print(f"{m}x{k}x{n} {core} {row['path']} path, {threads} thread(s): model {seconds:.4f} s "
                      f"({row['model_gmacs']:.1f} GMAC/s, {peak_mib:.0f} MiB), onnxruntime "
                      f"{ort_times[threads]:.4f} s ({row['ort_gmacs']:.1f} GMAC/s): "
                      f"ratio {row['ratio']:.2f}", flush=True)
    (out_dir / "model.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["| GEMM (M x K x N) | core | fold path | threads | model s | model GMAC/s | model peak MiB "
             "| onnxruntime s | onnxruntime GMAC/s | ratio (onnxruntime time / model time) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['m']} x {r['k']} x {r['n']} | {r['core']} | {r['path']} | {r['threads']} "
                     f"| {r['model_s']:.4f} | {r['model_gmacs']:.1f} | {r['peak_mib']:.0f} "
                     f"| {r['ort_s']:.4f} | {r['ort_gmacs']:.1f} | {r['ratio']:.2f} |")
    header = [
        "# The functional model's GEMMs beside onnxruntime",
        "",
        "Written by `make bench-model` (`scripts/bench_model.py`); do not edit. Each GEMM's float32",
        "A and B go to `tpu gemm --backend model` (the compiled program of the 16x16 and of the",
        "128x128 core on the functional model: bf16 operands, fp32 sums in the contract's order, the",
        "same bits on every path and thread count, which the script checks) and to an onnxruntime",
        "MatMul (fp32, CPU provider). The model's time is its run alone (`--time`: the program, not",
        "the files or the planning); onnxruntime's the best of three runs. The fold path `portable`",
        "is the scalar fold with explicit flushes (the model before its vector paths); `fastest` the",
        "vector path this CPU has (`TPU_FOLD_PATH`), on one thread and on all (`TPU_MODEL_THREADS`).",
        "The ratio is onnxruntime's time over the model's on as many threads. Peak memory is the",
        "tool's (its operands and results included).",
        f"Host: {os.cpu_count()} threads.",
        "",
    ]
    (out_dir / "model.md").write_text("\n".join(header + lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
