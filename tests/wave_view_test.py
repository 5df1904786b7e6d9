#!/usr/bin/env python3
"""The shipped GTKWave layouts in the real GTKWave, opened as the README says.

Usage: wave_view_test.py BUILD_DIR LAYOUT [--work DIR] [--screenshot PNG]
  LAYOUT: mxu (make wave's), core (make wave-core's) or board_seq (the iCEBreaker's board under
  `tpu ... --trace`)

Writes the layout's waveform the way its documented command does (the same case, in DIR, by
default the current folder), then opens it with the layout the build writes (BUILD_DIR/waves/LAYOUT.gtkw) from the
repository's root through scripts/gtkwave_view.py: every bf16 and fp32 signal must show the
decimals its translate filter gives. --screenshot keeps a picture of the window (make
wave-shots writes docs/img/ so).
"""
import argparse
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import gtkwave_view  # noqa: E402
import npy_files  # noqa: E402


def board_operands():
    """A 3x5 by 5x2 GEMM with bias and addend, as tests/cli's serial_trace runs it."""
    rng = random.Random(33)
    paths = []
    for name, rows, cols in (("a", 3, 5), ("b", 5, 2), ("c", 3, 2)):
        npy_files.save(f"{name}.npy", [[rng.choice((-1, 1)) * rng.randint(1, 8) / 4
                                        for _ in range(cols)] for _ in range(rows)])
        paths += [f"--{name}", f"{name}.npy"]
    npy_files.save("bias.npy", [rng.randint(-4, 4) / 2 for _ in range(2)])
    return paths + ["--bias", "bias.npy"]


def write_wave(bin_dir, layout):
    """The waveform the layout is for, as `make wave`, `make wave-core` and docs/fpga.md make
    it (their default cases)."""
    wave = Path.cwd() / f"view_{layout}.fst"
    wave.unlink(missing_ok=True)
    if layout == "mxu":
        command = [bin_dir / "mxu_sim", "--only", "4x4_m0a0/back-to-back", "--seed", "1",
                   "--wave", wave]
    elif layout == "core":
        command = [bin_dir / "core_sim", "--only", "4x4_m1a1/ragged", "--seed", "1",
                   "--wave", wave]
    else:
        command = [bin_dir / "tpu", "gemm", *board_operands(), "--out", "view_out.npy",
                   "--backend", "serial", "--port", "sim:icebreaker", "--trace", wave]
    subprocess.run([str(part) for part in command], check=True, stdout=subprocess.DEVNULL)
    return wave


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path)
    parser.add_argument("layout", choices=("mxu", "core", "board_seq"))
    parser.add_argument("--work", type=Path, default=Path.cwd())
    parser.add_argument("--screenshot", type=Path)
    args = parser.parse_args()
    build = args.build.resolve()
    screenshot = args.screenshot.resolve() if args.screenshot else None
    args.work.mkdir(parents=True, exist_ok=True)
    os.chdir(args.work)
    wave = write_wave(build / "bin", args.layout)
    try:
        print(gtkwave_view.check(gtkwave_view.as_documented(wave),
                                 gtkwave_view.as_documented(build / "waves" / f"{args.layout}.gtkw"),
                                 screenshot))
    except gtkwave_view.ViewError as error:
        print(f"wave_view_test.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
