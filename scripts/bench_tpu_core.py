#!/usr/bin/env python3
"""One GEMM end to end on a core with TPU v2's 128x128 matrix unit: `tpu gemm --backend rtl
--array 128x128_bus64` (the core with a 64-byte bus) on random bf16-exact operands, checked bit for bit against the functional model
(`--backend model`), with the wall time and the simulated cycles per second.

    bench_tpu_core.py TPU_BINARY WORK_DIR [M K N [ARRAY]]
"""
import os
import random
import re
import subprocess
import sys
import time

import npy_files


def fail(message):
    print(f"bench_tpu_core.py: {message}", file=sys.stderr)
    sys.exit(1)


def random_matrix(rng, rows, cols):
    # bf16-exact values (8 significant bits), so that the inputs are what the core multiplies.
    return [[rng.randint(-128, 127) / 64.0 for _ in range(cols)] for _ in range(rows)]


def main():
    if len(sys.argv) not in (3, 6, 7):
        fail("usage: bench_tpu_core.py TPU_BINARY WORK_DIR [M K N [ARRAY]]")
    tpu, work = sys.argv[1], sys.argv[2]
    m, k, n = (int(v) for v in sys.argv[3:6]) if len(sys.argv) >= 6 else (256, 256, 256)
    array = sys.argv[6] if len(sys.argv) == 7 else "128x128_bus64"
    os.makedirs(work, exist_ok=True)
    rng = random.Random(1)
    paths = {name: os.path.join(work, f"{name}.npy") for name in ("a", "b", "rtl", "model")}
    npy_files.save(paths["a"], random_matrix(rng, m, k))
    npy_files.save(paths["b"], random_matrix(rng, k, n))
    outputs = {}
    for backend in ("rtl", "model"):
        command = [tpu, "gemm", "--a", paths["a"], "--b", paths["b"], "--out", paths[backend],
                   "--backend", backend, "--array", array]
        if backend == "rtl":
            command.append("--stats")
        print(f"bench-tpu: {' '.join(command)}", file=sys.stderr, flush=True)
        start = time.monotonic()
        run = subprocess.run(command, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if run.returncode != 0:
            fail(f"{backend}: exit {run.returncode}: {run.stderr.strip()}")
        outputs[backend] = (run.stdout, seconds)
    stdout, seconds = outputs["rtl"]
    cycles = re.search(r"^cycles\s+(\d+)", stdout, re.M)
    if not cycles:
        fail("tpu gemm --stats printed no cycle count")
    cycles = int(cycles.group(1))
    exact = npy_files.load_bits(paths["rtl"]) == npy_files.load_bits(paths["model"])
    print(f"core {array}, GEMM {m}x{k}x{n}: {cycles} cycles in {seconds:.1f} s "
          f"({cycles / seconds:,.0f} cycles/s, whole run), results "
          f"{'bit-exact against the functional model' if exact else 'DIFFER from the functional model'}")
    sys.exit(0 if exact else 1)


if __name__ == "__main__":
    main()
