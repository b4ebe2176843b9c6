#!/usr/bin/env python3
"""Checks the examples in the documentation against what Shoal prints.

Usage: python3 run_doc_examples.py SHOAL_BINARY DOC.md ...

Every fenced block whose first line starts with `shoal> ` is a REPL
transcript: each `shoal> ` line (with its `  ...> ` continuation lines) is a
statement, and the lines up to the next statement are what it prints. One
block is one session: its statements run in order, each as its own `-e`
source (as the REPL makes each statement its own `<stdin>` source), values
on standard output and diagnostics on standard error, merged in order. The
output must be exactly the documented text.

A block preceded by `<!-- not checked: WHY -->` is skipped (an interactive
Ctrl-C, timings); the runner prints how many it skipped and why. One
preceded by `<!-- to within R: WHY -->` compares token by token, numbers to
a relative tolerance R (BLAS and LAPACK results, whose last digits depend on
the kernels OpenBLAS picks for the CPU). Prints one
line per failing block and `N blocks passed, N failed, N skipped`; the exit
status is 1 if any block failed. Standard library only.
"""
import os
import re
import subprocess
import sys

PROMPT = "shoal> "
CONTINUATION = re.compile(r"^\s*\.\.\.> ?")
SKIP = re.compile(r"<!--\s*not checked:(.*?)-->")
WITHIN = re.compile(r"<!--\s*to within ([0-9.eE-]+):(.*?)-->")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_examples import compare  # noqa: E402  (one token comparison for both runners)


def blocks(path):
    """(line number, skip reason or None, tolerance or None, block lines without the fence's indentation)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```", lines[i])
        if not m:
            i += 1
            continue
        indent, start = len(m.group(1)), i
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1
        if not body or not body[0].startswith(PROMPT):
            continue
        before = "\n".join(lines[max(0, start - 3):start])
        skip = SKIP.search(before)
        within = WITHIN.search(before)
        yield start + 1, (skip.group(1).strip() if skip else None), (float(within.group(1)) if within else None), body


def transcript(body):
    """[(statement, expected output lines)]."""
    out = []
    for line in body:
        if line.startswith(PROMPT):
            out.append([line[len(PROMPT):], []])
        elif out and CONTINUATION.match(line) and not out[-1][1]:
            out[-1][0] += "\n" + CONTINUATION.sub("", line)
        elif out:
            out[-1][1].append(line)
    return out


def run(shoal, statements):
    args = [shoal]
    for s in statements:
        args += ["-e", s]
    try:
        r = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=60, cwd=os.path.dirname(shoal))
    except subprocess.TimeoutExpired:
        return ["<timed out after 60 s>"]
    return r.stdout.replace("<command line>", "<stdin>").rstrip("\n").split("\n")


def main():
    shoal, docs = os.path.abspath(sys.argv[1]), sys.argv[2:]
    passed = failed = 0
    skipped = []
    for doc in docs:
        for lineno, skip, within, body in blocks(doc):
            where = f"{os.path.basename(doc)}:{lineno}"
            if skip:
                skipped.append(f"{where} ({skip})")
                continue
            steps = transcript(body)
            expected = [l for _, out in steps for l in out]
            while expected and expected[-1] == "":
                expected.pop()
            got = run(shoal, [s for s, _ in steps])
            if got == [""] and not expected:
                got = []
            if got == expected or (within and compare("\n".join(got), "\n".join(expected), within) is None):
                passed += 1
                continue
            failed += 1
            print(f"FAIL {where}")
            for k in range(max(len(got), len(expected))):
                g = got[k] if k < len(got) else "<nothing>"
                e = expected[k] if k < len(expected) else "<nothing>"
                if g != e:
                    print(f"  line {k + 1}: expected {e!r}\n  {' ' * len(str(k + 1))}       got      {g!r}")
                    break
    for s in skipped:
        print(f"skipped {s}")
    print(f"{passed} blocks passed, {failed} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
