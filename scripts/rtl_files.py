#!/usr/bin/env python3
"""Prints the SystemVerilog files of RTL file lists in compile order, each once.

Each folder of rtl/ has a list (rtl/mxu/mxu.f, rtl/top/top.f, ...): one file per line, relative
to the list's folder, and `-F OTHER.f` lines that name the lists it builds on, as Verilator's -F
reads them. Lists share lists (the array core and the sequential core both need rtl/act), and
Verilator refuses a module read twice, so every tool reads the lists through this script: the
Makefile, CMake, the FPGA flow and the tests.

Usage: rtl_files.py [--absolute] LIST.f [LIST.f ...]
Prints the files, one per line, relative to the current folder (absolute with --absolute).
Exit status 2, with one line on stderr, for a missing list or file, a cycle of lists, or a line
that is neither a file nor `-F LIST`.
"""
import argparse
import os
import sys
from pathlib import Path


class ListError(Exception):
    """A broken file list; reported in one line."""


def expand(list_path, seen, files, stack):
    """Appends the files of `list_path` (its -F lists first, in order) to `files`, skipping
    those in `seen`."""
    list_path = list_path.resolve()
    if list_path in stack:
        chain = " -> ".join(str(path) for path in (*stack, list_path))
        raise ListError(f"{list_path}: the lists include each other: {chain}")
    if list_path in seen:
        return
    seen.add(list_path)
    try:
        lines = list_path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ListError(f"{list_path}: no such file list") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ListError(f"{list_path}: cannot read: {error}") from None
    for number, raw in enumerate(lines, start=1):
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        where = f"{list_path}:{number}"
        words = line.split()
        if words[0] == "-F" and len(words) == 2:
            expand(list_path.parent / words[1], seen, files, (*stack, list_path))
        elif len(words) == 1 and not line.startswith("-"):
            source = (list_path.parent / line).resolve()
            if not source.is_file():
                raise ListError(f"{where}: no such file: {line}")
            if source not in seen:
                seen.add(source)
                files.append(source)
        else:
            raise ListError(f"{where}: expected a file or '-F LIST.f', got '{line}'")


def rtl_files(lists):
    """The files of `lists` (paths) in compile order, each once, as resolved Paths."""
    seen, files = set(), []
    for list_path in lists:
        expand(Path(list_path), seen, files, ())
    return files


def main():
    parser = argparse.ArgumentParser(
        description="Prints the files of RTL file lists (-F nesting) in compile order, each once.")
    parser.add_argument("--absolute", action="store_true", help="print absolute paths")
    parser.add_argument("lists", nargs="+", metavar="LIST.f")
    args = parser.parse_args()
    try:
        files = rtl_files(args.lists)
    except ListError as error:
        print(f"rtl_files.py: error: {error}", file=sys.stderr)
        return 2
    for path in files:
        print(path if args.absolute else os.path.relpath(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
