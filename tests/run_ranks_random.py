#!/usr/bin/env python3
"""Random well-typed programs, sharded over several ranks, print what one
rank prints (docs/scale-out.md, "Sharded arrays").

The programs are those of the unit tests' differential test (the same
generator, tests/unit/test_random_programs.cpp, written out with
SHOAL_RANDOM_PROGRAMS_DUMP). Each runs in one session after `:reset` and
`:set shard 1` (every array sharded, down to empty blocks), once alone and
once on each rank count. Integers and everything else must be identical;
floats agree within 1e-4 relative (a float fold's association depends on
the blocks: docs/scale-out.md). Warnings (arrays gathered) are allowed.

Usage: python3 run_ranks_random.py SHOAL_BINARY UNIT_TEST_BINARY [FIRST-LAST] [RANKS ...]
(default seeds 1-120, ranks 3). Exits 77 (skipped) without MPI.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_examples import compare, without_warnings  # noqa: E402

MARK = 'show "seed {}"\n'


def programs(unit_tests, seeds):
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "programs.txt")
        env = dict(os.environ, SHOAL_RANDOM_PROGRAMS=seeds, SHOAL_RANDOM_PROGRAMS_DUMP=dump)
        subprocess.run([unit_tests, "-tc=compiled backend: random*"], env=env, capture_output=True, timeout=600,
                       cwd=tmp)
        with open(dump) as f:
            return re.findall(r"-- seed (\d+)\n(.*?)-- reference:\n", f.read(), re.S)


def by_seed(out):
    """The output of each program, by seed (the markers' lines split them)."""
    parts = re.split(r'^"\\"seed (\d+)\\""$', out, flags=re.M)
    return {parts[k]: parts[k + 1].strip("\n") for k in range(1, len(parts) - 1, 2)}


def run(binary, args, script):
    proc = subprocess.run([binary, *args], input=script.encode(), capture_output=True, timeout=900,
                          cwd=tempfile.gettempdir())
    # Errors go to standard error in order with the results on standard
    # output only through a terminal; keep both, errors without warnings.
    # Which rank raised an error is noted on several ranks: not a difference.
    err = without_warnings(proc.stderr.decode(errors="replace"))
    err = "\n".join(line for line in err.splitlines() if not line.startswith("note: on rank "))
    return proc.returncode, proc.stdout.decode(errors="replace"), err


def main(argv):
    binary, unit_tests = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    seeds = argv[3] if len(argv) > 3 else "1-120"
    rank_counts = argv[4:] or ["3"]
    probe = subprocess.run([binary, "--ranks", "2", "-e", ":ranks"], capture_output=True, timeout=120)
    if b"built without MPI" in probe.stderr:
        print("SKIP: " + probe.stderr.decode().strip())
        return 77
    found = programs(unit_tests, seeds)
    script = "".join(":reset\n:set shard 1\n" + MARK.format(seed) + text for seed, text in found)
    rc, alone, alone_err = run(binary, [], script)
    want = by_seed(alone)
    failures = []
    if len(want) != len(found):
        failures.append(f"one rank printed the markers of {len(want)} of the {len(found)} programs (status {rc})")
    for ranks in rank_counts:
        rc, out, err = run(binary, ["--ranks", ranks], script)
        got = by_seed(out)
        print(f"{ranks} ranks: {len(got)} programs ran")
        if rc != 0 and not got:
            failures.append(f"{ranks} ranks: status {rc}\n{err[-3000:]}")
            continue
        for seed, text in found:
            why = compare(got.get(seed, "<nothing printed>"), want.get(seed, ""))
            if why:
                failures.append(f"seed {seed} on {ranks} ranks: {why}\nprogram:\n{text}")
        # The errors, in order: the same ones (each printed once, on rank 0).
        if err != alone_err:
            failures.append(f"{ranks} ranks: the errors differ from one rank's:\n--- alone\n{alone_err[-2000:]}\n"
                            f"--- on {ranks} ranks\n{err[-2000:]}")
    print(f"{len(found)} random programs (seeds {seeds}) sharded over {', '.join(rank_counts)} ranks: "
          f"{len(failures)} differences")
    for f in failures:
        print("FAIL " + f.replace("\n", "\n    "))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
