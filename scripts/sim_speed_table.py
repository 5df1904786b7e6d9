#!/usr/bin/env python3
"""Collects the records of scripts/bench_sim_speed.sh (one JSON object per run of
tb/mxu_bench.cpp) into OUT_DIR/NAME.json, a Markdown table OUT_DIR/NAME.md and a plot
OUT_DIR/NAME.png (NAME: sim_speed, or the environment's SIM_SPEED_NAME).

    sim_speed_table.py OUT_DIR RECORD.json ...
"""
import datetime
import json
import os
import platform
import subprocess
import sys


def fail(message):
    print(f"sim_speed_table.py: {message}", file=sys.stderr)
    sys.exit(2)


try:
    import matplotlib

    matplotlib.use("Agg")  # no display needed; must come before pyplot
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator
except ImportError:
    fail("matplotlib is missing (make deps installs python3-matplotlib)")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def command_output(args, fallback):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return fallback


def main():
    if len(sys.argv) < 3:
        fail("usage: sim_speed_table.py OUT_DIR RECORD.json ...")
    out_dir, paths = sys.argv[1], sys.argv[2:]
    out_name = os.environ.get("SIM_SPEED_NAME", "sim_speed")
    records = []
    for path in paths:
        try:
            with open(path) as f:
                records.append(json.load(f))
        except (OSError, json.JSONDecodeError) as e:
            fail(f"{path}: {e}")
    def variant(r):
        threads = f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}"
        return threads + (", assertions" if r["assertions"] else "")

    bad = [f"{r['rows']}x{r['cols']}, {variant(r)}" for r in records if not r["exact"]]
    if bad:
        fail("results differ from the reference model: " + ", ".join(bad))

    with open(os.path.join(out_dir, f"{out_name}.json"), "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")

    cores = command_output(["nproc"], "?")
    verilator = command_output(["verilator", "--version"], "Verilator (version unknown)")
    lines = [
        "# Simulation speed of the matrix unit",
        "",
        f"Produced by `scripts/bench_sim_speed.sh` (`make bench-sim`, `make bench-tpu`) on "
        f"{datetime.date.today()}: {cores} cores "
        f"({cpu_model()}), {verilator}. Each row builds `tpu_mxu` from scratch "
        "(`scripts/bench_mxu.sh`, `-O2`, no tracing; without assertions, the benchmark build, "
        "or with them, as the tests build it; its peak memory is the largest process's) and "
        "streams back-to-back weight tiles of 16 x rows activation rows through it (2048 / rows "
        "tiles, about 33,000 cycles, up to 64x64; 2 tiles above); every result is checked "
        "bit for bit against the reference model. The cost per cell and cycle is the wall time "
        "over cycles x rows x columns: flat if the model's work per cell does not grow with the "
        "array. The simulated MACs are the array's useful multiply-accumulates.",
        "",
        "| array | build | build time, s | build peak memory, MiB | simulated cycles/s | "
        "ns per cell-cycle | simulated MACs/s | MXU utilisation | bit-exact |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(f"| {r['rows']}x{r['cols']} | {variant(r)} | {r['build_seconds']:.1f} | "
                     f"{r.get('build_peak_mib', 0):,.0f} | "
                     f"{r['cycles_per_second']:,.0f} | {r['ns_per_cell_cycle']:,.1f} | "
                     f"{r['macs_per_second']:.3g} | {100 * r['utilisation']:.2f} % | "
                     f"{'yes' if r['exact'] else 'no'} |")
    lines.append("")
    lines.append(f"![ns per cell-cycle against array size]({out_name}.png)")
    with open(os.path.join(out_dir, f"{out_name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name in dict.fromkeys(variant(r) for r in records):
        rows = sorted((r for r in records if variant(r) == name), key=lambda r: r["rows"])
        ax.plot([r["rows"] for r in rows], [r["ns_per_cell_cycle"] for r in rows], "o-",
                label=name)
    sizes = sorted({r["rows"] for r in records})
    ax.set_xscale("log", base=2)
    ax.xaxis.set_minor_locator(NullLocator())  # only the measured sizes are labelled
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{s}x{s}" for s in sizes])
    ax.set_ylim(bottom=0)  # from zero, so that a flat cost looks flat
    ax.set_xlabel("array")
    ax.set_ylabel("wall ns per cell and simulated cycle")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("Verilator simulation cost of the matrix unit per cell")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, f"{out_name}.png"), dpi=110)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
