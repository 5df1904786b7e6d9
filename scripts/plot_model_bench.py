#!/usr/bin/env python3
"""The plot of make bench-model's records (scripts/bench_model.py).

    plot_model_bench.py MODEL_JSON OUT_DIR

writes model.png: per GEMM, the functional model's GMAC/s (portable fold, fastest path on one
thread and on all, on the 16x16 and the 128x128 core's programs) beside onnxruntime's on one
thread and all, on a log scale; below, per network, the model's time a run (once its weights
are resident) beside onnxruntime's, on a log scale.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def grouped_bars(ax, groups, series, values, color_step, ylabel, title):
    """One bar a series in each group (values[series][group]) on a log scale; onnxruntime's
    black, its one-thread bars paler."""
    cmap = plt.get_cmap("tab20")
    width = 0.8 / len(series)
    for i, label in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ort_bar = label.startswith("onnxruntime")
        ax.bar(xs, values[label], width, label=label,
               color="black" if ort_bar else cmap(color_step * i),
               alpha=0.5 if ort_bar and "1 thr" in label else 1.0)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", which="both", alpha=0.3)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1]) as f:
        records = json.load(f)
    rows = records["gemms"]
    shapes = []
    for r in rows:
        shape = f"{r['m']} x {r['k']} x {r['n']}"
        if shape not in shapes:
            shapes.append(shape)
    threads = sorted({r["threads"] for r in rows})
    # The bars of each GEMM: the model's runs in the records' order, then onnxruntime's.
    series = []
    for r in rows:
        label = f"model {r['core']}, {r['path']}, {r['threads']} thr."
        if label not in series:
            series.append(label)
    series += [f"onnxruntime, {t} thr." for t in threads]
    values = {label: [0.0] * len(shapes) for label in series}
    for r in rows:
        s = shapes.index(f"{r['m']} x {r['k']} x {r['n']}")
        values[f"model {r['core']}, {r['path']}, {r['threads']} thr."][s] = r["model_gmacs"]
        values[f"onnxruntime, {r['threads']} thr."][s] = r["ort_gmacs"]

    fig, (ax, net_ax) = plt.subplots(2, 1, figsize=(14, 9))
    grouped_bars(ax, [f"GEMM {s}" for s in shapes], series, values, 1, "GMAC/s (log scale)",
                 "The functional model's products (bit-exact bf16 x bf16 -> fp32) beside "
                 "onnxruntime's fp32 MatMul, same inputs, same machine")
    # The networks: the model's run time per path and thread count beside onnxruntime's.
    nets = records["networks"]
    names = list(dict.fromkeys(r["model"] for r in nets))
    net_series = list(dict.fromkeys(f"model, {r['path']}, {r['threads']} thr." for r in nets))
    net_series += [f"onnxruntime, {t} thr." for t in sorted({r["threads"] for r in nets})]
    seconds = {label: [0.0] * len(names) for label in net_series}
    for r in nets:
        n = names.index(r["model"])
        seconds[f"model, {r['path']}, {r['threads']} thr."][n] = r["model_s"]
        seconds[f"onnxruntime, {r['threads']} thr."][n] = r["ort_s"]
    inputs = {r["model"]: r["inputs"] for r in nets}
    grouped_bars(net_ax, [f"{n} ({inputs[n]} inputs)" for n in names], net_series, seconds, 2,
                 "seconds a run (log scale)",
                 "Networks through tpu infer on the model backend (16x16 core, weights resident) "
                 "beside onnxruntime's fp32 run of the same file")
    fig.tight_layout()
    out = os.path.join(sys.argv[2], "model.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
