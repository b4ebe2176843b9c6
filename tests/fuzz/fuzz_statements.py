#!/usr/bin/env python3
"""Statement fuzzer: feeds thousands of random and mutated statements through
Session::execute (in tests/fuzz/fuzz_driver.cpp) and reports every crash,
sanitizer report, internal error, error without a location, failed
statement that changed the bindings, and hang.

Usage:
  python3 tests/fuzz/fuzz_statements.py DRIVER [--count N] [--seed S]
        [--timeout SEC] [--batch N] [--findings DIR] [--time-limit SEC]

DRIVER is the shoal_fuzz_driver binary, preferably built with
-fsanitize=address,undefined (see tests/fuzz/README.md). Inputs are mutations
of the statements in tests/programs/*.shoal and examples/*.shoal (token
deletions, duplications, swaps, replacements, splices, truncation, deep
nesting, huge numbers, long repetitions, unicode, NUL and control bytes, ...)
plus statements generated from a small grammar that applies builtins to
edge-case values. Each input runs in a session holding a fixed prelude
(a, e, xs, d, m, m0, m1, t, b, l, f, g, p, n, x: see fuzz_driver.cpp), in a
scratch directory holding copies of tests/data/programs.

Each finding is written to DIR (default ./fuzz-findings) as
NNNN-kind.shoal (the input) and NNNN-kind.txt (the report). The exit status
is 1 if there was any finding. Standard library only.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAM_DATA = os.path.join(ROOT, "tests", "data", "programs")

TOKEN = re.compile(r'''"(?:[^"\\\n]|\\.)*"?|--[^\n]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z0-9_']*|\|>|\|\||&&|==|!=|<=|>=|\+\+|<<|>>|\*\*|->|\s+|.''', re.S)

BUILTINS = """iota fill generate random length rows cols shape reshape flatten transpose map zipWith
zipWith3 zip zip3 unzip reduce sum product maximum minimum all any count argmax argmin scan
scanExclusive segscan gather scatter permute reverse interleave take drop filter sort sortByKey
iterate load save loadCsv saveCsv sqrt exp log sin cos tan asin acos atan atan2 sinh cosh tanh
abs floor ceil round min max pow erf int long float double""".split()
ONE_ARG = """iota random length rows cols shape flatten transpose unzip sum product maximum minimum all
any argmax argmin reverse sort sqrt exp log sin cos tan abs floor ceil round erf int long float
double""".split()
KEYWORDS = "let in if then else loop for while do with true false".split()
OPERATORS = "+ - * / % ** == != < <= > >= && || & | ^ << >> ++ |> ! ~ = -> \\ : , ( ) [ ] _".split()
NAMES = "a e xs d m m0 m1 t b l f g p n x".split()
EXTREME_NUMBERS = [
    "0", "-1", "1", "2147483647", "2147483648", "-2147483648", "9223372036854775807",
    "9223372036854775808", "99999999999999999999999", "1e308", "1e309", "1e-400", "0.0",
    "-0.0", "3.4028235e38", "3.5e38", "1.", "1e", "1e+", "0x10", "007", "1_000",
    "(0.0 / 0.0)", "(1.0 / 0.0)", "(-2147483648)", "(9223372036854775807 : long)",
    "(2000000000)", "(100000, 100000)", "(0, 3)", "(3, 0)", "(-1, 2)", "(1, 1, 1, 1)",
]
WEIRD = ["\x00", "\t", "\r", "\x0b", "\x0c", "\x7f", "\x1b[2J", "é", "λ", "∑", "😀", "\ufeff",
         "\u202e", "\xff", "\\", "\"", "'", "`", "$", "@", "#", ";", "{", "}", "?", ":type ",
         ":load ", ":set print ", ":seed ", "\n", "\n  ", "--", "\"unterminated",
         "\udcff\udcfe", "\udcc3", "\udce2\udc82"]
VALUES = [
    "a", "e", "xs", "d", "m", "m0", "m1", "t", "b", "l", "p", "n", "x", "[]", "[1]", "[1.0]",
    "[true]", "[[1, 2], [3, 4]]", "[[]]", "(iota 0)", "(fill (0, 3) 1)", "(fill (3, 0) 1.0)",
    "(fill (0, 0) 1)", "(random 5)", "(random (0, 2))", "[0.0 / 0.0, 1.0, -1.0]", "(-1)", "0",
    "1", "2147483647", "(-2147483648)", "1.5", "(0.0 / 0.0)", "(1.0 / 0.0)", "true",
    "(long 5)", "(double 2.5)", "(a, a)", "(xs, xs)", "(1, 2)", "(2, 3, 4)", "(t[0])", "m[0]",
    "m[:, 0]", "(reverse a)", "(\\y -> y)", "(\\y -> y + 1)", "(\\y z -> y + z)", "(+)", "(*)",
    "(max)", "f", "g", "\"good.csv\"", "\"missing.npy\"", "\"np_bool.npy\"", "\".\"",
    "\"/\"", "\"\"", "\"bad_header.npy\"", "\"bad_truncated.npy\"", "\"bad_ragged.csv\"",
]


def read_corpus():
    statements = []
    paths = []
    for d in (os.path.join(ROOT, "tests", "programs"), os.path.join(ROOT, "examples")):
        if os.path.isdir(d):
            paths += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(".shoal")]
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            current = []
            for line in f:
                line = line.rstrip("\n")
                code = re.sub(r"--.*$", "", line).rstrip()
                if not code.strip():
                    continue
                if code[0] in " \t" and current:
                    current.append(code)
                    continue
                if current:
                    statements.append("\n".join(current))
                current = [code]
            if current:
                statements.append("\n".join(current))
    return statements


def tokens(s):
    return TOKEN.findall(s)


def random_token(rng):
    r = rng.random()
    if r < 0.25:
        return rng.choice(OPERATORS)
    if r < 0.45:
        return rng.choice(BUILTINS)
    if r < 0.55:
        return rng.choice(KEYWORDS)
    if r < 0.70:
        return rng.choice(NAMES)
    if r < 0.85:
        return rng.choice(EXTREME_NUMBERS)
    return rng.choice(WEIRD)


def mutate(stmt, corpus, rng):
    toks = tokens(stmt)
    if not toks:
        toks = [stmt]
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(16)
        i = rng.randrange(len(toks)) if toks else 0
        if op == 0 and len(toks) > 1:  # delete a token
            del toks[i]
        elif op == 1:  # duplicate
            toks.insert(i, toks[i] if toks else "x")
        elif op == 2 and len(toks) > 1:  # swap two
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == 3:  # replace
            if toks:
                toks[i] = random_token(rng)
        elif op == 4:  # insert
            toks.insert(i, " " + random_token(rng) + " ")
        elif op == 5:  # splice with another statement
            other = tokens(rng.choice(corpus))
            j = rng.randrange(len(other) + 1)
            toks = toks[:i] + other[j:]
        elif op == 6:  # truncate (unterminated strings, open brackets)
            toks = toks[:i]
        elif op == 7:  # replace a number with an extreme one
            nums = [k for k, t in enumerate(toks) if re.fullmatch(r"\d.*", t)]
            if nums:
                toks[rng.choice(nums)] = rng.choice(EXTREME_NUMBERS)
        elif op == 8:  # deep nesting around a token
            k = rng.choice([10, 100, 499, 501, 2000, 20000])
            opener = rng.choice(["(", "[", "-", "!", "~", "f ", "(\\y -> ", "let q = 1 in "])
            closer = {"(": ")", "[": "]", "(\\y -> ": ")"}.get(opener, "")
            toks.insert(i, opener * k)
            toks.insert(i + 2, closer * k)
        elif op == 9:  # long repetition of a token or an operator chain
            k = rng.choice([100, 1000, 10000, 100000])
            piece = rng.choice([" + 1", " ++ a", " |> f", "[0]", " ** 2", " && true", ", 1", " x", " f"])
            toks.insert(i, piece * k)
        elif op == 10:  # weird bytes
            toks.insert(i, rng.choice(WEIRD))
        elif op == 11:  # replace a name with a builtin (wrong arities and types)
            names = [k for k, t in enumerate(toks) if re.fullmatch(r"[A-Za-z_]\w*", t)]
            if names:
                toks[rng.choice(names)] = rng.choice(BUILTINS + NAMES)
        elif op == 12:  # wrap in a builtin
            toks = [rng.choice(ONE_ARG), " ("] + toks + [")"]
        elif op == 13:  # random bytes
            toks.insert(i, "".join(chr(rng.randrange(0, 256)) for _ in range(rng.randint(1, 8))))
        elif op == 14:  # make it a command argument
            toks = [rng.choice([":type ", ":load ", ":env ", ":help ", ":set print ", ":seed ", ":"])] + toks
        else:  # glue / unglue brackets
            toks = [t.strip() if rng.random() < 0.3 else t for t in toks]
    return "".join(toks)


def gen_expr(rng, depth=0):
    """A random, often well-typed, application of builtins to edge values."""
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(VALUES)
    r = rng.random()
    if r < 0.45:
        fn = rng.choice(BUILTINS)
        args = " ".join(gen_expr(rng, depth + 1) for _ in range(rng.randint(1, 4)))
        return "(" + fn + " " + args + ")"
    if r < 0.7:
        op = rng.choice("+ - * / % ** == < && || & | ^ << >> ++".split())
        return "(" + gen_expr(rng, depth + 1) + " " + op + " " + gen_expr(rng, depth + 1) + ")"
    if r < 0.8:
        idx = rng.choice(["[0]", "[-1]", "[5]", "[::-1]", "[1:]", "[:-1]", "[::0]", "[0, 0]",
                          "[:, 1]", "[1:-1, 1:-1]", "[2147483647:]", "[::-2147483648]", "[-2147483648]",
                          "[0, 0, 0]", "[0, 0, 0, 0]"])
        return gen_expr(rng, depth + 1) + idx
    if r < 0.88:
        return "(" + gen_expr(rng, depth + 1) + " with " + rng.choice(["[0]", "[::-1]", "[0, :]", "[9]"]) + \
            " = " + gen_expr(rng, depth + 1) + ")"
    if r < 0.94:
        return "(loop s = " + gen_expr(rng, depth + 1) + " for i < " + rng.choice(["3", "0", "-1", "n"]) + \
            " do " + gen_expr(rng, depth + 1) + ")"
    return "(if " + gen_expr(rng, depth + 1) + " then " + gen_expr(rng, depth + 1) + " else " + \
        gen_expr(rng, depth + 1) + ")"


# Typed generation: mostly well-typed expressions, so that inputs reach the
# evaluator (edge values through every builtin) rather than the type checker.
# Types: i int, f float, b bool, I [int], F [float], M [[float]], B [bool].
TYPED = {
    "i": ["0", "1", "-1", "3", "7", "n", "2147483647", "(-2147483648)", "(length {I})", "(sum {I})",
          "(argmax {F})", "(argmin {I})", "(count (\\v -> v > 0.5) {F})", "{I}[{i}]", "({i} + {i})",
          "({i} / {i})", "({i} % {i})", "({i} << {i})", "({i} >> {i})", "({i} ** {i})", "(int {f})",
          "(rows {M})", "(cols {M})", "(maximum {I})", "(minimum {I})", "(~{i})", "(abs {i})",
          "(if {b} then {i} else {i})", "(reduce (max) 0 {I})", "(product {I})"],
    "f": ["0.0", "1.5", "-0.0", "x", "(0.0 / 0.0)", "(1.0 / 0.0)", "3.4028235e38", "1e-45", "(sum {F})",
          "{F}[{i}]", "({f} * {f})", "({f} / {f})", "({f} % {f})", "({f} ** {f})", "(sqrt {f})",
          "(log {f})", "(float {i})", "(maximum {F})", "(minimum {F})", "(reduce (+) 0.0 {F})",
          "{M}[{i}, {i}]", "(atan2 {f} {f})", "(min {f} {f})", "(round {f})", "(erf {f})"],
    "b": ["true", "false", "({i} < {i})", "({f} == {f})", "(all {B})", "(any {B})", "(!{b})",
          "({b} && {b})", "{B}[{i}]"],
    "I": ["a", "e", "(iota {s})", "[{i}, {i}]", "[{i}]", "({I} + {I})", "({I} * {i})", "({I} / {I})",
          "(reverse {I})", "(take {i} {I})", "(drop {i} {I})", "(sort {I})",
          "(filter (\\v -> v % 2 == 0) {I})", "(scan (+) 0 {I})", "(scanExclusive (max) 0 {I})",
          "(gather {I} {I})", "(scatter {I} {I} {I})", "({I} ++ {I})", "(interleave {I} {I})",
          "{I}[{i}:{i}:{i}]", "{I}[::{i}]", "({I} with [{i}] = {i})", "({I} with [{i}:{i}] = {i})",
          "(map (\\v -> v * 2) {I})", "(int {F})", "(argmax {M})", "(segscan (+) 0 {B} {I})",
          "(permute (+) {I} (\\k -> k % 3) {I})", "(fill {s} {i})", "(generate {s} (\\k -> k * {i}))",
          "(loop s = {I} for k < {s} do s ++ {I})", "(zipWith (+) {I} {I})", "(flatten (fill ({s}, {s}) {i}))",
          "(reshape {s} {I})", "(let (k, v) = sortByKey {I} {I} in k ++ v)"],
    "F": ["xs", "(random {s})", "({F} + {F})", "({F} * {f})", "(float {I})", "(map sqrt {F})",
          "(sum {M})", "{M}[{i}]", "{M}[:, {i}]", "(sort {F})", "(reverse {F})", "(maximum {M})",
          "(scan (+) 0.0 {F})", "(flatten {M})", "({F} ++ {F})", "(take {i} {F})", "[{f}, {f}]",
          "(zipWith3 (\\p q r -> p * q + r) {F} {F} {F})", "{F}[{i}:]", "(filter (\\v -> v > 0.0) {F})"],
    "M": ["m", "(float m0)", "m1", "(fill ({s}, {s}) {f})", "(transpose {M})", "(reshape ({s}, {s}) {F})",
          "({M} + {M})", "({M} * {f})", "(generate ({s}, {s}) (\\r c -> float (r * c)))", "({M} ++ {M})",
          "{M}[{i}:{i}, ::{i}]", "({M} with [{i}, :] = {f})", "({M} with [1:-1, 1:-1] = {f})",
          "(reverse {M})", "(sort {M})", "(map (\\v -> v + 1.0) {M})", "[[{f}, {f}], [{f}, {f}]]",
          "(interleave {M} {M})", "(scatter {M} {I} {M})", "(gather {I} {M})", "(take {i} {M})"],
    "B": ["b", "({I} > {i})", "({F} == {F})", "(map (\\v -> !v) {B})", "[{b}, {b}]", "(!{B})",
          "(sort (iota 0)) == (iota 0)", "({B} && {B})", "(filter (\\v -> v) {B})"],
    # small sizes (sometimes negative or huge)
    "s": ["0", "1", "2", "3", "5", "n", "(-1)", "(length {I})", "({s} + {s})", "100000", "2147483647"],
}


def gen_typed(rng, ty, depth=0):
    options = TYPED[ty]
    if depth > 4:
        options = [o for o in options if "{" not in o] or options[:1]
    template = rng.choice(options)
    return re.sub(r"\{([ifbIFMBs])\}", lambda m: gen_typed(rng, m.group(1), depth + 1), template)


def gen_input(corpus, rng):
    r = rng.random()
    if r < 0.35:
        return mutate(rng.choice(corpus), corpus, rng)
    if r < 0.7:
        e = gen_typed(rng, rng.choice("ifbIFMB"))
        if rng.random() < 0.15:
            e = mutate(e, corpus, rng)
        return rng.choice(["", "", "let r = ", ":type "]) + e
    if r < 0.9:
        e = gen_expr(rng)
        return rng.choice(["", "", "let r = ", ":type ", "let (u, v) = "]) + e
    # several statements at once
    return "\n".join(mutate(rng.choice(corpus), corpus, rng) if rng.random() < 0.5 else gen_expr(rng)
                     for _ in range(rng.randint(2, 5)))


def encode(inputs):
    out = bytearray()
    for s in inputs:
        b = s.encode("utf-8", errors="surrogateescape")
        out += str(len(b)).encode() + b"\n" + b
    return bytes(out)


def run_batch(driver, inputs, workdir, timeout, grace):
    """Runs inputs; returns (status per input index, findings, crash report or None, last index reached)."""
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    with tempfile.TemporaryFile() as stdin_file, tempfile.TemporaryFile() as err_file:
        stdin_file.write(encode(inputs))
        stdin_file.seek(0)
        limit = len(inputs) * (timeout + 1) + grace + 60
        try:
            proc = subprocess.run([driver, "--timeout", str(timeout), "--grace", str(grace)], stdin=stdin_file,
                                  stdout=subprocess.PIPE, stderr=err_file, cwd=workdir, env=env, timeout=limit)
            stdout, rc = proc.stdout.decode("utf-8", "replace"), proc.returncode
        except subprocess.TimeoutExpired as e:
            stdout, rc = (e.stdout or b"").decode("utf-8", "replace"), "timeout"
        err_file.seek(0)
        stderr = err_file.read().decode("utf-8", "replace")
    status, findings, open_index = {}, [], None
    for line in stdout.splitlines():
        parts = line.split(" ", 3)
        if parts[0] == "BEGIN":
            open_index = int(parts[1])
        elif parts[0] == "END":
            status[int(parts[1])] = parts[2]
            open_index = None
        elif parts[0] == "FINDING":
            findings.append((int(parts[1]), parts[2], parts[3] if len(parts) > 3 else ""))
    crash = None
    if open_index is not None and not any(f[0] == open_index and f[1] == "hang" for f in findings):
        crash = (open_index, "exit status %s\n%s" % (rc, stderr[-6000:]))
    elif open_index is None and rc not in (0,):
        crash = (max(status) + 1 if status else 0, "driver exited with %s outside an input\n%s" % (rc, stderr[-6000:]))
    return status, findings, crash, open_index


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("driver")
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds before the statement is cancelled")
    ap.add_argument("--grace", type=float, default=10.0, help="seconds after the cancel before it is a hang")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--findings", default="fuzz-findings")
    ap.add_argument("--time-limit", type=float, default=None, help="stop generating after this many seconds")
    args = ap.parse_args()

    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    corpus = read_corpus()
    driver = os.path.abspath(args.driver)
    os.makedirs(args.findings, exist_ok=True)
    print("seed %d, %d corpus statements, %d inputs" % (seed, len(corpus), args.count), flush=True)

    start = time.time()
    counts = {"ok": 0, "error": 0, "interrupted": 0}
    findings_total = {}
    n_findings = 0
    done = 0
    with tempfile.TemporaryDirectory(prefix="shoal-fuzz-") as workdir:
        for name in os.listdir(PROGRAM_DATA):
            shutil.copy(os.path.join(PROGRAM_DATA, name), workdir)
        while done < args.count:
            if args.time_limit and time.time() - start > args.time_limit:
                break
            inputs = [gen_input(corpus, rng) for _ in range(min(args.batch, args.count - done))]
            pending = inputs
            offset = done
            while pending:
                status, findings, crash, _ = run_batch(driver, pending, workdir, args.timeout, args.grace)
                for k, v in status.items():
                    counts[v] = counts.get(v, 0) + 1
                reports = [(i, kind, detail) for i, kind, detail in findings]
                if crash:
                    reports.append((crash[0], "crash", crash[1]))
                for i, kind, detail in reports:
                    n_findings += 1
                    findings_total[kind] = findings_total.get(kind, 0) + 1
                    stem = os.path.join(args.findings, "%04d-%s" % (n_findings, kind))
                    with open(stem + ".shoal", "w", encoding="utf-8", errors="surrogateescape") as f:
                        f.write(pending[i] if i < len(pending) else "")
                    with open(stem + ".txt", "w", encoding="utf-8") as f:
                        f.write("seed %d input %d\n%s\n" % (seed, offset + i, detail))
                    print("FINDING %s (input %d): %s" % (kind, offset + i, detail.splitlines()[0] if detail else ""),
                          flush=True)
                # continue after the input that ended the process (crash or hang)
                stopped = [i for i, kind, _ in reports if kind in ("crash", "hang")]
                if stopped:
                    nxt = max(stopped) + 1
                    offset += nxt
                    pending = pending[nxt:]
                else:
                    pending = []
            done += len(inputs)
            print("%d inputs, %.0f s, %s, findings %s" % (done, time.time() - start, counts, findings_total or "none"),
                  flush=True)

    elapsed = time.time() - start
    print("done: %d inputs in %.0f s (%.1f/s); results %s; findings %s" %
          (done, elapsed, done / max(elapsed, 1e-9), counts, findings_total or "none"))
    return 1 if n_findings else 0


if __name__ == "__main__":
    sys.exit(main())
