#!/usr/bin/env python3
"""End-to-end tests of `tpu allreduce` and `tpu train --chips` (docs/pod.md), one CTest test per
case.

    pod_tests.py --list       the names of the cases
    pod_tests.py TPU CASE     runs one case with the tool at TPU, in a fresh directory

The expectation is N-REDUCE (docs/numerics.md) computed here from the contract's words: chunks
of floor(c n / N), each folded from chip c around the ring by N-ADD, which this file emulates on
raw bit patterns (binary64 sums rounded once to float32: for two float32 operands binary64
holds enough bits that the double rounding never differs from a direct one).
"""
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cli_tests import check, check_bad_input, npy, run_case  # noqa: E402

CASES = {}
CANONICAL_NAN = 0x7FC00000
CHIP_COUNTS = [2, 3, 4, 5, 8]
MPI_RUN = shutil.which("mpirun")


def case(function):
    CASES[function.__name__] = function
    return function


# --- N-IN and N-ADD on bit patterns ---

def value(bits):
    """N-IN: a subnormal is a zero of its sign; any NaN is NaN."""
    if bits & 0x7F800000 == 0:
        return -0.0 if bits >> 31 else 0.0
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def n_add(x_bits, y_bits):
    total = value(x_bits) + value(y_bits)
    if math.isnan(total):
        return CANONICAL_NAN
    try:
        bits = struct.unpack("<I", struct.pack("<f", total))[0]
    except OverflowError:  # rounds past the largest float32
        return 0xFF800000 if total < 0 else 0x7F800000
    if bits & 0x7F800000 == 0:  # below 2^-126: flushed to a zero of the result's sign
        return bits & 0x80000000
    return bits


def ring_allreduce(tensors):
    chips, n = len(tensors), len(tensors[0])
    out = [0] * n
    for c in range(chips):
        for v in range(c * n // chips, (c + 1) * n // chips):
            s = tensors[c][v]
            for hop in range(1, chips):
                s = n_add(s, tensors[(c + hop) % chips][v])
            out[v] = s
    return out


def ps_allreduce(tensors):
    """The parameter-server baseline: G_0, then + G_(N-1), ..., + G_1 (the order chip 0
    receives them in)."""
    out = list(tensors[0])
    for c in range(len(tensors) - 1, 0, -1):
        out = [n_add(s, g) for s, g in zip(out, tensors[c])]
    return out


# --- Inputs ---

def pattern(rng):
    """NaNs with payloads, infinities, zeros, subnormals, the largest and smallest normals,
    values that cancel, and values of any magnitude."""
    if rng.random() < 0.4:
        return rng.choice([0x7FC00000, 0x7F800001, 0xFFC01234, 0x7F800000, 0xFF800000, 0x0,
                           0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000,
                           0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000])
    return struct.unpack("<I", struct.pack("<f", rng.uniform(-1e4, 1e4)))[0]


def save_tensor(path, shape, bits):
    """A float32 .npy of any shape from raw patterns."""
    payload = b"".join(struct.pack("<I", b) for b in bits)
    npy.save(path, [0.0] * len(bits), shape=shape, payload=payload)


def write_inputs(rng, chips, shape):
    n = math.prod(shape)
    tensors = [[pattern(rng) for _ in range(n)] for _ in range(chips)]
    names = []
    for c, tensor in enumerate(tensors):
        names.append(f"g{c}.npy")
        save_tensor(names[-1], shape, tensor)
    return names, tensors


def check_sums(path, shape, expected, what):
    got_shape, got = npy.load_bits(path)
    check(got_shape == tuple(shape), f"{what}: shape {got_shape}, expected {tuple(shape)}")
    for index, (g, w) in enumerate(zip(got, expected)):
        check(g == w, f"{what}: value {index} is 0x{g:08x}, expected 0x{w:08x}")


def mpirun(chips):
    """mpirun with one rank per chip, more ranks than cores allowed (and root, where it runs)."""
    command = [MPI_RUN, "--oversubscribe", "-np", str(chips)]
    if os.geteuid() == 0:
        command.insert(1, "--allow-run-as-root")
    return command


# --- Cases ---

def allreduce_matches(tpu, backend):
    rng = random.Random(hash(backend) & 0xFFFF)
    for chips in CHIP_COUNTS:
        for shape in [(1,), (7,), (3, 5, 7), (2, 3, 2, 4), (16 * 21 + 5,)]:
            names, tensors = write_inputs(rng, chips, shape)
            tpu("allreduce", "--in", *names, "--out", "r.npy", "--backend", backend)
            check_sums("r.npy", shape, ring_allreduce(tensors), f"{backend}, {chips} chips {shape}")


@case
def allreduce_rtl(tpu):
    allreduce_matches(tpu, "rtl")


@case
def allreduce_model(tpu):
    allreduce_matches(tpu, "model")


@case
def allreduce_parameter_server(tpu):
    """--algorithm ps on the RTL (row-wide and two-lane links), the model and MPI: the baseline's
    own fold, and more cycles than the ring on the same links."""
    rng = random.Random(7)
    for chips in (2, 3, 5):
        for array, shape in (("16x16", (16 * 9 + 3,)), ("4x4_m1a1", (2, 3, 5))):
            names, tensors = write_inputs(rng, chips, shape)
            for backend in ("rtl", "model"):
                tpu("allreduce", "--in", *names, "--out", "r.npy", "--algorithm", "ps",
                    "--array", array, "--backend", backend)
                check_sums("r.npy", shape, ps_allreduce(tensors),
                           f"ps {backend} {array}, {chips} chips")
    names, tensors = write_inputs(rng, 4, (16 * 64,))
    cycles = {}
    for algorithm in ("ring", "ps"):
        out = tpu("allreduce", "--in", *names, "--out", "r.npy", "--algorithm", algorithm,
                  "--stats").stdout
        cycles[algorithm] = int(re.search(r"^all-reduce cycles +(\d+)", out, re.M).group(1))
    check(cycles["ps"] > 1.5 * cycles["ring"], f"ps is not slower than the ring: {cycles}")
    if MPI_RUN is not None:
        result = subprocess.run([*mpirun(4), tpu.path, "allreduce", "--in", *names, "--out",
                                 "r.npy", "--algorithm", "ps", "--backend", "mpi"],
                                capture_output=True, text=True)
        check(result.returncode == 0, f"mpirun: {result.stdout}{result.stderr}")
        check_sums("r.npy", (16 * 64,), ps_allreduce(tensors), "ps mpi")


@case
def allreduce_larger_than_the_accumulators(tpu):
    """4x4_m1a1 holds 256 rows of 4 values: 2,500 values take several passes; slow wires."""
    rng = random.Random(3)
    names, tensors = write_inputs(rng, 3, (2500,))
    expected = ring_allreduce(tensors)
    for backend in (["--backend", "rtl", "--latency", "9", "--bandwidth", "0.5"],
                    ["--backend", "model"]):
        out = tpu("allreduce", "--in", *names, "--out", "r.npy", "--array", "4x4_m1a1",
                  "--stats", *backend).stdout
        check("passes             5" in out, out)
        check_sums("r.npy", (2500,), expected, " ".join(backend))


@case
def allreduce_mpi(tpu):
    """One chip per MPI rank, 2 to 8 ranks: the sums and the cycle counts of the one-process
    pod."""
    check(MPI_RUN is not None, "mpirun is missing: scripts/deps.sh installs Open MPI")
    rng = random.Random(4)
    for chips in CHIP_COUNTS:
        names, tensors = write_inputs(rng, chips, (16 * 13 + 3,))
        args = ["allreduce", "--in", *names, "--out", "r.npy", "--latency", "6", "--stats"]
        one = tpu(*args).stdout
        result = subprocess.run([*mpirun(chips), tpu.path, *args, "--backend", "mpi"],
                                capture_output=True, text=True)
        check(result.returncode == 0, f"mpirun: exit status {result.returncode}\n"
                                      f"{result.stdout}{result.stderr}")
        check_sums("r.npy", (16 * 13 + 3,), ring_allreduce(tensors), f"mpi, {chips} chips")
        cycles = [line for line in one.splitlines() if "cycles" in line]
        for line in cycles:
            check(line in result.stdout, f"mpi: {line!r} missing from\n{result.stdout}")


@case
def allreduce_stats(tpu):
    rng = random.Random(5)
    names, _ = write_inputs(rng, 4, (16 * 64,))
    out = tpu("allreduce", "--in", *names, "--out", "r.npy", "--stats").stdout
    for field in ("chips              4", "all-reduce cycles", "bound", "against the bound",
                  "busiest link", "link bandwidth"):
        check(field in out, f"--stats prints no {field!r}:\n{out}")
    # Each chip sends a header and 2 (N - 1) chunks of 16 rows, 64 bytes each.
    check("busiest link       6208 bytes (97 beats" in out, out)


def bad_inputs():
    rng = random.Random(6)
    write_inputs(rng, 17, (5,))
    save_tensor("other_shape.npy", (6,), [0] * 6)
    save_tensor("matrix.npy", (1, 5), [0] * 5)
    npy.save("float64.npy", [1.0] * 5, descr="<f8", payload=struct.pack("<5d", *([1.0] * 5)))
    npy.save("empty.npy", [], shape=(0,))


TWO = ["g0.npy", "g1.npy"]
ALLREDUCE_BAD_INPUTS = {
    "one_input": (["--in", "g0.npy", "--out", "r.npy"], "--in names 1 tensors"),
    "too_many_inputs": (["--in", *[f"g{c}.npy" for c in range(17)], "--out", "r.npy"],
                        "2 to 16 chips"),
    "other_shape": (["--in", "g0.npy", "other_shape.npy", "--out", "r.npy"],
                    "other_shape.npy: shape (6,) differs from g0.npy's (5,)"),
    "other_rank": (["--in", "g0.npy", "matrix.npy", "--out", "r.npy"], "matrix.npy: shape (1, 5)"),
    "dtype_float64": (["--in", "g0.npy", "float64.npy", "--out", "r.npy"],
                      "float64.npy: dtype '<f8'"),
    "missing_file": (["--in", "g0.npy", "nothing.npy", "--out", "r.npy"], "nothing.npy"),
    "empty_tensor": (["--in", "empty.npy", "empty.npy", "--out", "r.npy"], "is empty"),
    "array_without_links": (["--in", *TWO, "--out", "r.npy", "--array", "8x8_bus4"],
                            "8x8_bus4 has no inter-chip links"),
    "sequential_core": (["--in", *TWO, "--out", "r.npy", "--array", "4x4_seq"],
                        "4x4_seq has no inter-chip links"),
    "latency_on_the_model": (["--in", *TWO, "--out", "r.npy", "--backend", "model",
                              "--latency", "4"], "--latency and --bandwidth"),
    "zero_bandwidth": (["--in", *TWO, "--out", "r.npy", "--bandwidth", "0"], "--bandwidth"),
    "unknown_backend": (["--in", *TWO, "--out", "r.npy", "--backend", "fpga"], "fpga"),
    "missing_out": (["--in", *TWO], "--out is required"),
    "out_in_missing_directory": (["--in", *TWO, "--out", "nowhere/r.npy"], "nowhere/r.npy"),
    "mpi_without_mpirun": (["--in", *TWO, "--out", "r.npy", "--backend", "mpi"],
                           "one per MPI rank under mpirun; not 1"),
}


def allreduce_bad_input(tpu, name):
    bad_inputs()
    args, expected = ALLREDUCE_BAD_INPUTS[name]
    check_bad_input(tpu, ["allreduce", *args], expected)


for _name in ALLREDUCE_BAD_INPUTS:
    CASES[f"allreduce_bad_{_name}"] = lambda tpu, n=_name: allreduce_bad_input(tpu, n)


@case
def allreduce_mpi_wrong_rank_count(tpu):
    """Three ranks for two tensors: every rank refuses, with one line each."""
    check(MPI_RUN is not None, "mpirun is missing: scripts/deps.sh installs Open MPI")
    bad_inputs()
    result = subprocess.run([*mpirun(3), tpu.path, "allreduce", "--in", *TWO, "--out", "r.npy",
                             "--backend", "mpi"], capture_output=True, text=True)
    check(result.returncode != 0, "mpirun succeeded with 3 ranks for 2 tensors")
    check("--in names 2 tensors but 3 MPI ranks run" in result.stderr, result.stderr)
    check(not os.path.exists("r.npy"), "r.npy was written")


# --- tpu train --chips N ---

TINY_TRAINING = ["train", "--arch", "mlp", "--epochs", "1", "--examples", "96", "--batch", "40",
                 "--test-images", "50"]


def same_network(prefix_a, prefix_b):
    """The weight and bias files of two saved networks hold the same bytes."""
    names = sorted(n for n in os.listdir(".") if n.startswith(prefix_a + ".") and
                   n.endswith(".npy"))
    check(names, f"no weights of {prefix_a}")
    for name in names:
        other = prefix_b + name[len(prefix_a):]
        with open(name, "rb") as a, open(other, "rb") as b:
            check(a.read() == b.read(), f"{name} and {other} differ")


@case
def train_data_parallel_rtl_equals_model(tpu):
    """3 chips (a batch of 40: shares of 14, 13, 13), on the RTL pod and on functional models:
    the same network, bit for bit."""
    for backend in ("rtl", "model"):
        out = tpu(*TINY_TRAINING, "--chips", "3", "--backend", backend, "--out",
                  f"{backend}.json").stdout
        check("data-parallel on 3 chips" in out and "same bits after every step" in out, out)
    same_network("rtl", "model")


@case
def train_data_parallel_mpi_equals_model(tpu):
    check(MPI_RUN is not None, "mpirun is missing: scripts/deps.sh installs Open MPI")
    tpu(*TINY_TRAINING, "--chips", "2", "--backend", "model", "--out", "model.json")
    result = subprocess.run([*mpirun(2), tpu.path, *TINY_TRAINING, "--chips", "2", "--backend",
                             "mpi", "--out", "mpi.json"], capture_output=True, text=True)
    check(result.returncode == 0, f"mpirun: {result.returncode}\n{result.stdout}{result.stderr}")
    same_network("mpi", "model")


@case
def train_chips_bad_input(tpu):
    check_bad_input(tpu, [*TINY_TRAINING, "--chips", "2", "--backend", "host", "--out", "n.json"],
                    "--chips needs the chips of a pod")
    check_bad_input(tpu, [*TINY_TRAINING, "--chips", "2", "--array", "8x8_bus4", "--out",
                          "n.json"], "8x8_bus4 has no inter-chip links")
    check_bad_input(tpu, [*TINY_TRAINING, "--chips", "17", "--out", "n.json"], "--chips")


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return 0
    return run_case(CASES, __doc__)


if __name__ == "__main__":
    sys.exit(main())
