#!/usr/bin/env python3
"""Prepares the YoWASP tools of .venv for this machine, once, before anything times them.

A YoWASP tool is WebAssembly: on its first run the YoWASP runtime compiles it to machine code
and caches the result (~/.cache/YoWASP, or $YOWASP_CACHE_DIR). For Yosys that takes a minute or
two; every later run starts in under a second. Installing the tools (the Makefile's .venv
step), `make test`'s set-up, CTest's `tools.prepare` fixture and `make formal` run this, so that
no test and no time budget pays the compile.

Usage:
  prepare_tools.py [TOOL ...]
      runs each tool (default: every tool the project uses) and says whether it was compiled
      now, with the time, or was ready; exit 1 if a tool does not run or its compiled form is
      not kept, 2 if a tool is missing

Runs that prepare at the same time take turns (a lock beside the tools), so the second finds
the first's work done instead of compiling again.
"""
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS_BIN = Path(os.environ.get("TOOLS_BIN", ROOT / ".venv" / "bin"))
# Each tool the project runs (make synth, make fpga, make formal, the tests), with arguments
# that make it start and stop at once.
TOOLS = {
    "yosys": ["-V"],
    "nextpnr-ecp5": ["--version"],
    "nextpnr-ice40": ["--version"],
    "ecppack": ["--help"],
    "ecppll": ["--help"],
    "icepack": ["--help"],
}
# What the runtime prints when it compiles a tool (yowasp_runtime.run_wasm).
COMPILING = "Preparing to run"


class ToolError(Exception):
    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def start(path):
    """Runs the tool once; returns (seconds, whether the runtime compiled it)."""
    started = time.monotonic()
    result = subprocess.run([str(path), *TOOLS[path.name.removeprefix("yowasp-")]],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            errors="replace", check=False)
    seconds = time.monotonic() - started
    output = result.stdout + result.stderr
    # Tools answer --help with 0 or 1; a trap or a signal is a tool that does not run.
    if result.returncode < 0 or result.returncode > 2 or "Traceback" in output:
        last = (output.strip().splitlines() or ["no output"])[-1]
        raise ToolError(f"{path.name} does not run (exit {result.returncode}): {last}", 1)
    return seconds, COMPILING in output


def prepare(names, say=print):
    """Compiles each named tool where the cache lacks it; returns the seconds it all took."""
    started = time.monotonic()
    for name in names:
        if name not in TOOLS:
            raise ToolError(f"{name}: not a tool of the project ({', '.join(TOOLS)})", 2)
        if not (TOOLS_BIN / f"yowasp-{name}").exists():
            raise ToolError(f"{TOOLS_BIN / f'yowasp-{name}'} not found: run `make fpga-tools` "
                            "(fpga/requirements.txt)", 2)
    with (TOOLS_BIN.parent / ".prepare.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in names:
            path = TOOLS_BIN / f"yowasp-{name}"
            seconds, compiled = start(path)
            if not compiled:
                say(f"  {path.name}: ready ({seconds:.1f} s)")
                continue
            say(f"  {path.name}: compiled for this machine in {seconds:.1f} s")
            if start(path)[1]:
                raise ToolError(f"{path.name}: compiled again on its second run: the YoWASP "
                                "cache (~/.cache/YoWASP or $YOWASP_CACHE_DIR) is not kept", 1)
    return time.monotonic() - started


def main():
    names = sys.argv[1:] or list(TOOLS)
    if any(name.startswith("-") for name in names):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        seconds = prepare(names, say=lambda text: print(text, flush=True))
    except ToolError as error:
        print(f"prepare_tools.py: {error}", file=sys.stderr)
        return error.status
    print(f"tools: {len(names)} ready in {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
