#!/usr/bin/env python3
"""Compares what the emitted seed functions compute (check_seeds[_simulated],
tests/emit/check_seeds.cpp) with what the reference evaluator printed for the
same calls when the build ran seeds.shoal (reference.txt).

usage: run_seeds.py BUILD_DIR PROGRAM
Exit 0 when every value agrees, 1 on a difference, 77 when PROGRAM has no
device to run on."""
import re
import subprocess
import sys
from pathlib import Path

NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")
# What the reference evaluator reports for `pick xs outOfRange` (index 42 is n + 5).
OUT_OF_BOUNDS = "index 10005 is out of bounds for axis 0 with extent 10000"


def numbers(line):
    return [float(x) for x in NUMBER.findall(line)]


def close(a, b):
    # Reductions add in another order on the device: float32 rounding.
    return abs(a - b) <= 5e-5 * max(1.0, abs(a), abs(b)) or (a != a and b != b)


def main():
    build, program = Path(sys.argv[1]), sys.argv[2]
    reference = [l for l in (build / "reference.txt").read_text().splitlines() if not l.startswith("wrote ")]
    run = subprocess.run([program], cwd=build, capture_output=True, text=True)
    if run.returncode == 77:
        print(run.stdout, end="")
        return 77
    if run.returncode != 0:
        print(f"{program} exited with {run.returncode}\n{run.stdout}{run.stderr}")
        return 1
    got = run.stdout.splitlines()
    statuses = [l for l in got if "invalid_workspace" in l or "index_out_of_bounds" in l]
    values = [l for l in got if l not in statuses]
    failures = []
    if len(values) != len(reference):
        failures.append(f"{len(values)} results, the reference evaluator printed {len(reference)}")
    for k, (want, have) in enumerate(zip(reference, values)):
        w, h = numbers(want), numbers(have)
        bad = [i for i, (a, b) in enumerate(zip(w, h)) if not close(a, b)]
        if len(w) != len(h) or bad:
            i = bad[0] if bad else min(len(w), len(h))
            failures.append(f"result {k + 1}: {len(h)} numbers (reference {len(w)}); first difference at {i}: "
                            f"{h[i] if i < len(h) else '-'} vs {w[i] if i < len(w) else '-'}")
    expected_statuses = [f"index_out_of_bounds: ", "invalid_workspace: "]
    if len(statuses) != 2 or not all(s.startswith(e) for s, e in zip(statuses, expected_statuses)):
        failures.append("statuses: " + repr(statuses))
    elif OUT_OF_BOUNDS not in statuses[0]:
        failures.append(f"the index error says '{statuses[0]}', not '{OUT_OF_BOUNDS}'")
    for f in failures:
        print("MISMATCH " + f)
    print(f"{len(values)} results and {len(statuses)} statuses compared with the reference evaluator: "
          + ("all agree" if not failures else f"{len(failures)} differences"))
    for s in statuses:
        print("  " + s)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
