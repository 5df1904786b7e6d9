#!/usr/bin/env python3
"""scripts/fpga_flow.py's build with a board's list of placement seeds: one synthesis, then each
seed in turn until one meets the clock; a design that does not fit stops at the first seed. The
tools are replaced by stand-ins that report a chosen Fmax per seed, so no FPGA tools are needed."""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import fpga_flow  # noqa: E402
from flow_checks import check  # noqa: E402


class StandInTools:
    """Synthesis and place and route as the flow calls them, with the Fmax of each seed given
    (None: the design does not fit; "unroutable": it fits, but nextpnr fails)."""

    def __init__(self, fmax_by_seed):
        self.fmax_by_seed = fmax_by_seed
        self.syntheses = 0
        self.placed = []

    def synthesize(self, board, out, label):
        self.syntheses += 1
        return out / "netlist.json"

    def place_and_route(self, board, netlist, out, seed, label):
        self.placed.append(seed)
        fmax = self.fmax_by_seed[seed]
        if fmax == "unroutable":
            (out / "pnr.log").write_text(
                "Info: \t         ICESTORM_LC:    5200/   5280    98%\n")
            raise fpga_flow.FlowError("nextpnr failed")
        if fmax is None:
            (out / "pnr.log").write_text(
                "Info: \t         ICESTORM_LC:    6000/   5280   113%\n")
            raise fpga_flow.FlowError("nextpnr failed")
        pnr = {"fmax": {"clk": {"achieved": fmax, "constraint": 50.0}},  # clock asked: 50 MHz
               "utilization": {"ICESTORM_LC": {"used": 5000, "available": 5280}}}
        return out / "placed.asc", pnr


def build(fmax_by_seed, seeds):
    tools = StandInTools(fmax_by_seed)
    fpga_flow.synthesize = tools.synthesize
    fpga_flow.place_and_route = tools.place_and_route
    board = fpga_flow.load_board("icebreaker")
    with tempfile.TemporaryDirectory() as folder:
        record = fpga_flow.build(board, Path(folder), seeds, bitstream=False)
    return tools, record


def main():
    failures = 0
    fpga_flow.say = lambda message: None

    tools, record = build({3: 49.8, 2: 50.2, 4: 51.0}, [3, 2, 4])
    failures += check("a seed that misses is followed by the next; one that meets ends it",
                      (tools.placed, record["seed"], record["meets_timing"]), ([3, 2], 2, True))
    failures += check("one synthesis for all the seeds", tools.syntheses, 1)
    failures += check("the report lists each seed tried with its Fmax", record["tried"],
                      [{"seed": 3, "fmax_mhz": 49.8}, {"seed": 2, "fmax_mhz": 50.2}])

    tools, record = build({3: 49.8, 2: 49.9}, [3, 2])
    failures += check("when every seed misses, the last one's result stands",
                      (tools.placed, record["seed"], record["meets_timing"],
                       record["clock"]["fmax_mhz"]), ([3, 2], 2, False, 49.9))

    tools, record = build({3: None, 2: 50.5}, [3, 2])
    failures += check("a design that does not fit is not placed again",
                      (tools.placed, record["fits"], record["problem"]),
                      ([3], False, "6,000 LC of 5,280"))

    tools, record = build({3: "unroutable", 2: 50.5}, [3, 2])
    failures += check("a placement that fits but fails is followed by the next seed",
                      (tools.placed, record["seed"], record["meets_timing"], record["tried"]),
                      ([3, 2], 2, True, [{"seed": 3, "fmax_mhz": None},
                                         {"seed": 2, "fmax_mhz": 50.5}]))

    tools = StandInTools({3: "unroutable"})
    fpga_flow.synthesize = tools.synthesize
    fpga_flow.place_and_route = tools.place_and_route
    with tempfile.TemporaryDirectory() as folder:
        try:
            fpga_flow.build(fpga_flow.load_board("icebreaker"), Path(folder), [3], bitstream=False)
            raised = False
        except fpga_flow.FlowError:
            raised = True
    failures += check("when the last seed fails, the error stands", raised, True)

    print(f"{7 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
