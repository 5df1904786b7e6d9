#!/usr/bin/env python3
"""Tests of scripts/rtl_files.py, which every tool reads the RTL file lists through: nested lists
come first and in order, a file reached twice is read once, broken lists are refused in one line;
and the lists of rtl/ together name every SystemVerilog file there, each in one folder's list."""
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "rtl_files.py"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from flow_checks import check  # noqa: E402


def run(*args, cwd):
    result = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True,
                            text=True)
    return result.returncode, result.stdout.split(), result.stderr.strip()


def write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        # A diamond: top needs a and b, which both need prim.
        write(work, {"prim/prim.f": "// the primitives\npkg.sv\nreg.sv\n",
                     "prim/pkg.sv": "", "prim/reg.sv": "",
                     "a/a.f": "-F ../prim/prim.f\na.sv  // a comment\n", "a/a.sv": "",
                     "b/b.f": "-F ../prim/prim.f\n\nb.sv\n", "b/b.sv": "",
                     "top/top.f": "-F ../a/a.f\n-F ../b/b.f\ntop.sv\n", "top/top.sv": ""})
        failures += check("diamond: each file once, lists first",
                          run("top/top.f", cwd=work)[:2],
                          (0, ["prim/pkg.sv", "prim/reg.sv", "a/a.sv", "b/b.sv", "top/top.sv"]))
        failures += check("two lists on the command line share files",
                          run("b/b.f", "a/a.f", cwd=work)[:2],
                          (0, ["prim/pkg.sv", "prim/reg.sv", "b/b.sv", "a/a.sv"]))
        failures += check("--absolute", run("--absolute", "a/a.f", cwd=work)[1][-1],
                          str((work / "a/a.sv").resolve()))

        write(work, {"bad/missing.f": "absent.sv\n", "bad/cycle_a.f": "-F cycle_b.f\n",
                     "bad/cycle_b.f": "-F cycle_a.f\n", "bad/option.f": "-y lib\n"})
        for name, message in (("bad/missing.f", "missing.f:1: no such file: absent.sv"),
                              ("bad/cycle_a.f", "the lists include each other"),
                              ("bad/option.f", "expected a file or '-F LIST.f', got '-y lib'"),
                              ("bad/absent.f", "absent.f: no such file list")):
            status, out, err = run(name, cwd=work)
            failures += check(f"refused: {name}",
                              (status, out, message in err, len(err.splitlines())),
                              (2, [], True, 1))

    # The project's own lists: every .sv of rtl/ in exactly one folder's list, and the whole
    # design in the two lists that hold everything.
    lists = sorted((ROOT / "rtl").glob("*/*.f"))
    owners, foreign = {}, []
    for listing in lists:
        for line in listing.read_text().splitlines():
            line = line.split("//", 1)[0].strip()
            if line and not line.startswith("-F"):
                owners.setdefault((listing.parent / line).resolve(), []).append(listing.name)
                if "/" in line:
                    foreign.append(f"{listing.relative_to(ROOT)}: {line}")
    sources = sorted(path.resolve() for path in (ROOT / "rtl").glob("*/*.sv"))
    failures += check("every rtl/*/*.sv in exactly one list",
                      [(str(path.relative_to(ROOT)), owners.get(path, [])) for path in sources
                       if len(owners.get(path, [])) != 1], [])
    failures += check("every list names files of its own folder", foreign, [])
    status, everything, _ = run("rtl/top/top.f", "rtl/board/board.f", cwd=ROOT)
    failures += check("top.f and board.f hold the whole design",
                      (status, sorted((ROOT / path).resolve() for path in everything)), (0, sources))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
