#!/usr/bin/env python3
"""Plots of the benchmark suite's records (bench_suite --json).

    plot_bench.py BENCH_JSON OUT_DIR

writes utilisation.png (by workload, with the counter breakdown), size.png (utilisation against
the size of square GEMMs), roofline.png (achieved throughput against host-memory bandwidth,
measured points and the cycle model's curves, under the array's peak) and convolutions.png
(each convolution's cycles and bus bytes from its images against its im2col product).
"""
import json
import os
import sys

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

# The cycle categories of the counters (docs/core.md), in the order they stack.
CATEGORIES = [
    ("ARRAY_ACTIVE", "array busy", "#2b6cb0"),
    ("WEIGHT_STALL", "weight stall", "#dd6b20"),
    ("WEIGHT_SHIFT", "weight shift", "#f6ad55"),
    ("INPUT_STALL", "input stall", "#9f7aea"),
    ("RAW_STALL", "RAW stall", "#e53e3e"),
    ("NON_MATRIX", "non-matrix", "#a0aec0"),
]


def fail(message):
    print(f"plot_bench.py: {message}", file=sys.stderr)
    sys.exit(2)


def plot_workloads(doc, path):
    records = doc["workloads"]
    names = [r["name"] for r in records]
    fig, ax = plt.subplots(figsize=(11, 5))
    bottom = [0.0] * len(records)
    for counter, label, colour in CATEGORIES:
        shares = [100.0 * r["counters"][counter] / r["cycles"] for r in records]
        ax.bar(names, shares, bottom=bottom, label=label, color=colour)
        bottom = [b + s for b, s in zip(bottom, shares)]
    ax.plot(names, [100.0 * r["utilisation"] for r in records], "k_", markersize=18,
            markeredgewidth=2, label="utilisation (useful MACs / peak)")
    ax.set_ylabel("% of cycles")
    ax.set_ylim(0, 100)
    ax.set_title(f"Where the cycles go: workloads on the {doc['array']} core")
    ax.tick_params(axis="x", rotation=45)
    for tick in ax.get_xticklabels():
        tick.set_horizontalalignment("right")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sizes(doc, path):
    records = doc["size_sweep"]
    sizes = [r["m"] for r in records]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(sizes, [100.0 * r["utilisation"] for r in records], "o-", label="RTL")
    ax.plot(sizes, [100.0 * r["ideal_cycles"] / r["model_cycles"] for r in records], "x--",
            label="cycle model")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_xlabel("N (an N x N x N GEMM)")
    ax.set_ylabel("utilisation, %")
    ax.set_ylim(0, 100)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"Utilisation against matrix size, {doc['array']} core")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_roofline(doc, path):
    peak = doc["peak_gflops"]
    clock_ghz = doc["clock_mhz"] * 1e-3
    fig, ax = plt.subplots(figsize=(7.5, 5))
    names = []
    for r in doc["bandwidth_sweep"]:
        if r["name"] not in names:
            names.append(r["name"])
    for index, name in enumerate(names):
        colour = f"C{index}"
        measured = [r for r in doc["bandwidth_sweep"] if r["name"] == name]
        model = [r for r in doc["bandwidth_model"] if r["name"] == name]
        flops = 2.0 * measured[0]["m"] * measured[0]["k"] * measured[0]["n"]
        ax.plot([r["bytes_per_cycle"] * clock_ghz for r in measured],
                [r["gflops"] for r in measured], "o", color=colour,
                label=f"{name} ({measured[0]['m']} x {measured[0]['k']} x {measured[0]['n']})")
        ax.plot([r["bytes_per_cycle"] * clock_ghz for r in model],
                [flops / r["model_cycles"] * clock_ghz for r in model], "-", color=colour,
                alpha=0.6)
    ax.axhline(peak, color="k", linestyle=":", label=f"peak {peak:.0f} GFLOPS")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"host-memory read bandwidth, GB/s at {doc['clock_mhz']:g} MHz")
    ax.set_ylabel("achieved GFLOPS")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"Achieved against peak as bandwidth varies ({doc['array']}; lines: cycle model)")
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_convolutions(doc, path):
    records = doc["convolutions"]
    names = [r["name"] for r in records]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, key, label in ((axes[0], "cycles", "cycles"), (axes[1], "bus_bytes", "bytes over the bus")):
        ratios = [r["images"][key] / r["im2col"][key] for r in records]
        colours = ["#2f855a" if ratio <= 1 else "#c53030" for ratio in ratios]
        ax.barh(names, ratios, color=colours)
        ax.axvline(1.0, color="k", linewidth=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.set_xlabel(f"{label}, from the images / by im2col")
        ax.invert_yaxis()
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[1].set_yticklabels([])
    fig.suptitle(f"Convolutions from their images against im2col ({doc['array']}; below 1: fewer)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        fail("usage: plot_bench.py BENCH_JSON OUT_DIR")
    try:
        with open(sys.argv[1]) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{sys.argv[1]}: {e}")
    try:
        plot_workloads(doc, os.path.join(sys.argv[2], "utilisation.png"))
        plot_sizes(doc, os.path.join(sys.argv[2], "size.png"))
        plot_roofline(doc, os.path.join(sys.argv[2], "roofline.png"))
        plot_convolutions(doc, os.path.join(sys.argv[2], "convolutions.png"))
    except (KeyError, TypeError, IndexError) as e:
        fail(f"{sys.argv[1]}: not a bench_suite record file ({e!r})")
    except OSError as e:
        fail(str(e))


if __name__ == "__main__":
    main()
