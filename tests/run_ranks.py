#!/usr/bin/env python3
"""The control plane of a session on several MPI ranks (docs/scale-out.md):
starting ranks (`--ranks N`, `:set ranks N`, `mpirun -np N`), the agreement
that ends every statement, Ctrl-C on rank 0 reaching every rank, and a rank
that is late or stuck being named. The program tests and the examples run
on several ranks too (SHOAL_TEST_RANKS, tests/launch.py).

Usage: python3 run_ranks.py SHOAL_BINARY

A rank is made slow, stuck, failing or dead at the statements that mention
`stall_here` with SHOAL_TEST_STALL=RANK:slow|hang|fail|crash (runtime/mpi).
Exits 77 (skipped) when Shoal was built without MPI. Standard library only.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT = 120
failures = []


def run(binary, args, stdin="", env=None, timeout=TIMEOUT):
    full_env = dict(os.environ)
    full_env.update(env or {})
    start = time.monotonic()
    proc = subprocess.run([binary, *args], input=stdin.encode(), capture_output=True, env=full_env,
                          timeout=timeout, cwd=tempfile.gettempdir())
    return (proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
            time.monotonic() - start)


def check(name, condition, detail):
    print(("PASS " if condition else "FAIL ") + name)
    if not condition:
        print("    " + detail.replace("\n", "\n    "))
        failures.append(name)


def workers_left():
    """Workers still running a moment after their session ended."""
    for _ in range(50):
        out = subprocess.run(["pgrep", "-f", "--", "--rank-worker"], capture_output=True).stdout.decode()
        if not out.strip():
            return ""
        time.sleep(0.1)
    return out


def main(argv):
    if len(argv) != 2:
        print("usage: run_ranks.py SHOAL_BINARY", file=sys.stderr)
        return 2
    binary = os.path.abspath(argv[1])
    rc, out, err, _ = run(binary, ["--ranks", "2", "-e", ":ranks"])
    if "built without MPI" in err:
        print("SKIP: " + err.strip())
        return 77

    script = "let x = iota 10\nsum x\nlet r = random 4\nr\n:ranks\nx[20]\nx * 2\n"
    alone = run(binary, [], stdin=script)
    for ranks in ("2", "3", "4"):
        rc, out, err, took = run(binary, ["--ranks", ranks], stdin=script)
        lines = [l for l in out.splitlines() if not l.startswith("  rank ")]
        check(f"--ranks {ranks}: the values and errors of one rank, the world in :ranks",
              rc == 1 and lines[:2] == alone[1].splitlines()[:2] and lines[-1] == alone[1].splitlines()[-1]
              and f"{ranks} ranks (workers spawned" in out and out.count("  rank ") == int(ranks)
              and err == alone[2],
              f"status {rc}\nstdout:\n{out}\nstderr:\n{err}\nalone:\n{alone[1]}{alone[2]}")
    check("the workers leave with rank 0", not workers_left(), workers_left())

    # One rank fails alone: the error once, on rank 0, naming the rank; nothing commits anywhere.
    rc, out, err, _ = run(binary, ["--ranks", "3"], env={"SHOAL_TEST_STALL": "2:fail"},
                          stdin="let stall_here = 5\nstall_here\nlet y = 2\ny\n")
    check("an error on one rank is the statement's error on all, once",
          err.count("error:") == 2 and "a failure on this rank alone" in err and "on rank 2 of 3" in err
          and "unknown name `stall_here`" in err and out.strip() == "2",
          f"status {rc}\nstdout:\n{out}\nstderr:\n{err}")

    # Ctrl-C on rank 0 stops the statement on every rank and keeps the session.
    full_env = dict(os.environ, SHOAL_TEST_STALL="1:slow")
    proc = subprocess.Popen([binary, "--ranks", "3", "-e", "let a = 7", "-e", "let stall_here = 1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
                            cwd=tempfile.gettempdir())
    time.sleep(2.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        took = 99
    err = err.decode(errors="replace")
    check("Ctrl-C on rank 0 stops a statement a worker is still running",
          proc.returncode == 130 and "error: interrupted" in err and took < 5,
          f"status {proc.returncode} after {took:.1f} s\nstderr:\n{err}")

    def stalled(name, stall, expected_error, expected_out, timeout="2"):
        """Rank STALL (RANK:MODE) misbehaves at `let stall_here = 2`; the session must go on."""
        rc, out, err, took = run(binary, ["--ranks", "3"], env={"SHOAL_TEST_STALL": stall, "SHOAL_RANK_TIMEOUT": timeout},
                                 stdin="let a = 1\nlet stall_here = 2\na + 1\n:ranks\n")
        check(name, expected_error in err and out.startswith(expected_out) and took < 30,
              f"status {rc} after {took:.1f} s\nstdout:\n{out}\nstderr:\n{err}")

    # A late rank is named, stopped, and the world goes on.
    stalled("a rank later than the timeout is named and stopped; the world goes on", "2:slow",
            "rank 2 did not finish the statement within the timeout of 2 s: it was stopped on every rank", "2\n3 ranks")
    # A rank that does not even stop when asked is given up; the session goes on alone.
    stalled("a stuck rank is given up and the session goes on alone with its bindings", "1:hang",
            "rank 1 did not finish the statement within the timeout of 2 s, nor stop when asked",
            "2\n1 rank: this process alone")
    check("the stuck rank does not outlive the session", not workers_left(), workers_left())
    rc, out, err, took = run(binary, ["--ranks", "3", "--shard", "1"],
                             env={"SHOAL_TEST_STALL": "1:hang", "SHOAL_RANK_TIMEOUT": "2"},
                             stdin="let x = iota 10\nlet y = 7\nlet stall_here = 2\nsum x\ny\n")
    check("after a stuck rank, a sharded binding says its ranks are gone; the others are kept",
          "every binding but the arrays sharded over the ranks" in err
          and "sum: the ranks these arrays were sharded over have stopped" in err and "warning" not in err
          and out == "7\n", f"status {rc} after {took:.1f} s\nstdout:\n{out}\nstderr:\n{err}")
    # A rank that dies is noticed at once (on this machine), not at the timeout.
    stalled("a rank that dies is named at once and the session goes on alone", "2:crash",
            "rank 2 ended without finishing the statement (it crashed or was killed); the other ranks were let go",
            "2\n1 rank: this process alone", timeout="60")
    check("no rank outlives a session whose rank died", not workers_left(), workers_left())

    # Sharded arrays (`:set shard 1`: every array made by iota, random or fill):
    # whatever the number of ranks, a program prints what one rank prints.
    # Sizes: fewer rows than ranks (empty blocks), odd, large; exact arithmetic.
    sharded = ("let big = iota 100001\nsum big\nlength big\nmaximum (big % 1000)\n"
               "let r = random (1001, 3)\nsum (int (r * 1000.0))\nsum (sum (int (r * 10.0)))\nr[1000]\n"
               "let two = iota 2\nmaximum two\nminimum (two - 5)\nall (two >= 0)\nany (two > 5)\n"
               "product (two + 1)\nwhere (two > 0) two (two * 10)\nmap (\\v -> v * v) two\n"
               "let z = zipWith (\\a b -> a * b) big big\nmaximum z\n"
               "let acc = loop a = two for i < 3 do a + i\nacc\nsum (fill (7, 2) 3)\nmean (float two)\n"
               "let one = iota 1\none\nsum (iota 0)\n"
               # scans, folds, sorts and filters across the blocks; slices,
               # element reads and updates (rows moved between ranks)
               "let y = (iota 101 * 37) % 101\nscan (+) 0 y\nscanExclusive (+) 0 y\ncumsum y\nscan max 0 y\n"
               "reduce (+) 0 y\nsort y\nsort (float y * 0.5)\nsort (fill 9 3)\nsort (iota 0)\n"
               "filter (\\v -> v % 3 == 0) y\nlength (filter (\\v -> v > 200) y)\ncompress (y > 50) y\n"
               "argmax y\nargmin (float y)\ny[5]\ny[-1]\ny[3:17]\ny[::-3]\ny[100:0:-7]\n"
               "let d = y[1:] - y[:-1]\nd\nsum d\nlet g = generate (7, 5) (\\i j -> i * 10 + j)\ng\nscan (+) 0 g\n"
               "sort (g % 3)\ng[3]\ng[2, 4]\ng[1:5, 2]\ng[::2, ::-1]\ncompress (iota 7 > 3) g\n"
               "let u = fill 20 0.0\nu with [3:9] = 1.5\nu with [5] = 7.0\nu with [1:-1] = float (iota 18) * 2.0\n"
               "g with [2:5] = fill (3, 5) 9\n"
               "loop h = generate 30 (\\i -> float (i % 4)) for k < 5 do "
               "h with [1:-1] = h[1:-1] + 0.25 * (h[2:] - 2.0 * h[1:-1] + h[:-2])\n"
               "sort (random 1000)\nsort (where (y % 7 == 0) (0.0 / 0.0) (float y))\n"
               "show (sort (where (y % 5 == 0) (-0.0) (where (y % 3 == 0) 0.0 1.0)))\n"
               # take, drop, reverse and ++ move rows; gather asks the owners
               "take 5 y\ndrop 20 y\nreverse y\ny ++ [100, 200]\n[1, 2] ++ y\nreverse g\ng ++ g\n"
               "gather (iota 10 * 2) y\ngather y y\ngather (iota 0) y\ngather [5, 0, 3] g\nsum (gather y y)\n"
               # scatter: each write goes to the owner of its row, applied in order
               "scatter y [2, 0, 5, 2, 500, -1, 99] [1, 2, 3, 4, 5, 6, 7]\nscatter y (y % 13) (iota 101 * 10)\n"
               "scatter (fill 13 0.5) (y % 13) (float y)\nscatter g [5, 1, 5] (fill (3, 5) 9)\n"
               "scatter g (iota 7 % 2) g\nsum (scatter big ((iota 5000 * 3) % 100001) (iota 5000))\n"
               # permute: the targets' rows go to their owners, combined in order
               "permute (+) (fill 10 0) (\\i -> i % 10) (iota 25)\npermute (\\a b -> a * 2 + b) y (\\i -> (i * 7) % 13) y\n"
               "permute (+) (fill (9, 5) 5) (\\i -> 8 - i % 9) g\npermute (+) (fill 2000 0.5) (\\i -> (i * 37) % 2000) (float big)\npermute (-) big (\\i -> 100000 - i) (iota 7)\n"
               # counts added across the ranks; a vector's product summed; interleaved rows rebalanced
               "count (\\v -> v > 50) y\ntally 101 y\nhistogram 7 0.0 101.0 (float y)\n"
               "float y @ float (generate (101, 2) (\\i j -> i % 3 + j))\nfloat y @ float y\n"
               "interleave y (y * 2)\ninterleave g g\n"
               # sortByKey: the sample sort carrying the values (argsort, unique, topk of it)
               "argsort y\nsortByKey (y % 5) (float y)\nunique (y % 17)\ntopk 3 (float y)\nargsort (float (y % 3))\n"
               # reshape keeps the row-major order (elements move to the new rows); transpose by all-to-all
               "flatten g\nreshape (5, 7) g\nreshape (101) (col y)\nreshape (7, 143) (iota 1001)\n"
               "transpose g\ntranspose (reshape (3, 337) (iota 1011))\n"
               # .npy files: each rank writes and reads its own rows of one file
               "save \"shoal_ranks_test_y.npy\" (y * 3)\nlet yl = load \"shoal_ranks_test_y.npy\"\nsum yl\nyl[50]\n"
               "save \"shoal_ranks_test_g.npy\" (float g)\nload \"shoal_ranks_test_g.npy\"\n"
               # a product keeps the rows of its sharded left operand
               "let fa = float g\nfa @ float (generate (5, 2) (\\i j -> i - j))\nfa @ [1.0, 2.0, 3.0, 4.0, 5.0]\n")
    one = run(binary, [], stdin=":set shard 1\n" + sharded)
    for ranks in ("2", "3", "4"):
        rc, out, err, _ = run(binary, ["--ranks", ranks], stdin=":set shard 1\n" + sharded + "row (iota 4)\n:ranks\n:mem\n:profile sum big\n")
        check(f"sharded over {ranks} ranks: what one rank prints",
              rc == 0 and out.startswith(one[1]) and one[2] == "" and err.count("warning:") == 1
              and "`row` gathered an array of 4 elements sharded over " + ranks + " ranks whole on every rank" in err
              and "  big: sharded over " + ranks + " ranks by rows: 0.." in out
              and f"rank {int(ranks) - 1}:\n" in out and "kernels of rank 0's blocks; on " + ranks + " ranks" in out,
              f"status {rc}\nstdout:\n{out}\nstderr:\n{err}\none rank:\n{one[1]}{one[2]}")

    # On GPUs the blocks move by NCCL: here NCCL simulated over MPI on the
    # simulated device (runtime/mpi/simulated_nccl.h). The same program prints
    # what one rank prints; a failing and a late rank stop the others' NCCL
    # transfers, and the next statement makes a new communicator.
    gpu = {"SHOAL_DEVICE": "simulated"}
    one_gpu = run(binary, [], stdin=":set shard 1\n" + sharded, env=gpu)
    rc, out, err, _ = run(binary, ["--ranks", "3"], stdin=":set shard 1\n" + sharded + ":ranks\n", env=gpu)
    check("sharded over 3 ranks on (simulated) GPUs, collectives by NCCL: what one rank prints",
          rc == 0 and out.startswith(one_gpu[1]) and one_gpu[2] == "" and err == ""
          and "sharded arrays move by NCCL simulated over MPI on device buffers" in out,
          f"status {rc}\nstdout:\n{out}\nstderr:\n{err}\none rank:\n{one_gpu[1]}{one_gpu[2]}")
    rc, out, err, _ = run(binary, ["--ranks", "2"], stdin=":set shard 1\nsum (iota 9)\n:ranks\n",
                          env={**gpu, "SHOAL_COMM": "mpi"})
    check("SHOAL_COMM=mpi keeps GPU blocks on MPI, and :ranks says why",
          rc == 0 and "36\n" in out and "move by MPI on host buffers (not NCCL: SHOAL_COMM=mpi)" in out,
          f"status {rc}\nstdout:\n{out}\nstderr:\n{err}")
    rc, out, err, _ = run(binary, ["--ranks", "3"], stdin=":set shard 1\nlet x = iota 10\nsum x\ncumsum x\n:ranks\n",
                          env={**gpu, "SHOAL_TEST_NCCL_MISSING": "1"})
    check("a rank without NCCL: every rank moves blocks by MPI, and says why once",
          rc == 0 and out.startswith("45\n[0, 1, 3, 6, 10, 15, 21, 28, 36, 45]\n") and err.count("warning:") == 1
          and "sharded arrays move by MPI on host buffers, not by NCCL: rank 1: libnccl.so.2 not found" in err
          and "move by MPI on host buffers (not NCCL: rank 1: libnccl.so.2 not found" in out,
          f"status {rc}\nstdout:\n{out}\nstderr:\n{err}")
    rc, out, err, took = run(binary, ["--ranks", "3"], env={**gpu, "SHOAL_TEST_STALL": "1:fail"},
                             stdin=":set shard 1\nlet x = iota 10\nsum x\nlet stall_here = sum x\nsum (x * 2)\n")
    check("NCCL: a rank failing in a sharded statement stops the others' transfers; the next statement works",
          "a failure on this rank alone" in err and "on rank 1 of 3" in err and err.count("error:") == 1
          and out == "45\n90\n" and took < 30, f"status {rc} after {took:.1f} s\nstdout:\n{out}\nstderr:\n{err}")
    rc, out, err, took = run(binary, ["--ranks", "3"],
                             env={**gpu, "SHOAL_TEST_STALL": "2:slow", "SHOAL_RANK_TIMEOUT": "2"},
                             stdin=":set shard 1\nlet x = iota 10\nsum x\nlet stall_here = sum x\nsum (x * 2)\n")
    check("NCCL: a transfer names the rank that did not arrive",
          "sum: rank 2 did not arrive at the allgather within the timeout of 2 s" in err and out == "45\n90\n"
          and took < 40, f"status {rc} after {took:.1f} s\nstdout:\n{out}\nstderr:\n{err}")

    for name in ("shoal_ranks_test_y.npy", "shoal_ranks_test_g.npy"):  # what the sharded program saved
        if os.path.exists(os.path.join(tempfile.gettempdir(), name)):
            os.remove(os.path.join(tempfile.gettempdir(), name))

    # Back to one rank: the sharded bindings are gathered first and survive.
    rc, out, err, _ = run(binary, ["--ranks", "3", "--shard", "1"],
                          stdin="let x = iota 5\nlet y = x * 2\n:set ranks 1\nsum y\ny\n:ranks\n")
    check(":set ranks 1 keeps the sharded bindings, gathered whole",
          rc == 0 and out.startswith("20\n[0, 2, 4, 6, 8]\n1 rank: this process alone") and err == "",
          f"status {rc}\nstdout:\n{out}\nstderr:\n{err}")

    # A rank that fails in a sharded statement leaves the others waiting in a
    # collective: they are stopped, the error is the failing rank's, and the
    # next statement's collectives work.
    rc, out, err, took = run(binary, ["--ranks", "4"], env={"SHOAL_TEST_STALL": "2:fail"},
                             stdin=":set shard 1\nlet x = iota 10\nlet stall_here = sum x\nsum x\n")
    check("a rank failing in a sharded statement stops the others in their collective",
          "a failure on this rank alone" in err and "on rank 2 of 4" in err and err.count("error:") == 1
          and out == "45\n" and took < 20, f"status {rc} after {took:.1f} s\nstdout:\n{out}\nstderr:\n{err}")
    rc, out, err, took = run(binary, ["--ranks", "3"], env={"SHOAL_TEST_STALL": "2:slow", "SHOAL_RANK_TIMEOUT": "2"},
                             stdin=":set shard 1\nlet x = iota 10\nlet stall_here = sum x\nsum x\n")
    check("a collective names the rank that did not arrive",
          "sum: rank 2 did not arrive at the allgather within the timeout of 2 s" in err and out == "45\n"
          and took < 30, f"status {rc} after {took:.1f} s\nstdout:\n{out}\nstderr:\n{err}")

    # :set ranks in a running session; settings and the random stream carry over.
    rc, out, err, _ = run(binary, [], stdin=":set print 8\n:seed 7\nrandom 2\n:set ranks 3\nlet r = random 12\nr\n"
                                             ":set ranks 2\n:set ranks 1\n:ranks\nr\n")
    alone_r = run(binary, [], stdin=":set print 8\n:seed 7\nrandom 2\nlet r = random 12\nr\n")[1].splitlines()
    lines = out.splitlines()
    check(":set ranks starts and stops ranks; settings and the random stream carry over",
          rc == 1 and lines[0] == alone_r[0] and lines[5] == alone_r[1] and "3 ranks (workers spawned" in out
          and "cannot start 2 ranks in a session that has bindings (r)" in err
          and "1 rank: this process alone" in out and lines[-1] == alone_r[1],
          f"status {rc}\nstdout:\n{out}\nstderr:\n{err}\nalone:\n{alone_r}")

    # Usage errors.
    rc, out, err, _ = run(binary, ["--ranks", "0", "-e", "1"])
    check("--ranks 0 is refused", rc == 2 and "--ranks needs a number of ranks from 1 to 1024" in err, err)
    rc, out, err, _ = run(binary, [], stdin=":set ranks many\n:set timeout 5\n")
    check(":set ranks and :set timeout explain their arguments",
          "expected a whole number of ranks from 1 to 1024 after ':set ranks', found 'many'" in err
          and "the session runs on one rank: there is no exchange to time" in err, err)

    # mpirun: the same session, its ranks fixed by mpirun.
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    proc = subprocess.run(["mpirun", "-q", "--oversubscribe", *root, "-np", "3", binary, "-e", ":ranks",
                           "-e", "sum (iota 10)", "-e", ":set ranks 2"],
                          capture_output=True, timeout=TIMEOUT, cwd=tempfile.gettempdir())
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    check("mpirun -np 3: rank 0 runs the front end; :set ranks says mpirun chose them",
          "3 ranks (started by mpirun)" in out and "\n45\n" in out
          and "this session was started by mpirun, which fixed its ranks" in err,
          f"status {proc.returncode}\nstdout:\n{out}\nstderr:\n{err}")

    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
