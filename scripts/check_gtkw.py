#!/usr/bin/env python3
"""Checks that every signal a .gtkw layout names exists in a waveform.

Usage: check_gtkw.py LAYOUT.gtkw WAVE.fst
Reads the waveform's hierarchy through fst2vcd (from the gtkwave package) and
exits non-zero, listing the missing names, if the layout names a signal the
waveform lacks, so a layout cannot silently rot when the RTL changes.
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


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_gtkw.py LAYOUT.gtkw WAVE.fst")
    layout, wave = sys.argv[1], sys.argv[2]
    wanted = [line.strip() for line in open(layout)
              if line.strip() and line.strip()[0] not in "[@-*"]
    present = signals_in_wave(wave)
    missing = [name for name in wanted if name not in present]
    for name in missing:
        print(f"{layout}: signal not in {wave}: {name}")
    print(f"{layout}: {len(wanted) - len(missing)} of {len(wanted)} signals found")
    sys.exit(1 if missing or not wanted else 0)


if __name__ == "__main__":
    main()
