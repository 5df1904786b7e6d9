#!/usr/bin/env python3
"""Runs the examples of docs/programming.md, so that what the doc shows is what the tool does.

    doc_examples.py --list DOC            the names of the examples
    doc_examples.py TPU DOC NAME          runs one example on both backends

An example is every fenced block whose info string says example=NAME, taken in order:

    ```asm example=NAME       the program, saved as NAME.s (it must be assembled and used)
    ```python example=NAME    run as it is, with a small stand-in for NumPy (numpy is not a
                              dependency of the tests); assert statements check results
    ```sh example=NAME        `tpu ...` commands, run with the tool; `tpu run` and `tpu gemm`
                              get --backend rtl in one pass and --backend model in the other;
                              with status=N every command must exit with N (0 otherwise)
    ```text example=NAME      what the commands of the sh block before it print (stdout; with
                              status=N, stdout then stderr); with backend=rtl or
                              backend=model, compared in that pass only

Each pass starts in a fresh directory with a fresh Python namespace.
"""
import math
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import npy_files as npy  # noqa: E402  (the NumPy-free .npy reader and writer)

FENCE = re.compile(r"^```(\w+)((?: +\w+=\S+)+) *\n(.*?)^```$", re.M | re.S)
BACKENDS = ("model", "rtl")


class Failure(Exception):
    pass


# --- A stand-in for the few NumPy calls the doc makes, with NumPy's meaning ---

def f32(x):
    return npy.from_bits(npy.bits(x))


class Array:
    """A float32 array of one or two dimensions."""

    def __init__(self, values, shape):
        self.values = [f32(v) for v in values]
        self.shape = tuple(shape)

    def reshape(self, *shape):
        return Array(self.values, shape)

    def rows(self):
        cols = self.shape[-1]
        return [self.values[r * cols:(r + 1) * cols] for r in range(len(self.values) // cols)]

    def __getitem__(self, row):
        """Row `row` of a matrix, as a vector."""
        if len(self.shape) != 2 or not isinstance(row, int):
            raise TypeError("only a matrix's rows can be indexed")
        return Array(self.rows()[row], self.shape[1:])

    def __matmul__(self, other):
        (m, k), (k2, n) = self.shape, other.shape
        if k != k2:
            raise ValueError(f"matmul: shapes {self.shape} and {other.shape} do not match")
        a, b = self.rows(), other.rows()
        return Array([math.fsum(a[i][x] * b[x][j] for x in range(k))
                      for i in range(m) for j in range(n)], (m, n))

    def __add__(self, other):
        """Element by element; a vector is added to every row of a matrix (broadcasting)."""
        if isinstance(other, (int, float)):
            return Array([v + other for v in self.values], self.shape)
        if other.shape == self.shape:
            return Array([x + y for x, y in zip(self.values, other.values)], self.shape)
        if len(other.shape) == 1 and other.shape[0] == self.shape[-1]:
            cols = self.shape[-1]
            return Array([v + other.values[i % cols] for i, v in enumerate(self.values)],
                         self.shape)
        raise ValueError(f"add: shapes {self.shape} and {other.shape} do not broadcast")

    __radd__ = __add__


def as_array(obj):
    if isinstance(obj, Array):
        return obj
    if obj and isinstance(obj[0], (list, tuple)):
        return Array([v for row in obj for v in row], (len(obj), len(obj[0])))
    return Array(list(obj), (len(obj),))


def save(path, array):
    array = as_array(array)
    npy.save(path, array.rows() if len(array.shape) == 2 else array.values)


def load(path):
    shape, values = npy.load(path)
    return Array(values, shape)


def same_values(x, y, close):
    x, y = as_array(x), as_array(y)
    return x.shape == y.shape and all(close(a, b) for a, b in zip(x.values, y.values))


class Generator:
    """np.random.default_rng: normal values, but not NumPy's sequence (the doc never shows the
    values it draws)."""

    def __init__(self, seed):
        self.random = random.Random(seed)

    def standard_normal(self, shape, dtype=None):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return Array([self.random.gauss(0, 1) for _ in range(math.prod(shape))], shape)


def numpy_stand_in():
    np = types.ModuleType("numpy")
    np.float32 = "float32"
    np.array = lambda obj, dtype=None: as_array(obj)
    np.arange = lambda n, dtype=None: Array(list(range(n)), (n,))
    np.save, np.load = save, load
    np.maximum = lambda x, floor: Array([max(v, floor) for v in x.values], x.shape)
    np.array_equal = lambda x, y: same_values(x, y, lambda a, b: a == b)
    np.allclose = lambda x, y, rtol=1e-5, atol=1e-8: same_values(
        x, y, lambda a, b: abs(a - b) <= atol + rtol * abs(b))
    np.random = types.SimpleNamespace(default_rng=Generator)
    return np


# --- The examples ---

def blocks(doc):
    """(example, language, options, text) of every marked block, in document order."""
    with open(doc) as f:
        text = f.read()
    for match in FENCE.finditer(text):
        options = dict(word.split("=", 1) for word in match.group(2).split())
        if "example" in options:
            yield options.pop("example"), match.group(1), options, match.group(3)


def run_commands(tool, text, backend, status):
    """What the `tpu` commands of an sh block print, run on `backend`."""
    stdout = ""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        if words[0] != "tpu":
            raise Failure(f"sh blocks hold only tpu commands: {line}")
        args = words[1:]
        if args[0] in ("run", "gemm"):
            while "--backend" in args:
                at = args.index("--backend")
                del args[at:at + 2]
            args += ["--backend", backend]
        result = subprocess.run([tool, *args], capture_output=True, text=True)
        if result.returncode != status:
            raise Failure(f"{line}\nexit status {result.returncode} on {backend}, expected "
                          f"{status}:\n{result.stdout}{result.stderr}")
        stdout += result.stdout + (result.stderr if status else "")
    return stdout


def run_example(tool, doc, name, backend):
    parts = [(language, options, text) for example, language, options, text in blocks(doc)
             if example == name]
    if not parts:
        raise Failure(f"{doc} has no example {name}")
    programs = [text for language, _, text in parts if language == "asm"]
    if len(programs) > 1:
        raise Failure(f"example {name} has {len(programs)} asm blocks; one is allowed")
    if programs:
        with open(f"{name}.s", "w") as f:
            f.write(programs[0])
        commands = "".join(text for language, _, text in parts if language == "sh")
        if not re.search(rf"\b{name}\.(s|bin)\b", commands):
            raise Failure(f"no command of example {name} uses {name}.s")
    sys.modules["numpy"] = numpy_stand_in()
    namespace = {}
    stdout = None
    for language, options, text in parts:
        if language == "python":
            try:
                exec(compile(text, f"{doc}, example {name}", "exec"), namespace)
            except AssertionError:
                raise Failure(f"an assertion of example {name} fails on {backend}:\n{text}")
        elif language == "sh":
            stdout = run_commands(tool, text, backend, int(options.get("status", 0)))
        elif language == "text":
            if stdout is None:
                raise Failure(f"example {name}: a text block with no sh block before it")
            if options.get("backend", backend) == backend and stdout != text:
                raise Failure(f"example {name} on {backend} prints\n{stdout}\n"
                              f"but {doc} shows\n{text}")
        elif language != "asm":
            raise Failure(f"example {name}: unknown block language {language}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--list":
        print("\n".join(dict.fromkeys(example for example, *_ in blocks(sys.argv[2]))))
        return 0
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tool, doc, name = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    try:
        for backend in BACKENDS:
            with tempfile.TemporaryDirectory(prefix=f"tpu_doc_{name}_") as work:
                os.chdir(work)
                run_example(tool, doc, name, backend)
    except Failure as failure:
        print(f"FAIL {name}: {failure}")
        return 1
    print(f"ok {name}: model and rtl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
