#!/usr/bin/env python3
"""The GPU suite (ctest label `gpu`): every program test, every example and
the differential and random programs run on the machine's real GPU (the
CUDA executor, no simulation) against the expected values and the reference
evaluator. Without a usable GPU it reports itself skipped with the reason
`:device` gives (exit code 77, ctest's SKIP_RETURN_CODE).

usage: gpu_suite.py SHOAL UNIT_TESTS SOURCE_DIR [COMM_TESTS]

COMM_TESTS (built with MPI): the collectives' tests, run on one rank over the
machine's NCCL (the NCCL backend of sharded arrays, on the GPU).
"""
import os
import subprocess
import sys

SKIPPED = 77


def main():
    shoal, unit_tests, source = sys.argv[1:4]
    env = dict(os.environ)
    env.pop("SHOAL_DEVICE", None)  # the real device, whatever the caller set
    device = subprocess.run([shoal, "-e", ":device"], capture_output=True, text=True, env=env)
    report = (device.stdout + device.stderr).strip()
    if not report.startswith("GPU "):
        print("skipped: " + report.splitlines()[0] if report else "skipped: shoal printed nothing for :device")
        return SKIPPED
    print(report)
    steps = [
        [sys.executable, os.path.join(source, "tests", "run_programs.py"), shoal, os.path.join(source, "tests", "programs")],
        # A GPU's sin/exp round differently from the CPU's: numbers within the
        # numpy references' tolerance, not digit for digit as examples/expected.
        [sys.executable, os.path.join(source, "tests", "run_examples.py"), "--tolerance-only", shoal,
         os.path.join(source, "examples")],
        [unit_tests, "--no-intro", "--duration=false",
         "-tc=*random well-typed*,*agree with the reference*,*every array builtin*,*tuples, general folds*,"
         "*every example runs*,*nested arrays*,*products: every shape*"],  # products: cuBLAS
    ]
    if len(sys.argv) > 4:
        mpirun = ["mpirun", "-q", "--oversubscribe", "-np", "1"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
        steps.append(mpirun + [sys.argv[4], "nccl-real"])
    failed = 0
    for step in steps:
        print("==", " ".join(os.path.basename(a) for a in step[:6]), flush=True)
        failed += subprocess.run(step, env=env).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
