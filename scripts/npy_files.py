"""Just enough of NumPy's .npy format for the CLI tests (tests/cli), which must run without NumPy,
and for scripts/bench_tpu_core.py.

save() writes float32 arrays (and, for the bad-input tests, any dtype, shape or payload);
load() reads what `tpu` writes: float32, C order, one or two dimensions. save_int() and
load_int() do the same for the int8 ('|i1') and int32 ('<i4') files of `tpu gemm --dtype int8`.
"""
import ast
import struct

MAGIC = b"\x93NUMPY"


def header(descr, shape):
    dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape))
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    # NumPy pads the header with spaces so that the data start on a multiple of 64 bytes.
    text += " " * ((64 - (len(MAGIC) + 4 + len(text) + 1) % 64) % 64) + "\n"
    return MAGIC + b"\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def flatten(rows):
    """Row-major values of a matrix (a list of rows) or of a vector (a list of numbers)."""
    if rows and isinstance(rows[0], (list, tuple)):
        return [v for row in rows for v in row], (len(rows), len(rows[0]))
    return list(rows), (len(rows),)


def save(path, rows, descr="<f4", shape=None, payload=None):
    """Writes a matrix or vector as float32; `descr`, `shape` and `payload` (raw data bytes)
    override what is written, to make malformed files."""
    values, natural_shape = flatten(rows)
    if payload is None:
        payload = b"".join(struct.pack("<f", v) for v in values)
    with open(path, "wb") as f:
        f.write(header(descr, natural_shape if shape is None else shape) + payload)


def save_bits(path, rows_of_bits):
    """Writes a float32 matrix given as raw 32-bit patterns (NaNs keep their payloads)."""
    values, shape = flatten(rows_of_bits)
    with open(path, "wb") as f:
        f.write(header("<f4", shape) + b"".join(struct.pack("<I", v) for v in values))


# struct's letters for the integer dtypes.
INT_FORMATS = {"|i1": "b", "<i4": "i"}


def save_int(path, rows, descr="<i4"):
    """Writes a matrix or vector of integers as int8 ('|i1') or int32 ('<i4')."""
    values, shape = flatten(rows)
    with open(path, "wb") as f:
        f.write(header(descr, shape) + struct.pack(f"<{len(values)}{INT_FORMATS[descr]}", *values))


def read_header(data, path):
    if not data.startswith(MAGIC) or data[6] != 1:
        raise ValueError(f"{path}: not a version 1.0 .npy file")
    length = struct.unpack("<H", data[8:10])[0]
    return ast.literal_eval(data[10:10 + length].decode("latin1")), data[10 + length:]


def load_int(path):
    """(shape, dtype string, values in C order) of an int8 or int32 .npy file."""
    with open(path, "rb") as f:
        fields, payload = read_header(f.read(), path)
    descr = fields["descr"]
    if descr not in INT_FORMATS or fields["fortran_order"]:
        raise ValueError(f"{path}: not int8 or little-endian int32 in C order: {fields}")
    count = len(payload) // struct.calcsize(INT_FORMATS[descr])
    return tuple(fields["shape"]), descr, list(struct.unpack(f"<{count}{INT_FORMATS[descr]}",
                                                             payload))


def load_bits(path):
    """(shape, raw 32-bit patterns in C order) of a float32 .npy file."""
    with open(path, "rb") as f:
        fields, payload = read_header(f.read(), path)
    if fields["descr"] != "<f4" or fields["fortran_order"]:
        raise ValueError(f"{path}: not little-endian float32 in C order: {fields}")
    count = len(payload) // 4
    return tuple(fields["shape"]), list(struct.unpack(f"<{count}I", payload))


def load(path):
    """(shape, values in C order) of a float32 .npy file."""
    shape, bits = load_bits(path)
    return shape, [from_bits(b) for b in bits]


def bits(value):
    """The float32 bit pattern of a Python float (rounded to float32 first)."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


def from_bits(pattern):
    return struct.unpack("<f", struct.pack("<I", pattern))[0]
