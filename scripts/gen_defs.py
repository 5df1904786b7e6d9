#!/usr/bin/env python3
"""Generates the instruction-set, register-map and host-link definitions from one description.

Reads rtl/defs/isa.toml, rtl/defs/regmap.toml and rtl/defs/link.toml and writes
  rtl/isa/tpu_isa_pkg.sv, rtl/isa/tpu_regs_pkg.sv, rtl/link/tpu_link_pkg.sv  SystemVerilog packages
  rtl/isa/tpu_decode.sv                                 the instruction decoder of both cores
  sw/include/tpu/isa_defs.hpp, regs.hpp, link_defs.hpp  C++17 headers
  the tables between the GENERATED marker lines of docs/isa.md, docs/registers.md and
  docs/link.md.

Usage: gen_defs.py [--check] [--isa FILE] [--regmap FILE] [--link FILE] [--out-dir DIR]
Without --check it writes each output that differs from what it generates and names it. With
--check it writes nothing and names each stale output. Exit status: 0 done or up to date,
1 stale outputs (--check only), 2 bad input, reported in one line.
"""
import argparse
import re
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = "scripts/gen_defs.py"

ISA_PKG = Path("rtl/isa/tpu_isa_pkg.sv")
DECODER = Path("rtl/isa/tpu_decode.sv")
REGS_PKG = Path("rtl/isa/tpu_regs_pkg.sv")
ISA_HPP = Path("sw/include/tpu/isa_defs.hpp")
REGS_HPP = Path("sw/include/tpu/regs.hpp")
LINK_PKG = Path("rtl/link/tpu_link_pkg.sv")
LINK_HPP = Path("sw/include/tpu/link_defs.hpp")
ISA_DOC = Path("docs/isa.md")
REGS_DOC = Path("docs/registers.md")
LINK_DOC = Path("docs/link.md")

WORD_BITS = 32
# The AXI4-Lite slave decodes a 4 KiB window; every register and counter lies in it.
REG_ADDR_WIDTH = 12
# The core carries error codes as 8-bit values (zero-extended into ERROR_CODE).
ERROR_CODE_BITS = 8
# Each counter is a 64-bit LO/HI register pair.
COUNTER_STRIDE = 8
REG_ACCESS = ("ro", "rw", "wo")
# Fields every instruction has, whatever its opcode; opcodes may not list them.
IMPLICIT_FIELDS = ("opcode", "flags")
# The host link's commands, statuses and sync bytes are bytes; lengths are 16-bit numbers.
LINK_BYTE_BITS = 8
LINK_LENGTH_BITS = 16
# Generated comments and C++ code stay within the project's 100 columns where they can.
LINE_WIDTH = 100

UPPER_NAME = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*")
LOWER_NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
BEGIN_MARKER = re.compile(r"<!-- BEGIN GENERATED: (\S+) -->")
END_MARKER = re.compile(r"<!-- END GENERATED: (\S+) -->")
TYPE_NAMES = {int: "an integer", str: "a string", list: "an array", dict: "a table",
              bool: "true or false"}
# What an opcode touches and its field-value rules (the keys are described in rtl/defs/isa.toml).
MEMORIES = ("ub", "acc")
HOST_DIRECTIONS = ("read", "write")
HOST_ROW_FIELDS = ("rows", "k_valid")
LIMITS = ("1..dim", "function", "vector_op", "nonzero")
# The fields each operand addresses with, which its opcode must use.
OPERAND_FIELDS = {"source": ("addr_a", "step_a"), "destination": ("addr_b", "step_b"),
                  "bias": ("bias_addr", "bias_step"),
                  "host": ("host_addr", "host_stride", "host_step")}


class DefsError(Exception):
    """Bad input or an unusable output folder; reported in one line, exit status 2."""


# ---------------------------------------------------------------------------------------------
# The description, checked


@dataclass(frozen=True)
class Field:
    name: str
    word: int
    lsb: int
    width: int
    doc: str

    @property
    def flat_lsb(self):
        return self.word * WORD_BITS + self.lsb

    @property
    def flat_mask(self):
        return ((1 << self.width) - 1) << self.flat_lsb

    @property
    def bits(self):
        return bit_range(self.lsb, self.width)


@dataclass(frozen=True)
class Flag:
    name: str
    bit: int
    doc: str
    int8: bool = False  # selects the int8 datapath: ILLEGAL_FIELD in a core built without it
    vector: bool = False  # needs the vector unit's core: ILLEGAL_FIELD in a core built without it


@dataclass(frozen=True)
class Rows:
    """On-chip rows an opcode reads or writes: in `memory`, or in the other memory when the flag
    `switch_if` (a Flag or None) is set (the key acc_if of a UB operand, ub_if of an ACC one)."""
    memory: str
    switch_if: object

    @property
    def other(self):
        return "acc" if self.memory == "ub" else "ub"


@dataclass(frozen=True)
class Host:
    """Host bytes an opcode reads or writes."""
    write: bool
    rows: str       # the field that counts rows per iteration
    only_if: object  # the Flag without which there is no host access, or None
    fp32_if: object  # the Flag that makes rows fp32 (4 bytes a lane), or None
    int8_if: object = None  # the Flag that makes rows int8 (1 byte a lane), or None


@dataclass(frozen=True)
class ZeroUnless:
    """Fields that must be zero unless a flag is set (`flag`) or func is a function (`function`)."""
    flag: object
    function: object
    fields: tuple

    @property
    def condition(self):
        return self.flag.name if self.flag else self.function.name


@dataclass(frozen=True)
class Opcode:
    name: str
    value: int
    mnemonic: str
    fields: tuple
    flags: tuple
    doc: str
    repeats: bool = False
    source: object = None       # Rows
    destination: object = None  # Rows
    bias_if: object = None      # the Flag that adds a bias row, or None
    bias_always: bool = False   # the second operand is read whatever the flags (bias_if None)
    bias_rows_unless: object = None  # without this Flag, `rows` second-operand rows an iteration
    quant_if: object = None     # the Flag that makes the bias rows a block of three, or None
    host: object = None         # Host
    limits: tuple = ()          # (Field, one of LIMITS)
    zero_unless: tuple = ()     # ZeroUnless
    in_place: bool = False      # writes back the source rows it reads
    links: bool = False         # uses the inter-chip links: legal only in a core that has them
    vector: bool = False        # runs on the vector unit: legal only in a core that has one
    float_unless: object = None  # the Flag without which it needs the float datapath, or None
    requires: tuple = ()        # (Flag, Flag): the first only with the second
    excludes: tuple = ()        # (Flag, Flag or Field): with the first, the second clear or zero

    @property
    def snake(self):
        return self.name.lower()


@dataclass(frozen=True)
class Function:
    name: str
    value: int
    mnemonic: str
    doc: str
    vector: bool = False  # a function of the vector unit's: legal only in a core that has one


@dataclass(frozen=True)
class Isa:
    instruction_bytes: int
    fields: dict
    opcodes: tuple
    functions: tuple
    vector_ops: tuple

    @property
    def instruction_bits(self):
        return self.instruction_bytes * 8

    @property
    def words(self):
        return self.instruction_bytes * 8 // WORD_BITS

    def flags_mask(self, opcode):
        return sum(1 << flag.bit for flag in opcode.flags)

    def used_bits(self, opcode):
        """Bits an instruction with this opcode may set; all others must be zero."""
        flags_lsb = self.fields["flags"].flat_lsb
        mask = self.fields["opcode"].flat_mask | (self.flags_mask(opcode) << flags_lsb)
        for field in opcode.fields:
            mask |= field.flat_mask
        return mask


@dataclass(frozen=True)
class RegField:
    name: str
    lsb: int
    width: int
    doc: str

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: str
    reset: int | None
    doc: str
    fields: tuple


@dataclass(frozen=True)
class Counter:
    name: str
    offset: int
    doc: str


@dataclass(frozen=True)
class ErrorCode:
    name: str
    value: int
    doc: str


@dataclass(frozen=True)
class RegMap:
    registers: tuple
    counters: tuple
    errors: tuple


@dataclass(frozen=True)
class LinkCode:
    name: str
    value: int
    doc: str


@dataclass(frozen=True)
class InfoField:
    name: str
    offset: int
    bytes: int
    doc: str


@dataclass(frozen=True)
class Link:
    request_sync: int
    reply_sync: int
    max_payload: int
    frame_timeout_bits: int
    version: int
    commands: tuple
    statuses: tuple
    info: tuple

    @property
    def info_bytes(self):
        return sum(field.bytes for field in self.info)


def checked(table, where, required, optional=None):
    """Returns `table` after checking that it is a table with every key of `required`, no key
    outside `required` and `optional`, and values of the types those map the keys to."""
    optional = optional or {}
    if not isinstance(table, dict):
        raise DefsError(f"{where}: expected a table")
    # Unknown keys first: a misspelt key is also a missing one, and its name is the clue.
    for key, value in table.items():
        kind = required.get(key, optional.get(key))
        if kind is None:
            raise DefsError(f"{where}: unknown key '{key}'")
        # TOML booleans load as Python bools, which are ints too.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise DefsError(f"{where}.{key}: expected {TYPE_NAMES[kind]}")
    for key in required:
        if key not in table:
            raise DefsError(f"{where}: missing key '{key}'")
    return table


def check_name(name, pattern, where):
    if not pattern.fullmatch(name):
        style = "UPPER_SNAKE_CASE" if pattern is UPPER_NAME else "lower_snake_case"
        raise DefsError(f"{where}: '{name}' is not a {style} name")


def check_doc(doc, where):
    # Docs become comments, string literals and table cells, none of which may span lines.
    if not doc.strip() or any(ord(char) < 0x20 for char in doc):
        raise DefsError(f"{where}.doc: expected one non-empty line of text")


def check_range(value, low, high, where, what):
    if not low <= value <= high:
        raise DefsError(f"{where}: {what} {value} is outside {low}..{high}")


def check_unique(named_keys, what, where, show=str):
    """Fails if two of the (name, key) pairs in `named_keys` have the same key."""
    first_with = {}
    for name, key in named_keys:
        if key in first_with:
            raise DefsError(f"{where}: {first_with[key]} and {name} have the same {what} "
                            f"{show(key)}")
        first_with[key] = name


def check_disjoint(parts, where):
    """Fails if two of the (name, bit mask) pairs in `parts` share a bit."""
    for index, (name, mask) in enumerate(parts):
        for other_name, other_mask in parts[index + 1:]:
            if mask & other_mask:
                raise DefsError(f"{where}: {name} and {other_name} overlap")


def parse_isa(data, source):
    top = checked(data, source,
                  {"instruction_bytes": int, "fields": dict, "opcodes": dict, "functions": dict,
                   "vector_ops": dict})
    instruction_bytes = top["instruction_bytes"]
    if instruction_bytes <= 0 or instruction_bytes % (WORD_BITS // 8):
        raise DefsError(f"{source}: instruction_bytes {instruction_bytes} is not a positive "
                        f"multiple of {WORD_BITS // 8}")
    words = instruction_bytes * 8 // WORD_BITS

    fields = {}
    for name, entry in top["fields"].items():
        where = f"{source}: fields.{name}"
        check_name(name, LOWER_NAME, where)
        spec = checked(entry, where, {"word": int, "lsb": int, "width": int, "doc": str})
        check_range(spec["word"], 0, words - 1, where, "word")
        check_range(spec["lsb"], 0, WORD_BITS - 1, where, "lsb")
        check_range(spec["width"], 1, WORD_BITS, where, "width")
        if spec["lsb"] + spec["width"] > WORD_BITS:
            raise DefsError(f"{where}: lsb {spec['lsb']} + width {spec['width']} is wider than "
                            f"its {WORD_BITS}-bit word")
        check_doc(spec["doc"], where)
        fields[name] = Field(name, spec["word"], spec["lsb"], spec["width"], spec["doc"])
    for name in (*IMPLICIT_FIELDS, "func", "vop"):
        if name not in fields:
            raise DefsError(f"{source}: fields: the '{name}' field is missing")

    functions = parse_codes(top["functions"], fields["func"], f"{source}: functions",
                            vector_key=True)
    vector_ops = parse_codes(top["vector_ops"], fields["vop"], f"{source}: vector_ops")
    opcodes = [parse_opcode(name, entry, fields, functions, f"{source}: opcodes.{name}")
               for name, entry in top["opcodes"].items()]
    opcodes.sort(key=lambda opcode: opcode.value)
    check_unique([(opcode.name, opcode.value) for opcode in opcodes], "value",
                 f"{source}: opcodes", show=lambda value: f"0x{value:02X}")
    check_unique([(opcode.name, opcode.mnemonic) for opcode in opcodes], "mnemonic",
                 f"{source}: opcodes")

    return Isa(instruction_bytes, fields, tuple(opcodes), functions, vector_ops)


def parse_codes(table, field, where, vector_key=False):
    """A table of the codes a field holds ([functions] of func, [vector_ops] of vop). With
    vector_key, a code may say `vector = true`: it needs a core with a vector unit."""
    codes = []
    for name, entry in table.items():
        code_where = f"{where}.{name}"
        check_name(name, UPPER_NAME, code_where)
        spec = checked(entry, code_where, {"value": int, "mnemonic": str, "doc": str},
                       {"vector": bool} if vector_key else {})
        check_range(spec["value"], 0, (1 << field.width) - 1, code_where, "value")
        check_name(spec["mnemonic"], LOWER_NAME, f"{code_where}.mnemonic")
        check_doc(spec["doc"], code_where)
        codes.append(Function(name, spec["value"], spec["mnemonic"], spec["doc"],
                              spec.get("vector", False)))
    codes.sort(key=lambda code: code.value)
    check_unique([(code.name, code.value) for code in codes], "value", where)
    check_unique([(code.name, code.mnemonic) for code in codes], "mnemonic", where)
    # Decoders accept a value below the count, which is right only for values 0 .. count-1.
    if [code.value for code in codes] != list(range(len(codes))):
        raise DefsError(f"{where}: values must be 0 .. {len(codes) - 1}, without gaps")
    # ... and a core without a vector unit accepts those below base_count(codes).
    if not all(code.vector for code in codes[base_count(codes):]):
        raise DefsError(f"{where}: the codes with vector = true must be the highest ones")
    return tuple(codes)


def base_count(codes):
    """The number of codes every core has: those below the first that needs a vector unit."""
    return next((code.value for code in codes if code.vector), len(codes))


def parse_opcode(name, entry, fields, functions, where):
    check_name(name, UPPER_NAME, where)
    spec = checked(entry, where, {"value": int, "mnemonic": str, "fields": list, "flags": dict,
                                  "doc": str},
                   {"repeats": bool, "source": dict, "destination": dict, "bias": dict,
                    "host": dict, "limits": dict, "zero_unless": dict, "in_place": bool,
                    "links": bool, "vector": bool, "float_unless": str, "requires": dict,
                    "excludes": dict})
    check_range(spec["value"], 0, (1 << fields["opcode"].width) - 1, where, "value")
    check_name(spec["mnemonic"], LOWER_NAME, f"{where}.mnemonic")
    check_doc(spec["doc"], where)

    flags = []
    for flag_name, flag_entry in spec["flags"].items():
        flag_where = f"{where}.flags.{flag_name}"
        check_name(flag_name, UPPER_NAME, flag_where)
        flag_spec = checked(flag_entry, flag_where, {"bit": int, "doc": str},
                            {"int8": bool, "vector": bool})
        check_range(flag_spec["bit"], 0, fields["flags"].width - 1, flag_where, "bit")
        check_doc(flag_spec["doc"], flag_where)
        flags.append(Flag(flag_name, flag_spec["bit"], flag_spec["doc"],
                          flag_spec.get("int8", False), flag_spec.get("vector", False)))
    flags.sort(key=lambda flag: flag.bit)
    check_unique([(flag.name, flag.bit) for flag in flags], "bit", f"{where}.flags")

    used = []
    for field_name in spec["fields"]:
        if not isinstance(field_name, str) or field_name not in fields:
            raise DefsError(f"{where}.fields: {field_name!r} is not a field of [fields]")
        if field_name in IMPLICIT_FIELDS:
            raise DefsError(f"{where}.fields: '{field_name}' is part of every instruction and "
                            "is not listed")
        if fields[field_name] in used:
            raise DefsError(f"{where}.fields: '{field_name}' is listed twice")
        used.append(fields[field_name])
    # The whole flags field counts, not only the defined flags: its other bits are reserved.
    check_disjoint([(f"field {field.name} (w{field.word}[{field.bits}])", field.flat_mask)
                    for field in [fields[name] for name in IMPLICIT_FIELDS] + used], where)
    return Opcode(name, spec["value"], spec["mnemonic"], tuple(used), tuple(flags), spec["doc"],
                  **parse_semantics(spec, fields, functions, used, flags, where))


def parse_semantics(spec, fields, functions, used, flags, where):
    """What an opcode touches and its field-value rules, as Opcode's keyword arguments."""
    used_names = {field.name for field in used}
    flag_named = {flag.name: flag for flag in flags}

    def needs(field_names, key):
        for field_name in field_names:
            if field_name not in used_names:
                raise DefsError(f"{where}.{key}: needs the field '{field_name}', which the "
                                "opcode does not use")

    def flag(name, key):
        if name is None:
            return None
        if name not in flag_named:
            raise DefsError(f"{where}.{key}: '{name}' is not a flag of this opcode")
        return flag_named[name]

    def choice(value, allowed, key):
        if value not in allowed:
            raise DefsError(f"{where}.{key}: '{value}' is not one of {', '.join(allowed)}")
        return value

    semantics = {"repeats": spec.get("repeats", False), "links": spec.get("links", False),
                 "vector": spec.get("vector", False), "in_place": spec.get("in_place", False)}
    if semantics["repeats"]:
        needs(("count", "rows"), "repeats")
    if semantics["in_place"] and ("source" not in spec or "destination" in spec):
        raise DefsError(f"{where}.in_place: needs a source and no destination")
    for role in ("source", "destination"):
        if role in spec:
            rows = checked(spec[role], f"{where}.{role}", {"memory": str},
                           {"acc_if": str, "ub_if": str})
            memory = choice(rows["memory"], MEMORIES, f"{role}.memory")
            switch_key = "acc_if" if memory == "ub" else "ub_if"
            wrong_key = "ub_if" if memory == "ub" else "acc_if"
            if wrong_key in rows:
                raise DefsError(f"{where}.{role}.{wrong_key}: the operand is in the "
                                f"{memory.upper()} already")
            # Without iterations an operand is one block of rows: its step is not used.
            needs(OPERAND_FIELDS[role][:None if semantics["repeats"] else 1] + ("rows",), role)
            semantics[role] = Rows(memory, flag(rows.get(switch_key), f"{role}.{switch_key}"))
    if "bias" in spec:
        bias = checked(spec["bias"], f"{where}.bias", {},
                       {"if": str, "quant_if": str, "rows_unless": str})
        needs(OPERAND_FIELDS["bias"], "bias")
        semantics["bias_if"] = flag(bias.get("if"), "bias.if")
        semantics["bias_always"] = "if" not in bias
        semantics["bias_rows_unless"] = flag(bias.get("rows_unless"), "bias.rows_unless")
        semantics["quant_if"] = flag(bias.get("quant_if"), "bias.quant_if")
        if semantics["bias_rows_unless"] and semantics["quant_if"]:
            raise DefsError(f"{where}.bias: rows_unless and quant_if exclude each other")
    if "host" in spec:
        host = checked(spec["host"], f"{where}.host", {"direction": str, "rows": str},
                       {"if": str, "fp32_if": str, "int8_if": str})
        rows = choice(host["rows"], HOST_ROW_FIELDS, "host.rows")
        needs(OPERAND_FIELDS["host"] + (rows,), "host")
        semantics["host"] = Host(choice(host["direction"], HOST_DIRECTIONS, "host.direction") ==
                                 "write", rows, flag(host.get("if"), "host.if"),
                                 flag(host.get("fp32_if"), "host.fp32_if"),
                                 flag(host.get("int8_if"), "host.int8_if"))
    semantics["float_unless"] = flag(spec.get("float_unless"), "float_unless")
    for key in ("requires", "excludes"):
        pairs = []
        for flag_name, others in spec.get(key, {}).items():
            first = flag(flag_name, key)
            if not isinstance(others, list) or not others:
                raise DefsError(f"{where}.{key}.{flag_name}: expected a non-empty array of names")
            for other in others:
                if key == "excludes" and other in used_names:
                    pairs.append((first, fields[other]))
                else:
                    pairs.append((first, flag(other, f"{key}.{flag_name}")))
        semantics[key] = tuple(pairs)
    limits = []
    for field_name, limit in spec.get("limits", {}).items():
        key = f"limits.{field_name}"
        needs((field_name,), key)
        if not isinstance(limit, str):
            raise DefsError(f"{where}.{key}: expected a string")
        limits.append((fields[field_name], choice(limit, LIMITS, key)))
    semantics["limits"] = tuple(limits)
    function_named = {function.name: function for function in functions}
    zero_unless = []
    for condition, field_names in spec.get("zero_unless", {}).items():
        key = f"zero_unless.{condition}"
        if condition in flag_named and condition in function_named:
            raise DefsError(f"{where}.{key}: '{condition}' is both a flag and a function")
        if condition in function_named:
            needs(("func",), key)
        elif condition not in flag_named:
            raise DefsError(f"{where}.{key}: '{condition}' is neither a flag of this opcode nor "
                            "a function")
        if not isinstance(field_names, list) or not field_names:
            raise DefsError(f"{where}.{key}: expected a non-empty array of field names")
        for field_name in field_names:
            if not isinstance(field_name, str):
                raise DefsError(f"{where}.{key}: expected a non-empty array of field names")
            needs((field_name,), key)
        zero_unless.append(ZeroUnless(flag_named.get(condition), function_named.get(condition),
                                      tuple(fields[field_name] for field_name in field_names)))
    semantics["zero_unless"] = tuple(zero_unless)
    return semantics


def parse_regmap(data, source):
    top = checked(data, source, {"registers": dict, "counters": dict, "errors": dict})
    window = 1 << REG_ADDR_WIDTH

    registers = []
    for name, entry in top["registers"].items():
        where = f"{source}: registers.{name}"
        check_name(name, UPPER_NAME, where)
        spec = checked(entry, where, {"offset": int, "access": str, "doc": str},
                       {"reset": int, "fields": dict})
        check_offset(spec["offset"], window - 4, where)
        if spec["access"] not in REG_ACCESS:
            raise DefsError(f"{where}.access: '{spec['access']}' is not one of "
                            f"{', '.join(REG_ACCESS)}")
        reset = spec.get("reset")
        if reset is not None:
            check_range(reset, 0, (1 << WORD_BITS) - 1, where, "reset")
        check_doc(spec["doc"], where)
        registers.append(Register(name, spec["offset"], spec["access"], reset, spec["doc"],
                                  parse_reg_fields(spec.get("fields", {}), where)))
    registers.sort(key=lambda register: register.offset)

    counters = []
    for name, entry in top["counters"].items():
        where = f"{source}: counters.{name}"
        check_name(name, UPPER_NAME, where)
        spec = checked(entry, where, {"offset": int, "doc": str})
        check_offset(spec["offset"], window - COUNTER_STRIDE, where)
        check_doc(spec["doc"], where)
        counters.append(Counter(name, spec["offset"], spec["doc"]))
    counters.sort(key=lambda counter: counter.offset)
    # Hardware indexes the counters as CounterBase + index * 8, so they must be contiguous.
    for index, counter in enumerate(counters):
        expected = counters[0].offset + index * COUNTER_STRIDE
        if counter.offset != expected:
            raise DefsError(f"{source}: counters.{counter.name}: offset 0x{counter.offset:03X} "
                            f"should be 0x{expected:03X}: counters are contiguous "
                            f"{COUNTER_STRIDE}-byte LO/HI pairs")

    # Registers and counter halves share one address space.
    addresses = [(f"registers.{register.name}", register.offset) for register in registers]
    for counter in counters:
        addresses.append((f"counters.{counter.name} (LO)", counter.offset))
        addresses.append((f"counters.{counter.name} (HI)", counter.offset + 4))
    check_unique(addresses, "offset", source, show=lambda offset: f"0x{offset:03X}")

    errors = []
    for name, entry in top["errors"].items():
        where = f"{source}: errors.{name}"
        check_name(name, UPPER_NAME, where)
        spec = checked(entry, where, {"value": int, "doc": str})
        check_range(spec["value"], 0, (1 << ERROR_CODE_BITS) - 1, where, "value")
        check_doc(spec["doc"], where)
        errors.append(ErrorCode(name, spec["value"], spec["doc"]))
    errors.sort(key=lambda error: error.value)
    check_unique([(error.name, error.value) for error in errors], "value",
                 f"{source}: errors")

    return RegMap(tuple(registers), tuple(counters), tuple(errors))


def parse_link(data, source):
    top = checked(data, source,
                  {"request_sync": int, "reply_sync": int, "max_payload": int,
                   "frame_timeout_bits": int, "version": int, "commands": dict,
                   "statuses": dict, "info": dict})
    byte_max = (1 << LINK_BYTE_BITS) - 1
    check_range(top["request_sync"], 0, byte_max, source, "request_sync")
    check_range(top["reply_sync"], 0, byte_max, source, "reply_sync")
    if top["request_sync"] == top["reply_sync"]:
        raise DefsError(f"{source}: request_sync and reply_sync must differ, so that a board "
                        "never takes its own reply for a request")
    check_range(top["max_payload"], 4, (1 << LINK_LENGTH_BITS) - 1, source, "max_payload")
    check_range(top["frame_timeout_bits"], 20, 1 << 20, source, "frame_timeout_bits")
    check_range(top["version"], 0, (1 << 16) - 1, source, "version")

    def codes(table, what):
        entries = []
        for name, entry in table.items():
            where = f"{source}: {what}.{name}"
            check_name(name, UPPER_NAME, where)
            spec = checked(entry, where, {"value": int, "doc": str})
            check_range(spec["value"], 0, byte_max, where, "value")
            check_doc(spec["doc"], where)
            entries.append(LinkCode(name, spec["value"], spec["doc"]))
        entries.sort(key=lambda code: code.value)
        check_unique([(code.name, code.value) for code in entries], "value",
                     f"{source}: {what}", show=lambda value: f"0x{value:02X}")
        return tuple(entries)

    commands = codes(top["commands"], "commands")
    statuses = codes(top["statuses"], "statuses")
    if not statuses or statuses[0].name != "OK" or statuses[0].value != 0:
        raise DefsError(f"{source}: statuses: OK must be there, with value 0")

    info, offset = [], 0
    for name, entry in top["info"].items():
        where = f"{source}: info.{name}"
        check_name(name, UPPER_NAME, where)
        spec = checked(entry, where, {"bytes": int, "doc": str})
        if spec["bytes"] not in (1, 2, 4):
            raise DefsError(f"{where}: bytes {spec['bytes']} is not 1, 2 or 4")
        check_doc(spec["doc"], where)
        info.append(InfoField(name, offset, spec["bytes"], spec["doc"]))
        offset += spec["bytes"]
    if offset > top["max_payload"]:
        raise DefsError(f"{source}: info: {offset} bytes do not fit in max_payload "
                        f"{top['max_payload']}")
    return Link(top["request_sync"], top["reply_sync"], top["max_payload"],
                top["frame_timeout_bits"], top["version"], commands, statuses, tuple(info))


def check_offset(offset, highest, where):
    check_range(offset, 0, highest, where, "offset")
    if offset % 4:
        raise DefsError(f"{where}: offset 0x{offset:03X} is not a multiple of 4")


def parse_reg_fields(table, where):
    fields = []
    for name, entry in table.items():
        field_where = f"{where}.fields.{name}"
        check_name(name, UPPER_NAME, field_where)
        spec = checked(entry, field_where, {"lsb": int, "width": int, "doc": str})
        check_range(spec["lsb"], 0, WORD_BITS - 1, field_where, "lsb")
        check_range(spec["width"], 1, WORD_BITS, field_where, "width")
        if spec["lsb"] + spec["width"] > WORD_BITS:
            raise DefsError(f"{field_where}: lsb {spec['lsb']} + width {spec['width']} is wider "
                            f"than the {WORD_BITS}-bit register")
        check_doc(spec["doc"], field_where)
        fields.append(RegField(name, spec["lsb"], spec["width"], spec["doc"]))
    fields.sort(key=lambda field: field.lsb)
    check_disjoint([(f"field {field.name} [{bit_range(field.lsb, field.width)}]", field.mask)
                    for field in fields], where)
    return tuple(fields)


def load_toml(path, source):
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except FileNotFoundError:
        raise DefsError(f"{source}: no such file") from None
    except OSError as error:
        raise DefsError(f"{source}: cannot read: {error.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise DefsError(f"{source}: TOML syntax error: {error}") from None


# ---------------------------------------------------------------------------------------------
# Text helpers


def camel(name):
    """READ_HOST and addr_a -> ReadHost and AddrA."""
    return "".join(part.capitalize() for part in name.lower().split("_"))


def bit_range(lsb, width):
    return str(lsb) if width == 1 else f"{lsb + width - 1}:{lsb}"


def comment(text, indent=""):
    """`text` as // comment lines of at most LINE_WIDTH columns."""
    prefix = f"{indent}// "
    return [prefix + line for line in textwrap.wrap(
        text, LINE_WIDTH - len(prefix), break_long_words=False, break_on_hyphens=False)]


def generated_header(source):
    return [f"// Generated by {GENERATOR} from {source}; do not edit.",
            f"// To change it, edit {source} and run `make defs`."]


class Names:
    """The identifiers one output declares. Two description entries that map to one identifier
    (ACC_0 and ACC0 both give Acc0) would not compile, so they are an input error."""

    def __init__(self, output):
        self.output = output
        self.declared = set()

    def __call__(self, name):
        if name in self.declared:
            raise DefsError(f"{self.output}: two description entries both generate '{name}'")
        self.declared.add(name)
        return name


def sv_hex(value, width):
    """A sized hex literal, '_' between groups of 4 digits, or of 8 (one 32-bit word) when wide."""
    digits = f"{value:0{(width + 3) // 4}X}"
    group = 8 if width > WORD_BITS else 4
    groups = [digits[max(end - group, 0):end] for end in range(len(digits), 0, -group)]
    return f"{width}'h{'_'.join(reversed(groups))}"


def sv_logic(width):
    return f"logic [{width - 1}:0]"


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
              for row in rows]
    return "\n".join(lines) + "\n"


def code_list(names):
    return ", ".join(f"`{name}`" for name in names) or "—"


# ---------------------------------------------------------------------------------------------
# SystemVerilog packages


def code_tables(isa):
    """The tables of codes a field holds: (title, name prefix, codes, field)."""
    return (("Activation functions (the func field of ACTIVATE)", "Func", isa.functions,
             isa.fields["func"]),
            ("Vector operations (the vop field of ELTWISE)", "Vop", isa.vector_ops,
             isa.fields["vop"]))


def sv_isa_package(isa, source):
    name = Names(ISA_PKG)
    indent = "  "
    opcode_type = sv_logic(isa.fields["opcode"].width)
    flags_type = sv_logic(isa.fields["flags"].width)
    lines = generated_header(source) + [
        "//",
        "// The instruction set of the TPU core. An instruction is InstrBits wide, word w<n> in",
        "// bits n*32+31 .. n*32; a field at bit b of word w starts at bit w*32+b.",
        "package tpu_isa_pkg;",
        "",
        f"{indent}localparam int unsigned {name('InstrBytes')} = {isa.instruction_bytes};",
        f"{indent}localparam int unsigned {name('InstrBits')} = {isa.instruction_bits};",
        "",
        f"{indent}// Opcodes (the opcode field).",
    ]
    for opcode in isa.opcodes:
        lines += comment(f"{opcode.mnemonic}: {opcode.doc}", indent=indent)
        lines.append(f"{indent}localparam {opcode_type} {name('Op' + camel(opcode.name))} = "
                     f"{sv_hex(opcode.value, isa.fields['opcode'].width)};")

    lines.append("")
    lines += comment("Flags: each flag's bit in the flags field, and per opcode the mask of the "
                     "flags it defines; its other flag bits must be zero.", indent=indent)
    for opcode in isa.opcodes:
        prefix = camel(opcode.name)
        for flag in opcode.flags:
            lines += comment(f"{opcode.name}.{flag.name}: {flag.doc}", indent=indent)
            lines.append(f"{indent}localparam int unsigned "
                         f"{name(prefix + 'Flag' + camel(flag.name))} = {flag.bit};")
        lines.append(f"{indent}localparam {flags_type} {name(prefix + 'FlagsMask')} = "
                     f"{sv_hex(isa.flags_mask(opcode), isa.fields['flags'].width)};")

    for title, prefix, codes, field in code_tables(isa):
        lines += ["", f"{indent}// {title}."]
        for code in codes:
            lines += comment(f"{code.mnemonic}: {code.doc}", indent=indent)
            lines.append(f"{indent}localparam {sv_logic(field.width)} "
                         f"{name(prefix + camel(code.name))} = {field.width}'d{code.value};")
        lines.append(f"{indent}localparam int unsigned {name(prefix + 'Count')} = {len(codes)};")
        if base_count(codes) < len(codes):
            lines += comment("Codes below it are legal in every core; the others need a vector "
                             "unit.", indent=indent)
            lines.append(f"{indent}localparam int unsigned {name(prefix + 'BaseCount')} = "
                         f"{base_count(codes)};")

    lines += ["", f"{indent}// Fields: lowest bit in the flat instruction, and width."]
    for field in isa.fields.values():
        lines += comment(f"{field.name} (w{field.word}[{field.bits}]): {field.doc}",
                         indent=indent)
        prefix = "Field" + camel(field.name)
        lines.append(f"{indent}localparam int unsigned {name(prefix + 'Lsb')} = "
                     f"{field.flat_lsb};")
        lines.append(f"{indent}localparam int unsigned {name(prefix + 'Width')} = "
                     f"{field.width};")

    lines.append("")
    lines += comment("Bits each opcode's instructions may set: the opcode field, the opcode's "
                     "flags and the fields it uses. Any other bit set is ILLEGAL_FIELD: "
                     "(instr & ~<Opcode>UsedBits) != 0. One '_' group per word, "
                     f"w{isa.words - 1} first.", indent=indent)
    for opcode in isa.opcodes:
        lines.append(f"{indent}localparam {sv_logic(isa.instruction_bits)} "
                     f"{name(camel(opcode.name) + 'UsedBits')} =")
        lines.append(f"{indent * 3}{sv_hex(isa.used_bits(opcode), isa.instruction_bits)};")
    lines.append("")
    lines += comment("The bits an instruction with this opcode may set. An unknown opcode is "
                     "ILLEGAL_OPCODE before its bits matter; it may set none.", indent=indent)
    lines += [f"{indent}function automatic {sv_logic(isa.instruction_bits)} "
              f"{name('used_bits')}(input {opcode_type} opcode);",
              f"{indent * 2}unique case (opcode)"]
    for opcode in isa.opcodes:
        lines.append(f"{indent * 3}Op{camel(opcode.name)}: used_bits = "
                     f"{camel(opcode.name)}UsedBits;")
    lines += [f"{indent * 3}default: used_bits = '0;", f"{indent * 2}endcase",
              f"{indent}endfunction", ""]

    lines += comment("An instruction's fields, as tpu_decode takes them apart (fields that share "
                     "bits all appear).", indent=indent)
    lines.append(f"{indent}typedef struct packed {{")
    for field in isa.fields.values():
        lines.append(f"{indent * 2}{sv_logic(field.width)} {field.name};")
    lines += [f"{indent}}} {name('fields_t')};", ""]
    lines += comment("What an instruction is and what it touches (rtl/defs/isa.toml): one bit "
                     "per opcode, then its operands.", indent=indent)
    lines.append(f"{indent}typedef struct packed {{")
    for opcode in isa.opcodes:
        lines.append(f"{indent * 2}logic {opcode.snake};")
    for member, doc in KIND_MEMBERS:
        lines.append(f"{indent * 2}logic {member};  // {doc}")
    lines += [f"{indent}}} {name('kind_t')};", "", "endpackage"]
    return "\n".join(lines) + "\n"


# The operand bits of tpu_isa_pkg::kind_t, after one bit per opcode.
KIND_MEMBERS = (
    ("legal", "a known opcode"),
    ("repeats", "count iterations of rows rows"),
    ("src_used", "reads the source rows (addr_a, step_a)"),
    ("src_acc", "... in the accumulators, not the unified buffer"),
    ("dst_used", "writes the destination rows (addr_b, step_b)"),
    ("dst_acc", "... in the accumulators, not the unified buffer"),
    ("bias_used", "reads a bias row per iteration (bias_addr, bias_step)"),
    ("bias_rows", "... rows rows per iteration, not one (VECTOR's second operand)"),
    ("host_used", "reads or writes host memory"),
    ("host_write", "... writes it"),
    ("host_fp32", "... in fp32 rows (4 bytes a lane), not bf16"),
    ("host_int8", "... in int8 rows (1 byte a lane), not bf16"),
    ("host_k_valid", "... k_valid rows per iteration, not rows"),
    ("in_place", "writes back the source rows it reads"),
    ("links", "uses the inter-chip links"),
    ("vector_unit", "runs on the vector unit"),
    ("bias_quant", "its bias rows are blocks of three: bias, multiplier, shift"),
    ("int8", "sets a flag of the int8 datapath"),
    ("float_dp", "uses the float datapath"),
)


def sv_any(terms):
    return " || ".join(terms) if terms else "1'b0"


def sv_decoder(isa, source):
    """The decoder module both cores instantiate."""
    indent = "  "
    flags_of = "fields_o.flags"

    def is_op(opcode):
        return f"kind_o.{opcode.snake}"

    def flag_set(opcode, flag):
        return f"{flags_of}[tpu_isa_pkg::{camel(opcode.name)}Flag{camel(flag.name)}]"

    def when(opcode, flag):
        return is_op(opcode) if flag is None else f"({is_op(opcode)} && {flag_set(opcode, flag)})"

    def rows_acc(opcode, rows):
        if rows.memory == "acc":
            if rows.switch_if is None:
                return is_op(opcode)
            return f"({is_op(opcode)} && !{flag_set(opcode, rows.switch_if)})"
        return None if rows.switch_if is None else when(opcode, rows.switch_if)

    ops = isa.opcodes
    kind = {
        "legal": [is_op(op) for op in ops],
        "repeats": [is_op(op) for op in ops if op.repeats],
        "src_used": [is_op(op) for op in ops if op.source],
        "src_acc": [t for op in ops if op.source for t in [rows_acc(op, op.source)] if t],
        "dst_used": [is_op(op) for op in ops if op.destination],
        "dst_acc": [t for op in ops if op.destination
                    for t in [rows_acc(op, op.destination)] if t],
        "bias_used": [when(op, op.bias_if) for op in ops if op.bias_if or op.bias_always],
        "bias_rows": [f"({is_op(op)} && !{flag_set(op, op.bias_rows_unless)})" for op in ops
                      if op.bias_rows_unless],
        "host_used": [when(op, op.host.only_if) for op in ops if op.host],
        "host_write": [is_op(op) for op in ops if op.host and op.host.write],
        "host_fp32": [when(op, op.host.fp32_if) for op in ops if op.host and op.host.fp32_if],
        # What only the int8 datapath does is 0 in a core without it (where setting the flag is
        # ILLEGAL_FIELD), so that nothing of it is left in that core's checks and footprints.
        "host_int8": [f"(Int8 && {when(op, op.host.int8_if)})" for op in ops
                      if op.host and op.host.int8_if],
        "host_k_valid": [is_op(op) for op in ops if op.host and op.host.rows == "k_valid"],
        "in_place": [is_op(op) for op in ops if op.in_place],
        "links": [is_op(op) for op in ops if op.links],
        "vector_unit": [is_op(op) for op in ops if op.vector],
        "bias_quant": [f"(Int8 && {when(op, op.quant_if)})" for op in ops if op.quant_if],
        "int8": [when(op, flag) for op in ops for flag in op.flags if flag.int8],
        "float_dp": [f"({is_op(op)} && !{flag_set(op, op.float_unless)})" for op in ops
                     if op.float_unless],
    }

    assert [member for member, _ in KIND_MEMBERS] == list(kind)

    errors = []
    if kind["repeats"]:
        errors.append("(kind_o.repeats && (fields_o.count == '0 || fields_o.rows == '0))")
    for op in ops:
        for field, limit in op.limits:
            value = f"fields_o.{field.name}"
            if limit == "1..dim":
                errors.append(f"({is_op(op)} && outside_1_to_dim(16'({value})))")
            elif limit == "nonzero":
                errors.append(f"({is_op(op)} && {value} == '0)")
            else:
                prefix, codes = (("Func", isa.functions) if limit == "function" else
                                 ("Vop", isa.vector_ops))
                bound = f"{field.width}'(tpu_isa_pkg::{prefix}Count)"
                if base_count(codes) < len(codes):
                    bound = (f"(Vector ? {bound} : "
                             f"{field.width}'(tpu_isa_pkg::{prefix}BaseCount))")
                errors.append(f"({is_op(op)} && {value} >= {bound})")
        for rule in op.zero_unless:
            unless = (f"!{flag_set(op, rule.flag)}" if rule.flag else
                      f"fields_o.func != tpu_isa_pkg::Func{camel(rule.function.name)}")
            nonzero = ", ".join(f"fields_o.{field.name}" for field in rule.fields)
            errors.append(f"({is_op(op)} && {unless} && |{{{nonzero}}})")
        for first, second in op.requires:
            errors.append(f"({is_op(op)} && {flag_set(op, first)} && !{flag_set(op, second)})")
        # The fields a flag excludes as one OR of their bits, the same expression as a
        # zero_unless rule's of those fields, which synthesis then shares.
        excluded_fields = {}
        for first, second in op.excludes:
            if isinstance(second, Flag):
                errors.append(f"({is_op(op)} && {flag_set(op, first)} && "
                              f"{flag_set(op, second)})")
            else:
                excluded_fields.setdefault(first, []).append(second)
        for first, fields in excluded_fields.items():
            nonzero = ", ".join(f"fields_o.{field.name}" for field in fields)
            errors.append(f"({is_op(op)} && {flag_set(op, first)} && |{{{nonzero}}})")
    if kind["int8"]:
        errors.append("(!Int8 && kind_o.int8)")
    if kind["float_dp"]:
        errors.append("(!Float && kind_o.float_dp)")
    vector_flags = [when(op, flag) for op in ops for flag in op.flags if flag.vector]
    if vector_flags:
        errors.append(f"(!Vector && {vector_flags[0]})" if len(vector_flags) == 1 else
                      f"(!Vector && ({sv_any(vector_flags)}))")

    lines = generated_header(source) + [
        "//",
        "// The instruction decoder of both cores (tpu_issue of the array core, tpu_seq_ctrl of",
        "// the sequential core): an instruction's fields, what it is and touches, and whether",
        "// its field values break a rule of ILLEGAL_FIELD (docs/isa.md, \"Errors\"). Bits set",
        "// outside the opcode's fields are ILLEGAL_FIELD too; each core finds those its own way,",
        "// with tpu_isa_pkg::used_bits.",
        "module tpu_decode #(",
        f"{indent}parameter int unsigned Dim = 16,  // the array size, a power of two",
        f"{indent}parameter bit Links = 1'b0,  // the core has inter-chip links and a collective unit",
        f"{indent}parameter bit Vector = 1'b0,  // the core has a vector unit",
        f"{indent}parameter bit Int8 = 1'b0,   // the core has the int8 datapath",
        f"{indent}parameter bit Float = 1'b1,  // ... and the float one (bf16, fp32)",
        f"{indent}localparam int unsigned DimLog2 = $clog2(Dim)",
        ") (",
        f"{indent}input  {sv_logic(isa.instruction_bits)} instr_i,",
        f"{indent}output tpu_isa_pkg::fields_t fields_o,",
        f"{indent}output tpu_isa_pkg::kind_t   kind_o,",
        f"{indent}output logic                 field_error_o",
        ");",
        "",
        f"{indent}always_comb begin",
    ]
    for field in isa.fields.values():
        lines.append(f"{indent * 2}fields_o.{field.name} = "
                     f"instr_i[tpu_isa_pkg::Field{camel(field.name)}Lsb +: {field.width}];")
    lines += [f"{indent}end", ""]
    reserved = ((1 << isa.instruction_bits) - 1) & ~sum(field.flat_mask
                                                         for field in isa.fields.values())
    if reserved:
        lines += [f"{indent}// Bits no field covers: reserved, as each core's check of the bits "
                  "outside",
                  f"{indent}// the opcode's fields finds.",
                  f"{indent}logic unused_reserved;",
                  f"{indent}assign unused_reserved =",
                  f"{indent * 3}^(instr_i & {sv_hex(reserved, isa.instruction_bits)});", ""]
    lines.append(f"{indent}always_comb begin")
    for op in ops:
        # An opcode that needs the links or the vector unit exists only in a core built with
        # them: elsewhere it is illegal, and nothing of it is left in the netlist.
        gate = "Links && " if op.links else "Vector && " if op.vector else ""
        lines.append(f"{indent * 2}{is_op(op)} = {gate}fields_o.opcode == "
                     f"tpu_isa_pkg::Op{camel(op.name)};")
    for member, terms in kind.items():
        lines += wrap_expression(f"{indent * 2}kind_o.{member} = ", terms, " ||", ";",
                                 indent * 4)
    lines += [f"{indent}end", "",
              f"{indent}// Dim is a power of two: value > Dim needs no carry chain.",
              f"{indent}function automatic logic outside_1_to_dim(input logic [15:0] value);",
              f"{indent * 2}outside_1_to_dim = value == '0 || "
              "tpu_pkg::above_pow2(34'(value), DimLog2);",
              f"{indent}endfunction", "",
              f"{indent}// The rules of rtl/defs/isa.toml: repeats, limits, zero_unless, requires,",
              f"{indent}// excludes, and the datapaths the core has.",
              f"{indent}assign field_error_o ="]
    for index, term in enumerate(errors or ["1'b0"]):
        text = term + (" ||" if index + 1 < len(errors) else ";")
        lines += textwrap.wrap(text, width=LINE_WIDTH, initial_indent=indent * 3,
                               subsequent_indent=indent * 5, break_long_words=False,
                               break_on_hyphens=False)
    lines += ["", "endmodule"]
    return "\n".join(lines) + "\n"


def wrap_expression(head, terms, joiner, tail, continuation):
    """head + terms joined by `joiner` + tail, broken at spaces to fit LINE_WIDTH."""
    text = head + (f"{joiner} ".join(terms) if terms else "1'b0") + tail
    return textwrap.wrap(text, width=LINE_WIDTH, subsequent_indent=continuation,
                         break_long_words=False, break_on_hyphens=False)


def sv_regs_package(regmap, source):
    name = Names(REGS_PKG)
    indent = "  "
    offset_type = sv_logic(REG_ADDR_WIDTH)
    lines = generated_header(source) + [
        "//",
        "// The AXI4-Lite register map of tpu_top: byte offsets, reset values, field positions,",
        "// the 64-bit counters and the error codes of ERROR_CODE.",
        "package tpu_regs_pkg;",
        "",
        f"{indent}localparam int unsigned {name('RegAddrWidth')} = {REG_ADDR_WIDTH};",
        "",
    ]
    lines += comment("Registers: byte offset, reset value where fixed, and fields (a one-bit "
                     "field's bit; a wider field's lowest bit and width).", indent=indent)
    for register in regmap.registers:
        prefix = camel(register.name)
        lines += comment(f"{register.name} ({register.access}): {register.doc}", indent=indent)
        lines.append(f"{indent}localparam {offset_type} {name('Reg' + prefix)} = "
                     f"{sv_hex(register.offset, REG_ADDR_WIDTH)};")
        if register.reset is not None:
            lines.append(f"{indent}localparam {sv_logic(WORD_BITS)} "
                         f"{name('Reg' + prefix + 'Reset')} = "
                         f"{sv_hex(register.reset, WORD_BITS)};")
        for field in register.fields:
            lines += comment(f"{register.name}.{field.name}: {field.doc}", indent=indent)
            field_prefix = prefix + camel(field.name)
            if field.width == 1:
                lines.append(f"{indent}localparam int unsigned {name(field_prefix + 'Bit')} = "
                             f"{field.lsb};")
            else:
                lines.append(f"{indent}localparam int unsigned {name(field_prefix + 'Lsb')} = "
                             f"{field.lsb};")
                lines.append(f"{indent}localparam int unsigned {name(field_prefix + 'Width')} = "
                             f"{field.width};")

    lines.append("")
    lines += comment(f"64-bit counters, contiguous from CounterBase: counter i has LO at "
                     f"CounterBase + {COUNTER_STRIDE}*i and HI 4 bytes above. Reading LO latches "
                     "HI.", indent=indent)
    base = regmap.counters[0].offset if regmap.counters else 0
    lines.append(f"{indent}localparam int unsigned {name('CounterCount')} = "
                 f"{len(regmap.counters)};")
    lines.append(f"{indent}localparam {offset_type} {name('CounterBase')} = "
                 f"{sv_hex(base, REG_ADDR_WIDTH)};")
    for index, counter in enumerate(regmap.counters):
        prefix = "Cnt" + camel(counter.name)
        lines += comment(f"{counter.name}: {counter.doc}", indent=indent)
        lines.append(f"{indent}localparam {offset_type} {name(prefix + 'Lo')} = "
                     f"{sv_hex(counter.offset, REG_ADDR_WIDTH)};")
        lines.append(f"{indent}localparam {offset_type} {name(prefix + 'Hi')} = "
                     f"{sv_hex(counter.offset + 4, REG_ADDR_WIDTH)};")
        lines.append(f"{indent}localparam int unsigned {name(prefix + 'Index')} = {index};")

    lines += ["", f"{indent}// Error codes (ERROR_CODE)."]
    for error in regmap.errors:
        lines += comment(f"{error.name}: {error.doc}", indent=indent)
        lines.append(f"{indent}localparam {sv_logic(ERROR_CODE_BITS)} "
                     f"{name('Err' + camel(error.name))} = {ERROR_CODE_BITS}'d{error.value};")

    lines += ["", "endpackage"]
    return "\n".join(lines) + "\n"


def sv_link_package(link, source):
    name = Names(LINK_PKG)
    indent = "  "
    byte = sv_logic(LINK_BYTE_BITS)
    lines = generated_header(source) + [
        "//",
        "// The UART host link of the FPGA boards: sync bytes, commands, reply statuses and the",
        "// INFO record (docs/link.md).",
        "package tpu_link_pkg;",
        "",
        f"{indent}localparam {byte} {name('RequestSync')} = {sv_hex(link.request_sync, 8)};",
        f"{indent}localparam {byte} {name('ReplySync')} = {sv_hex(link.reply_sync, 8)};",
        f"{indent}localparam int unsigned {name('MaxPayload')} = {link.max_payload};",
        f"{indent}localparam int unsigned {name('FrameTimeoutBits')} = {link.frame_timeout_bits};",
        f"{indent}localparam int unsigned {name('Version')} = {link.version};",
        "",
        f"{indent}// Commands.",
    ]
    for command in link.commands:
        lines += comment(f"{command.name}: {command.doc}", indent=indent)
        lines.append(f"{indent}localparam {byte} {name('Cmd' + camel(command.name))} = "
                     f"{sv_hex(command.value, 8)};")
    lines += ["", f"{indent}// Reply statuses."]
    for status in link.statuses:
        lines += comment(f"{status.name}: {status.doc}", indent=indent)
        lines.append(f"{indent}localparam {byte} {name('Status' + camel(status.name))} = "
                     f"{sv_hex(status.value, 8)};")
    lines += ["", f"{indent}// The INFO record: each field's byte offset and size."]
    lines.append(f"{indent}localparam int unsigned {name('InfoBytes')} = {link.info_bytes};")
    for field in link.info:
        prefix = "Info" + camel(field.name)
        lines += comment(f"{field.name}: {field.doc}", indent=indent)
        lines.append(f"{indent}localparam int unsigned {name(prefix + 'Offset')} = {field.offset};")
        lines.append(f"{indent}localparam int unsigned {name(prefix + 'Bytes')} = {field.bytes};")
    lines += ["", "endpackage"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# C++ headers

CPP_INDENT = "  "
# Continuation lines of braced initializers, as clang-format lays them out.
CPP_CONTINUATION = "    "


def cpp_string_lines(text, indent):
    """`text` as adjacent string literals (the compiler joins them), one per line, broken
    between words so that each line leaves room for a closing '},' within LINE_WIDTH."""
    room = LINE_WIDTH - len(indent) - 2
    chunks = [""]
    for piece in re.findall(r"\S+\s*|\s+", text):
        if chunks[-1] and len(cpp_string(chunks[-1] + piece)) > room:
            chunks.append("")
        chunks[-1] += piece
    return [indent + cpp_string(chunk) for chunk in chunks]


def cpp_list(head, items, tail):
    """`head`, the comma-separated `items` and `tail` on one line if that fits in LINE_WIDTH
    columns, else the items packed into continuation lines after `head`."""
    line = head + ", ".join(items) + tail
    if len(line) <= LINE_WIDTH:
        return [line]
    lines, current = [head], ""
    for index, item in enumerate(items):
        end = tail if index == len(items) - 1 else ","
        if current and len(f"{CPP_CONTINUATION}{current}, {item}{end}") > LINE_WIDTH:
            lines.append(f"{CPP_CONTINUATION}{current},")
            current = ""
        current = f"{current}, {item}" if current else item
    return lines + [CPP_CONTINUATION + current + tail]


def cpp_table_row(before, doc, after=()):
    """One `{...},` row of a table whose members are `before`, the string `doc` and `after`: on
    one line if it fits, else `before`, the doc and `after` on lines of their own."""
    line = f"{CPP_CONTINUATION}{{{', '.join([*before, cpp_string(doc), *after])}}},"
    if len(line) <= LINE_WIDTH:
        return [line]
    inner = CPP_CONTINUATION + " "
    doc_lines = cpp_string_lines(doc, inner)
    if not after:
        return [f"{CPP_CONTINUATION}{{{', '.join(before)},", *doc_lines[:-1],
                doc_lines[-1] + "},"]
    return [f"{CPP_CONTINUATION}{{{', '.join(before)},", *doc_lines[:-1], doc_lines[-1] + ",",
            f"{inner}{', '.join(after)}}},"]


def cpp_lookups(name, value, enum, table, noun, unknown):
    """The name and doc look-up functions of a generated table of `enum` values: e.g. value
    "error", enum Error, table kErrors of ErrorSpec {Error error; name; doc}."""
    lines = []
    for member, what, missing in (("name", f"The name of {noun}", "UNKNOWN"),
                                  ("doc", f"What {noun} means", unknown)):
        lines += [f"// {what}; \"{missing}\" for a value that is none.",
                  f"constexpr const char* {name(f'{value}_{member}')}({enum} {value}) {{",
                  f"{CPP_INDENT}for (const {enum}Spec& spec : {table}) {{",
                  f"{CPP_INDENT * 2}if (spec.{value} == {value}) return spec.{member};",
                  f"{CPP_INDENT}}}",
                  f"{CPP_INDENT}return \"{missing}\";",
                  "}",
                  ""]
    return lines[:-1]


def cpp_isa_header(isa, source):
    name = Names(ISA_HPP)
    lines = generated_header(source) + [
        "//",
        "// The instruction set of the TPU core. An instruction is kInstrWords little-endian",
        "// 32-bit words; a field occupies bits lsb .. lsb+width-1 of one word.",
        "#pragma once",
        "",
        "#include <array>",
        "#include <cstddef>",
        "#include <cstdint>",
        "",
        "namespace tpu::isa {",
        "",
        f"inline constexpr unsigned {name('kInstrBytes')} = {isa.instruction_bytes};",
        f"inline constexpr unsigned {name('kInstrWords')} = {isa.words};",
        "",
        f"enum class {name('Opcode')} : std::uint8_t {{",
        *[f"{CPP_INDENT}{camel(opcode.name)} = 0x{opcode.value:02X}," for opcode in isa.opcodes],
        "};",
        "",
        "// Flags: each flag's bit in the flags field.",
    ]
    for opcode in isa.opcodes:
        for flag in opcode.flags:
            lines += comment(f"{opcode.name}.{flag.name}: {flag.doc}")
            lines.append(f"inline constexpr unsigned "
                         f"{name('k' + camel(opcode.name) + 'Flag' + camel(flag.name))} = "
                         f"{flag.bit};")

    for title, enum, count, _, _, _, codes in cpp_code_tables(isa):
        lines += ["",
                  f"// {title}.",
                  f"enum class {name(enum)} : std::uint8_t {{",
                  *[f"{CPP_INDENT}{camel(code.name)} = {code.value}," for code in codes],
                  "};",
                  f"inline constexpr unsigned {name(count)} = {len(codes)};"]
        if base_count(codes) < len(codes):
            lines += ["// Codes below it are legal in every core; the others need a vector unit.",
                      f"inline constexpr unsigned {name(count.replace('Count', 'BaseCount'))} = "
                      f"{base_count(codes)};"]
    lines += ["",
              "// An instruction field: bits lsb .. lsb+width-1 of word `word`.",
              f"struct {name('FieldSpec')} {{",
              f"{CPP_INDENT}unsigned word, lsb, width;",
              f"{CPP_INDENT}const char* name;",
              "};"]
    for field in isa.fields.values():
        lines += comment(f"{field.name}: {field.doc}")
        lines.append(f"inline constexpr FieldSpec {name('k' + camel(field.name))}"
                     f"{{{field.word}, {field.lsb}, {field.width}, {cpp_string(field.name)}}};")

    lines += ["",
              "// A read-only array: C++17 has no std::span.",
              "template <typename T>",
              f"struct {name('ConstList')} {{",
              f"{CPP_INDENT}const T* items;",
              f"{CPP_INDENT}std::size_t size;",
              f"{CPP_INDENT}constexpr const T* begin() const {{ return items; }}",
              f"{CPP_INDENT}constexpr const T* end() const {{ return items + size; }}",
              "};",
              "",
              "// A flag an opcode defines: its bit in the flags field, its name and the",
              "// lower-case mnemonic assembly text uses.",
              f"struct {name('FlagSpec')} {{",
              f"{CPP_INDENT}unsigned bit;",
              f"{CPP_INDENT}const char* name;",
              f"{CPP_INDENT}const char* mnemonic;",
              f"{CPP_INDENT}const char* doc;",
              f"{CPP_INDENT}bool int8;  // selects the int8 datapath, which a core may lack",
              f"{CPP_INDENT}bool vector;  // needs a core with a vector unit",
              "};",
              "",
              f"using {name('UsedBits')} = std::array<std::uint32_t, kInstrWords>;",
              "",
              "// What an opcode touches and which field values it allows (the keys of the",
              "// description), as the checks read them: RTL decoder and runtime alike.",
              f"enum class {name('Memory')} : std::uint8_t {{ Ub, Acc }};",
              f"inline constexpr unsigned {name('kNoFlag')} = 0xFF;  // no flag selects it",
              "",
              "// On-chip rows base + i * step + r: in `memory`, or in the other memory with the",
              "// flag switch_if.",
              f"struct {name('RowsOperand')} {{",
              f"{CPP_INDENT}bool used;",
              f"{CPP_INDENT}Memory memory;",
              f"{CPP_INDENT}unsigned switch_if;",
              "};",
              "",
              "// Host rows read or written: `rows` of them per iteration (the field), only with the",
              "// flag only_if (kNoFlag: always), fp32 rows with the flag fp32_if, int8 rows with",
              "// int8_if, bf16 otherwise.",
              f"struct {name('HostOperand')} {{",
              f"{CPP_INDENT}bool used;",
              f"{CPP_INDENT}bool write;",
              f"{CPP_INDENT}const FieldSpec* rows;",
              f"{CPP_INDENT}unsigned only_if;",
              f"{CPP_INDENT}unsigned fp32_if;",
              f"{CPP_INDENT}unsigned int8_if;",
              "};",
              "",
              "// A field's legal values: 1 .. the array size, a function code, a vector",
              "// operation's code, or not zero.",
              f"enum class {name('Limit')} : std::uint8_t {{ OneToDim, Function, VectorOp, "
              "NonZero };",
              f"struct {name('FieldLimit')} {{",
              f"{CPP_INDENT}const FieldSpec* field;",
              f"{CPP_INDENT}Limit limit;",
              "};",
              "",
              "// Fields that must be zero unless a flag is set or func holds a function:",
              "// `condition` is the flag's bit or the function's code, `name` its name.",
              f"struct {name('ZeroUnless')} {{",
              f"{CPP_INDENT}bool function;",
              f"{CPP_INDENT}unsigned condition;",
              f"{CPP_INDENT}const char* name;",
              f"{CPP_INDENT}ConstList<const FieldSpec*> fields;",
              "};",
              "",
              "// With the flag `flag` set, the flag `needed` must be set too.",
              f"struct {name('FlagRequires')} {{",
              f"{CPP_INDENT}unsigned flag;",
              f"{CPP_INDENT}unsigned needed;",
              f"{CPP_INDENT}const char* text;  // what is wrong when it is not",
              "};",
              "",
              "// With the flag `flag` set, the flag other_flag must be clear (kNoFlag: none) and",
              "// the field other_field zero (nullptr: none).",
              f"struct {name('FlagExcludes')} {{",
              f"{CPP_INDENT}unsigned flag;",
              f"{CPP_INDENT}unsigned other_flag;",
              f"{CPP_INDENT}const FieldSpec* other_field;",
              f"{CPP_INDENT}const char* text;",
              "};",
              "",
              f"struct {name('OpcodeRules')} {{",
              f"{CPP_INDENT}bool repeats;  // count iterations of rows rows, both at least 1",
              f"{CPP_INDENT}RowsOperand source;       // addr_a, step_a",
              f"{CPP_INDENT}RowsOperand destination;  // addr_b, step_b",
              f"{CPP_INDENT}unsigned bias_if;  // a bias row per iteration with this flag "
              "(kNoFlag: none)",
              f"{CPP_INDENT}bool bias_always;  // ... whatever the flags (VECTOR's second "
              "operand)",
              f"{CPP_INDENT}unsigned bias_rows_unless;  // ... `rows` rows per iteration "
              "without this flag",
              f"{CPP_INDENT}unsigned quant_if;  // ... three (bias, multiplier, shift) with this "
              "one",
              f"{CPP_INDENT}HostOperand host;",
              f"{CPP_INDENT}ConstList<FieldLimit> limits;",
              f"{CPP_INDENT}ConstList<ZeroUnless> zero_unless;",
              f"{CPP_INDENT}bool in_place;  // writes back its source rows",
              f"{CPP_INDENT}bool links;     // needs a core with inter-chip links",
              f"{CPP_INDENT}bool vector;    // needs a core with a vector unit",
              f"{CPP_INDENT}unsigned float_unless;  // needs the float datapath without this "
              "flag",
              f"{CPP_INDENT}ConstList<FlagRequires> requires;",
              f"{CPP_INDENT}ConstList<FlagExcludes> excludes;",
              "};",
              "",
              f"struct {name('OpcodeInfo')} {{",
              f"{CPP_INDENT}Opcode opcode;",
              f"{CPP_INDENT}const char* mnemonic;",
              f"{CPP_INDENT}const char* doc;",
              f"{CPP_INDENT}ConstList<const FieldSpec*> fields;  // the fields it uses besides "
              "opcode and flags",
              f"{CPP_INDENT}ConstList<FlagSpec> flags;",
              f"{CPP_INDENT}std::uint8_t flags_mask;  // the flag bits it defines",
              f"{CPP_INDENT}UsedBits used_bits;       // per word, the bits its instructions "
              "may set",
              f"{CPP_INDENT}const OpcodeRules* rules;",
              "};",
              "",
              "// Per opcode: the fields it uses, its flags, the bits its instructions may set",
              "// (any other bit set is ILLEGAL_FIELD), and its rules."]
    table = []
    for opcode in isa.opcodes:
        prefix = "k" + camel(opcode.name)
        fields_list = flags_list = "{nullptr, 0}"
        if opcode.fields:
            lines += cpp_list(f"inline constexpr const FieldSpec* {name(prefix + 'Fields')}[] = {{",
                              [f"&k{camel(field.name)}" for field in opcode.fields], "};")
            fields_list = f"{{{prefix}Fields, {len(opcode.fields)}}}"
        if opcode.flags:
            lines.append(f"inline constexpr FlagSpec {name(prefix + 'Flags')}[] = {{")
            for flag in opcode.flags:
                lines += cpp_table_row([str(flag.bit), cpp_string(flag.name),
                                        cpp_string(flag.name.lower())], flag.doc,
                                       ["true" if flag.int8 else "false",
                                        "true" if flag.vector else "false"])
            lines.append("};")
            flags_list = f"{{{prefix}Flags, {len(opcode.flags)}}}"
        used = isa.used_bits(opcode)
        words = [f"0x{(used >> (WORD_BITS * word)) & 0xFFFFFFFF:08X}" for word in range(isa.words)]
        # Four words a line (eight and the braces std::array needs pass 100 columns).
        lines.append(f"inline constexpr UsedBits {name(prefix + 'UsedBits')}{{{{")
        lines += [f"{CPP_CONTINUATION}{', '.join(words[first:first + 4])},"
                  for first in range(0, len(words), 4)]
        lines[-1] = lines[-1].removesuffix(",") + "}};"
        lines += cpp_opcode_rules(isa, opcode, prefix, name)
        table += cpp_table_row([f"Opcode::{camel(opcode.name)}", cpp_string(opcode.mnemonic)],
                               opcode.doc, [fields_list, flags_list,
                                            f"0x{isa.flags_mask(opcode):02X}",
                                            f"{prefix}UsedBits", f"&{prefix}Rules"])
    lines += ["",
              f"inline constexpr std::array<OpcodeInfo, {len(isa.opcodes)}> "
              f"{name('kOpcodeTable')}{{{{",
              *table,
              "}};"]
    for _, enum, count, info, member, table, codes in cpp_code_tables(isa):
        lines += ["",
                  f"struct {name(info)} {{",
                  f"{CPP_INDENT}{enum} {member};",
                  f"{CPP_INDENT}const char* mnemonic;",
                  f"{CPP_INDENT}const char* doc;",
                  "};",
                  f"inline constexpr std::array<{info}, {count}> {name(table)}{{{{"]
        for code in codes:
            lines += cpp_table_row([f"{enum}::{camel(code.name)}", cpp_string(code.mnemonic)],
                                   code.doc)
        lines.append("}};")
    lines += ["", "}  // namespace tpu::isa"]
    return "\n".join(lines) + "\n"


def cpp_code_tables(isa):
    """The code tables of code_tables(isa) as C++ names them: (title, enum, count constant, info
    struct, its member, table, codes)."""
    names = (("Func", "kFuncCount", "FuncInfo", "func", "kFuncTable"),
             ("VectorOp", "kVectorOpCount", "VectorOpInfo", "op", "kVectorOpTable"))
    return tuple((title, *cpp_names, codes)
                 for (title, _, codes, _), cpp_names in zip(code_tables(isa), names))


def cpp_opcode_rules(isa, opcode, prefix, name):
    """The OpcodeRules of `opcode`, k<Opcode>Rules, with the arrays it points to."""
    def flag_bit(flag):
        return str(flag.bit) if flag else "kNoFlag"

    def rows(operand):
        if operand is None:
            return "{false, Memory::Ub, kNoFlag}"
        return (f"{{true, Memory::{operand.memory.capitalize()}, "
                f"{flag_bit(operand.switch_if)}}}")

    lines = []
    limits = zero_unless = "{nullptr, 0}"
    if opcode.limits:
        limit_names = {"1..dim": "OneToDim", "function": "Function", "vector_op": "VectorOp",
                       "nonzero": "NonZero"}
        items = [f"{{&k{camel(field.name)}, Limit::{limit_names[limit]}}}"
                 for field, limit in opcode.limits]
        lines += cpp_list(f"inline constexpr FieldLimit {name(prefix + 'Limits')}[] = {{", items,
                          "};")
        limits = f"{{{prefix}Limits, {len(items)}}}"
    if opcode.zero_unless:
        items = []
        for rule in opcode.zero_unless:
            fields_name = name(f"{prefix}ZeroUnless{camel(rule.condition)}")
            lines += cpp_list(f"inline constexpr const FieldSpec* {fields_name}[] = {{",
                              [f"&k{camel(field.name)}" for field in rule.fields], "};")
            condition = (f"false, {rule.flag.bit}, {cpp_string(rule.flag.name)}" if rule.flag else
                         f"true, {rule.function.value}, {cpp_string(rule.function.mnemonic)}")
            items.append(f"{{{condition}, {{{fields_name}, {len(rule.fields)}}}}}")
        lines += cpp_list(f"inline constexpr ZeroUnless {name(prefix + 'ZeroUnless')}[] = {{",
                          items, "};")
        zero_unless = f"{{{prefix}ZeroUnless, {len(items)}}}"
    host = opcode.host
    host_text = ("{false, false, nullptr, kNoFlag, kNoFlag, kNoFlag}" if host is None else
                 f"{{true, {'true' if host.write else 'false'}, &k{camel(host.rows)}, "
                 f"{flag_bit(host.only_if)}, {flag_bit(host.fp32_if)}, "
                 f"{flag_bit(host.int8_if)}}}")
    requires = excludes = "{nullptr, 0}"
    if opcode.requires:
        items = [f"{{{first.bit}, {second.bit}, "
                 f"{cpp_string(f'{first.name} needs {second.name}')}}}"
                 for first, second in opcode.requires]
        lines += cpp_list(f"inline constexpr FlagRequires {name(prefix + 'Requires')}[] = {{",
                          items, "};")
        requires = f"{{{prefix}Requires, {len(items)}}}"
    if opcode.excludes:
        items = []
        for first, second in opcode.excludes:
            if isinstance(second, Flag):
                items.append(f"{{{first.bit}, {second.bit}, nullptr, "
                             f"{cpp_string(f'{first.name} and {second.name} exclude each other')}}}")
            else:
                items.append(f"{{{first.bit}, kNoFlag, &k{camel(second.name)}, "
                             f"{cpp_string(f'{second.name} must be 0 with {first.name}')}}}")
        lines += cpp_list(f"inline constexpr FlagExcludes {name(prefix + 'Excludes')}[] = {{",
                          items, "};")
        excludes = f"{{{prefix}Excludes, {len(items)}}}"
    members = ["true" if opcode.repeats else "false", rows(opcode.source),
               rows(opcode.destination), flag_bit(opcode.bias_if),
               "true" if opcode.bias_always else "false", flag_bit(opcode.bias_rows_unless),
               flag_bit(opcode.quant_if), host_text, limits, zero_unless,
               "true" if opcode.in_place else "false", "true" if opcode.links else "false",
               "true" if opcode.vector else "false", flag_bit(opcode.float_unless), requires,
               excludes]
    lines += cpp_list(f"inline constexpr OpcodeRules {name(prefix + 'Rules')}{{", members, "};")
    return lines


def cpp_regs_header(regmap, source):
    name = Names(REGS_HPP)
    lines = generated_header(source) + [
        "//",
        "// The AXI4-Lite register map of tpu_top: byte offsets, reset values, fields, the",
        "// 64-bit counters and the error codes of ERROR_CODE.",
        "#pragma once",
        "",
        "#include <array>",
        "#include <cstddef>",
        "#include <cstdint>",
        "",
        "namespace tpu::regs {",
        "",
        f"inline constexpr unsigned {name('kAddrWidth')} = {REG_ADDR_WIDTH};",
        "",
        "// Registers: byte offset, reset value where fixed, and fields (a one-bit field's bit;",
        "// a wider field's lowest bit and width) with their masks in place.",
    ]
    for register in regmap.registers:
        prefix = "k" + camel(register.name)
        lines += comment(f"{register.name} ({register.access}): {register.doc}")
        lines.append(f"inline constexpr std::uint32_t {name(prefix)} = "
                     f"0x{register.offset:03X};")
        if register.reset is not None:
            lines.append(f"inline constexpr std::uint32_t {name(prefix + 'Reset')} = "
                         f"0x{register.reset:08X};")
        for field in register.fields:
            field_prefix = prefix + camel(field.name)
            lines += comment(f"{register.name}.{field.name}: {field.doc}")
            if field.width == 1:
                lines.append(f"inline constexpr unsigned {name(field_prefix + 'Bit')} = "
                             f"{field.lsb};")
            else:
                lines.append(f"inline constexpr unsigned {name(field_prefix + 'Lsb')} = "
                             f"{field.lsb};")
                lines.append(f"inline constexpr unsigned {name(field_prefix + 'Width')} = "
                             f"{field.width};")
            lines.append(f"inline constexpr std::uint32_t {name(field_prefix + 'Mask')} = "
                         f"0x{field.mask:08X};")

    base = regmap.counters[0].offset if regmap.counters else 0
    lines += ["",
              "// 64-bit counters, contiguous from kCounterBase: counter i has LO at",
              f"// kCounterBase + {COUNTER_STRIDE}*i and HI 4 bytes above. Reading LO latches HI.",
              "// k<Counter>Index is its index i, in kCounters and in Counters.",
              f"inline constexpr unsigned {name('kCounterCount')} = {len(regmap.counters)};",
              f"inline constexpr std::uint32_t {name('kCounterBase')} = 0x{base:03X};"]
    for index, counter in enumerate(regmap.counters):
        prefix = "kCnt" + camel(counter.name)
        lines.append(f"inline constexpr std::uint32_t {name(prefix + 'Lo')} = "
                     f"0x{counter.offset:03X};")
        lines.append(f"inline constexpr std::uint32_t {name(prefix + 'Hi')} = "
                     f"0x{counter.offset + 4:03X};")
        lines.append(f"inline constexpr std::size_t {name(prefix + 'Index')} = {index};")
    lines += ["",
              f"struct {name('CounterSpec')} {{",
              f"{CPP_INDENT}const char* name;",
              f"{CPP_INDENT}std::uint32_t offset;  // of LO",
              f"{CPP_INDENT}const char* doc;",
              "};",
              f"inline constexpr std::array<CounterSpec, kCounterCount> "
              f"{name('kCounters')}{{{{"]
    for counter in regmap.counters:
        lines += cpp_table_row([cpp_string(counter.name), f"0x{counter.offset:03X}"],
                               counter.doc)
    lines += ["}};",
              "",
              "// Error codes (ERROR_CODE).",
              f"enum class {name('Error')} : std::uint32_t {{",
              *[f"{CPP_INDENT}{camel(error.name)} = {error.value}," for error in regmap.errors],
              "};",
              "",
              f"struct {name('ErrorSpec')} {{",
              f"{CPP_INDENT}Error error;",
              f"{CPP_INDENT}const char* name;",
              f"{CPP_INDENT}const char* doc;",
              "};",
              f"inline constexpr std::array<ErrorSpec, {len(regmap.errors)}> "
              f"{name('kErrors')}{{{{"]
    for error in regmap.errors:
        lines += cpp_table_row([f"Error::{camel(error.name)}", cpp_string(error.name)],
                               error.doc)
    lines += ["}};", ""]
    lines += cpp_lookups(name, "error", "Error", "kErrors", "an error code", "unknown error code")
    lines += ["", "}  // namespace tpu::regs"]
    return "\n".join(lines) + "\n"


def cpp_link_header(link, source):
    name = Names(LINK_HPP)
    lines = generated_header(source) + [
        "//",
        "// The UART host link of the FPGA boards: sync bytes, commands, reply statuses and the",
        "// INFO record (docs/link.md).",
        "#pragma once",
        "",
        "#include <array>",
        "#include <cstdint>",
        "",
        "namespace tpu::link {",
        "",
        f"inline constexpr std::uint8_t {name('kRequestSync')} = 0x{link.request_sync:02X};",
        f"inline constexpr std::uint8_t {name('kReplySync')} = 0x{link.reply_sync:02X};",
        f"inline constexpr unsigned {name('kMaxPayload')} = {link.max_payload};",
        f"inline constexpr unsigned {name('kFrameTimeoutBits')} = {link.frame_timeout_bits};",
        f"inline constexpr unsigned {name('kVersion')} = {link.version};",
        "",
        f"enum class {name('Command')} : std::uint8_t {{",
        *[f"{CPP_INDENT}{camel(command.name)} = 0x{command.value:02X},"
          for command in link.commands],
        "};",
        "",
        f"enum class {name('Status')} : std::uint8_t {{",
        *[f"{CPP_INDENT}{camel(status.name)} = {status.value}," for status in link.statuses],
        "};",
        "",
        f"struct {name('StatusSpec')} {{",
        f"{CPP_INDENT}Status status;",
        f"{CPP_INDENT}const char* name;",
        f"{CPP_INDENT}const char* doc;",
        "};",
        f"inline constexpr std::array<StatusSpec, {len(link.statuses)}> {name('kStatuses')}{{{{",
    ]
    for status in link.statuses:
        lines += cpp_table_row([f"Status::{camel(status.name)}", cpp_string(status.name)],
                               status.doc)
    lines += ["}};", ""]
    lines += cpp_lookups(name, "status", "Status", "kStatuses", "a status", "unknown status")
    lines += ["",
              "// The INFO record: each field's byte offset and size.",
              f"inline constexpr unsigned {name('kInfoBytes')} = {link.info_bytes};"]
    for field in link.info:
        lines += comment(f"{field.name}: {field.doc}")
        lines.append(f"inline constexpr unsigned {name('kInfo' + camel(field.name) + 'Offset')} = "
                     f"{field.offset};")
        lines.append(f"inline constexpr unsigned {name('kInfo' + camel(field.name) + 'Bytes')} = "
                     f"{field.bytes};")
    lines += ["", "}  // namespace tpu::link"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Documentation tables


def isa_doc_tables(isa):
    fields = markdown_table(
        ["field", "word", "bits", "doc"],
        [[f"`{field.name}`", f"w{field.word}", field.bits, field.doc]
         for field in isa.fields.values()])
    opcodes = markdown_table(
        ["mnemonic", "value", "fields used", "flags", "doc"],
        [[f"`{opcode.mnemonic}`", f"0x{opcode.value:02X}",
          code_list(field.name for field in opcode.fields),
          code_list(flag.name for flag in opcode.flags), opcode.doc]
         for opcode in isa.opcodes])
    flags = markdown_table(
        ["opcode", "flag", "bit", "doc"],
        [[f"`{opcode.mnemonic}`", f"`{flag.name}`", str(flag.bit), flag.doc]
         for opcode in isa.opcodes for flag in opcode.flags])
    functions = markdown_table(
        ["mnemonic", "value", "doc"],
        [[f"`{function.mnemonic}`", str(function.value),
          function.doc + ("; only in a core with a vector unit" if function.vector else "")]
         for function in isa.functions])
    vector_ops = markdown_table(
        ["mnemonic", "value", "doc"],
        [[f"`{vector_op.mnemonic}`", str(vector_op.value), vector_op.doc]
         for vector_op in isa.vector_ops])
    rules = markdown_table(
        ["mnemonic", "source rows", "destination rows", "bias row", "host rows",
         "ILLEGAL_FIELD unless"],
        [[f"`{opcode.mnemonic}`", doc_rows(opcode.source),
          "the source rows" if opcode.in_place else doc_rows(opcode.destination),
          doc_bias(opcode),
          doc_host(opcode.host), doc_rules(opcode)] for opcode in isa.opcodes])
    return {"fields": fields, "opcodes": opcodes, "flags": flags, "functions": functions,
            "vector_ops": vector_ops, "rules": rules}


def doc_bias(opcode):
    if opcode.bias_rows_unless:
        return (f"ACC, `rows` per iteration; one with `{opcode.bias_rows_unless.name}`" +
                ("" if opcode.bias_always else f"; with `{opcode.bias_if.name}`"))
    if opcode.bias_if:
        return (f"ACC, with `{opcode.bias_if.name}`" +
                (f"; three with `{opcode.quant_if.name}`" if opcode.quant_if else ""))
    return "ACC" if opcode.bias_always else "—"


def doc_rows(rows):
    if rows is None:
        return "—"
    text = rows.memory.upper()
    if rows.switch_if is None:
        return text
    return f"{text}; {rows.other.upper()} with `{rows.switch_if.name}`"


def doc_host(host):
    if host is None:
        return "—"
    text = f"{'writes' if host.write else 'reads'} `{host.rows}` rows per iteration, bf16"
    if host.fp32_if:
        text += f" (fp32 with `{host.fp32_if.name}`)"
    if host.int8_if:
        text += f" (int8 with `{host.int8_if.name}`)"
    if host.only_if:
        text += f", with `{host.only_if.name}`"
    return text


def doc_rules(opcode):
    rules = []
    if opcode.repeats:
        rules.append("`count`, `rows` ≥ 1")
    for field, limit in opcode.limits:
        rules.append({"1..dim": f"`{field.name}` in 1 .. D",
                      "function": f"`{field.name}` a function code (of the core)",
                      "vector_op": f"`{field.name}` a vector operation's code",
                      "nonzero": f"`{field.name}` ≥ 1"}[limit])
    for rule in opcode.zero_unless:
        fields = ", ".join(f"`{field.name}`" for field in rule.fields)
        unless = (f"`{rule.flag.name}`" if rule.flag else f"`func` = `{rule.function.mnemonic}`")
        rules.append(f"{fields} 0 without {unless}")
    for first, second in opcode.requires:
        rules.append(f"`{first.name}` only with `{second.name}`")
    for first, second in opcode.excludes:
        rules.append(f"`{first.name}` without `{second.name}`" if isinstance(second, Flag) else
                     f"`{second.name}` 0 with `{first.name}`")
    int8_flags = [flag.name for flag in opcode.flags if flag.int8]
    if int8_flags:
        rules.append(f"{code_list(int8_flags)} only in a core with the int8 datapath")
    vector_flags = [flag.name for flag in opcode.flags if flag.vector]
    if vector_flags:
        rules.append(f"{code_list(vector_flags)} only in a core with a vector unit")
    if opcode.float_unless:
        rules.append(f"`{opcode.float_unless.name}` in an int8-only core")
    return "; ".join(rules) or "—"


def regs_doc_tables(regmap):
    def described(register):
        return "<br>".join([register.doc] + [
            f"[{bit_range(field.lsb, field.width)}] `{field.name}`: {field.doc}"
            for field in reversed(register.fields)])

    registers = markdown_table(
        ["offset", "name", "access", "reset", "doc"],
        [[f"0x{register.offset:03X}", f"`{register.name}`", register.access,
          "—" if register.reset is None else f"0x{register.reset:08X}", described(register)]
         for register in regmap.registers])
    counters = markdown_table(
        ["LO offset", "HI offset", "name", "doc"],
        [[f"0x{counter.offset:03X}", f"0x{counter.offset + 4:03X}", f"`{counter.name}`",
          counter.doc] for counter in regmap.counters])
    errors = markdown_table(
        ["value", "name", "doc"],
        [[str(error.value), f"`{error.name}`", error.doc] for error in regmap.errors])
    return {"registers": registers, "counters": counters, "errors": errors}


def link_doc_tables(link):
    commands = markdown_table(
        ["value", "command", "doc"],
        [[f"0x{command.value:02X}", f"`{command.name}`", command.doc]
         for command in link.commands])
    statuses = markdown_table(
        ["value", "status", "doc"],
        [[str(status.value), f"`{status.name}`", status.doc] for status in link.statuses])
    info = markdown_table(
        ["offset", "bytes", "field", "doc"],
        [[str(field.offset), str(field.bytes), f"`{field.name}`", field.doc]
         for field in link.info])
    constants = markdown_table(
        ["constant", "value"],
        [["request sync byte", f"0x{link.request_sync:02X}"],
         ["reply sync byte", f"0x{link.reply_sync:02X}"],
         ["longest payload", f"{link.max_payload} bytes"],
         ["request timeout", f"{link.frame_timeout_bits} bit times without a byte"],
         ["protocol version", str(link.version)]])
    return {"link-constants": constants, "link-commands": commands,
            "link-statuses": statuses, "link-info": info}


def fill_markers(text, tables, where):
    """`text` with the lines between each pair of GENERATED marker lines replaced by the table
    of that name; every table needs exactly one pair."""
    result, filled, inside = [], set(), None
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        begin = BEGIN_MARKER.fullmatch(line.rstrip("\r\n"))
        end = END_MARKER.fullmatch(line.rstrip("\r\n"))
        if inside is None and begin:
            if begin[1] not in tables:
                raise DefsError(f"{where}:{number}: no generated table '{begin[1]}' (there are "
                                f"{', '.join(tables)})")
            if begin[1] in filled:
                raise DefsError(f"{where}:{number}: a second marker pair for '{begin[1]}'")
            inside = begin[1]
            result += [line, tables[inside]]
        elif inside is None and end:
            raise DefsError(f"{where}:{number}: END marker for '{end[1]}' without its BEGIN")
        elif inside is None:
            result.append(line)
        elif end and end[1] == inside:
            filled.add(inside)
            inside = None
            result.append(line)
        elif begin or end:
            raise DefsError(f"{where}:{number}: expected the END marker for '{inside}' "
                            "before this marker")
    if inside is not None:
        raise DefsError(f"{where}: BEGIN marker for '{inside}' without its END")
    for table in tables:
        if table not in filled:
            raise DefsError(f"{where}: no marker pair for table '{table}'")
    return "".join(result)


# ---------------------------------------------------------------------------------------------
# Outputs


def display(path, out_dir):
    """How messages and generated comments name `path`: relative to the output folder when
    inside it, so that the outputs do not depend on where the checkout lies."""
    try:
        return str(path.resolve().relative_to(out_dir.resolve()))
    except ValueError:
        return str(path)


def read_existing(path, shown):
    """The current text of an output, or None if it does not exist."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DefsError(f"{shown}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise DefsError(f"{shown}: not UTF-8 text") from None


def generate(isa_path, regmap_path, link_path, out_dir):
    """Maps each output (relative to out_dir) to the text it should have."""
    isa_source, regmap_source = display(isa_path, out_dir), display(regmap_path, out_dir)
    link_source = display(link_path, out_dir)
    isa = parse_isa(load_toml(isa_path, isa_source), isa_source)
    regmap = parse_regmap(load_toml(regmap_path, regmap_source), regmap_source)
    link = parse_link(load_toml(link_path, link_source), link_source)
    outputs = {
        ISA_PKG: sv_isa_package(isa, isa_source),
        DECODER: sv_decoder(isa, isa_source),
        REGS_PKG: sv_regs_package(regmap, regmap_source),
        LINK_PKG: sv_link_package(link, link_source),
        ISA_HPP: cpp_isa_header(isa, isa_source),
        REGS_HPP: cpp_regs_header(regmap, regmap_source),
        LINK_HPP: cpp_link_header(link, link_source),
    }
    # The docs hold prose around the tables, so they must exist with their markers.
    for doc, tables in ((ISA_DOC, isa_doc_tables(isa)), (REGS_DOC, regs_doc_tables(regmap)),
                        (LINK_DOC, link_doc_tables(link))):
        text = read_existing(out_dir / doc, str(doc))
        if text is None:
            raise DefsError(f"{out_dir / doc}: no such file; it holds the generated tables "
                            "between GENERATED marker lines")
        outputs[doc] = fill_markers(text, tables, str(doc))
    return outputs


def stale_outputs(outputs, out_dir):
    """Maps each output whose file differs from its text to why: missing or out of date."""
    stale = {}
    for path, text in outputs.items():
        existing = read_existing(out_dir / path, str(path))
        if existing is None:
            stale[path] = "missing"
        elif existing != text:
            stale[path] = "out of date with its description"
    return stale


def write_outputs(outputs, stale, out_dir):
    for path in stale:
        try:
            (out_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (out_dir / path).write_bytes(outputs[path].encode("utf-8"))
        except OSError as error:
            raise DefsError(f"{path}: cannot write: {error.strerror}") from None
        print(f"wrote {path}")


def parse_args():
    parser = argparse.ArgumentParser(
        description="Generates SystemVerilog packages, C++ headers and doc tables from the "
                    "instruction-set, register-map and host-link descriptions.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming each output that is out of date")
    parser.add_argument("--isa", type=Path, default=ROOT / "rtl/defs/isa.toml", metavar="FILE",
                        help="instruction-set description (default: rtl/defs/isa.toml)")
    parser.add_argument("--regmap", type=Path, default=ROOT / "rtl/defs/regmap.toml",
                        metavar="FILE",
                        help="register-map description (default: rtl/defs/regmap.toml)")
    parser.add_argument("--link", type=Path, default=ROOT / "rtl/defs/link.toml", metavar="FILE",
                        help="host-link description (default: rtl/defs/link.toml)")
    parser.add_argument("--out-dir", type=Path, default=ROOT, metavar="DIR",
                        help="folder the output paths are relative to (default: the checkout)")
    return parser.parse_args()


def main():
    args = parse_args()
    try:
        outputs = generate(args.isa, args.regmap, args.link, args.out_dir)
        stale = stale_outputs(outputs, args.out_dir)
        if args.check:
            for path, reason in stale.items():
                print(f"{path}: {reason}; run `make defs`")
            return 1 if stale else 0
        write_outputs(outputs, stale, args.out_dir)
        if not stale:
            print(f"all {len(outputs)} generated files up to date")
        return 0
    except DefsError as error:
        print(f"gen_defs.py: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
