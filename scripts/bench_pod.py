#!/usr/bin/env python3
"""make bench-pod: the ring all-reduce on pods of 16x16 cores (Verilator models, docs/pod.md).

    bench_pod.py TPU OUT_DIR

Part 1: `tpu allreduce --stats` of 4 KiB to 4 MiB per chip on 2, 4 and 8 chips, links one
accumulator row (64 bytes) wide, latency 8 cycles: the measured cycles against the bound
2(N-1) x (ceil(n/N) x 4 / B + L). Tensors up to 256 KiB fit in the accumulators and run as one
ALLREDUCE, whose cycles are counted alone; larger ones stream through in passes, and their
cycles include the loads and stores those passes overlap with, which the 16-byte host bus
bounds (n x 4 / 16 cycles).
Beside the ring, for the tensors that fit on chip, the parameter-server baseline on the same
links (ALLREDUCE's PS: every tensor to chip 0, the sums back).
Part 2: the same all-reduce as one process and under mpirun (one chip per rank), wall-clock,
side by side on this machine.

Writes OUT_DIR/pod.md, pod.json and pod.png; prints the tables as it goes.
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import npy_files  # noqa: E402

SIZES_KIB = [4, 16, 64, 256, 1024, 4096]
CHIPS = [2, 4, 8]
LATENCY = 8
ON_CHIP_KIB = 256  # the 16x16 core's 4,096 accumulator rows of 64 bytes
BUS_BYTES = 16     # its AXI4 data bus: loads and stores of host memory, each way
MPI_CASES = [(2, 256, 8), (4, 256, 8), (4, 256, 32)]  # chips, KiB, latency


def write_tensor(path, values, rng):
    payload = struct.pack(f"<{values}f", *(rng.uniform(-1, 1) for _ in range(values)))
    npy_files.save(path, [0.0] * values, payload=payload)


def field(text, name):
    match = re.search(rf"^{re.escape(name)}\s+([0-9.]+)", text, re.M)
    return float(match.group(1)) if match else None


def allreduce(command, inputs, latency, extra=()):
    """`tpu allreduce --stats` of `inputs`; its output and the wall-clock seconds."""
    start = time.perf_counter()
    result = subprocess.run([*command, "allreduce", "--in", *inputs, "--out", "r.npy",
                             "--latency", str(latency), "--stats", *extra],
                            capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"bench_pod: {' '.join(command)} failed:\n{result.stdout}{result.stderr}")
    return result.stdout, seconds


def mpirun(chips):
    command = [shutil.which("mpirun") or "mpirun", "--oversubscribe", "-np", str(chips)]
    if os.geteuid() == 0:
        command.insert(1, "--allow-run-as-root")
    return command


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_pod: no matplotlib, no plot")
        return
    fig, ax = plt.subplots(figsize=(9, 4))
    for index, chips in enumerate(CHIPS):
        mine = [r for r in rows if r["chips"] == chips]
        color = f"C{index}"
        ax.plot([r["kib"] for r in mine], [r["ratio_of_larger"] for r in mine], "o-",
                color=color, label=f"ring, {chips} chips")
        ps = [r for r in mine if "ps_cycles" in r]
        ax.plot([r["kib"] for r in ps], [r["ps_cycles"] / r["bound"] for r in ps], "s--",
                color=color, label=f"parameter server, {chips} chips")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axhline(1.1, color="grey", linewidth=0.8, linestyle="--")
    ax.axvline(ON_CHIP_KIB, color="grey", linewidth=0.8, linestyle=":")
    ax.text(ON_CHIP_KIB * 1.1, 1.0, "passes: the host bus\nbounds them", fontsize=8,
            va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tensor per chip (KiB)")
    ax.set_ylabel("measured cycles / the larger bound")
    ax.set_yscale("log", base=2)
    ax.set_title(f"Ring all-reduce on 16x16 cores: 64-byte links, latency {LATENCY} cycles")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    tpu, out_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(1)
    rows, mpi_rows = [], []
    with tempfile.TemporaryDirectory(prefix="bench_pod_") as work:
        os.chdir(work)
        print(f"{'KiB':>5} {'chips':>5} {'passes':>6} {'cycles':>9} {'bound':>9} {'ratio':>6}"
              f" {'bus bound':>9} {'link B/cycle':>12} {'PS cycles':>9} {'wall s':>7}")
        for kib in SIZES_KIB:
            values = kib * 256
            for c in range(max(CHIPS)):
                write_tensor(f"g{c}.npy", values, rng)
            for chips in CHIPS:
                out, seconds = allreduce([tpu], [f"g{c}.npy" for c in range(chips)], LATENCY)
                cycles = field(out, "all-reduce cycles") or field(out, "cycles")
                bound = 2 * (chips - 1) * (-(-values // chips) * 4 / 64 + LATENCY)
                passes = int(field(out, "passes"))
                # Several passes load and store the tensor through the host bus as they go.
                bus_bound = values * 4 / BUS_BYTES if passes > 1 else 0
                row = {"kib": kib, "chips": chips, "passes": passes,
                       "cycles": int(cycles), "bound": bound, "bus_bound": bus_bound,
                       "ratio": cycles / bound, "ratio_of_larger": cycles / max(bound, bus_bound),
                       "on_chip": kib <= ON_CHIP_KIB,
                       "link_bytes_per_cycle": field(out, "link bandwidth"),
                       "wall_seconds": round(seconds, 2)}
                if row["on_chip"]:
                    ps_out, _ = allreduce([tpu], [f"g{c}.npy" for c in range(chips)], LATENCY,
                                          ["--algorithm", "ps"])
                    row["ps_cycles"] = int(field(ps_out, "all-reduce cycles"))
                rows.append(row)
                print(f"{kib:>5} {chips:>5} {row['passes']:>6} {row['cycles']:>9} {bound:>9.0f}"
                      f" {row['ratio']:>6.3f} {bus_bound:>9.0f}"
                      f" {row['link_bytes_per_cycle']:>12.2f} {row.get('ps_cycles', '—'):>9}"
                      f" {seconds:>7.1f}", flush=True)
        print("\none process against one chip per MPI rank, wall-clock:")
        for chips, kib, latency in MPI_CASES:
            values = kib * 256
            inputs = [f"g{c}.npy" for c in range(chips)]
            for c in range(chips):
                write_tensor(inputs[c], values, rng)
            one, one_s = allreduce([tpu], inputs, latency)
            many, many_s = allreduce([*mpirun(chips), tpu], inputs, latency, ["--backend", "mpi"])
            same = field(one, "all-reduce cycles") == field(many, "all-reduce cycles")
            mpi_rows.append({"chips": chips, "kib": kib, "latency": latency,
                             "cycles": int(field(one, "all-reduce cycles")),
                             "same_cycles": same, "one_process_seconds": round(one_s, 2),
                             "mpi_seconds": round(many_s, 2),
                             "speedup": round(one_s / many_s, 2)})
            print(f"  {chips} chips, {kib} KiB, latency {latency}: one process {one_s:.1f} s, "
                  f"mpirun {many_s:.1f} s ({one_s / many_s:.2f}x), same cycles: {same}",
                  flush=True)
    with open(os.path.join(out_dir, "pod.json"), "w") as f:
        json.dump({"latency": LATENCY, "link_bytes": 64, "allreduce": rows, "mpi": mpi_rows}, f,
                  indent=1)
    plot(rows, os.path.join(out_dir, "pod.png"))
    write_markdown(rows, mpi_rows, os.path.join(out_dir, "pod.md"))
    print(f"wrote {out_dir}/pod.md, pod.json, pod.png")


def write_markdown(rows, mpi_rows, path):
    lines = ["# Ring all-reduce on a pod of 16x16 cores", "",
             "Written by `make bench-pod` (scripts/bench_pod.py); [docs/pod.md](../pod.md) "
             "explains the algorithm and the bound.", "",
             f"Links one accumulator row wide (B = 64 bytes a cycle), latency L = {LATENCY} "
             "cycles each way; random float32 tensors. Up to 256 KiB a tensor fits in the "
             "accumulators: one ALLREDUCE, whose cycles are counted alone. Larger tensors stream "
             "through in passes of half the accumulators, and their cycles are the whole "
             "program's: loads from host memory, the passes' ALLREDUCEs and the stores, "
             "overlapped. Bound: 2(N-1) x (ceil(n/N) x 4 / B + L). Passes move the tensor "
             f"through the {BUS_BYTES}-byte host bus as well, in and out at once: at least "
             f"n x 4 / {BUS_BYTES} cycles, the host-bus bound, which is then the larger.", "",
             "The parameter-server column is the same all-reduce by ALLREDUCE's PS on the same "
             "links (every tensor to chip 0 around the ring, the sums back), for the tensors "
             "that fit on chip.", "",
             "| tensor | chips | passes | cycles | link bound | cycles / link bound | host-bus "
             "bound | cycles / larger bound | link bytes / cycle | parameter server | PS / ring |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bus = f"{r['bus_bound']:,.0f}" if r["bus_bound"] else "—"
        ps = (f"{r['ps_cycles']:,} | {r['ps_cycles'] / r['cycles']:.2f}x" if "ps_cycles" in r
              else "— | —")
        lines.append(f"| {r['kib']} KiB | {r['chips']} | {r['passes']} | {r['cycles']:,} | "
                     f"{r['bound']:,.0f} | {r['ratio']:.3f} | {bus} | {r['ratio_of_larger']:.3f} | "
                     f"{r['link_bytes_per_cycle']:.1f} | {ps} |")
    lines += ["", "![cycles against the bound](pod.png)", "",
              "## One process or one chip per MPI rank", "",
              "The same all-reduce, wall-clock on this machine, side by side; the cycle counts "
              "must be the same.", "",
              "| chips | tensor | latency | cycles | same cycles | one process | mpirun | "
              "speed-up |", "|---|---|---|---|---|---|---|---|"]
    for r in mpi_rows:
        lines.append(f"| {r['chips']} | {r['kib']} KiB | {r['latency']} | {r['cycles']:,} | "
                     f"{'yes' if r['same_cycles'] else 'NO'} | {r['one_process_seconds']} s | "
                     f"{r['mpi_seconds']} s | {r['speedup']}x |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
