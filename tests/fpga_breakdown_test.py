#!/usr/bin/env python3
"""scripts/fpga_flow.py's per-unit breakdown on a hand-made hierarchical netlist: every cell
counted once, in the column of its kind, under the unit that holds it. No FPGA tools needed."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import fpga_flow  # noqa: E402
from flow_checks import check  # noqa: E402


def cells(*types):
    return {"cells": {f"c{index}": {"type": kind} for index, kind in enumerate(types)}}


def named(**instances):
    return {"cells": {name: {"type": kind} for name, kind in instances.items()}}


def merged(*parts):
    result = {"cells": {}}
    for part in parts:
        result["cells"].update(part["cells"])
    return result


BOARD = "$paramod$0a1b\\tpu_board"
CORE = "$paramod$2c3d\\tpu_top"
UNIT = "$paramod\\tpu_unit\\Width=s32'00000000000000000000000000000100"
ICE40 = {
    "board_top": merged(named(u_board=BOARD), cells("SB_IO", "SB_GB")),
    BOARD: merged(named(u_core=CORE, u_bridge="bridge"), cells("SB_LUT4")),
    CORE: merged(named(u_a=UNIT, u_b=UNIT), cells("SB_DFFER")),
    UNIT: merged(named(u_leaf="leaf"), cells("SB_LUT4", "SB_LUT4", "SB_CARRY", "SB_DFF")),
    "leaf": cells("SB_MAC16", "SB_RAM40_4K", "SB_SPRAM256KA"),
    "bridge": cells("SB_LUT4", "SB_LUT4", "SB_LUT4", "SB_DFFE"),
}
# Yosys's netlist defines the primitives too, as black boxes or (parameterised) white boxes.
MAC16 = "$paramod$4e5f\\SB_MAC16"
ICE40.update({kind: {"attributes": {"blackbox": "1"}, "cells": {}}
              for kind in ("SB_LUT4", "SB_CARRY", "SB_DFF", "SB_DFFE", "SB_DFFER", "SB_IO")})
ICE40[MAC16] = {"attributes": {"whitebox": "1"}, "cells": {"c0": {"type": "$buf"}}}
ICE40["leaf"] = cells(MAC16, "SB_RAM40_4K", "SB_SPRAM256KA")


def counts(lut4=0, carry=0, ff=0, dsp=0, bram=0, spram=0):
    return {"LUT4": lut4, "carry": carry, "FF": ff, "DSP": dsp, "BRAM": bram, "SPRAM": spram}


def main():
    failures = 0
    rows, whole = fpga_flow.unit_usage(ICE40, "board_top", "ice40")
    failures += check("iCE40 units", sorted(rows), sorted([
        ("u_board", "tpu_board (own logic)", counts(lut4=1)),
        ("u_board.u_bridge", "bridge", counts(lut4=3, ff=1)),
        ("u_board.u_core", "tpu_top (own logic)", counts(ff=1)),
        ("u_board.u_core.u_a", "tpu_unit", counts(lut4=2, carry=1, ff=1, dsp=1, bram=1, spram=1)),
        ("u_board.u_core.u_b", "tpu_unit", counts(lut4=2, carry=1, ff=1, dsp=1, bram=1, spram=1)),
    ]))
    failures += check("iCE40 whole design", whole, counts(lut4=8, carry=2, ff=4, dsp=2, bram=2, spram=2))

    ecp5 = {"top": merged(named(u_core=CORE), cells("TRELLIS_IO")),
            CORE: cells("LUT4", "CCU2C", "CCU2C", "TRELLIS_FF", "MULT18X18D", "DP16KD", "PFUMX")}
    rows, whole = fpga_flow.unit_usage(ecp5, "top", "ecp5")
    failures += check("ECP5: a CCU2C is two adder bits", whole,
                      counts(lut4=1, carry=4, ff=1, dsp=1, bram=1))
    failures += check("ECP5 units", rows, [("u_core", "tpu_top (own logic)", whole)])

    try:
        fpga_flow.unit_usage(ICE40, "no_such_top", "ice40")
        print("FAIL  a missing top is refused")
        failures += 1
    except fpga_flow.FlowError as error:
        failures += check("a missing top is refused", str(error), "the netlist has no module "
                          "no_such_top")

    print(f"{5 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
