#!/usr/bin/env python3
"""Opens a waveform in the real GTKWave, headless, with a layout, and checks what it displays.

Usage: gtkwave_view.py WAVE LAYOUT [--screenshot PNG]

Runs `gtkwave WAVE LAYOUT` from the repository's root (the paths relative to it, as the README
gives the command) on a virtual X display (Debian's Xvfb), and reads through GTKWave's Tcl interface
what each trace shows at three marker times. Every signal the layout hands to a translate
filter (a `^>` line) must be shown as the filter's answer for that signal's raw value: the raw
values come from a second run of the same layout with its filters taken out, and the filter
named by the layout is run on them here. It fails, in one line, if GTKWave cannot find a filter
process, if a filtered trace shows anything else (hex, say), or if no value was translated at
all. --screenshot also writes a PNG of the window (ImageMagick's `import`), with the marker on
the first change of the first filtered signal to a number of some size, in sight.

Exit status: 0 every filtered signal shown as its filter gives it; 1 not; 2 bad input or a tool
missing.
"""
import argparse
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where along the waveform the values are read (fractions of its length).
MARKERS = (0.3, 0.5, 0.7)
# GTKWave starts and reads a waveform in about a second; this bounds a run that hangs.
RUN_SECONDS = 60
# GTKWave's trace flag for a value handed to a translate-filter process (TR_PTRANSLATED).
TRANSLATED_BY_PROCESS = 0x4000
NO_FILTER = "Could not find filter process"
WINDOW = "1600x1000"

PROBE = """
set lo [gtkwave::getMinTime]
set hi [gtkwave::getMaxTime]
set n [gtkwave::getTotalNumTraces]
for {set i 0} {$i < $n} {incr i} {
  puts "name $i [gtkwave::getTraceNameFromIndex $i]"
}
foreach fraction {%MARKERS%} {
  set t [expr {$lo + wide(($hi - $lo) * $fraction)}]
  gtkwave::setMarker $t
  for {set i 0} {$i < $n} {incr i} {
    puts "value $t $i [gtkwave::getTraceFlagsFromIndex $i] [gtkwave::getTraceValueAtMarkerFromIndex $i]"
  }
}
puts "probe done"
flush stdout
"""

# For a screenshot: the marker and the window moved to the first change of the first filtered
# signal whose first lane becomes a number of some size (the change list gives the filter's
# answers, after "0x": not zero, not a small integer's bit pattern read as a float), and the rows
# scrolled down to it where it is out of sight.
FRAME = """
set first -1
for {set i 0} {$i < $n && $first < 0} {incr i} {
  if {[gtkwave::getTraceFlagsFromIndex $i] & %TRANSLATED%} { set first $i }
}
gtkwave::/Edit/UnHighlight_All
gtkwave::setTraceHighlightFromIndex $first 1
set half [expr {([gtkwave::getWindowEndTime] - [gtkwave::getWindowStartTime]) / 2}]
foreach {when value} [gtkwave::signalChangeList -max 10000] {
  set lane [lindex [split [string range $value 2 end] |] 0]
  if {[string is double -strict $lane] && abs($lane) > 1e-30 && $when > $lo} {
    gtkwave::setMarker $when
    gtkwave::setZoomRangeTimes [expr {max($lo, $when - $half)}] [expr {$when + $half}]
    break
  }
}
if {$first > %ROWS%} { gtkwave::setTraceScrollbarRowValue [expr {$first - 3}] }
puts "frame done"
flush stdout
"""
# Rows the window shows at its size, with room for the group headings.
ROWS_IN_SIGHT = 30


class ViewError(Exception):
    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class VirtualDisplay:
    """An Xvfb server on a free display number, for as long as the `with` block runs."""

    def __enter__(self):
        if shutil.which("Xvfb") is None:
            raise ViewError("Xvfb not found: install Debian's xvfb (scripts/deps.sh does)", 2)
        read, write = os.pipe()
        self.server = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{WINDOW}x24", "-nolisten", "tcp"],
            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        with os.fdopen(read) as announced:
            number = announced.readline().strip()
        if not number:
            self.server.kill()
            raise ViewError("Xvfb did not start", 2)
        self.name = f":{number}"
        return self

    def __exit__(self, *exc):
        self.server.terminate()
        self.server.wait()


def run_gtkwave(display, wave, layout, screenshot=None):
    """GTKWave on `wave` with `layout` (paths relative to the repository's root, where it runs);
    returns (traces: index -> name, values: (time, index) -> (flags, text), GTKWave's messages)."""
    if shutil.which("gtkwave") is None:
        raise ViewError("gtkwave not found: install Debian's gtkwave (scripts/deps.sh does)", 2)
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "probe.tcl"
        frame = FRAME.replace("%TRANSLATED%", str(TRANSLATED_BY_PROCESS)).replace(
            "%ROWS%", str(ROWS_IN_SIGHT))
        script.write_text(PROBE.replace("%MARKERS%", " ".join(map(str, MARKERS)))
                          + (frame if screenshot else "gtkwave::/File/Quit\n"))
        errors = Path(scratch) / "stderr"
        with errors.open("w") as messages:
            process = subprocess.Popen(["gtkwave", "-S", str(script), str(wave), str(layout)],
                                       cwd=ROOT, env={**os.environ, "DISPLAY": display.name},
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=messages)
            try:
                lines = read_probe(process, screenshot, display)
            finally:
                if process.poll() is None:
                    process.kill()
                process.wait()
        messages = errors.read_text(errors="replace")
    traces, values = {}, {}
    for line in lines:
        if line.startswith("name "):
            index, _, name = line[5:].partition(" ")
            traces[int(index)] = name
        elif line.startswith("value "):
            when, index, flags, *text = line[6:].split(" ", 3)
            values[int(when), int(index)] = (int(flags), text[0] if text else "")
    return traces, values, messages


def read_probe(process, screenshot, display):
    """The probe's lines; with a screenshot, the window is captured once the probe is done."""
    deadline = time.monotonic() + RUN_SECONDS
    last = "frame done" if screenshot else "probe done"
    lines, pending = [], ""
    while last not in lines:
        ready, _, _ = select.select([process.stdout], [], [], max(0, deadline - time.monotonic()))
        if not ready:
            raise ViewError(f"gtkwave did not finish its Tcl script within its budget of "
                            f"{RUN_SECONDS} s")
        chunk = os.read(process.stdout.fileno(), 65536).decode(errors="replace")
        if not chunk:
            raise ViewError(f"gtkwave ended before its Tcl script finished (exit "
                            f"{process.wait()})")
        *complete, pending = (pending + chunk).split("\n")
        lines += complete
    if screenshot:
        if shutil.which("import") is None:
            raise ViewError("import not found: install Debian's imagemagick", 2)
        time.sleep(2)  # the window is drawn after the script has run
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        taken = subprocess.run(["import", "-display", display.name, "-window", "root",
                                str(screenshot)], capture_output=True, text=True,
                               timeout=RUN_SECONDS, check=False)
        if taken.returncode != 0:
            raise ViewError(f"import could not take the screenshot: "
                            f"{(taken.stderr.strip().splitlines() or ['no message'])[0]}")
    else:
        try:
            process.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired as error:
            raise ViewError(f"gtkwave did not quit within its budget of {RUN_SECONDS} s") \
                from error
    return lines


def filters_of(layout_text):
    """The filter program of each `^>` line, in layout order."""
    return [line.split(None, 1)[1].strip() for line in layout_text.splitlines()
            if line.startswith("^>")]


def without_filters(layout_text):
    """The layout with its translate filters taken out: the same traces, shown raw."""
    lines = []
    for line in layout_text.splitlines():
        if line.startswith("^>"):
            continue
        if re.fullmatch(r"@[0-9a-fA-F]+", line):
            line = f"@{int(line[1:], 16) & ~TRANSLATED_BY_PROCESS:x}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def translate(program, raw_values):
    """What a filter answers for each raw value (one line in, one line out)."""
    if not os.path.isfile(program):
        raise ViewError(f"the layout's filter {program} does not exist (not built?)")
    answer = subprocess.run([program], input="".join(f"{raw}\n" for raw in raw_values),
                            capture_output=True, text=True, timeout=RUN_SECONDS, check=True)
    return answer.stdout.splitlines()


def check(wave, layout, screenshot=None):
    """Checks the view; returns a one-line summary, or raises ViewError."""
    layout_text = (ROOT / layout).read_text()
    programs = filters_of(layout_text)
    if not programs:
        raise ViewError(f"{layout}: no translate filter to check", 2)
    with VirtualDisplay() as display, tempfile.TemporaryDirectory() as scratch:
        traces, shown, messages = run_gtkwave(display, wave, layout, screenshot)
        raw_layout = Path(scratch) / "raw.gtkw"
        raw_layout.write_text(without_filters(layout_text))
        raw_traces, raw, _ = run_gtkwave(display, wave, raw_layout)
    if NO_FILTER in messages:
        raise ViewError(f"`gtkwave {wave} {layout}`: GTKWave could not find a filter process "
                        f"({messages.count(NO_FILTER)} times)")
    if len(raw_traces) != len(traces):
        raise ViewError(f"{layout}: {len(traces)} traces with filters, {len(raw_traces)} without")
    translated = sorted({index for (_, index), (flags, _) in shown.items()
                         if flags & TRANSLATED_BY_PROCESS})
    if len(translated) != len(programs):
        raise ViewError(f"{layout}: {len(programs)} filtered signals in the layout, GTKWave shows "
                        f"{len(translated)} with a filter")
    times = sorted({when for when, _ in shown})
    changed, example = 0, None
    for index, program in zip(translated, programs):
        raw_values = [raw[when, index][1] for when in times]
        for when, raw_value, expected in zip(times, raw_values, translate(program, raw_values)):
            got = shown[when, index][1]
            if got != expected:
                raise ViewError(f"`gtkwave {wave} {layout}`: {traces[index]} at {when} shows "
                                f"'{got}', its filter gives '{expected}' for {raw_value}")
            if got != raw_value:
                changed += 1
                example = example or f"{traces[index]} = {got} (raw {raw_value})"
    if changed == 0:
        raise ViewError(f"`gtkwave {wave} {layout}`: no filtered value differs from its raw hex")
    return (f"`gtkwave {wave} {layout}`: {len(translated)} filtered signals at {len(times)} times "
            f"shown as their filters give them ({changed} values translated), e.g. {example}")


def as_documented(path):
    """The path as the README's command gives it: from the repository's root where it is inside
    the repository (the default build folders are), absolute otherwise."""
    path = Path(path).resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wave")
    parser.add_argument("layout")
    parser.add_argument("--screenshot", type=Path)
    args = parser.parse_args()
    try:
        for path in (args.wave, args.layout):
            if not Path(path).is_file():
                raise ViewError(f"{path}: no such file", 2)
        wave, layout = as_documented(args.wave), as_documented(args.layout)
        print(check(wave, layout, args.screenshot.resolve() if args.screenshot else None))
        if args.screenshot:
            print(f"screenshot: {args.screenshot}")
    except ViewError as error:
        print(f"gtkwave_view.py: {error}", file=sys.stderr)
        return error.status
    except subprocess.SubprocessError as error:
        print(f"gtkwave_view.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
