#!/usr/bin/env python3
"""Runs the program tests: small Shoal scripts whose expected behaviour is
written in comments (in the style of Wren's test suite).

Usage: python3 run_programs.py SHOAL_BINARY PROGRAMS_DIR [NAME ...]

Every PROGRAMS_DIR/*.shoal (or only the NAMEs given) is run as
`SHOAL_BINARY /absolute/path/file.shoal` in a fresh temporary directory (so
tests that save files leave nothing behind) that starts with a copy of the
files in tests/data/programs (numpy-made .npy/.csv inputs, so a test can say
`load "np_bool.npy"`), with standard input empty and the environment variable
SHOAL_TEST_DATA set to this repository's tests/data and SHOAL_CHECK_BINDINGS=1
(the session then reports an internal error when a failed statement changed a
binding, so every expected error below also checks the bindings survived).

Expectations, each in a comment on a line of its own or after code:

  -- expect: TEXT         the next line of standard output is exactly TEXT
  -- expect re: REGEX     the next line of standard output matches REGEX (whole line)
  -- expect error: TEXT   the next error on standard error contains TEXT
  -- error also: TEXT     ... and the same error also contains TEXT
  -- skip: REASON         the file is not run (reported as SKIP)

Errors are reported as `file:line:col: error: message`, then the source line,
a caret line and any `note: ...` lines. The runner splits standard error into
such errors (the file name of the test itself is removed, leaving
`line:col: error: message`). An error TEXT that starts with `LINE:COL:` must be
the start of that first line: `-- expect error: 3:9: error:` checks the
position exactly. Any other TEXT is looked for (as a substring) in the first
line and in the `note:` lines.

The test fails on: a stdout line different from its expectation, missing or
extra stdout lines, an error that does not match, a missing or unexpected
error, any other text on standard error, a crash, a timeout, or the wrong
exit status (non-zero exactly when the file expects errors).

Prints PASS/FAIL per file (with the differences) and ends with
`N passed, N failed`; the exit status is 1 if any file failed.
Standard library only.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from launch import shoal_command  # alone, or on several MPI ranks (SHOAL_TEST_RANKS)

TIMEOUT = 60
HERE = os.path.dirname(os.path.abspath(__file__))
TEST_DATA = os.path.join(HERE, "data")
PROGRAM_DATA = os.path.join(TEST_DATA, "programs")  # copied into every test's working directory

DIRECTIVE = re.compile(r"--\s*(expect re|expect error|expect|error also|skip):(.*)$")
POSITION = re.compile(r"^\d+:\d+:")
ERROR_HEAD = re.compile(r"^(?:.*?:\d+:\d+: )?error: ")
WARNING_HEAD = re.compile(r"^(?:.*?:\d+:\d+: )?warning: ")


class Expectations:
    def __init__(self):
        self.stdout = []   # (kind 'exact'|'re', text, source line number)
        self.errors = []   # [list of fragments, source line number]
        self.skip = None


def strip_one_space(s):
    s = s.rstrip("\n").rstrip("\r")
    return s[1:] if s.startswith(" ") else s


def parse_expectations(path):
    ex = Expectations()
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            # directives live in comments; a string literal never contains "--"
            # in these tests, so the first "-- expect" etc. is the directive
            m = DIRECTIVE.search(line)
            if not m:
                continue
            kind, text = m.group(1), strip_one_space(m.group(2))
            if kind == "expect":
                ex.stdout.append(("exact", text.rstrip(), lineno))
            elif kind == "expect re":
                ex.stdout.append(("re", text.strip(), lineno))
            elif kind == "expect error":
                ex.errors.append([[text.strip()], lineno])
            elif kind == "error also":
                if not ex.errors:
                    raise ValueError(f"{path}:{lineno}: `error also` without a preceding `expect error`")
                ex.errors[-1][0].append(text.strip())
            elif kind == "skip":
                ex.skip = text.strip() or "skipped"
    return ex


def split_errors(stderr_text, test_path):
    """Returns (errors, stray): errors is a list of (head, notes) with the test
    file's own path removed from head; stray lists stderr lines that belong to
    no error or warning."""
    errors, stray = [], []
    current = None  # the list of the block being read, or None
    prefixes = (test_path + ":", os.path.basename(test_path) + ":")
    for line in stderr_text.splitlines():
        if ERROR_HEAD.match(line):
            head = line
            for p in prefixes:
                if head.startswith(p):
                    head = head[len(p):]
                    break
            current = (head, [])
            errors.append(current)
        elif WARNING_HEAD.match(line):
            current = ("warning", [])
        elif current is not None:
            if line.startswith("note:"):
                current[1].append(line)
            # other lines: the quoted source line and the caret line
        elif line.strip():
            stray.append(line)
    return errors, stray


def error_matches(fragment, head, notes):
    if POSITION.match(fragment):
        return head.startswith(fragment)
    return fragment in head or any(fragment in n for n in notes)


def run_test(binary, path):
    """Returns (status, details): status is 'PASS', 'FAIL' or 'SKIP'."""
    try:
        ex = parse_expectations(path)
    except ValueError as e:
        return "FAIL", [str(e)]
    if ex.skip:
        return "SKIP", [ex.skip]
    workdir = tempfile.mkdtemp(prefix="shoal_prog_")
    if os.path.isdir(PROGRAM_DATA):
        for name in os.listdir(PROGRAM_DATA):
            src = os.path.join(PROGRAM_DATA, name)
            if os.path.isfile(src) and not name.endswith(".py"):
                shutil.copy(src, os.path.join(workdir, name))
    env = dict(os.environ)
    env["SHOAL_TEST_DATA"] = TEST_DATA
    # Every failed statement is checked to leave the bindings as they were
    # (the session reports an internal error otherwise).
    env["SHOAL_CHECK_BINDINGS"] = "1"
    try:
        proc = subprocess.run(shoal_command(binary, path), cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "FAIL", [f"timed out after {TIMEOUT} s"]
    except OSError as e:
        return "FAIL", [f"cannot run {binary}: {e}"]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    out = proc.stdout.decode("utf-8", errors="replace").splitlines()
    err_text = proc.stderr.decode("utf-8", errors="replace")
    problems = []

    # standard output, line by line
    for k, (kind, text, lineno) in enumerate(ex.stdout):
        if k >= len(out):
            problems.append(f"line {lineno}: expected output {text!r}, but the output ended")
            break
        got = out[k]
        ok = got == text if kind == "exact" else re.fullmatch(text, got) is not None
        if not ok:
            what = "expected" if kind == "exact" else "expected a match of"
            problems.append(f"line {lineno}: {what} {text!r}\n      got {got!r}")
    if len(out) > len(ex.stdout):
        extra = out[len(ex.stdout):]
        shown = "\n      ".join(repr(x) for x in extra[:5])
        problems.append(f"unexpected output ({len(extra)} more line(s)):\n      {shown}")

    # standard error, error by error
    errors, stray = split_errors(err_text, path)
    for k, (fragments, lineno) in enumerate(ex.errors):
        if k >= len(errors):
            problems.append(f"line {lineno}: expected an error containing {fragments}, but there was none")
            continue
        head, notes = errors[k]
        missing = [f for f in fragments if not error_matches(f, head, notes)]
        if missing:
            problems.append(f"line {lineno}: expected an error containing {missing}\n      got {head!r}"
                            + "".join(f"\n          {n!r}" for n in notes))
    for head, notes in errors[len(ex.errors):]:
        problems.append(f"unexpected error: {head}" + "".join(f"\n      {n}" for n in notes))
    if stray:
        problems.append("unexpected text on standard error:\n      " + "\n      ".join(stray[:8]))

    # exit status
    if proc.returncode < 0:
        problems.append(f"crashed (signal {-proc.returncode})")
    elif ex.errors and proc.returncode == 0:
        problems.append("exit status 0, but errors were expected")
    elif not ex.errors and proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}")

    if problems:
        return "FAIL", problems
    return "PASS", []


def main(argv):
    if len(argv) < 3:
        print("usage: run_programs.py SHOAL_BINARY PROGRAMS_DIR [NAME ...]", file=sys.stderr)
        return 2
    binary = os.path.abspath(argv[1])
    programs = os.path.abspath(argv[2])
    wanted = set(n[:-6] if n.endswith(".shoal") else n for n in argv[3:])
    files = sorted(f for f in os.listdir(programs) if f.endswith(".shoal"))
    if wanted:
        files = [f for f in files if f[:-6] in wanted]
    if not files:
        print(f"no programs in {programs}", file=sys.stderr)
        return 2
    passed = failed = skipped = 0
    for name in files:
        status, details = run_test(binary, os.path.join(programs, name))
        print(f"{status} {name}" + (f" ({details[0]})" if status == "SKIP" else ""))
        if status == "FAIL":
            for d in details:
                print(f"    {d}")
            failed += 1
        elif status == "SKIP":
            skipped += 1
        else:
            passed += 1
        sys.stdout.flush()
    if skipped:
        print(f"{skipped} skipped")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
