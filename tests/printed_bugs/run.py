#!/usr/bin/env python3
"""Proof that running the printed CUDA can fail (issue 24): the program tests
of this directory run on the simulated device in the printed mode
(SHOAL_SIMULATED_KERNELS=printed), first as they are -- they must pass --
then once per printer bug planted by SHOAL_PLANTED_PRINTER_BUG
(codegen/cuda_printer_planted.cpp) -- each run must fail.

Usage: python3 run.py SHOAL_BINARY
Prints one line per run and exits 1 if the clean run fails or a planted bug
goes unnoticed. Standard library only.
"""
import os
import subprocess
import sys

# The shuffle bugs ("shuffle-direction", "divergent-shuffle") are planted in
# an IR kernel with shuffles by tests/unit/test_printed_cuda.cpp: no lowering
# emits shuffles today, so no program here could catch them.
BUGS = ["barrier", "divide", "tile-halo", "cast"]


def run(shoal, bug):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, SHOAL_DEVICE="simulated", SHOAL_SIMULATED_KERNELS="printed")
    env.pop("SHOAL_PLANTED_PRINTER_BUG", None)
    if bug:
        env["SHOAL_PLANTED_PRINTER_BUG"] = bug
    r = subprocess.run([sys.executable, os.path.join(here, "..", "run_programs.py"), shoal, here],
                       env=env, capture_output=True, text=True, timeout=600)
    return r.returncode == 0, r.stdout


def main():
    shoal = sys.argv[1]
    failures = 0
    ok, out = run(shoal, None)
    print("no bug planted: " + ("passes" if ok else "FAILS (it must pass)"))
    if not ok:
        print(out)
        failures += 1
    for bug in BUGS:
        ok, out = run(shoal, bug)
        # What the printed run reported first: the evidence that it was caught.
        evidence = next((l.strip() for l in out.splitlines() if l.startswith("    ")), "")
        print("%-18s %s" % (bug + ":", "NOT CAUGHT (the programs pass)" if ok else "caught: " + evidence[:150]))
        failures += ok
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
