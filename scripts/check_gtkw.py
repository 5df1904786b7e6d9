#!/usr/bin/env python3
"""Checks that every signal a .gtkw layout names exists in a waveform.

Usage: check_gtkw.py LAYOUT.gtkw WAVE.fst
Reads the waveform's hierarchy through fst2vcd (from the gtkwave package) and
exits non-zero, listing the missing names, if the layout names a signal the
waveform lacks, so a layout cannot silently rot when the RTL changes; likewise if
it attaches a translate filter other than this project's, or one its trace's
flags leave off.
"""
import subprocess
import sys


def signals_in_wave(path):
    header = subprocess.run(["fst2vcd", "-f", path], capture_output=True, text=True, check=True)
    names, scope = set(), []
    for line in header.stdout.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "$scope":
            scope.append(words[2])
        elif words[0] == "$upscope":
            scope.pop()
        elif words[0] == "$var":
            name = ".".join(scope + [words[4]])
            # Vectors appear in layouts with their range, e.g. data[63:0].
            names.add(name + words[5] if words[5].startswith("[") else name)
        elif words[0] == "$enddefinitions":
            break
    return names


# The translate-filter programs (sim/wave/float_filter.cpp), as the layouts in sim/ name them
# (the build writes them to build/waves/ with the filters' absolute paths), and GTKWave's trace
# flag that hands a trace's values to one (TR_PTRANSLATED).
FILTERS = {"tpu_wave_bf16", "tpu_wave_fp32"}
TRANSLATED_BY_PROCESS = 0x4000


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_gtkw.py LAYOUT.gtkw WAVE.fst")
    layout, wave = sys.argv[1], sys.argv[2]
    lines = [line.strip() for line in open(layout) if line.strip()]
    wanted = [line for line in lines if line[0] not in "[@-*^"]
    present = signals_in_wave(wave)
    missing = [name for name in wanted if name not in present]
    for name in missing:
        print(f"{layout}: signal not in {wave}: {name}")
    # A translate filter must be one this project builds, on a trace whose flags enable it.
    bad_filters = [f"{flags} {line}" for flags, line in zip(lines, lines[1:])
                   if line.startswith("^>") and (line.split(None, 1)[-1] not in FILTERS
                                                 or not flags.startswith("@")
                                                 or not int(flags[1:], 16) & TRANSLATED_BY_PROCESS)]
    for entry in bad_filters:
        print(f"{layout}: not a translate filter of this project, or not enabled: {entry}")
    print(f"{layout}: {len(wanted) - len(missing)} of {len(wanted)} signals found")
    sys.exit(1 if missing or bad_filters or not wanted else 0)


if __name__ == "__main__":
    main()
