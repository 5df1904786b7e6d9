#!/usr/bin/env python3
"""make formal: the formal proofs of docs/verification.md, one row each (what, engine, result,
depth, time), with the pinned YoWASP Yosys of .venv (its `sat`, `symfpu` and `select`) and
Debian's ABC (`berkeley-abc`, its `pdr`).

Usage:
  formal.py [--quick | --slow] [--only NAME ...] [--jobs N] [--out DIR]
      runs the proofs (--quick: those `make test` runs; --slow: the others; --only: the named
      ones), N at a time (default 1), the longest first, and prints the table; exit 1 if one
      fails or runs out of its time budget
  formal.py --list
      the proofs, one per line: name; quick (in `make test`) or slow; "break" where it has one;
      its budget in seconds; what it proves
  formal.py --break NAME [--out DIR]
      runs proof NAME on a copy of the RTL broken on purpose (the break the proof lists) and
      expects it to fail: prints the counterexample's waveform (open it with gtkwave); exit 1
      if the broken design passes

Kinds of proof:
  equivalence  Yosys `sat` on a miter in tests/formal (SAT, every input value); a sequential
               miter is unrolled from a free initial state, so the proof covers every cycle
  stall        `select` on the synthesised unit: every flip-flop has en_i as its enable, so a
               stalled cycle changes nothing and the pipelines' proofs with en_i = 1 cover stalls
  protocol     a harness in tests/formal, with the assertions and assumptions of
               rtl/prim/tpu_assert.svh: Yosys `sat` temporal induction (k-induction), or ABC's
               pdr (IC3) on the harness as an AIGER model written by Yosys; either way PASS is
               for every reachable state. A pdr counterexample's trace is Yosys `sat` unrolled
               to the cycle ABC names

Yosys is prepared for the machine (tools compiled by the YoWASP runtime, scripts/prepare_tools.py)
before any proof's clock starts: a budget counts the proof, not the tool's start-up.

Exit status: 0 all passed; 1 a proof failed or timed out (or a break was not caught); 2 bad
input or a tool that does not run, reported in one line.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import prepare_tools
import rtl_files

ROOT = Path(__file__).resolve().parent.parent
FORMAL = Path("tests") / "formal"
TOOLS_BIN = Path(os.environ.get("TOOLS_BIN", ROOT / ".venv" / "bin"))
PROGRESS_SECONDS = 15


class FormalError(Exception):
    """Bad input or a tool that does not run; reported in one line."""


@dataclass
class Break:
    """A deliberate bug: `old` replaced by `new` in `path` (relative to the repository)."""
    path: str
    old: str
    new: str
    what: str


@dataclass
class Proof:
    name: str
    what: str
    top: str
    lists: list               # RTL file lists (rtl/<subsystem>/<subsystem>.f)
    files: list               # miters or harnesses in tests/formal
    kind: str = "sat"         # sat, stall or protocol
    params: dict = field(default_factory=dict)
    symfpu: tuple = ()        # SymFPU reference circuits: ("add", "mul")
    steps: int = 1            # sat: cycles unrolled; the proof is in the last
    set_at: tuple = ()        # sat: (step, input, value) pins of a schedule
    lemma: tuple = ()         # sat: (step, signal, equal signal) proved first, then assumed
    depth: int = 0            # protocol: longest induction (prove)
    mode: str = "prove"       # protocol: prove (k-induction) or pdr
    # pdr: ABC's sequential simplification first (signal correspondence, then retiming): a
    # smaller model for pdr (axi_writer_account: 377 of 696 flip-flops left, 3 times quicker).
    simplify: bool = False
    # Seconds; each at least 3 times what the proof (or its break) took on the 2-core machine of
    # docs/verification.md's table, two at a time as make test runs them, so that a slower
    # machine gives a slower run, not a failure.
    budget: int = 180
    quick: bool = True        # runs in `make test`
    breaks: Break = None

    @property
    def engine(self):
        if self.kind == "sat":
            return "yosys sat" + (", lemma" if self.lemma else "")
        if self.kind == "stall":
            return "yosys select, sat"
        if self.mode == "prove":
            return "yosys sat k-induction"
        return "abc scorr, dretime, pdr" if self.simplify else "abc pdr"

    @property
    def depth_text(self):
        if self.kind == "protocol":
            return f"k <= {self.depth}" if self.mode == "prove" else "-"
        return f"{self.steps} cycle{'s' if self.steps > 1 else ''}" if self.steps > 1 else "-"


ARITH = ["rtl/arith/arith.f"]
MXU = ["rtl/mxu/mxu.f"]
CONTRACT = "formal_contract_pkg.sv"
ROUND_BIT = Break("rtl/arith/tpu_fp_pkg.sv",
                  "n.norm[2] && (n.norm[1] || n.norm[0] || n.norm[3]);",
                  "n.norm[2] && (n.norm[1] || n.norm[0]);",
                  "the adder's round-to-even bit dropped: ties round down")
MUL_FLUSH = Break("rtl/arith/tpu_fp_pkg.sv", "norm_exp == 10'd0", "norm_exp == 10'd1",
                  "the multiplier flushes products of exponent field 1 as well")


def unit_proofs():
    """Equivalence of the three arithmetic units with the IEEE reference, and of their pipelines
    with the unpipelined unit."""
    units = [
        ("fp32_add", "tpu_fp32_add", "AddStages", 3, ("add",),
         "tpu_fp32_add = SymFPU fp32 add (RNE) in the contract's wrapper, all 2^64 inputs",
         ROUND_BIT),
        ("bf16_mul", "tpu_bf16_mul", "MulStages", 2, ("mul",),
         "tpu_bf16_mul = SymFPU fp32 multiply of the widened operands, flushed (N-MUL)",
         MUL_FLUSH),
        ("fp32_to_bf16", "tpu_fp32_to_bf16", "rounder stages", 1, (),
         "tpu_fp32_to_bf16 = round to nearest even from the definition (N-OUT), all 2^32 inputs",
         Break("rtl/arith/tpu_fp32_to_bf16.sv", "value_i[14:0] != 15'h0 || value_i[16]",
               "value_i[14:0] != 15'h0", "the rounder's tie goes down even when it is odd")),
    ]
    proofs = []
    for name, unit, stages_name, most, symfpu, what, unit_break in units:
        proofs.append(Proof(name, what, f"formal_{name}", ARITH, [CONTRACT, f"formal_{name}.sv"],
                            symfpu=symfpu, breaks=unit_break))
        for stages in range(1, most + 1):
            proofs.append(Proof(
                f"{name}_pipe{stages}",
                f"{unit} with {stages_name} = {stages}: the same results {stages} cycle(s) later",
                f"formal_{name}_pipeline", ARITH, ["formal_pipelines.sv"],
                params={"Stages": stages}, steps=stages + 1,
                breaks=Break(f"rtl/arith/{unit}.sv", f".Enable(PipeStages >= {stages})",
                             f".Enable(PipeStages >= {stages + 1})",
                             f"a pipeline register left out at PipeStages = {stages}")))
            proofs.append(Proof(
                f"{name}_stall{stages}",
                f"{unit} with {stages_name} = {stages}: every flip-flop enabled by en_i",
                unit, ARITH, [], kind="stall", params={"PipeStages": stages}))
    return proofs


# The cell's schedule (formal_mac_cell): weight beat for row 0 in step 1, commit in step 2.
MAC_SCHEDULE = ((1, "wgt_valid_i", 1), (1, "wgt_tag_i", 0), (2, "commit_i", 1))
MAC_SIGN = Break("rtl/arith/tpu_mac_pkg.sv", "p.sign = int8 ? a[7] ^ w[7] : p.sign;",
                 "p.sign = int8 ? a[7] : p.sign;", "the int8 product takes the activation's sign")
MAC_ROUND = Break("rtl/arith/tpu_mac_pkg.sv", "add_round = int8 ? n[31:0] : tpu_fp_pkg::add_round(n);",
                  "add_round = int8 ? n[31:0] : n[31:0];",
                  "the cell's float sum left unrounded (its normalised bits passed through)")


def mac_proofs():
    """The MAC cell at every pipeline depth against the proved units (bf16) and Q-MAC (int8),
    split by the mode of the checked activation; an int8-only cell against Q-MAC; and the
    stall check of each depth."""
    proofs = []
    for mul_stages in range(3):
        for add_stages in range(4):
            depth = f"m{mul_stages}a{add_stages}"
            stages = f"MulStages = {mul_stages}, AddStages = {add_stages}"
            params = {"MulStages": mul_stages, "AddStages": add_stages}
            deepest = mul_stages == 2 and add_stages == 3
            # make test runs those with equal stages and the deepest; make formal all twelve.
            quick = mul_stages == add_stages or deepest
            # Each proof's lemma: the cell's product equals the reference's (tpu_bf16_mul's, or
            # the exact int8 product) where the cell hands it to its product register
            # (formal_mac_cell). Without it the int8 proofs took three times as long.
            at_cell = 2 + min(mul_stages, 1)
            for mode, int8, reference, lemma, mode_break in (
                    ("float", 0, "tpu_fp32_add(S, tpu_bf16_mul(a, w)), so SymFPU's N-MAC",
                     (at_cell, "u_dut.product_d[0]", "float_product_at_cell"), MAC_ROUND),
                    ("int8", 1, "Q-MAC", (at_cell, "u_dut.product_d[0]", "int_product_at_cell"),
                     MAC_SIGN)):
                proofs.append(Proof(
                    f"mac_{mode}_{depth}", f"MAC cell with {stages}, {mode} activation: "
                    f"{reference}", "formal_mac_cell", MXU, ["formal_mac_cell.sv"],
                    params=params, steps=3 + mul_stages + add_stages,
                    set_at=MAC_SCHEDULE + ((2, "act_int8_i", int8),), lemma=lemma,
                    quick=quick, breaks=mode_break if deepest else None))
            proofs.append(Proof(
                f"mac_stall_{depth}", f"MAC cell with {stages}: every flip-flop enabled by en_i",
                "tpu_systolic_array", MXU, [], kind="stall",
                params={"Rows": 1, "Cols": 1, "TagWidth": 1, "Int8": 1, **params}))
    proofs.append(Proof(
        "mac_int8_only", "MAC cell of an int8-only core (Float = 0, MulStages 2, AddStages 3): "
        "Q-MAC", "formal_mac_cell", MXU, ["formal_mac_cell.sv"],
        params={"MulStages": 2, "AddStages": 3, "Float": 0}, steps=8,
        set_at=MAC_SCHEDULE, breaks=MAC_SIGN))
    return proofs


def protocol_proofs():
    shell = ["rtl/top/shell.f"]
    return [
        Proof("regs", "tpu_regs AXI4-Lite slave, counters in flip-flops: one response per "
              "request, bounded response, handshakes held, strobed bytes read back",
              "formal_regs_harness", shell, ["formal_regs_harness.sv"], kind="protocol", depth=8,
              budget=300,
              breaks=Break("rtl/top/tpu_regs.sv",
                           "s_awready_o = !bvalid_q && s_awvalid_i && s_wvalid_i;",
                           "s_awready_o = s_awvalid_i && s_wvalid_i;",
                           "a write is taken while the last one's B is still waiting")),
        Proof("regs_ram", "tpu_regs AXI4-Lite slave, counters in block RAM (reads answered "
              "within 16 cycles)", "formal_regs_harness", shell, ["formal_regs_harness.sv"],
              kind="protocol", params={"CounterRam": 1}, mode="pdr"),
        Proof("axi_reader", "tpu_axi_reader: legal INCR bursts, none across 4 KiB, no beat "
              "dropped or repeated, each command's rows with the last marked",
              "formal_axi_reader_harness", ["rtl/axi/axi.f"], ["formal_axi_reader_harness.sv"],
              kind="protocol", mode="pdr",
              breaks=Break("rtl/axi/tpu_axi_reader.sv", "out_last_d      = row_is_last;",
                           "out_last_d      = 1'b0;",
                           "the last row of a command is not marked")),
        Proof("axi_reader_abort", "tpu_axi_reader with an abort in any cycle: the same burst rules, "
              "R always taken, no burst after the abort, quiet only when no beat is owed",
              "formal_axi_reader_harness", ["rtl/axi/axi.f"], ["formal_axi_reader_harness.sv"],
              kind="protocol", params={"Abort": 1}, mode="pdr",
              breaks=Break("rtl/axi/tpu_axi_bursts.sv", "burst_valid_o = active_q && !abort_i;",
                           "burst_valid_o = active_q;",
                           "the burst splitter goes on offering bursts after an abort")),
        Proof("axi_writer", "tpu_axi_writer at the store unit's sizes (16-byte bus, 64-byte rows, "
              "bursts of 64 beats, 8 outstanding): AW legal and inside 4 KiB, AW and W held until "
              "taken, B always taken", "formal_axi_writer_harness", ["rtl/axi/axi.f"],
              ["formal_axi_writer_harness.sv"], kind="protocol",
              params={"Account": 0, "BusBytes": 16, "MaxRowBytes": 64, "MaxBurst": 64,
                      "MaxOutstanding": 8, "RowsWidth": 16},
              depth=6,
              breaks=Break("rtl/axi/tpu_axi_writer.sv", "aw_len_d   = 8'(burst_beats - 1'b1);",
                           "aw_len_d   = 8'(burst_beats);",
                           "AWLEN one beat too long: a burst can cross 4 KiB or MaxBurst")),
        Proof("axi_writer_account", "tpu_axi_writer, every beat accounted for (4-byte bus): "
              "each burst's beats exactly len + 1 with WLAST on the last, WSTRB on the beat's "
              "lanes, at most MaxOutstanding unanswered, done only on a response, idle only when "
              "all is answered, data within 2 cycles of its burst", "formal_axi_writer_harness",
              ["rtl/axi/axi.f"], ["formal_axi_writer_harness.sv"], kind="protocol", mode="pdr",
              simplify=True,
              # 422 s beside two other tools on the 2-core machine (without the simplification
              # about 1,300 s on it alone, 2,037 s beside other work).
              budget=1500, quick=False,
              breaks=Break("rtl/axi/tpu_axi_writer.sv", "w_last_d  = burst_beat_q == wlen;",
                           "w_last_d  = burst_beat_q + 1'b1 == wlen;",
                           "WLAST a beat early: the burst's last beat dropped")),
        Proof("mxu", "tpu_mxu (2 x 2): results held until taken, activation and seed taken "
              "together, one result per row in order with res_last on the act_last rows, each "
              "within the pipeline's latency while the consumer takes them",
              "formal_mxu_harness", MXU, ["formal_mxu_harness.sv"], kind="protocol",
              mode="pdr",
              breaks=Break("rtl/mxu/tpu_mxu_ctrl.sv", ".en_i  (advance_o),", ".en_i  (1'b1),",
                           "the array advances while the result consumer stalls: results "
                           "overwritten before they are taken")),
        Proof("link_bridge", "tpu_link_bridge, any byte sequence, any partner: a stopped "
              "request answered after 8,000 quiet cycles, Hunt again within 8,018 cycles of its "
              "own after the last byte, a corrupt request answered CORRUPT, handshakes held",
              "formal_link_bridge_harness", ["rtl/link/link.f"],
              ["formal_link_bridge_harness.sv"], kind="protocol",
              params={"MemBytes": 256, "ClksPerBit": 4}, depth=6, budget=300,
              breaks=Break("rtl/link/tpu_link_bridge.sv", "idle_d = idle_q + 1'b1;",
                           "idle_d = idle_q;", "the request timeout never counts: a request "
                           "that stops arriving leaves the bridge in its frame states")),
    ]


PROOFS = unit_proofs() + mac_proofs() + protocol_proofs()


# ---------------------------------------------------------------------------------------------
# Running one proof
# ---------------------------------------------------------------------------------------------
def say(text):
    print(text, flush=True)


def sources(proof, root):
    """The proof's files, relative to the repository (YoWASP tools see only the folder they run
    in and below), read from `root` (the repository, or a broken copy of its RTL)."""
    try:
        files = rtl_files.rtl_files([root / path for path in proof.lists])
    except rtl_files.ListError as error:
        raise FormalError(str(error)) from error
    files = [os.path.relpath(path, ROOT) for path in files]
    return files + [os.path.relpath(root / FORMAL / name, ROOT) for name in proof.files]


def chparams(proof):
    return " ".join(f"-chparam {key} {value}" for key, value in proof.params.items())


def sat_script(proof, root, out):
    lines = []
    for op in proof.symfpu:
        lines += [f"symfpu -op {op} -rm RNE", f"rename symfpu symfpu_{op}"]
    include = os.path.relpath(root / "rtl" / "prim", ROOT)
    lines += [f"read_verilog -defer -sv -DSYNTHESIS -I{include} {' '.join(sources(proof, root))}",
              f"hierarchy -top {proof.top} {chparams(proof)}",
              "proc; flatten; async2sync; opt -fast"]
    pins = " ".join(f"-set-at {step} {name} {value}" for step, name, value in proof.set_at)
    vcd = f"-dump_vcd {os.path.relpath(out / 'counterexample.vcd', ROOT)}"
    if proof.lemma:
        # Proved on the same unrolled model with the same pins, so assuming it in the main
        # proof leaves out no behaviour: the solver is handed an intermediate equality.
        step, signal, equal = proof.lemma
        lines.append(f"sat -seq {step} -prove-skip {step - 1} {pins} -prove {signal} {equal} "
                     f"-verify -show-inputs {vcd}")
        pins += f" -set-at {step} {signal} {equal}"
    sequence = f"-seq {proof.steps} -prove-skip {proof.steps - 1}" if proof.steps > 1 else ""
    lines.append(f"sat {sequence} {pins} -prove ok_o 1 -verify -show-inputs {vcd}")
    return lines


def harness_script(proof, root):
    """A harness elaborated for a proof: its assertions, with its assumptions and those of the
    unit it proves (the units below that one have theirs turned into assertions)."""
    include = os.path.relpath(root / "rtl" / "prim", ROOT)
    dut = dut_module(proof)
    return [f"read_verilog -defer -sv -formal -I{include} {' '.join(sources(proof, root))}",
            f"hierarchy -top {proof.top} {chparams(proof)}",
            f"chformal -assume2assert * {proof.top} %d {dut} %d $paramod$*\\{dut} %d",
            "proc; flatten; memory; memory_map; async2sync; chformal -lower; opt_clean; opt -fast"]


def sat_check(out, check):
    # Flip-flops start at zero; the harness holds rst_ni low in the first cycle.
    vcd = os.path.relpath(out / "counterexample.vcd", ROOT)
    return f"{check} -prove-asserts -set-assumes -set-init-zero -show-ports -dump_vcd {vcd}"


def protocol_script(proof, root, out):
    """The harness by temporal induction (k-induction up to `depth`)."""
    return harness_script(proof, root) + [
        sat_check(out, f"sat -tempinduct -maxsteps {proof.depth}")]


def aiger_script(proof, root, out):
    """The harness as an AIGER model for ABC: assertions become bad-state properties and
    assumptions invariant constraints; undriven nets and undefined bits become free inputs (so
    the model has at least the behaviours of the design), flip-flops start at zero."""
    return harness_script(proof, root) + [
        "setattr -unset keep; delete -output; opt -full; techmap; opt -fast",
        "setundef -undriven -anyseq", "setundef -zero -init", "dffunmap; aigmap; opt_clean",
        f"write_aiger -zinit -map {os.path.relpath(out / 'model.aim', ROOT)} "
        f"{os.path.relpath(out / 'model.aig', ROOT)}"]


def dut_module(proof):
    """The unit a protocol harness proves: formal_X_harness proves tpu_X."""
    return re.sub(r"^formal_(.*)_harness$", r"tpu_\1", proof.top)


FLIP_FLOPS = "t:$dffe t:$adffe %u"


def stall_scripts(proof, root, out):
    """Two Yosys scripts: the first synthesises the unit, fails if a flip-flop has no enable,
    and lists the enable nets other than en_i; the second shows that each of those is 0 while
    en_i is 0, whatever the flip-flops hold (they are cut to free values)."""
    include = os.path.relpath(root / "rtl" / "prim", ROOT)
    design = os.path.relpath(out / "unit.il", ROOT)
    nets = os.path.relpath(out / "enables.txt", ROOT)
    first = [f"read_verilog -defer -sv -DSYNTHESIS -I{include} {' '.join(sources(proof, root))}",
             f"hierarchy -top {proof.top} {chparams(proof)}",
             "proc; flatten; opt_clean; opt_dff; opt_clean",
             "select -assert-none t:$ff t:$dff t:$adff t:$sdff t:$sdffe t:$sdffce t:$aldff "
             "t:$aldffe t:$dffsr t:$dffsre t:$dlatch t:$adlatch t:$mem_v2",
             f"select -assert-none {FLIP_FLOPS} r:EN_POLARITY=0 %i",
             f"tee -q -o {nets} select -list {FLIP_FLOPS} %ci1:+[EN] {FLIP_FLOPS} %d w:en_i %d",
             f"write_rtlil {design}"]
    second = [f"read_rtlil {design}", f"cutpoint {FLIP_FLOPS}"]
    return first, second


def run_stall(proof, root, out, started):
    first, second = stall_scripts(proof, root, out)
    status = run_yosys(first, out / "synth", proof, started)
    if status is None or status[0] != 0:
        return status
    enables = [line.split("/", 1)[1] for line in (out / "enables.txt").read_text().split()
               if "/" in line]
    if not enables:
        return status
    proves = " ".join(f"-prove {net} 0" for net in enables)
    return run_yosys(second + [f"sat -set en_i 0 {proves} -verify"], out / "enables", proof,
                     started)


def run_yosys(lines, stem, proof, started):
    """Runs a Yosys script; returns (exit status, log text), or None when out of budget."""
    script = stem.with_suffix(".ys")
    script.write_text("\n".join(lines) + "\n")
    log = stem.with_suffix(".log")
    status = run_tool([tool("yosys"), "-q", "-l", os.path.relpath(log, ROOT), "-s",
                       os.path.relpath(script, ROOT)], stem.with_suffix(".out"), proof, started)
    if status is None:
        return None
    return status, log.read_text(errors="replace") if log.exists() else ""


def run_tool(command, log, proof, started):
    """Runs a tool from the repository's root, printing progress while it runs; returns its
    exit status, or None when it ran out of the proof's budget (it is then stopped)."""
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        while True:
            elapsed = time.monotonic() - started
            try:
                process.wait(timeout=min(PROGRESS_SECONDS, max(1, proof.budget - elapsed)))
                return process.returncode
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed >= proof.budget:
                    stop(process)
                    return None
                say(f"  {proof.name}: running, {elapsed:.0f} s of {proof.budget} s")


def stop(process):
    """Stops a tool and whatever it started."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def tool(name):
    path = TOOLS_BIN / f"yowasp-{name}"
    if not path.exists():
        raise FormalError(f"{path} not found: run `make fpga-tools` (fpga/requirements.txt)")
    return str(path)


def abc_tool():
    path = shutil.which("berkeley-abc") or shutil.which("yosys-abc")
    if path is None:
        raise FormalError("berkeley-abc not found: install Debian's berkeley-abc "
                          "(scripts/deps.sh does)")
    return path


def run_pdr(proof, root, out, started):
    """ABC's pdr on the harness's AIGER model: PASS, FAIL with Yosys `sat`'s trace of the cycle
    ABC names, or TIMEOUT."""
    outcome = run_yosys(aiger_script(proof, root, out), out / "model", proof, started)
    if outcome is None:
        return "TIMEOUT", None
    if outcome[0] != 0:
        raise FormalError(f"{proof.name}: yosys failed (exit {outcome[0]}); see "
                          f"{os.path.relpath(out, ROOT)}/model.log")
    log = out / "proof.log"
    model = os.path.relpath(out / "model.aig", ROOT)
    simplify = "scorr; dc2; dretime; scorr; " if proof.simplify else ""
    status = run_tool([abc_tool(), "-c", f"read_aiger {model}; fold; strash; {simplify}pdr"], log,
                      proof, started)
    if status is None:
        return "TIMEOUT", None
    text = log.read_text(errors="replace")
    if "Property proved" in text:
        return "PASS", None
    failed = re.search(r"was asserted in frame (\d+)", text)
    if failed is None:
        raise FormalError(f"{proof.name}: ABC gave no verdict (exit {status}); see "
                          f"{os.path.relpath(log, ROOT)}")
    cycles = int(failed.group(1)) + 1
    trace = run_yosys(harness_script(proof, root) + [sat_check(out, f"sat -seq {cycles}")],
                      out / "trace", proof, started)
    if trace is None:
        return "FAIL", None
    if "model found: FAIL" not in trace[1]:
        # The AIGER model has free inputs where the design has undefined bits: a failure that
        # only they make is not one of the design's.
        raise FormalError(f"{proof.name}: ABC fails in cycle {cycles} but Yosys sat finds no "
                          f"failure there; see {os.path.relpath(out, ROOT)}/trace.log")
    return "FAIL", out / "counterexample.vcd"


def run_proof(proof, root, out):
    """Runs one proof; returns (result, seconds, counterexample or None). result is PASS, FAIL
    or TIMEOUT."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    if proof.kind in ("sat", "stall"):
        if proof.kind == "sat":
            outcome = run_yosys(sat_script(proof, root, out), out / "proof", proof, started)
        else:
            outcome = run_stall(proof, root, out, started)
        seconds = time.monotonic() - started
        if outcome is None:
            return "TIMEOUT", seconds, None
        status, text = outcome
        if status == 0:
            return "PASS", seconds, None
        if "ERROR: Assertion failed" in text or "SAT proof finished - model found: FAIL" in text \
                or "SAT temporal induction proof finished - model found: FAIL" in text:
            vcd = out / "counterexample.vcd"
            return "FAIL", seconds, vcd if vcd.exists() else None
        raise FormalError(f"{proof.name}: yosys failed (exit {status}); see "
                          f"{os.path.relpath(out, ROOT)}/*.log")
    if proof.mode == "pdr":
        result, trace = run_pdr(proof, root, out, started)
        return result, time.monotonic() - started, trace
    outcome = run_yosys(protocol_script(proof, root, out), out / "proof", proof, started)
    seconds = time.monotonic() - started
    if outcome is None:
        return "TIMEOUT", seconds, None
    status, text = outcome
    if status == 0 and "Induction step proven: SUCCESS" in text:
        return "PASS", seconds, None
    if "model found for base case: FAIL" in text or "Reached maximum number of time steps" in text:
        vcd = out / "counterexample.vcd"
        return "FAIL", seconds, vcd if vcd.exists() else None
    raise FormalError(f"{proof.name}: yosys failed (exit {status}); see "
                      f"{os.path.relpath(out, ROOT)}/proof.log")


# ---------------------------------------------------------------------------------------------
# Breaks
# ---------------------------------------------------------------------------------------------
def broken_copy(proof, out):
    """A copy of rtl/ and tests/formal with the proof's break applied, under `out`."""
    root = out / "tree"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(ROOT / "rtl", root / "rtl")
    shutil.copytree(ROOT / FORMAL, root / FORMAL)
    target = root / proof.breaks.path
    text = target.read_text()
    if text.count(proof.breaks.old) != 1:
        raise FormalError(f"{proof.name}: the break's text is not in {proof.breaks.path} once "
                          f"(the RTL changed?): {proof.breaks.old}")
    target.write_text(text.replace(proof.breaks.old, proof.breaks.new))
    return root


def run_break(proof, out):
    if proof.breaks is None:
        raise FormalError(f"proof {proof.name} has no break")
    say(f"{proof.name}: {proof.breaks.what}")
    say(f"  {proof.breaks.path}: `{proof.breaks.old}` -> `{proof.breaks.new}`")
    root = broken_copy(proof, out)
    result, seconds, trace = run_proof(proof, root, out / "proof")
    if result == "FAIL":
        say(f"caught: {proof.name} fails in {seconds:.1f} s; counterexample: "
            f"gtkwave {os.path.relpath(trace, ROOT)}")
        return 0
    say(f"NOT CAUGHT: {proof.name} gives {result} on the broken design ({seconds:.1f} s)")
    return 1


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def induction_length(out):
    """The induction length at which a k-induction closed (Yosys's log), as "k = N"."""
    lengths = re.findall(r"Trying induction with length (\d+)",
                         (out / "proof.log").read_text(errors="replace"))
    return f"k = {lengths[-1]}" if lengths else None


def pdr_invariant(out):
    """The frame of the inductive invariant ABC's pdr found (its log), as "inv. F[N]"."""
    frames = re.findall(r"Invariant F\[(\d+)\]", (out / "proof.log").read_text(errors="replace"))
    return f"inv. F[{frames[-1]}]" if frames else None


def table(rows):
    header = ("proof", "engine", "result", "depth", "time")
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *rows):
        say("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def run_row(proof, out):
    """Runs one proof of the table; returns its row and whether it passed."""
    result, seconds, trace = run_proof(proof, ROOT, out / proof.name)
    depth = proof.depth_text
    if proof.kind == "protocol" and result == "PASS":
        found = induction_length if proof.mode == "prove" else pdr_invariant
        depth = found(out / proof.name) or depth
    if result == "TIMEOUT":
        say(f"  {proof.name}: TIMEOUT: stopped at its budget of {proof.budget} s")
    else:
        say(f"  {proof.name}: {result} in {seconds:.1f} s")
    if trace is not None:
        say(f"  {proof.name}: counterexample: gtkwave {os.path.relpath(trace, ROOT)}")
    return (proof.name, proof.engine, result, depth, f"{seconds:.1f} s"), result == "PASS"


def run_table(chosen, out, jobs):
    """Runs the chosen proofs, `jobs` at a time, those with the largest budgets first (the
    longest proofs start early and the short ones fill the other workers); the table keeps the
    order of PROOFS."""
    order = sorted(range(len(chosen)), key=lambda i: -chosen[i].budget) if jobs > 1 \
        else range(len(chosen))
    rows = [None] * len(chosen)

    def run(index):
        proof = chosen[index]
        say(f"[{index + 1}/{len(chosen)}] {proof.name}: {proof.what}")
        rows[index] = run_row(proof, out)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for finished in [pool.submit(run, index) for index in order]:
            finished.result()
    say("")
    table([row for row, _ in rows])
    failed = sum(not passed for _, passed in rows)
    say(f"\n{len(rows) - failed} of {len(rows)} proofs passed")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(
        description="The formal proofs of docs/verification.md, one row each.")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--quick", action="store_true",
                       help="only the quick proofs (those make test runs)")
    which.add_argument("--slow", action="store_true", help="only the slow proofs")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these proofs")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="proofs at a time, the largest budgets first (default 1)")
    parser.add_argument("--list", action="store_true",
                        help="list the proofs: name, quick or slow, break, budget, what")
    parser.add_argument("--break", dest="broken", metavar="NAME",
                        help="run proof NAME on a copy of the RTL broken on purpose")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "formal",
                        help="work folder (default build/formal)")
    args = parser.parse_args()
    by_name = {proof.name: proof for proof in PROOFS}
    out = args.out.resolve()
    if not out.is_relative_to(ROOT):
        raise FormalError(f"--out {args.out}: must be inside the repository (the YoWASP tools "
                          "see only the folder they run in and below)")
    if args.jobs < 1:
        raise FormalError(f"--jobs {args.jobs}: must be 1 or more")

    if args.list:
        for proof in PROOFS:
            say(f"{proof.name} {'quick' if proof.quick else 'slow'} "
                f"{'break' if proof.breaks else '-'} {proof.budget} {proof.what}")
        return 0
    if args.broken and args.broken not in by_name:
        raise FormalError(f"--break {args.broken}: no such proof (--list shows them)")
    chosen = PROOFS
    if args.only:
        unknown = [name for name in args.only if name not in by_name]
        if unknown:
            raise FormalError(f"--only {unknown[0]}: no such proof (--list shows them)")
        chosen = [by_name[name] for name in args.only]
    elif args.quick or args.slow:
        chosen = [proof for proof in PROOFS if proof.quick == args.quick]

    try:
        prepare_tools.prepare(["yosys"], say=say)
    except prepare_tools.ToolError as error:
        raise FormalError(str(error)) from error
    if args.broken:
        return run_break(by_name[args.broken], out / f"break-{args.broken}")
    return run_table(chosen, out, args.jobs)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FormalError as error:
        print(f"formal.py: {error}", file=sys.stderr)
        sys.exit(2)
