#!/usr/bin/env python3
"""Runs every example script and checks its output twice.

Usage: python3 run_examples.py [--tolerance-only | --update] SHOAL_BINARY EXAMPLES_DIR [NAME ...]

For each EXAMPLES_DIR/NAME.shoal, runs `SHOAL_BINARY NAME.shoal` (cwd =
EXAMPLES_DIR, timeout 120 s), then:

1. exact: standard output must equal EXAMPLES_DIR/expected/NAME.out
   character for character: what Shoal prints, so that a user diffing the two
   sees no difference (floats included: the compiled backend is deterministic,
   docs/semantics.md). --update rewrites these files from the output instead
   (review the diff before committing). --tolerance-only skips this check:
   on a real GPU, math functions (sin, exp) round differently from the CPU's.
   A script with a line `-- exact output to within R: WHY` compares with
   expected/ token by token, numbers to a relative tolerance R, instead:
   the last digits of BLAS and LAPACK results depend on the kernels OpenBLAS
   picks for the machine's CPU (two CI machines of one kind differ).
2. reference: the output against EXAMPLES_DIR/reference/NAME.out, computed
   independently with numpy by reference/make_reference.py, line by line and
   token by token. A number containing '.' or an exponent compares with a
   relative tolerance of 1e-4 (absolute 1e-9 near zero); an integer must be
   equal; every other token (brackets, commas, `...`, `true`, `inf`, `nan`)
   must be identical.

A non-zero exit status or any output on standard error (other than warnings)
fails the example. Prints one line per example and ends with `N passed, N
failed`; the exit status is 1 if any example failed. Standard library only.
"""
import math
import os
import re
import subprocess
import sys

from launch import shoal_command  # alone, or on several MPI ranks (SHOAL_TEST_RANKS)

TIMEOUT = 120
REL_TOL = 1e-4
ABS_TOL = 1e-9

NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
TOKEN = re.compile(rf"{NUMBER}|[-+]?inf\b|nan\b|\.\.\.|[A-Za-z_][A-Za-z0-9_']*|\S")
IS_NUMBER = re.compile(rf"^{NUMBER}$")
EXACT_WITHIN = re.compile(r"^-- exact output to within ([0-9.eE-]+):", re.M)


WARNING_HEAD = re.compile(r"^(\S+:\d+:\d+: )?warning: ")
DIAGNOSTIC_HEAD = re.compile(r"^(\S+:\d+:\d+: )?(warning|error): ")


def without_warnings(err):
    """Standard error less its warnings (a warning: line with its quoted
    source, caret and notes): advice such as sequential nesting is not a failure."""
    kept, in_warning = [], False
    for line in err.splitlines():
        if DIAGNOSTIC_HEAD.match(line):
            in_warning = bool(WARNING_HEAD.match(line))
        if not in_warning:
            kept.append(line)
    return "\n".join(kept)


def tokens(line):
    return TOKEN.findall(line)


def is_float_text(t):
    return "." in t or "e" in t or "E" in t


def same_token(got, want, rel_tol=REL_TOL):
    """None if the tokens agree, else a reason."""
    if got == want:
        return None
    if IS_NUMBER.match(got) and IS_NUMBER.match(want):
        if is_float_text(want) or is_float_text(got):
            if not (is_float_text(want) and is_float_text(got)):
                return f"{got} vs {want}: integer vs floating"
            g, w = float(got), float(want)
            if math.isclose(g, w, rel_tol=rel_tol, abs_tol=ABS_TOL):
                return None
            rel = abs(g - w) / max(abs(g), abs(w))
            return f"{got} vs {want} (relative difference {rel:.2g} > {rel_tol:g})"
        if int(got) == int(want):
            return None
        return f"{got} vs {want}"
    return f"{got!r} vs {want!r}"


def compare(got_text, want_text, rel_tol=REL_TOL):
    """None if the outputs agree, else a description of the first difference."""
    got_lines = got_text.splitlines()
    want_lines = want_text.splitlines()
    for n, (g, w) in enumerate(zip(got_lines, want_lines), start=1):
        gt, wt = tokens(g), tokens(w)
        for gk, wk in zip(gt, wt):
            why = same_token(gk, wk, rel_tol)
            if why:
                return f"line {n}: {why}\n    got:      {g}\n    expected: {w}"
        if len(gt) != len(wt):
            return f"line {n}: {'more' if len(gt) > len(wt) else 'fewer'} tokens than expected\n" \
                   f"    got:      {g}\n    expected: {w}"
    if len(got_lines) > len(want_lines):
        return f"line {len(want_lines) + 1}: unexpected extra output: {got_lines[len(want_lines)]}"
    if len(got_lines) < len(want_lines):
        return f"line {len(got_lines) + 1}: output ended; expected: {want_lines[len(got_lines)]}"
    return None


def exact_difference(got_text, want_text):
    """None if the texts are equal, else the first differing line."""
    if got_text == want_text:
        return None
    got_lines, want_lines = got_text.splitlines(), want_text.splitlines()
    for n, (g, w) in enumerate(zip(got_lines, want_lines), start=1):
        if g != w:
            return f"line {n} differs from expected/ (what Shoal printed before):\n    got:      {g}\n    expected: {w}"
    if len(got_lines) != len(want_lines):
        return f"{len(got_lines)} lines printed, expected/ has {len(want_lines)}"
    return "the output differs from expected/ in line endings"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run_example(binary, examples, name, mode):
    """Returns (ok, message)."""
    expected_path = os.path.join(examples, "expected", name + ".out")
    reference_path = os.path.join(examples, "reference", name + ".out")
    if not os.path.exists(reference_path):
        return False, f"no numpy reference {reference_path}"
    if mode == "exact" and not os.path.exists(expected_path):
        return False, f"no expected output {expected_path} (run with --update to write it)"
    try:
        proc = subprocess.run(shoal_command(binary, name + ".shoal"), cwd=examples,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TIMEOUT} s"
    except OSError as e:
        return False, f"cannot run {binary}: {e}"
    out = proc.stdout.decode("utf-8", errors="replace")
    err = proc.stderr.decode("utf-8", errors="replace")
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}")
    err = without_warnings(err)
    if err.strip():
        problems.append("standard error:\n    " + "\n    ".join(err.rstrip().splitlines()[:12]))
    within = EXACT_WITHIN.search(read(os.path.join(examples, name + ".shoal")))
    if mode == "exact" and within:
        diff = compare(out, read(expected_path), float(within.group(1)))
        if diff:
            problems.append("against expected/ (to within " + within.group(1) + "): " + diff)
    elif mode == "exact":
        diff = exact_difference(out, read(expected_path))
        if diff:
            problems.append(diff)
    diff = compare(out, read(reference_path))
    if diff:
        problems.append("against the numpy reference: " + diff)
    if mode == "update" and not problems:
        with open(expected_path, "w", encoding="utf-8") as f:
            f.write(out)
    if problems:
        return False, "\n  ".join(problems)
    return True, ""


def main(argv):
    mode = "exact"
    args = argv[1:]
    if args and args[0] in ("--tolerance-only", "--update"):
        mode = "tolerance" if args[0] == "--tolerance-only" else "update"
        args = args[1:]
    if len(args) < 2:
        print("usage: run_examples.py [--tolerance-only | --update] SHOAL_BINARY EXAMPLES_DIR [NAME ...]",
              file=sys.stderr)
        return 2
    binary = os.path.abspath(args[0])
    examples = os.path.abspath(args[1])
    names = args[2:] or sorted(f[:-len(".shoal")] for f in os.listdir(examples) if f.endswith(".shoal"))
    if not names:
        print(f"no examples in {examples}", file=sys.stderr)
        return 2
    passed = failed = 0
    for name in names:
        ok, msg = run_example(binary, examples, name, mode)
        if ok:
            passed += 1
            print(f"PASS {name}")
        else:
            failed += 1
            print(f"FAIL {name}\n  {msg}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
