#!/usr/bin/env python3
"""End-to-end tests of the `tpu` command-line tool (sw/tools/tpu.cpp), one CTest test per case.

    cli_tests.py --list              the names of the cases
    cli_tests.py --list-without-rtl  those for a tpu built without the RTL (TPU_RTL=OFF)
    cli_tests.py TPU CASE            runs one case with the tool at TPU, in a fresh directory

The expectations are computed here, independently of the runtime library: exactly, with
fractions, or by emulating the numerics contract (docs/numerics.md) on operands chosen so that
every fp32 sum is exact in Python's binary64 before struct rounds it to fp32 (to nearest even,
as N-ADD does); add() checks that premise on every sum. The functional model (--backend model)
is only a second opinion, and the only one for the table-driven functions, which are checked
against the true functions within two bf16 ulps besides.
"""
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import npy_files as npy  # noqa: E402  (the NumPy-free .npy reader and writer)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARRAY = "4x4_m1a1"  # the smallest compiled core: a run takes milliseconds
ARRAYS = ["16x16", "4x4_m1a1", "8x8_bus4"]
EMULATED_FUNCTIONS = ["none", "relu", "relu6", "leaky"]
TABLE_FUNCTIONS = {
    "sigmoid": lambda x: 1 / (1 + math.exp(-x)),
    "tanh": math.tanh,
    "gelu": lambda x: x * 0.5 * (1 + math.erf(x / math.sqrt(2))),
}
DEFAULT_LEAKY_SLOPE = 0.01

CASES = {}              # the cases of a tpu with the RTL simulation
ONLY_WITHOUT_RTL = {}   # the cases of a tpu built without it, that the other has none of
ALSO_WITHOUT_RTL = []   # the names of CASES that a tpu without the RTL passes too


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def case(function):
    CASES[function.__name__] = function
    return function


def without_rtl(function):
    ONLY_WITHOUT_RTL[function.__name__] = function
    return function


def also_without_rtl(function):
    """For a case (under @case) that needs no RTL: it uses the functional model (the default
    backend of a tpu built without the RTL) or runs nothing."""
    ALSO_WITHOUT_RTL.append(function.__name__)
    return function


class Tool:
    """Runs `tpu` and checks its exit status."""

    def __init__(self, path):
        self.path = path

    def __call__(self, *args, status=0):
        args = [str(a) for a in args]
        result = subprocess.run([self.path, *args], capture_output=True, text=True)
        if result.returncode != status:
            raise Failure(f"tpu {' '.join(args)}: exit status {result.returncode}, expected "
                          f"{status}\nstdout:\n{result.stdout}stderr:\n{result.stderr}")
        return result


# --- The numerics contract, for the values these tests use (finite, normal, small) ---

def f32(x):
    """x rounded to float32, to nearest even."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bf16(x):
    """N-OUT for finite normal values: the float32 rounded to 8 significant bits, ties to even."""
    b = npy.bits(x)
    return npy.from_bits((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000)


def add(x, y):
    """N-ADD, where binary64 holds x + y exactly and the sum is not subnormal in fp32."""
    total = x + y
    check(Fraction(total) == Fraction(x) + Fraction(y) and not 0 < abs(total) < 2**-126,
          f"test premise broken: {x!r} + {y!r} is not exact in binary64")
    return f32(total)


def activate(function, x, alpha):
    if function == "none":
        return x
    if function == "relu":
        return x if x > 0 else 0.0  # relu(-0) = +0
    if function == "relu6":
        return min(x, 6.0) if x > 0 else 0.0
    if function == "leaky":
        return x if x >= 0 else f32(x * alpha)  # the product of 24 and 8 bits is exact
    raise ValueError(function)


def pre_activation(a, b, c, bias):
    """C + A x B + bias with A and B rounded to bf16, folded in order of k (N-ORDER)."""
    a = [[bf16(v) for v in row] for row in a]
    b = [[bf16(v) for v in row] for row in b]
    out = []
    for i in range(len(a)):
        row = []
        for j in range(len(b[0])):
            s = c[i][j] if c else 0.0
            for k in range(len(b)):
                s = add(s, a[i][k] * b[k][j])  # 8 x 8 bits: the product is exact
            row.append(add(s, bias[j]) if bias else s)
        out.append(row)
    return out


def operand(rng):
    """A or B: 0, or a float32 in ±[0.5, 4) that bf16 rounds. Products lie on the 2^-16 grid."""
    return 0.0 if rng.random() < 0.1 else f32(rng.choice((-1, 1)) * rng.uniform(0.5, 4))


def addend(rng):
    """C or bias: 0, or a float32 in ±[2^-10, 8), on the 2^-33 grid: every sum stays exact."""
    return 0.0 if rng.random() < 0.1 else f32(rng.choice((-1, 1)) * rng.uniform(2**-10, 8))


def matrix(rng, rows, cols, value):
    return [[value(rng) for _ in range(cols)] for _ in range(rows)]


def special(rng):
    """A float32 pattern: often a special (NaN with payload, infinity, zero, subnormal, the
    largest and smallest normals), otherwise a value of any magnitude."""
    return rng.choice([0x7FC00000, 0x7F800001, 0xFFC01234, 0x7F800000, 0xFF800000, 0x00000000,
                       0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
                       0x3F800000, 0x7F7F8000, rng.getrandbits(32)])


def random_pattern(rng):
    return special(rng) if rng.random() < 0.3 else npy.bits(rng.uniform(-1e3, 1e3))


# --- Helpers ---

def listing():
    return sorted(os.listdir("."))


def check_bad_input(tpu, args, expected, status=2):
    """`tpu args` must fail with `status`, one line on stderr naming `expected`, nothing on
    stdout, and no file created."""
    before = listing()
    result = tpu(*args, status=status)
    lines = result.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("tpu: "),
          f"tpu {' '.join(map(str, args))}: stderr is not one line starting 'tpu: ':\n"
          f"{result.stderr}")
    check(expected in lines[0], f"stderr {lines[0]!r} does not mention {expected!r}")
    check(result.stdout == "", f"stdout is not empty: {result.stdout!r}")
    check(listing() == before, f"files were created: {sorted(set(listing()) - set(before))}")
    return lines[0]


def check_matrix_bits(path, expected, what):
    """The float32 .npy at `path` holds exactly the values (or bit patterns) `expected`."""
    shape, got = npy.load_bits(path)
    want_shape = (len(expected), len(expected[0]))
    check(shape == want_shape, f"{what}: shape {shape}, expected {want_shape}")
    flat = [v if isinstance(v, int) else npy.bits(v) for row in expected for v in row]
    for index, (g, w) in enumerate(zip(got, flat)):
        check(g == w, f"{what}: element {divmod(index, shape[1])} is 0x{g:08x} "
                      f"({npy.from_bits(g)!r}), expected 0x{w:08x} ({npy.from_bits(w)!r})")


def same_file(path_a, path_b):
    with open(path_a, "rb") as a, open(path_b, "rb") as b:
        return a.read() == b.read()


def write_operands(rng, m, k, n):
    a, b, c, bias = (matrix(rng, m, k, operand), matrix(rng, k, n, operand),
                     matrix(rng, m, n, addend), [addend(rng) for _ in range(n)])
    npy.save("a.npy", a)
    npy.save("b.npy", b)
    npy.save("c.npy", c)
    npy.save("bias.npy", bias)
    return a, b, c, bias


OPERAND_ARGS = ["--a", "a.npy", "--b", "b.npy", "--c", "c.npy", "--bias", "bias.npy"]


# --- tpu gemm: results ---

@also_without_rtl
@case
def gemm_exact_small_integers(tpu):
    """Integers whose every partial sum is an integer below 256: exact in fp32 and bf16."""
    rng = random.Random(1)
    m, k, n = 5, 7, 3
    a = [[rng.randint(-4, 4) for _ in range(k)] for _ in range(m)]
    b = [[rng.randint(-4, 4) for _ in range(n)] for _ in range(k)]
    c = [[rng.randint(-40, 40) for _ in range(n)] for _ in range(m)]
    bias = [rng.randint(-40, 40) for _ in range(n)]
    npy.save("a.npy", a)
    npy.save("b.npy", b)
    npy.save("c.npy", c)
    npy.save("bias.npy", [[v for v in bias]])  # the 1 x N form
    exact = [[Fraction(c[i][j]) + sum(Fraction(a[i][x] * b[x][j]) for x in range(k)) + bias[j]
              for j in range(n)] for i in range(m)]
    relu = [[max(v, 0) for v in row] for row in exact]
    for dtype in ("fp32", "bf16"):
        tpu("gemm", *OPERAND_ARGS, "--out", "out.npy", "--array", ARRAY, "--out-dtype", dtype)
        check_matrix_bits("out.npy", [[float(v) for v in row] for row in exact], f"{dtype}")
        tpu("gemm", *OPERAND_ARGS, "--out", "out.npy", "--array", ARRAY, "--out-dtype", dtype,
            "--act", "relu")
        check_matrix_bits("out.npy", [[float(v) for v in row] for row in relu], f"relu {dtype}")


@case
def gemm_exact_default_array(tpu):
    """Without --array the 16x16 core runs; A x I = A for integers."""
    a = [[float(3 * i - j) for j in range(20)] for i in range(18)]
    identity = [[1.0 if i == j else 0.0 for j in range(20)] for i in range(20)]
    npy.save("a.npy", a)
    npy.save("i.npy", identity)
    tpu("gemm", "--a", "a.npy", "--b", "i.npy", "--out", "out.npy")
    check_matrix_bits("out.npy", a, "A x I on 16x16")


def gemm_emulated(tpu, function, dtype, alpha=None):
    """Random operands that bf16 rounds, against the emulation, for two shapes that are not
    multiples of the array; the model must agree bit for bit."""
    rng = random.Random(f"{function}-{dtype}-{alpha}")
    slope = bf16(f32(DEFAULT_LEAKY_SLOPE if alpha is None else alpha))
    extra = ["--alpha", alpha] if alpha is not None else []
    for m, k, n in ((5, 7, 3), (9, 13, 6)):
        a, b, c, bias = write_operands(rng, m, k, n)
        expected = [[activate(function, x, slope) for x in row]
                    for row in pre_activation(a, b, c, bias)]
        if dtype == "bf16":
            expected = [[bf16(x) for x in row] for row in expected]
        common = [*OPERAND_ARGS, "--act", function, *extra, "--out-dtype", dtype,
                  "--array", ARRAY]
        tpu("gemm", *common, "--out", "rtl.npy")
        check_matrix_bits("rtl.npy", expected, f"{m}x{k}x{n} {function} {dtype} on rtl")
        tpu("gemm", *common, "--backend", "model", "--out", "model.npy")
        check(same_file("rtl.npy", "model.npy"), "the model's result differs from the RTL's")


for _function in EMULATED_FUNCTIONS:
    for _dtype in ("fp32", "bf16"):
        CASES[f"gemm_emulated_{_function}_{_dtype}"] = (
            lambda tpu, f=_function, d=_dtype: gemm_emulated(tpu, f, d))
        ALSO_WITHOUT_RTL.append(f"gemm_emulated_{_function}_{_dtype}")


@case
def gemm_emulated_leaky_alpha(tpu):
    """--alpha 0.3: the slope is the nearest float32, rounded to bf16."""
    gemm_emulated(tpu, "leaky", "fp32", alpha=0.3)


def gemm_table_function(tpu, function):
    """sigmoid, tanh, gelu: the RTL and the model agree bit for bit, and both are within two
    bf16 ulps of the true function of the emulated pre-activation value."""
    rng = random.Random(function)
    a, b, c, bias = write_operands(rng, 9, 13, 6)
    x = pre_activation(a, b, c, bias)
    for dtype in ("fp32", "bf16"):
        common = [*OPERAND_ARGS, "--act", function, "--out-dtype", dtype, "--array", ARRAY]
        tpu("gemm", *common, "--out", "rtl.npy")
        tpu("gemm", *common, "--backend", "model", "--out", "model.npy")
        check(same_file("rtl.npy", "model.npy"), f"{function} {dtype}: the model differs")
        _, got = npy.load("rtl.npy")
        for index, (value, pre) in enumerate(zip(got, (v for row in x for v in row))):
            true = TABLE_FUNCTIONS[function](pre)
            check(abs(value - true) <= 2**-6 * abs(true) + 2**-40,
                  f"{function}({pre!r}) = {value!r}, the true value is {true!r} ({dtype})")


for _function in TABLE_FUNCTIONS:
    CASES[f"gemm_table_{_function}"] = lambda tpu, f=_function: gemm_table_function(tpu, f)


def gemm_specials(tpu, array):
    """NaNs, infinities, zeros, subnormals and huge values in every operand, every function,
    both output types: the RTL and the model agree bit for bit."""
    rng = random.Random(array)
    m, k, n = 7, 19, 10
    npy.save_bits("a.npy", [[random_pattern(rng) for _ in range(k)] for _ in range(m)])
    npy.save_bits("b.npy", [[random_pattern(rng) for _ in range(n)] for _ in range(k)])
    npy.save_bits("c.npy", [[random_pattern(rng) for _ in range(n)] for _ in range(m)])
    npy.save_bits("bias.npy", [[random_pattern(rng) for _ in range(n)]])
    for index, function in enumerate(["none", "relu", "relu6", "leaky", "sigmoid", "tanh",
                                      "gelu"]):
        for dtype in ("fp32", "bf16"):
            # With and without C and bias, in turn.
            operands = OPERAND_ARGS if index % 2 else OPERAND_ARGS[:4]
            common = [*operands, "--act", function, "--out-dtype", dtype, "--array", array]
            tpu("gemm", *common, "--out", "rtl.npy")
            tpu("gemm", *common, "--backend", "model", "--out", "model.npy")
            check(same_file("rtl.npy", "model.npy"),
                  f"{array} {function} {dtype}: the model's result differs from the RTL's")


for _array in ARRAYS:
    CASES[f"gemm_specials_rtl_vs_model_{_array}"] = lambda tpu, a=_array: gemm_specials(tpu, a)


# --- tpu gemm: statistics and waveform ---

def counter_names():
    """The counters of docs/registers.md, in their order."""
    with open(os.path.join(ROOT, "docs", "registers.md")) as f:
        return re.findall(r"^\| 0x[0-9A-F]+ \| 0x[0-9A-F]+ \| `(\w+)` \|", f.read(), re.M)


@case
def gemm_stats_rtl(tpu):
    rng = random.Random(2)
    m, k, n = 9, 13, 6
    write_operands(rng, m, k, n)
    out = tpu("gemm", *OPERAND_ARGS, "--out", "out.npy", "--array", ARRAY, "--stats").stdout
    cycles = int(re.search(r"^cycles +(\d+)$", out, re.M).group(1))
    ideal = m * k * n / 16
    check(f"ideal cycles  {ideal:.2f} ({m * k * n} MACs at 16 per cycle)" in out,
          f"no ideal cycles M*K*N/16 = {ideal:.2f} in:\n{out}")
    check(f"utilisation   {100 * ideal / cycles:.2f} %" in out, f"wrong utilisation in:\n{out}")
    rows = dict((name, (int(value), float(share), whole)) for name, value, share, whole in
                re.findall(r"^(\w+) +(\d+) +([\d.]+) % of (cycles|peak MACs)$", out, re.M))
    names = counter_names()
    check(len(names) == 15 and sorted(rows) == sorted(names),
          f"counters {sorted(rows)}, docs/registers.md lists {names}")
    check(rows["CYCLES"][0] == cycles, "CYCLES differs from the cycles line")
    check(rows["USEFUL_MACS"][0] == m * k * n, "USEFUL_MACS is not M*K*N")
    for name, (value, share, whole) in rows.items():
        base = cycles * 16 if name == "USEFUL_MACS" else cycles
        check(abs(share - 100 * value / base) < 0.006, f"{name}: share {share} % is wrong")
    phases = ["ARRAY_ACTIVE", "WEIGHT_STALL", "WEIGHT_SHIFT", "INPUT_STALL", "RAW_STALL",
              "NON_MATRIX"]
    check(sum(rows[p][0] for p in phases) == cycles,
          "the array's cycles do not add up to CYCLES (docs/registers.md)")


@case
def gemm_stats_model(tpu):
    write_operands(random.Random(3), 9, 13, 6)
    out = tpu("gemm", *OPERAND_ARGS, "--out", "out.npy", "--array", ARRAY, "--stats",
              "--backend", "model").stdout
    check(re.search(r"^instructions +\d+$", out, re.M) is not None, f"no instructions in:\n{out}")
    check(re.search(rf"^useful MACs +{9 * 13 * 6}$", out, re.M) is not None,
          f"useful MACs is not M*K*N in:\n{out}")


@also_without_rtl
@case
def gemm_time_model(tpu):
    """--time: the model's run on the host, with the fold path and threads the environment chose
    (TPU_FOLD_PATH, TPU_MODEL_THREADS); a path or a thread count it cannot take is one line, a
    non-zero exit and no output."""
    write_operands(random.Random(3), 9, 13, 6)
    for path, threads in (("portable", "1"), (None, "2")):
        if path:
            os.environ["TPU_FOLD_PATH"] = path
        os.environ["TPU_MODEL_THREADS"] = threads
        try:
            out = tpu("gemm", *OPERAND_ARGS, "--out", "out.npy", "--array", ARRAY, "--time",
                      "--backend", "model").stdout
        finally:
            os.environ.pop("TPU_FOLD_PATH", None)
            os.environ.pop("TPU_MODEL_THREADS", None)
        found = re.search(r"^run time +([\d.]+) s on the host \([\d.]+ GMAC/s; (\w+) path, (\d+) "
                          r"threads?; the best of 3 runs, the first ([\d.]+) s\)$", out, re.M)
        check(found is not None, f"no run time in:\n{out}")
        check(path is None or found.group(2) == path, f"not the {path} path:\n{out}")
        check(found.group(3) == threads, f"not {threads} threads:\n{out}")
        check(float(found.group(1)) <= float(found.group(4)), f"the best above the first:\n{out}")
        check(re.search(r"^peak memory +\d+ MiB", out, re.M) is not None,
              f"no peak memory in:\n{out}")
    for name, value in (("TPU_FOLD_PATH", "sse9"), ("TPU_MODEL_THREADS", "0")):
        os.environ[name] = value
        try:
            check_bad_input(tpu, ["gemm", *OPERAND_ARGS, "--out", "bad.npy", "--backend", "model"],
                            f"{name}={value}", status=3)
        finally:
            os.environ.pop(name)


@also_without_rtl
@case
def infer_time_model(tpu):
    """tpu infer --time: the first run (which writes the weights) apart from the later ones, and
    the tool's peak memory; the outputs the same bits as without it."""
    rng = random.Random(5)
    npy.save("x.npy", [[rng.uniform(0, 1) for _ in range(28 * 28)] for _ in range(6)],
             shape=(6, 28, 28, 1))
    out = tpu("infer", "--net", SHIPPED_MLP, "--in", "x.npy", "--out", "timed.npy", "--batch", 2,
              "--backend", "model", "--time").stdout
    check(re.search(r"^first run +[\d.]+ s on the host \(its weights written\)$", out, re.M)
          is not None, f"no first run in:\n{out}")
    later = re.search(r"^later runs +([\d.]+) s a run on the host \(2 runs, the best ([\d.]+) s\)$",
                      out, re.M)
    check(later is not None, f"no later runs in:\n{out}")
    check(float(later.group(2)) <= float(later.group(1)), f"the best above the mean in:\n{out}")
    check(re.search(r"^peak memory +\d+ MiB", out, re.M) is not None, f"no peak memory in:\n{out}")
    tpu("infer", "--net", SHIPPED_MLP, "--in", "x.npy", "--out", "plain.npy", "--batch", 2,
        "--backend", "model")
    check(same_file("timed.npy", "plain.npy"), "--time changed the outputs")


@case
def gemm_trace(tpu):
    write_operands(random.Random(4), 5, 7, 3)
    tpu("gemm", *OPERAND_ARGS, "--out", "traced.npy", "--array", ARRAY, "--trace", "wave.fst")
    tpu("gemm", *OPERAND_ARGS, "--out", "plain.npy", "--array", ARRAY)
    check(os.path.getsize("wave.fst") > 1000, "the waveform is missing or empty")
    check(same_file("traced.npy", "plain.npy"), "tracing changed the result")


@case
def gemm_trace_needs_traced_model(tpu):
    # The 16x16 core is built without tracing (sim/models.cmake), unless every model is
    # (-DTPU_TRACE=ON, where CMake leaves this case out).
    write_operands(random.Random(4), 5, 7, 3)
    check_bad_input(tpu, ["gemm", *OPERAND_ARGS, "--out", "out.npy", "--array", "16x16",
                          "--trace", "wave.fst"], "16x16: this model is built without waveform")


# --- tpu gemm: bad input ---

def bad_gemm_inputs():
    """Valid operands (A 5x7, B 7x3) and the malformed files the bad-input cases name."""
    write_operands(random.Random(5), 5, 7, 3)
    os.mkdir("a_directory.npy")
    with open("a.npy", "rb") as f:
        good = f.read()
    with open("truncated.npy", "wb") as f:
        f.write(good[:-3])
    with open("magic.npy", "wb") as f:
        f.write(b"\x93NUMPZ" + good[6:])
    npy.save("float64.npy", [[1.0] * 7] * 5, descr="<f8",
             payload=struct.pack("<35d", *([1.0] * 35)))
    npy.save("vector.npy", [1.0] * 7)
    npy.save("cube.npy", [1.0] * 8, shape=(2, 2, 2))
    npy.save("empty.npy", [], shape=(0, 7))
    npy.save("c_wrong.npy", [[1.0] * 3] * 4)
    npy.save("bias_wrong.npy", [1.0] * 4)
    npy.save("wide.npy", [[1.0] * 2100])  # a row of A takes more than half the 4x4 core's UB
    npy.save("tall.npy", [[1.0]] * 2100)


BASE = ["gemm", "--a", "a.npy", "--b", "b.npy", "--out", "out.npy", "--array", ARRAY]
GEMM_BAD_INPUTS = {
    "missing_file": (["gemm", "--a", "nothing.npy", "--b", "b.npy", "--out", "out.npy"],
                     "nothing.npy: cannot open"),
    "unreadable_file": (["gemm", "--a", "a_directory.npy", "--b", "b.npy", "--out", "out.npy"],
                        "a_directory.npy: read error"),
    "truncated_data": (["gemm", "--a", "truncated.npy", "--b", "b.npy", "--out", "out.npy"],
                       "truncated.npy: truncated data"),
    "bad_magic": (["gemm", "--a", "magic.npy", "--b", "b.npy", "--out", "out.npy"],
                  "magic.npy: not a .npy file"),
    "dtype_float64": (["gemm", "--a", "float64.npy", "--b", "b.npy", "--out", "out.npy"],
                      "float64.npy: dtype '<f8'"),
    "vector_as_matrix": (["gemm", "--a", "vector.npy", "--b", "b.npy", "--out", "out.npy"],
                         "vector.npy: A must be a matrix"),
    "three_dimensions": (["gemm", "--a", "a.npy", "--b", "cube.npy", "--out", "out.npy"],
                         "cube.npy: 3 dimensions"),
    "shape_mismatch_a_b": (["gemm", "--a", "a.npy", "--b", "a.npy", "--out", "out.npy"],
                           "B needs 7 rows"),
    "shape_mismatch_c": (BASE + ["--c", "c_wrong.npy"], "c_wrong.npy: C has shape (4, 3)"),
    "shape_mismatch_bias": (BASE + ["--bias", "bias_wrong.npy"], "bias_wrong.npy: bias has"),
    "empty_matrix": (["gemm", "--a", "empty.npy", "--b", "b.npy", "--out", "out.npy"],
                     "empty.npy: shape (0, 7) is empty"),
    "too_large_for_core": (["gemm", "--a", "wide.npy", "--b", "tall.npy", "--out", "out.npy",
                            "--array", ARRAY], "too large for this core"),
    "unknown_option": (BASE + ["--frobnicate"], "--frobnicate"),
    "unknown_activation": (BASE + ["--act", "swish"], "swish"),
    "alpha_without_leaky": (BASE + ["--act", "relu", "--alpha", "0.1"], "--alpha"),
    "malformed_alpha": (BASE + ["--act", "leaky", "--alpha", "0x3c00"], "--alpha"),
    "trace_with_model": (BASE + ["--backend", "model", "--trace", "wave.fst"], "--trace"),
    "unknown_array": (BASE[:-1] + ["32x32"], "32x32"),
    # TPU v2's 128x128 core is the functional model's alone unless the build has its RTL.
    "array_without_rtl": (BASE[:-1] + ["128x128_bus64", "--backend", "rtl"],
                          "no Verilator model of this core"),
    "unknown_backend": (BASE + ["--backend", "fpga"], "fpga"),
    "missing_out": (BASE[:5] + ["--array", ARRAY], "--out is required"),
    "out_in_missing_directory": (BASE[:6] + ["nowhere/out.npy"], "nowhere/out.npy"),
}


def gemm_bad_input(tpu, name):
    bad_gemm_inputs()
    args, expected = GEMM_BAD_INPUTS[name]
    check_bad_input(tpu, args, expected)


for _name in GEMM_BAD_INPUTS:
    CASES[f"gemm_bad_{_name}"] = lambda tpu, n=_name: gemm_bad_input(tpu, n)


# --- tpu gemm --dtype int8 ---
# The expectations emulate docs/numerics.md's Q-rules with Python's integers: Q-MAC with wrapping
# int32 sums, Q-ZP, and Q-REQ's SRDHM and RDBP as TensorFlow Lite writes them.

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def wrap32(x):
    return (x - INT32_MIN) % 2**32 + INT32_MIN


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul: (a * b + nudge) / 2^31, truncated toward zero."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    v = ab + (2**30 if ab >= 0 else 1 - 2**30)
    return v // 2**31 if v >= 0 else -(-v // 2**31)


def rdbp(x, e):
    """RoundingDivideByPOT: x / 2^e, ties away from zero (Python's >> and & are two's
    complement on negative numbers)."""
    mask = (1 << e) - 1
    return (x >> e) + (1 if (x & mask) > (mask >> 1) + (1 if x < 0 else 0) else 0)


def q_req(total, bias, m, s, zo, lo, hi):
    x = wrap32(wrap32(total + bias) * 2**max(s, 0))
    y = rdbp(srdhm(x, m), max(-s, 0))
    return min(max(y + zo, lo), hi)  # y + zo exactly: no wrap before the clamp


def q_mac(a, b, c=None, za=0):
    """A x B + C - za * colsum(B), every sum wrapping in int32 (Q-MAC, Q-ZP)."""
    return [[wrap32((c[i][j] if c else 0) +
                    sum((a[i][x] - za) * b[x][j] for x in range(len(b))))
             for j in range(len(b[0]))] for i in range(len(a))]


def check_int_file(path, expected, descr, what):
    shape, got_descr, got = npy.load_int(path)
    want_shape = (len(expected), len(expected[0]))
    check(shape == want_shape and got_descr == descr,
          f"{what}: {got_descr} {shape}, expected {descr} {want_shape}")
    for index, (g, w) in enumerate(zip(got, (v for row in expected for v in row))):
        check(g == w, f"{what}: element {divmod(index, shape[1])} is {g}, expected {w}")


def int8_gemm_both(tpu, args, path, expected, descr, what):
    """Runs on the default backend (rtl where the build has it) and the model: both exact."""
    tpu("gemm", "--dtype", "int8", *args, "--out", path)
    check_int_file(path, expected, descr, what)
    tpu("gemm", "--dtype", "int8", *args, "--backend", "model", "--out", "model_" + path)
    check(same_file(path, "model_" + path), f"{what}: the model's result differs")


def int8_operands(rng, m, k, n, extreme=False):
    """A, B int8 (-128 everywhere when `extreme`) and C int32 near the ends of int32."""
    value = (lambda: -128) if extreme else (lambda: rng.randint(-128, 127))
    a = [[value() for _ in range(k)] for _ in range(m)]
    b = [[value() for _ in range(n)] for _ in range(k)]
    c = [[rng.choice([INT32_MAX - rng.randint(0, 2**20), INT32_MIN + rng.randint(0, 2**20),
                      rng.randint(INT32_MIN, INT32_MAX)]) for _ in range(n)] for _ in range(m)]
    npy.save_int("a.npy", a, "|i1")
    npy.save_int("b.npy", b, "|i1")
    npy.save_int("c.npy", c)
    return a, b, c


def gemm_int8_raw(tpu, array, extreme):
    """int32 results: A x B, + C (sums that wrap past both ends of int32), - za * colsum(B),
    for shapes that are not multiples of the array; -128 everywhere when `extreme`."""
    rng = random.Random(f"int8-raw-{array}-{extreme}")
    for m, k, n in ((5, 7, 3), (9, 21, 10)):
        a, b, c = int8_operands(rng, m, k, n, extreme)
        za = -128 if extreme else rng.randint(-128, 127)
        common = ["--a", "a.npy", "--b", "b.npy", "--array", array]
        shape = f"{array} {m}x{k}x{n}"
        int8_gemm_both(tpu, common, "ab.npy", q_mac(a, b), "<i4", f"{shape} A x B")
        int8_gemm_both(tpu, [*common, "--c", "c.npy"], "abc.npy", q_mac(a, b, c), "<i4",
                       f"{shape} A x B + C")
        int8_gemm_both(tpu, [*common, "--zp-a", za], "za.npy", q_mac(a, b, za=za), "<i4",
                       f"{shape} (A - {za}) x B")
        int8_gemm_both(tpu, [*common, "--c", "c.npy", "--zp-a", za], "cza.npy",
                       q_mac(a, b, c, za), "<i4", f"{shape} (A - {za}) x B + C")


def requant_columns(rng, n):
    """M, s and bias per column: both ends of M's range, 0, both ends of the shift, and
    random ones."""
    fixed = [(2**30, -1), (INT32_MAX, 30), (0, 0), (2**30, -31), (INT32_MAX, -31), (2**30, 30),
             (INT32_MAX, 0), (2**30 + 1, 1)]
    columns = [fixed[j] if j < len(fixed) else
               (rng.randint(2**30, INT32_MAX), rng.randint(-31, 30)) for j in range(n)]
    rng.shuffle(columns)
    bias = [rng.choice([0, INT32_MAX, INT32_MIN, rng.randint(INT32_MIN, INT32_MAX),
                        rng.randint(-1000, 1000)]) for _ in range(n)]
    return [m for m, _ in columns], [s for _, s in columns], bias


def gemm_int8_requant(tpu, array):
    """int8 results by Q-REQ: multipliers at both ends of their range, shifts of both signs
    (ties in rounding among the many odd sums a shift of -1 meets), large biases whose sums
    wrap, y + zo beyond int32 (M = 2^31 - 1 with s = 30 saturates y), relu, both zero points,
    with and without a bias; the 1 x N and (N,) forms."""
    rng = random.Random(f"int8-requant-{array}")
    for m, k, n in ((6, 9, 11), (17, 20, 9)):
        a, b, _ = int8_operands(rng, m, k, n)
        mult, shift, bias = requant_columns(rng, n)
        npy.save_int("m.npy", mult)
        npy.save_int("s.npy", [shift])  # (1, N)
        npy.save_int("bias.npy", bias)
        for za, zo, act in ((0, 0, None), (rng.randint(-128, 127), 127, None),
                            (-128, rng.randint(-128, 127), "relu"), (127, -128, "relu")):
            sums = q_mac(a, b, za=za)
            for with_bias in (False, True):
                lo, hi = (max(zo, -128) if act else -128), 127
                expected = [[q_req(sums[i][j], bias[j] if with_bias else 0, mult[j], shift[j],
                                   zo, lo, hi) for j in range(n)] for i in range(m)]
                args = ["--a", "a.npy", "--b", "b.npy", "--qmult", "m.npy", "--qshift", "s.npy",
                        "--zp-a", za, "--zp-out", zo, "--array", array]
                if with_bias:
                    args += ["--bias", "bias.npy"]
                if act:
                    args += ["--act", act]
                int8_gemm_both(tpu, args, "q.npy", expected, "|i1",
                               f"{array} {m}x{k}x{n} za {za} zo {zo} {act} bias {with_bias}")


for _array in ARRAYS:
    for _extreme in (False, True):
        CASES[f"gemm_int8_raw_{'extreme_' if _extreme else ''}{_array}"] = (
            lambda tpu, a=_array, e=_extreme: gemm_int8_raw(tpu, a, e))
        ALSO_WITHOUT_RTL.append(f"gemm_int8_raw_{'extreme_' if _extreme else ''}{_array}")
    CASES[f"gemm_int8_requant_{_array}"] = lambda tpu, a=_array: gemm_int8_requant(tpu, a)
    ALSO_WITHOUT_RTL.append(f"gemm_int8_requant_{_array}")


@also_without_rtl
@case
def gemm_int8_stats_model(tpu):
    int8_operands(random.Random(7), 9, 13, 6)
    out = tpu("gemm", "--dtype", "int8", "--a", "a.npy", "--b", "b.npy", "--out", "out.npy",
              "--array", ARRAY, "--stats", "--backend", "model").stdout
    check(re.search(rf"^useful MACs +{9 * 13 * 6}$", out, re.M) is not None,
          f"useful MACs is not M*K*N in:\n{out}")


def bad_int8_inputs():
    """Valid int8 operands (A 5x7, B 7x3, C 5x3, M, s and bias of 3) and the wrong ones."""
    int8_operands(random.Random(8), 5, 7, 3)
    npy.save_int("m.npy", [2**30, INT32_MAX, 0])
    npy.save_int("s.npy", [-31, 0, 30])
    npy.save_int("bias.npy", [[1, -2, 3]])
    npy.save("a_float.npy", [[1.0] * 7] * 5)
    npy.save_int("b_int32.npy", [[1] * 3] * 7)
    npy.save_int("c_int8.npy", [[1] * 3] * 5, "|i1")
    npy.save_int("c_wrong.npy", [[1] * 3] * 4)
    npy.save("m_float.npy", [2.0**30] * 3)
    npy.save_int("m_short.npy", [2**30] * 2)
    npy.save_int("m_rows.npy", [[2**30] * 3] * 2)
    npy.save_int("m_small.npy", [2**30, 5, 2**30])
    npy.save_int("m_negative.npy", [2**30, -2**30, 2**30])
    npy.save_int("s_big.npy", [0, 31, 0])
    npy.save_int("s_small.npy", [0, -32, 0])
    npy.save_int("s_long.npy", [0] * 4)
    npy.save_int("bias_long.npy", [0] * 4)
    npy.save_int("a_vector.npy", [1] * 7, "|i1")


INT8 = ["gemm", "--dtype", "int8", "--a", "a.npy", "--b", "b.npy", "--out", "out.npy",
        "--array", ARRAY, "--backend", "model"]
REQ = [*INT8, "--qmult", "m.npy", "--qshift", "s.npy"]
GEMM_INT8_BAD_INPUTS = {
    "a_float32": ([*INT8[:4], "a_float.npy", *INT8[5:]], "a_float.npy: dtype '<f4' (float32)"),
    "b_int32": ([*INT8[:6], "b_int32.npy", *INT8[7:]], "b_int32.npy: dtype '<i4' (int32)"),
    "a_vector": ([*INT8[:4], "a_vector.npy", *INT8[5:]], "a_vector.npy: A must be a matrix"),
    "shape_mismatch_a_b": ([*INT8[:6], "a.npy", *INT8[7:]], "B needs 7 rows"),
    "c_int8": ([*INT8, "--c", "c_int8.npy"], "c_int8.npy: dtype '|i1' (int8)"),
    "c_shape": ([*INT8, "--c", "c_wrong.npy"], "c_wrong.npy: C has shape (4, 3)"),
    "qmult_float32": ([*INT8, "--qmult", "m_float.npy", "--qshift", "s.npy"],
                      "m_float.npy: dtype '<f4'"),
    "qmult_short": ([*INT8, "--qmult", "m_short.npy", "--qshift", "s.npy"],
                    "m_short.npy: --qmult has shape (2,)"),
    "qmult_two_rows": ([*INT8, "--qmult", "m_rows.npy", "--qshift", "s.npy"],
                       "m_rows.npy: --qmult has shape (2, 3)"),
    "qmult_too_small": ([*INT8, "--qmult", "m_small.npy", "--qshift", "s.npy"],
                        "--qmult value 5 (column 1) is outside 0 or [2^30, 2^31 - 1]"),
    "qmult_negative": ([*INT8, "--qmult", "m_negative.npy", "--qshift", "s.npy"],
                       "--qmult value -1073741824"),
    "qshift_31": ([*INT8, "--qmult", "m.npy", "--qshift", "s_big.npy"],
                  "--qshift value 31 (column 1) is outside [-31, 30]"),
    "qshift_minus_32": ([*INT8, "--qmult", "m.npy", "--qshift", "s_small.npy"],
                        "--qshift value -32"),
    "qshift_long": ([*INT8, "--qmult", "m.npy", "--qshift", "s_long.npy"],
                    "s_long.npy: --qshift has shape (4,)"),
    "bias_long": ([*REQ, "--bias", "bias_long.npy"], "bias_long.npy: --bias has shape (4,)"),
    "zp_a_128": ([*INT8, "--zp-a", "128"], "--zp-a"),
    "zp_out_minus_129": ([*REQ, "--zp-out", "-129"], "--zp-out"),
    "qshift_without_qmult": ([*INT8, "--qshift", "s.npy"], "--qshift goes with --qmult"),
    "bias_without_qmult": ([*INT8, "--bias", "bias.npy"], "--bias goes with --qmult"),
    "act_without_qmult": ([*INT8, "--act", "relu"], "--act goes with --qmult"),
    "zp_out_without_qmult": ([*INT8, "--zp-out", "3"], "--zp-out goes with --qmult"),
    "qmult_without_qshift": ([*INT8, "--qmult", "m.npy"], "--qmult needs --qshift"),
    "c_with_qmult": ([*REQ, "--c", "c.npy"], "--c does not go with --qmult"),
    "act_relu6": ([*REQ, "--act", "relu6"], "--act relu6"),
    "act_leaky": ([*REQ, "--act", "leaky"], "--act leaky"),
    "act_none": ([*REQ, "--act", "none"], "--act none"),
    "alpha": ([*REQ, "--alpha", "0.1"], "--alpha goes with --dtype bf16"),
    "out_dtype": ([*INT8, "--out-dtype", "fp32"], "--out-dtype goes with --dtype bf16"),
    "core_without_int8": ([*INT8[:-4], "--array", "4x4_seq"], "4x4_seq core has no int8"),
    "core_without_int8_model": ([*INT8[:-3], "4x4_seq", "--backend", "model"],
                                "4x4_seq core has no int8"),
    "qmult_with_bf16": (["gemm", "--a", "a.npy", "--b", "b.npy", "--out", "out.npy",
                         "--qmult", "m.npy"], "--qmult goes with --dtype int8"),
    "zp_a_with_bf16": (["gemm", "--a", "a.npy", "--b", "b.npy", "--out", "out.npy",
                        "--zp-a", "1"], "--zp-a goes with --dtype int8"),
    "unknown_dtype": ([*INT8[:2], "int4", *INT8[3:]], "int4"),
}


def gemm_int8_bad_input(tpu, name):
    bad_int8_inputs()
    args, expected = GEMM_INT8_BAD_INPUTS[name]
    check_bad_input(tpu, args, expected)


for _name in GEMM_INT8_BAD_INPUTS:
    CASES[f"gemm_int8_bad_{_name}"] = lambda tpu, n=_name: gemm_int8_bad_input(tpu, n)
    ALSO_WITHOUT_RTL.append(f"gemm_int8_bad_{_name}")


# --- tpu asm and tpu disasm ---

EVERY_KIND_OF_LINE = """\
read_host acc count=2 rows=16 addr_b=0x100 step_b=16 host_addr=0x4000 host_stride=64 host_step=1024
read_host rows=3 host_addr=0x40 host_stride=8   # a comment
read_weights count=2 rows=4 host_addr=0x800 host_stride=8 host_step=32

matmul acc0 accn count=2 rows=3 addr_a=1 addr_b=2 step_a=3 step_b=0 k_valid=4 n_valid=3
matmul fetch count=3 rows=5 host_addr=0x1000 host_stride=8 host_step=32 k_valid=2 n_valid=4
activate bias f32 func=leaky alpha=0.25 count=2 rows=8 addr_a=0 addr_b=64 step_a=8 bias_addr=200 bias_step=1
activate func=gelu rows=1
write_host acc rows=2 addr_a=5 host_addr=0x3000 host_stride=16
sync
.word 0x000000ff 1 2 3 4 5 6 7
halt
"""


@also_without_rtl
@case
def asm_disasm_round_trip(tpu):
    with open("program.s", "w") as f:
        f.write(EVERY_KIND_OF_LINE)
    tpu("asm", "program.s", "-o", "program.bin")
    check(os.path.getsize("program.bin") == 11 * 32, "11 instructions are not 352 bytes")
    text = tpu("disasm", "program.bin").stdout
    check(len(text.splitlines()) == 11 and ".word 0x000000ff" in text,
          f"disassembly:\n{text}")
    tpu("disasm", "program.bin", "-o", "again.s")
    with open("again.s") as f:
        check(f.read() == text, "disasm -o writes other text than disasm to stdout")
    tpu("asm", "again.s", "-o", "again.bin")
    check(same_file("program.bin", "again.bin"), "asm(disasm(x)) differs from x")


@also_without_rtl
@case
def asm_encoding(tpu):
    """The encoding of docs/isa.md, field by field, for one instruction of each kind."""
    with open("program.s", "w") as f:
        f.write("read_host acc count=2 rows=16 addr_b=0x100 host_addr=0x4000 host_stride=64\n"
                "matmul fetch accn count=3 rows=5 addr_a=7 step_a=5 host_addr=0x1000 "
                "host_stride=8 host_step=32 k_valid=2 n_valid=4\n"
                "activate bias func=leaky alpha=0.25 rows=8 addr_b=64 bias_addr=200\n"
                "halt\n")
    tpu("asm", "program.s", "-o", "program.bin")
    with open("program.bin", "rb") as f:
        words = struct.unpack("<32I", f.read())
    expected = [
        0x01 | 1 << 8, 2 | 16 << 16, 0x100 << 16, 0, 0x4000, 64, 0, 0,
        0x03 | (1 << 1 | 1 << 2) << 8, 3 | 5 << 16, 7, 5, 0x1000, 8, 32, 2 | 4 << 16,
        0x04 | 1 << 8 | 3 << 16, 1 | 8 << 16, 64 << 16, 0, 0x3E80, 0, 0, 200,
        0x07, 0, 0, 0, 0, 0, 0, 0,
    ]
    for index, (got, want) in enumerate(zip(words, expected)):
        check(got == want, f"instruction {index // 8} word {index % 8}: 0x{got:08x}, "
                           f"expected 0x{want:08x}")


@also_without_rtl
@case
def vector_functions_need_a_vector_unit(tpu):
    """exp, recip and rsqrt on a core with a vector unit; one line and status 2 on one without."""
    npy.save("a.npy", [[0.5, -1.0], [2.0, 0.25]])
    npy.save("b.npy", [[1.0, 0.0], [0.0, 1.0]])
    for act in ("exp", "recip", "rsqrt"):
        check_bad_input(tpu, ["gemm", "--a", "a.npy", "--b", "b.npy", "--out", "y.npy", "--act",
                              act, "--backend", "model", "--array", "8x8_bus4"],
                        f"the activation {act} needs a core with a vector unit; 8x8_bus4 has none")
    tpu("gemm", "--a", "a.npy", "--b", "b.npy", "--out", "y.npy", "--act", "recip", "--backend",
        "model", "--array", "16x16")
    check(npy.load("y.npy") == ((2, 2), [2.0, -1.0, 0.5, 4.0]),
          f"recip of powers of two: {npy.load('y.npy')}")


@also_without_rtl
@case
def asm_error(tpu):
    with open("broken.s", "w") as f:
        f.write("read_host rows=2 host_addr=0x40\n# fine so far\nmatmul rows=1 colour=blue\n")
    line = check_bad_input(tpu, ["asm", "broken.s", "-o", "broken.bin"], "colour")
    check(line.startswith("tpu: broken.s:line 3: "), f"not 'tpu: FILE:line N: ...': {line}")


@also_without_rtl
@case
def disasm_bad_size(tpu):
    with open("odd.bin", "wb") as f:
        f.write(bytes(33))
    check_bad_input(tpu, ["disasm", "odd.bin", "-o", "odd.s"], "odd.bin: 33 bytes")


# --- tpu run ---

# On a dim x dim core: OUT = relu(C + A x B + bias) as bf16, and C + A x B as fp32.
def hand_written(dim):
    """C + A x B and relu(C + A x B + bias) for a dim x dim array: A is 3 x dim."""
    return f"""\
read_host rows=3 host_addr=0x1000 host_stride={2 * dim}          # A, 3 x {dim} bf16
read_host acc rows=3 addr_b=0 host_addr=0x2000 host_stride={4 * dim}  # C, 3 x {dim} fp32
read_host acc rows=1 addr_b=8 host_addr=0x2100                    # bias, {dim} fp32
matmul fetch acc0 rows=3 host_addr=0x3000 host_stride={2 * dim} k_valid={dim} n_valid={dim}
activate bias func=relu rows=3 addr_a=0 addr_b=16 bias_addr=8     # bf16 into the UB
write_host acc rows=3 host_addr=0x4000 host_stride={4 * dim}
write_host rows=3 addr_a=16 host_addr=0x5000 host_stride={2 * dim}
halt
"""


HAND_WRITTEN = hand_written(4)


def hand_written_data(dim):
    """The data of hand_written(dim): where its operands go and its results come from."""
    return ["--in", "0x1000=a.npy:bf16", "--in", "0x2000=c.npy", "--in", "8448=bias.npy",
            "--in", "0x3000=b.npy:bf16", "--out", f"0x4000=sum.npy:3x{dim}",
            "--out", f"0x5000=relu.npy:3x{dim}:bf16"]


HAND_WRITTEN_DATA = hand_written_data(4)


def hand_written_program(rng, dim=4):
    """Writes hand_written(dim) and small integer operands for it; returns C + A x B and
    relu(C + A x B + bias), exact in fp32 and bf16."""
    a = [[rng.randint(-4, 4) for _ in range(dim)] for _ in range(3)]
    b = [[rng.randint(-4, 4) for _ in range(dim)] for _ in range(dim)]
    c = [[rng.randint(-20, 20) for _ in range(dim)] for _ in range(3)]
    bias = [rng.randint(-20, 20) for _ in range(dim)]
    for name, values in (("a", a), ("b", b), ("c", c)):
        npy.save(f"{name}.npy", values)
    npy.save("bias.npy", bias)
    with open("program.s", "w") as f:
        f.write(hand_written(dim))
    product = [[c[i][j] + sum(a[i][k] * b[k][j] for k in range(dim)) for j in range(dim)]
               for i in range(3)]
    activated = [[max(v + bias[j], 0) for j, v in enumerate(row)] for row in product]
    return product, activated


@case
def run_hand_written_program(tpu):
    product, activated = hand_written_program(random.Random(6))
    tpu("asm", "program.s", "-o", "program.bin")
    data = [*HAND_WRITTEN_DATA, "--array", ARRAY]
    for program in ("program.s", "program.bin"):
        for backend in ("rtl", "model"):
            for prog_addr in ("0", "0x8000"):
                out = tpu("run", program, *data, "--backend", backend, "--prog-addr", prog_addr)
                check(out.stdout == "DONE after 7 instructions\n", f"stdout: {out.stdout!r}")
                what = f"{program} on {backend} at {prog_addr}"
                check_matrix_bits("sum.npy", [[float(v) for v in r] for r in product], what)
                check_matrix_bits("relu.npy", [[float(v) for v in r] for r in activated], what)
                os.remove("sum.npy")
                os.remove("relu.npy")


@case
def run_stats(tpu):
    with open("program.s", "w") as f:
        f.write(HAND_WRITTEN)
    out = tpu("run", "program.s", "--array", ARRAY, "--stats").stdout
    check(re.search(r"^USEFUL_MACS +48 ", out, re.M) is not None, f"3 rows x 4 x 4 MACs:\n{out}")
    check("ideal cycles  3.00 (48 MACs at 16 per cycle)" in out, f"ideal cycles:\n{out}")
    out = tpu("run", "program.s", "--array", ARRAY, "--stats", "--backend", "model").stdout
    check(out == "DONE after 7 instructions\ninstructions  7\nuseful MACs   48\n", out)


def run_core_error(tpu, program, error, pc):
    """The core stops with `error` at instruction `pc` on both backends: exit status 1, the
    reason on stderr, and no --out file."""
    with open("program.s", "w") as f:
        f.write(program)
    with open(os.path.join(ROOT, "docs", "registers.md")) as f:
        doc = re.search(rf"^\| \d+ \| `{error}` \| (.*) \|$", f.read(), re.M).group(1)
    for backend in ("rtl", "model"):
        before = listing()
        result = tpu("run", "program.s", "--array", ARRAY, "--backend", backend,
                     "--out", "0x0=out.npy:1x4", status=1)
        first = result.stderr.splitlines()[0]
        check(first == f"tpu: core stopped: {error} at instruction {pc} ({doc})",
              f"{backend}: {first!r}")
        check(result.stdout == "", f"{backend}: stdout {result.stdout!r}")
        check(listing() == before, f"{backend}: files were created")


@case
def run_core_error_weight_underflow(tpu):
    run_core_error(tpu, "read_host rows=1 host_addr=0x40\nmatmul rows=1 k_valid=4 n_valid=4\n"
                        "halt\n", "WEIGHT_UNDERFLOW", 1)


@case
def run_core_error_illegal_field(tpu):
    run_core_error(tpu, "sync\nsync\nmatmul fetch rows=1 host_addr=0x40 host_stride=8\nhalt\n",
                   "ILLEGAL_FIELD", 2)


@case
def run_core_error_bus_write(tpu):
    run_core_error(tpu, "write_host acc rows=1 host_addr=0x7ffffff0\nhalt\n", "BUS_WRITE", 0)


RUN_BAD_INPUTS = {
    "missing_program": (["run", "nothing.s"], "nothing.s: cannot open"),
    "assembler_error": (["run", "broken.s"], "broken.s:line 1: "),
    "in_without_address": (["run", "program.s", "--in", "a.npy"], "expected ADDR=FILE"),
    "in_bad_address": (["run", "program.s", "--in", "0x1g=a.npy"], "'0x1g'"),
    "in_missing_file": (["run", "program.s", "--in", "0x1000=nothing.npy"], "nothing.npy"),
    "in_overlaps_program": (["run", "program.s", "--in", "0x20=a.npy"], "overlap the program"),
    "out_without_shape": (["run", "program.s", "--out", "0x1000=out.npy"], "ROWSxCOLS"),
    "out_empty_shape": (["run", "program.s", "--out", "0x1000=out.npy:0x4"], "ROWSxCOLS"),
    "out_past_address_space": (["run", "program.s", "--out", "0xfffffff0=out.npy:4x4"],
                               "32-bit host address space"),
    "memory_too_small": (["run", "program.s", "--in", "0x1000=a.npy", "--memory", "4096"],
                         "--memory 4096"),
    "trace_with_model": (["run", "program.s", "--backend", "model", "--trace", "w.fst"],
                         "--trace"),
    "unknown_option": (["run", "program.s", "--fast"], "--fast"),
}


def run_bad_input(tpu, name):
    with open("program.s", "w") as f:
        f.write("read_host rows=1 host_addr=0x1000\nhalt\n")
    with open("broken.s", "w") as f:
        f.write("jump 0x40\n")
    npy.save("a.npy", [[1.0, 2.0, 3.0, 4.0]])
    args, expected = RUN_BAD_INPUTS[name]
    check_bad_input(tpu, args, expected)


for _name in RUN_BAD_INPUTS:
    CASES[f"run_bad_{_name}"] = lambda tpu, n=_name: run_bad_input(tpu, n)


# --- tpu train and tpu eval (Fashion-MNIST) ---

SHIPPED_MLP = os.path.join(ROOT, "sw", "nets", "mlp.json")


def accuracy_of(output, label="accuracy"):
    found = re.search(rf"^{label} +([0-9.]+)", output, re.M)
    check(found, f"no {label!r} line in:\n{output}")
    return float(found.group(1))


@case
def train_then_eval(tpu):
    """A short training run on the model backend writes a network that classifies far better
    than chance (0.1), on the model and, for a few images, with the same predictions on the
    RTL."""
    out = tpu("train", "--arch", "mlp", "--epochs", "1", "--examples", "2048", "--batch", "64",
              "--test-images", "200", "--out", "net.json").stdout
    check("wrote net.json" in out, out)
    check(sorted(f for f in listing() if f.endswith(".npy")) ==
          [f"net.{l}.dense.{p}.npy" for l in (1, 2, 3) for p in ("bias", "weights")],
          f"files: {listing()}")
    model = tpu("eval", "--net", "net.json", "--backend", "model", "--images", "500").stdout
    check(accuracy_of(model) > 0.6, model)
    rtl = tpu("eval", "--net", "net.json", "--backend", "rtl", "--images", "8", "--batch", "4",
              "--compare", "model").stdout
    check("accuracy on model" in rtl and "8 of 8 predictions the same" in rtl, rtl)
    check(re.search(r"^cycles per image +[0-9]+", rtl, re.M), rtl)


@case
def eval_bad_input(tpu):
    with open("broken.json", "w") as f:
        f.write('{"name": "x", "layers": [')
    os.mkdir("empty")
    check_bad_input(tpu, ["eval", "--net", "absent.json"], "absent.json: cannot open")
    check_bad_input(tpu, ["eval", "--net", "broken.json"], "not valid JSON")
    check_bad_input(tpu, ["eval", "--net", SHIPPED_MLP, "--data", "empty"],
                    "Fashion-MNIST is not in empty")
    check_bad_input(tpu, ["eval", "--net", SHIPPED_MLP, "--first", "10000"],
                    "--first 10000: the test set has 10000 images")
    with open(os.path.join("empty", "t10k-images-idx3-ubyte.gz"), "wb") as f:
        f.write(b"\x1f\x8b\x08\x00garbage")
    check_bad_input(tpu, ["eval", "--net", SHIPPED_MLP, "--data", "empty"], "corrupt")


@case
def train_bad_input(tpu):
    os.mkdir("empty")
    check_bad_input(tpu, ["train", "--out", "n.json", "--data", "empty"],
                    "Fashion-MNIST is not in empty")
    check_bad_input(tpu, ["train", "--out", "n.json", "--arch", "resnet"], "--arch")
    check_bad_input(tpu, ["train", "--out", "n.json", "--batch", "0"], "--batch")
    check_bad_input(tpu, ["train"], "--out is required")
    check_bad_input(tpu, ["train", "--out", "n.json", "--init", "absent.json"],
                    "absent.json: cannot open")
    with open(SHIPPED_MLP) as f:
        sigmoid = f.read().replace('"relu"', '"sigmoid"')
    nets = os.path.dirname(SHIPPED_MLP)
    for name in os.listdir(nets):
        if name.startswith("mlp.") and name.endswith(".npy"):
            with open(os.path.join(nets, name), "rb") as src, open(name, "wb") as dst:
                dst.write(src.read())
    with open("sigmoid.json", "w") as f:
        f.write(sigmoid)
    check_bad_input(tpu, ["train", "--out", "n.json", "--init", "sigmoid.json"],
                    "sigmoid.json: the trainer knows the gradients of relu and none only")


# --- tpu quantize and int8 networks ---

SHIPPED_CNN = os.path.join(ROOT, "sw", "nets", "cnn.json")


def copy_network(net, prefix):
    """Copies a network's JSON and .npy files into the current directory."""
    folder = os.path.dirname(net)
    for name in os.listdir(folder):
        if name.startswith(prefix + ".") and (name.endswith(".npy") or name.endswith(".json")):
            with open(os.path.join(folder, name), "rb") as src, open(name, "wb") as dst:
                dst.write(src.read())


def round_half_away(x):
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def q_scale(real):
    """Q-SCALE (docs/numerics.md): TensorFlow Lite's QuantizeMultiplier of a real r > 0."""
    f, e = math.frexp(real)
    q = round_half_away(f * 2**31)
    if q == 2**31:
        q, e = 2**30, e + 1
    if e < -31:
        q, e = 0, 0
    return q, e


@case
@also_without_rtl
def quantize_mlp_then_eval(tpu):
    """`tpu quantize` on 16 training images writes the int8 MLP in the documented format, with
    weights, biases, multipliers and shifts that an emulation of the scheme here reproduces
    exactly from the float weights and the scales in the file; the model classifies with it as
    the float network nearly does, with the same predictions as the host's int8 reference."""
    out = tpu("quantize", "--net", SHIPPED_MLP, "--out", "q.json", "--calibration", 16).stdout
    check("int8 calibration on the first 16 training images" in out and "wrote q.json" in out,
          out)
    check(re.search(r"^input +range \[0, 1\] +scale 0.00392157, zero point -128$", out, re.M), out)
    check(re.search(r"^dense 3 \(none\) +range .*int32 sums, dequantised on the host$", out, re.M),
          out)
    expected = ["q.json"] + [f"q.{l}.dense.{part}.npy" for l in (1, 2, 3)
                             for part in ("bias", "scales", "weights")] + \
        [f"q.{l}.dense.{part}.npy" for l in (1, 2) for part in ("multiplier", "shift")]
    check(listing() == sorted(expected), f"files: {listing()}")
    with open("q.json") as f:
        doc = json.load(f)
    check(doc["dtype"] == "int8" and doc["name"] == "mlp", str(doc)[:200])
    folder = os.path.dirname(SHIPPED_MLP)
    for index, layer in enumerate(doc["layers"]):
        if layer["type"] != "dense":
            continue
        shape, weights = npy.load(os.path.join(folder, f"mlp.{index}.dense.weights.npy"))
        _, bias = npy.load(os.path.join(folder, f"mlp.{index}.dense.bias.npy"))
        k, n = shape
        q_shape, q_dtype, q_weights = npy.load_int(layer["weights"])
        check(q_shape == (k, n) and q_dtype == "|i1", f"{layer['weights']}: {q_shape} {q_dtype}")
        _, b_dtype, q_bias = npy.load_int(layer["bias"])
        check(b_dtype == "<i4" and len(q_bias) == n, layer["bias"])
        _, scales = npy.load(layer["weight_scales"])
        s_in = layer["input"]["scale"]
        for j in range(n):
            column = [weights[r * n + j] for r in range(k)]
            check(scales[j] == f32(max(abs(w) for w in column) / 127), f"layer {index} scale {j}")
            for r in range(k):
                want = max(-127, min(127, round_half_away(column[r] / scales[j])))
                check(q_weights[r * n + j] == want, f"layer {index} weight ({r}, {j})")
            check(q_bias[j] == round_half_away(bias[j] / (s_in * scales[j])),
                  f"layer {index} bias {j}")
        if "output" in layer:
            _, _, mult = npy.load_int(layer["multiplier"])
            _, _, shift = npy.load_int(layer["shift"])
            for j in range(n):
                want = q_scale(s_in * scales[j] / layer["output"]["scale"])
                check((mult[j], shift[j]) == want, f"layer {index} column {j}: M, s = "
                      f"{mult[j]}, {shift[j]}, expected {want}")
            check(layer["output"]["zero_point"] == -128, "relu output, zero point -128")
    model = tpu("eval", "--net", "q.json", "--backend", "model", "--images", "500", "--compare",
                "host").stdout
    check(model.startswith("mlp int8: 500 test images"), model)
    check("accuracy on host         " in model and "500 of 500 predictions the same\n" in model,
          model)
    bf16 = tpu("eval", "--net", SHIPPED_MLP, "--backend", "model", "--images", "500").stdout
    check(abs(accuracy_of(model) - accuracy_of(bf16)) <= 0.02, model + bf16)


@case
@also_without_rtl
def quantize_cnn_then_eval(tpu):
    """The CNN quantised on 16 training images: conv2d layers, max-pooling and the same
    predictions on the model and the host."""
    out = tpu("quantize", "--net", SHIPPED_CNN, "--out", "cq.json", "--calibration", 16).stdout
    check(re.search(r"^conv2d 0 \(relu\) +range \[0, ", out, re.M), out)
    model = tpu("eval", "--net", "cq.json", "--backend", "model", "--images", "100",
                "--compare", "host").stdout
    check("100 of 100 predictions the same" in model, model)
    check(accuracy_of(model) > 0.85, model)


@case
def quantize_eval_rtl(tpu):
    """Both quantised networks on the RTL: the same predictions as the model and the host's int8
    reference, with cycles per image and the table per operator."""
    for net, images in ((SHIPPED_MLP, 8), (SHIPPED_CNN, 2)):
        tpu("quantize", "--net", net, "--out", "q.json", "--calibration", 16)
        rtl = tpu("eval", "--net", "q.json", "--backend", "rtl", "--images", images, "--batch",
                  4, "--compare", "model", "host", "--stats").stdout
        for other in ("model", "host"):
            check(re.search(rf"^accuracy on {other} .*; {images} of {images} predictions the "
                            rf"same$", rtl, re.M), rtl)
        check(re.search(r"^cycles per image +[0-9]+", rtl, re.M), rtl)
        # The int8 products' rows of the per-operator table, with the RTL's cycles.
        check(re.search(r"^QGemm +[0-9]+ +core +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ ", rtl, re.M), rtl)


QUANTIZE_BAD_INPUTS = {
    "no_net": (["quantize", "--out", "q.json"], "--net is required"),
    "no_out": (["quantize", "--net", SHIPPED_MLP], "--out is required"),
    "absent_net": (["quantize", "--net", "absent.json", "--out", "q.json"],
                   "absent.json: cannot open"),
    "broken_net": (["quantize", "--net", "broken.json", "--out", "q.json"], "not valid JSON"),
    "calibration_zero": (["quantize", "--net", SHIPPED_MLP, "--out", "q.json", "--calibration",
                          "0"], "--calibration"),
    "calibration_too_many": (["quantize", "--net", SHIPPED_MLP, "--out", "q.json",
                              "--calibration", "60001"], "--calibration"),
    "no_data": (["quantize", "--net", SHIPPED_MLP, "--out", "q.json", "--data", "empty"],
                "Fashion-MNIST is not in empty"),
    "out_is_directory": (["quantize", "--net", SHIPPED_MLP, "--out", "empty"],
                         "empty: is a directory"),
    "out_in_missing_directory": (["quantize", "--net", SHIPPED_MLP, "--out", "none/q.json"],
                                 "none/q.json: cannot write in none"),
    "out_is_net": (["quantize", "--net", "mlp.json", "--out", "./mlp.json"],
                   "--out ./mlp.json: is the network to quantise"),
    "already_int8": (["quantize", "--net", "int8.json", "--out", "q.json"],
                     "int8.json: already quantised (dtype int8)"),
    "sigmoid": (["quantize", "--net", "sigmoid.json", "--out", "q.json"],
                "sigmoid.json: layer 1 (dense): int8 layers take none, relu or relu6, not "
                "sigmoid"),
    "train_int8": (["train", "--init", "int8.json", "--out", "n.json"],
                   "int8.json: a quantised (int8) network cannot be trained"),
    "eval_no_int8_core": (["eval", "--net", "int8.json", "--backend", "model", "--array",
                           "4x4_seq"], "int8.json: an int8 network, but the 4x4_seq core has no "
                                       "int8 datapath"),
    "eval_bad_multiplier": (["eval", "--net", "int8.json", "--backend", "model"],
                            "are outside Q-REQ's ranges"),
    "eval_bad_zero_point": (["eval", "--net", "zp.json", "--backend", "model"],
                            "zp.json: layer 1 (dense): output zero point 300 is outside "
                            "[-128, 127]"),
}


def quantize_bad_input(tpu, name):
    """Each refusal of `tpu quantize` (and of `tpu eval` on an int8 network): one line, exit
    status 2, no file written."""
    os.mkdir("empty")
    with open("broken.json", "w") as f:
        f.write('{"name": "x", "layers": [')
    copy_network(SHIPPED_MLP, "mlp")
    with open("mlp.json") as f:
        text = f.read()
    with open("sigmoid.json", "w") as f:
        f.write(text.replace('"relu"', '"sigmoid"'))
    if name.startswith("already") or name.startswith("eval") or name.startswith("train"):
        tpu("quantize", "--net", SHIPPED_MLP, "--out", "int8.json", "--calibration", 4)
    if name == "eval_bad_multiplier":
        shape, dtype, values = npy.load_int("int8.2.dense.multiplier.npy")
        values[5] = 12345
        npy.save_int("int8.2.dense.multiplier.npy", values)
    if name == "eval_bad_zero_point":
        with open("int8.json") as f:
            doc = json.load(f)
        doc["layers"][1]["output"]["zero_point"] = 300
        with open("zp.json", "w") as f:
            json.dump(doc, f)
    args, expected = QUANTIZE_BAD_INPUTS[name]
    check_bad_input(tpu, args, expected)


for _name in QUANTIZE_BAD_INPUTS:
    CASES[f"quantize_bad_{_name}"] = lambda tpu, n=_name: quantize_bad_input(tpu, n)
    ALSO_WITHOUT_RTL.append(f"quantize_bad_{_name}")


# --- The serial backend, on the board's simulation (--port sim) ---

SERIAL = ["--backend", "serial", "--port", "sim"]


def board_info(tpu):
    """The simulated board's `tpu info --port sim` lines, by their first word."""
    out = tpu("info", "--port", "sim").stdout
    return {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines() if line.strip()}


@case
def serial_info(tpu):
    info = board_info(tpu)
    for key in ("port", "host", "clock", "memory", "core", "peak"):
        check(key in info, f"no {key!r} line in tpu info --port sim: {info}")
    check(info["port"].startswith("sim:"), f"port: {info['port']}")
    dim = int(re.search(r"dim (\d+)", info["core"]).group(1))
    clock = float(re.search(r"([0-9.]+) MHz", info["clock"]).group(1))
    peak = float(re.search(r"([0-9.]+) GFLOPS", info["peak"]).group(1))
    check(abs(peak - 2 * dim * dim * clock / 1000) < 1e-6, f"peak {peak} GFLOPS is not 2 x "
          f"{dim}^2 MACs x {clock} MHz")


@case
def serial_gemm_matches_emulation_and_model(tpu):
    """The board computes the bits the contract gives and the model computes (the compiled
    configuration does not change a result's bits)."""
    rng = random.Random(30)
    for function, dtype in (("relu", "fp32"), ("leaky", "bf16"), ("none", "bf16")):
        m, k, n = 6, 11, 5
        a, b, c, bias = write_operands(rng, m, k, n)
        expected = [[activate(function, x, bf16(f32(DEFAULT_LEAKY_SLOPE))) for x in row]
                    for row in pre_activation(a, b, c, bias)]
        if dtype == "bf16":
            expected = [[bf16(x) for x in row] for row in expected]
        common = [*OPERAND_ARGS, "--act", function, "--out-dtype", dtype]
        tpu("gemm", *common, *SERIAL, "--out", "board.npy")
        check_matrix_bits("board.npy", expected, f"{function} {dtype} on the board")
        tpu("gemm", *common, "--backend", "model", "--array", ARRAY, "--out", "model.npy")
        check(same_file("board.npy", "model.npy"), "the board's result differs from the model's")


@case
def serial_gemm_stats(tpu):
    dim = int(re.search(r"dim (\d+)", board_info(tpu)["core"]).group(1))
    m, k, n = 7, 9, 6
    write_operands(random.Random(31), m, k, n)
    out = tpu("gemm", *OPERAND_ARGS, "--out", "out.npy", *SERIAL, "--stats").stdout
    cycles = int(re.search(r"^cycles +(\d+)$", out, re.M).group(1))
    check(f"({m * k * n} MACs at {dim * dim} per cycle)" in out, f"no ideal cycles in:\n{out}")
    rows = dict((name, int(value)) for name, value in
                re.findall(r"^(\w+) +(\d+) +[\d.]+ % of", out, re.M))
    check(rows.get("CYCLES") == cycles and rows.get("USEFUL_MACS") == m * k * n,
          f"counters:\n{out}")


@case
def serial_run_hand_written_program(tpu):
    # The same program, written for the simulated board's array.
    dim = int(re.search(r"dim (\d+)", board_info(tpu)["core"]).group(1))
    product, activated = hand_written_program(random.Random(32), dim)
    out = tpu("run", "program.s", *hand_written_data(dim), *SERIAL)
    check(out.stdout == "DONE after 7 instructions\n", f"stdout: {out.stdout!r}")
    check_matrix_bits("sum.npy", [[float(v) for v in r] for r in product], "on the board")
    check_matrix_bits("relu.npy", [[float(v) for v in r] for r in activated], "on the board")


@case
def serial_core_error(tpu):
    with open("program.s", "w") as f:
        f.write("sync\nmatmul fetch rows=1 host_addr=0x40 host_stride=8\nhalt\n")
    result = tpu("run", "program.s", *SERIAL, status=1)
    check(result.stderr.startswith("tpu: core stopped: ILLEGAL_FIELD at instruction 1"),
          f"stderr: {result.stderr!r}")


@case
def serial_trace(tpu):
    write_operands(random.Random(33), 3, 5, 2)
    tpu("gemm", *OPERAND_ARGS, "--out", "traced.npy", *SERIAL, "--trace", "board.fst")
    check(os.path.getsize("board.fst") > 1000, "the waveform is missing or empty")
    # The iCEBreaker's board, whose signals sim/board_seq.gtkw lays out: every one it names must
    # be in the waveform.
    tpu("gemm", *OPERAND_ARGS, "--out", "traced_seq.npy", "--backend", "serial", "--port",
        "sim:icebreaker", "--trace", "board_seq.fst")
    layout = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check_gtkw.py"),
                             os.path.join(ROOT, "sim", "board_seq.gtkw"), "board_seq.fst"],
                            capture_output=True, text=True)
    check(layout.returncode == 0, f"sim/board_seq.gtkw: {layout.stdout}{layout.stderr}")


# The int8-only board (fpga/ulx3s_int8): int8 products raw and requantised, bit for bit as the
# contract gives and as the model computes; a bf16 product is refused.
INT8_BOARD = ["--backend", "serial", "--port", "sim:ulx3s_int8"]


@case
def serial_int8_board(tpu):
    info = tpu("info", "--port", "sim:ulx3s_int8").stdout
    check("int8 only" in info and "GOPS int8" in info, f"tpu info of the int8 board:\n{info}")
    rng = random.Random(35)
    m, k, n = 7, 19, 11
    a, b, c = int8_operands(rng, m, k, n)
    mult, shift, bias = requant_columns(rng, n)
    npy.save_int("m.npy", mult)
    npy.save_int("s.npy", shift)
    npy.save_int("bias.npy", bias)
    za, zo = rng.randint(-128, 127), rng.randint(-128, 127)
    runs = (
        (["--c", "c.npy", "--zp-a", za], q_mac(a, b, c, za), "<i4"),
        (["--qmult", "m.npy", "--qshift", "s.npy", "--bias", "bias.npy", "--zp-a", za,
          "--zp-out", zo, "--act", "relu"],
         [[q_req(x, bias[j], mult[j], shift[j], zo, zo, 127) for j, x in enumerate(row)]
          for row in q_mac(a, b, za=za)], "|i1"))
    for args, expected, descr in runs:
        common = ["gemm", "--dtype", "int8", "--a", "a.npy", "--b", "b.npy", *args]
        tpu(*common, *INT8_BOARD, "--out", "board.npy")
        check_int_file("board.npy", expected, descr, f"{descr} on the int8 board")
        tpu(*common, "--backend", "model", "--array", ARRAY, "--out", "model.npy")
        check(same_file("board.npy", "model.npy"), "the int8 board's result differs from the model's")
    write_operands(rng, 3, 4, 2)
    check_bad_input(tpu, ["gemm", *OPERAND_ARGS, "--out", "bf16.npy", *INT8_BOARD],
                    "is int8-only")


def serial_bad_inputs():
    write_operands(random.Random(34), 5, 7, 3)
    npy.save("big_a.npy", [[1.0] * 300] * 300)
    npy.save("big_b.npy", [[1.0] * 300] * 300)


SERIAL_BAD_INPUTS = {
    "no_port": (["gemm", *OPERAND_ARGS, "--out", "o.npy", "--backend", "serial"],
                "--backend serial needs --port", 2),
    "array_with_serial": (["gemm", *OPERAND_ARGS, "--out", "o.npy", *SERIAL, "--array", ARRAY],
                          "--array does not go with --backend serial", 2),
    "port_without_serial": (["gemm", *OPERAND_ARGS, "--out", "o.npy", "--port", "sim"],
                            "--port and --baud go with --backend serial", 2),
    "baud_with_sim": (["gemm", *OPERAND_ARGS, "--out", "o.npy", *SERIAL, "--baud", "9600"],
                      "--baud does not go with --port sim", 2),
    "unknown_simulated_board": (["info", "--port", "sim:nope"], "no simulation of board 'nope'",
                                2),
    "missing_port": (["gemm", *OPERAND_ARGS, "--out", "o.npy", "--backend", "serial",
                      "--port", "/dev/no_such_tty"], "/dev/no_such_tty", 4),
    "product_beyond_board_memory": (["gemm", "--a", "big_a.npy", "--b", "big_b.npy", "--out",
                                     "o.npy", *SERIAL], "bytes of host memory; the board has", 2),
    "trace_with_real_port": (["gemm", *OPERAND_ARGS, "--out", "o.npy", "--backend", "serial",
                              "--port", "/dev/ttyUSB9", "--trace", "w.fst"], "--trace", 2),
}


def serial_bad_input(tpu, name):
    serial_bad_inputs()
    args, expected, status = SERIAL_BAD_INPUTS[name]
    check_bad_input(tpu, args, expected, status=status)


for _name in SERIAL_BAD_INPUTS:
    CASES[f"serial_bad_{_name}"] = lambda tpu, n=_name: serial_bad_input(tpu, n)
# A real port's path goes through the serial backend whether or not the tpu has the RTL.
ALSO_WITHOUT_RTL += ["serial_bad_no_port", "serial_bad_missing_port",
                     "serial_bad_trace_with_real_port"]


# --- tpu info, help, no subcommand ---

@also_without_rtl
@case
def info_lists_configurations(tpu):
    out = tpu("info").stdout
    for array in ARRAYS:
        check(re.search(rf"^{array} ", out, re.M), f"{array} missing from:\n{out}")
    out = tpu("info", "--array", "8x8_bus4").stdout.splitlines()
    check(len(out) == 2 and out[1].split()[:2] == ["8x8_bus4", "8"], f"info --array: {out}")
    # The int8 column: the array cores have the int8 datapath, the sequential one has not. The
    # vector column: 8x8_bus4 has no vector unit, as on a board; 16x16 has one of 16 lanes.
    check(out[0].split()[-2:] == ["int8", "vector"] and out[1].split()[-2:] == ["yes", "-"],
          f"info int8 and vector: {out}")
    out = tpu("info", "--array", "4x4_seq").stdout.splitlines()
    check(out[1].split()[-2:] == ["-", "-"], f"info int8 and vector of 4x4_seq: {out}")
    out = tpu("info", "--array", "16x16").stdout.splitlines()
    check(out[1].split()[-1] == "16", f"info vector of 16x16: {out}")
    # TPU v2's 128x128 core: no RTL in this build, the functional model runs it, to the same bits
    # as the 16x16 (both the contract's).
    out = tpu("info", "--array", "128x128_bus64").stdout.splitlines()
    check(out[0].split()[-3] == "rtl" and out[1].split()[-3] == "-", f"info rtl: {out}")
    write_operands(random.Random(5), 9, 40, 7)
    for array in ("16x16", "128x128_bus64"):
        tpu("gemm", *OPERAND_ARGS, "--out", f"{array}.npy", "--backend", "model", "--array", array)
    check(open("16x16.npy", "rb").read() == open("128x128_bus64.npy", "rb").read(),
          "the 128x128 core's product differs from the 16x16's")


@also_without_rtl
@case
def help_texts(tpu):
    check("Subcommands:" in tpu("--help").stdout, "tpu --help lists no subcommands")
    for command in ("gemm", "asm", "disasm", "run", "info", "train", "eval", "quantize",
                    "import", "infer", "compile", "allreduce"):
        out = tpu(command, "--help").stdout
        check(out.splitlines()[1].startswith(f"Usage: tpu {command}"), out)
    quantize = tpu("quantize", "--help").stdout
    for option in ("--net", "--out", "--calibration", "--data", "=1000", "Q-SCALE"):
        check(option in quantize, f"tpu quantize --help does not describe {option}")
    compile_help = tpu("compile", "--help").stdout
    for option in ("--out", "--array", "--batch", "=64", "MODEL.tpu"):
        check(option in compile_help, f"tpu compile --help does not describe {option}")
    gemm = tpu("gemm", "--help").stdout
    for option in ("--dtype", "--qmult", "--qshift", "--zp-a", "--zp-out"):
        check(option in gemm, f"tpu gemm --help does not describe {option}")


@also_without_rtl
@case
def no_subcommand(tpu):
    check_bad_input(tpu, [], "expected a subcommand")
    check_bad_input(tpu, ["multiply"], "unknown subcommand 'multiply'")


# --- a tpu built without the RTL simulation (TPU_RTL=OFF) ---

@without_rtl
def without_rtl_refuses_the_simulation(tpu):
    """--backend rtl and --port sim: one line naming the build option, exit 2, no output."""
    write_operands(random.Random(2), 3, 4, 5)
    gemm = ["gemm", "--a", "a.npy", "--b", "b.npy", "--out", "out.npy"]
    for args in ([*gemm, "--backend", "rtl"], [*gemm, "--backend", "serial", "--port", "sim"],
                 [*gemm, "--backend", "serial", "--port", "sim:icebreaker"],
                 ["eval", "--net", SHIPPED_MLP, "--backend", "rtl"],
                 ["eval", "--net", SHIPPED_MLP, "--backend", "model", "--compare", "rtl"],
                 ["info", "--port", "sim"]):
        check_bad_input(tpu, args, "-DTPU_RTL=ON")


@without_rtl
def without_rtl_runs_programs_on_the_model(tpu):
    """gemm and run on the functional model, by default and by name: exact results."""
    rng = random.Random(3)
    m, k, n = 6, 9, 5
    a = [[rng.randint(-4, 4) for _ in range(k)] for _ in range(m)]
    b = [[rng.randint(-4, 4) for _ in range(n)] for _ in range(k)]
    npy.save("a.npy", a)
    npy.save("b.npy", b)
    exact = [[float(sum(a[i][x] * b[x][j] for x in range(k))) for j in range(n)]
             for i in range(m)]
    for backend in ([], ["--backend", "model"]):
        tpu("gemm", "--a", "a.npy", "--b", "b.npy", "--out", "out.npy", "--array", ARRAY,
            *backend)
        check_matrix_bits("out.npy", exact, f"gemm {backend}")
    product, activated = hand_written_program(random.Random(6))
    out = tpu("run", "program.s", *HAND_WRITTEN_DATA, "--array", ARRAY).stdout
    check(out.startswith("DONE"), out)
    check_matrix_bits("sum.npy", [[float(v) for v in r] for r in product], "run: C + A x B")
    check_matrix_bits("relu.npy", [[float(v) for v in r] for r in activated],
                      "run: relu(C + A x B + bias)")


@without_rtl
def without_rtl_trains_and_evaluates(tpu):
    """A short training run and an evaluation, both on the functional model."""
    out = tpu("train", "--arch", "mlp", "--epochs", "1", "--examples", "2048", "--batch", "64",
              "--test-images", "200", "--out", "net.json").stdout
    check("wrote net.json" in out, out)
    model = tpu("eval", "--net", "net.json", "--images", "500").stdout
    check(accuracy_of(model) > 0.6, model)


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return 0
    if sys.argv[1:] == ["--list-without-rtl"]:
        print("\n".join([*ALSO_WITHOUT_RTL, *ONLY_WITHOUT_RTL]))
        return 0
    return run_case({**CASES, **ONLY_WITHOUT_RTL}, __doc__)


def run_case(cases, usage):
    """TPU CASE on the command line: runs that case in a fresh directory; 0 if it passes."""
    if len(sys.argv) != 3 or sys.argv[2] not in cases:
        print(usage.strip(), file=sys.stderr)
        return 2
    tool, name = Tool(os.path.abspath(sys.argv[1])), sys.argv[2]
    with tempfile.TemporaryDirectory(prefix=f"tpu_cli_{name}_") as work:
        os.chdir(work)
        try:
            cases[name](tool)
        except Failure as failure:
            print(f"FAIL {name}: {failure}")
            return 1
    print(f"ok {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
