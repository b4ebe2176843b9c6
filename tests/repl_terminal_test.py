#!/usr/bin/env python3
"""Drives the real interactive `shoal` REPL through a terminal (tmux).

usage: repl_terminal_test.py SHOAL_BINARY

Each check types into a tmux pane, polls the screen until the expected text
appears (or a timeout passes) and prints PASS/FAIL. HOME points at a
temporary directory, so the history file is the test's own. Exits 1 if any
check failed, 77 (skipped) when tmux is not installed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TIMEOUT = 15.0  # seconds for one expected change of the screen
PROMPT = "shoal> "
CONT = "  ...> "
UNKNOWN_STATUS = "exited, status not reported"


class Pane:
    """One tmux server + session running shoal in a 120x40 terminal."""

    def __init__(self, binary, home, name):
        self.sock = os.path.join(home, "tmux-" + name + ".sock")
        self.target = name
        conf = os.path.join(home, "tmux.conf")
        with open(conf, "w") as f:
            # Keep the pane after shoal exits so its exit status can be read.
            f.write("set -g remain-on-exit on\nset -g history-limit 5000\n")
        env = dict(os.environ, HOME=home, LC_ALL="C.UTF-8", LANG="C.UTF-8")
        env.pop("TMUX", None)
        self.env = env
        self.tmux("-f", conf, "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                  "--", binary)

    def tmux(self, *args):
        r = subprocess.run(["tmux", "-S", self.sock] + list(args), env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("tmux %s failed: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def type(self, text):
        self.tmux("send-keys", "-t", self.target, "-l", text)

    def key(self, *keys):
        self.tmux("send-keys", "-t", self.target, *keys)

    def line(self, text):
        self.type(text)
        self.key("Enter")

    def screen(self):
        # -J joins wrapped lines; -S -: include the scrollback.
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", self.target)

    def lines(self):
        ls = [l.rstrip() for l in self.screen().split("\n")]
        while ls and not ls[-1]:
            ls.pop()  # the unused rows below the cursor
        return ls

    def dead(self):
        """(exited?, exit status or None, signal that killed it or None)"""
        out = self.tmux("display-message", "-p", "-t", self.target,
                        "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}").strip().split(":")
        number = lambda s: int(s) if s.strip().isdigit() else None
        return out[0] == "1", number(out[1]), number(out[2])

    def wait(self, pred, timeout=TIMEOUT):
        """Polls until pred(lines) is true; returns whether it became true."""
        deadline = time.monotonic() + timeout
        while True:
            if pred(self.lines()):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def wait_dead(self, timeout=TIMEOUT):
        """Waits for the program to exit: its exit status, UNKNOWN_STATUS when
        tmux does not say, "killed by signal N", or None if it is still running.
        (tmux 3.3 sometimes marks the pane dead on the terminal's end of file
        but never reaps the process, leaving the status empty.)"""
        deadline = time.monotonic() + timeout
        dead_since = None
        while time.monotonic() < deadline:
            d, status, signal = self.dead()
            if d and signal is not None:
                return "killed by signal %d" % signal
            if d and status is not None:
                return status
            if d:
                dead_since = dead_since or time.monotonic()
                if time.monotonic() - dead_since > 2.0:
                    return UNKNOWN_STATUS
            time.sleep(0.05)
        return None

    def prompt_count(self):
        return sum(1 for l in self.lines() if l.startswith(PROMPT.rstrip()))

    def last_nonblank(self):
        ls = [l for l in self.lines() if l.strip()]
        return ls[-1] if ls else ""

    def at_prompt(self):
        return self.last_nonblank() == PROMPT.rstrip()

    def run(self, stmt, timeout=TIMEOUT):
        """Types a one-line statement; waits for the next prompt; returns the
        lines printed between the statement's line and that prompt."""
        before = self.prompt_count()
        self.line(stmt)
        ok = self.wait(lambda ls: self.prompt_count() > before and self.at_prompt(), timeout)
        return output_after(self.lines(), PROMPT + stmt) if ok else None

    def debug(self):
        """What a failure report needs: pane state, process state, screen."""
        info = self.tmux("display-message", "-p", "-t", self.target,
                         "dead=#{pane_dead} status=#{pane_dead_status} signal=#{pane_dead_signal} pid=#{pane_pid}")
        pid = info.split("pid=")[-1].strip()
        ps = subprocess.run(["ps", "-o", "pid,stat,wchan:20,cmd", "-p", pid], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True).stdout if pid.isdigit() else ""
        return info + ps + "\n".join(self.lines()[-8:])

    def kill(self):
        try:
            self.tmux("kill-server")
        except RuntimeError:
            pass


def output_after(lines, command_line):
    """Lines after the last occurrence of command_line, up to the next prompt."""
    idx = max((i for i, l in enumerate(lines) if l == command_line), default=None)
    if idx is None:
        return None
    out = []
    for l in lines[idx + 1:]:
        if l.startswith(PROMPT) or l == PROMPT.rstrip():
            break
        out.append(l)
    while out and not out[-1].strip():
        out.pop()
    return out


def unvis(text):
    """Decodes libedit's history file encoding (\\040 = space, ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text).replace("\\\\", "\\")


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("PASS", name)
        else:
            self.failed += 1
            print("FAIL", name + (": " + detail if detail else ""))
        sys.stdout.flush()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    if shutil.which("tmux") is None:
        print("SKIP: tmux is not installed")
        return 77
    home = tempfile.mkdtemp(prefix="shoal-repl-test-")
    r = Results()
    pane = Pane(binary, home, "main")
    try:
        session_one(pane, r, home)
    except Exception as e:  # a broken harness is a failure, not a crash
        r.check("terminal session", False, "%s: %s\n%s" % (type(e).__name__, e, pane.screen()))
    finally:
        pane.kill()
    pane = Pane(binary, home, "second")
    try:
        session_two(pane, r)
    except Exception as e:
        r.check("second terminal session", False, "%s: %s" % (type(e).__name__, e))
    finally:
        pane.kill()
    shutil.rmtree(home, ignore_errors=True)
    print("%d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


def session_one(p, r, home):
    ok = p.wait(lambda ls: any(l.startswith("Shoal") for l in ls) and p.at_prompt())
    r.check("banner and prompt", ok, "\n".join(p.lines()))
    if not ok:
        return

    out = p.run("sum (iota 10)")
    r.check("sum (iota 10) prints 45", out == ["45"], repr(out))

    # A statement over several lines: the continuation prompt, then one result.
    p.line("let f x =")
    ok = p.wait(lambda ls: p.last_nonblank() == CONT.rstrip())
    r.check("continuation prompt after 'let f x ='", ok, p.last_nonblank())
    p.line("  x + 1")
    ok = p.wait(lambda ls: p.at_prompt())
    r.check("multi-line definition completes", ok, p.last_nonblank())
    out = p.run("f 41")
    r.check("multi-line function works: f 41 prints 42", out == ["42"], repr(out))

    # Tab completion: a builtin, a binding, a command.
    p.type("su")
    p.key("Tab")
    ok = p.wait(lambda ls: p.last_nonblank().startswith(PROMPT + "sum"))
    r.check("tab completes 'su' to 'sum'", ok, p.last_nonblank())
    p.key("C-e")
    before = p.prompt_count()
    p.type(" (iota 5)")
    p.key("Enter")
    p.wait(lambda ls: p.prompt_count() > before and p.at_prompt())
    lines = p.lines()
    idx = max((i for i, l in enumerate(lines) if l.startswith(PROMPT + "sum") and "(iota 5)" in l), default=None)
    r.check("completed line runs: 10", idx is not None and lines[idx + 1].strip() == "10",
            "\n".join(lines[-5:]))

    out = p.run("let myLongVariable = 7")
    r.check("let prints nothing", out == [], repr(out))
    p.type("myLo")
    p.key("Tab")
    ok = p.wait(lambda ls: p.last_nonblank().startswith(PROMPT + "myLongVariable"))
    r.check("tab completes a binding", ok, p.last_nonblank())
    before = p.prompt_count()
    p.key("Enter")
    p.wait(lambda ls: p.prompt_count() > before and p.at_prompt())
    r.check("completed binding evaluates to 7", "7" in p.lines()[-3:-1], "\n".join(p.lines()[-4:]))

    p.type(":ty")
    p.key("Tab")
    ok = p.wait(lambda ls: p.last_nonblank().startswith(PROMPT + ":type"))
    r.check("tab completes a command", ok, p.last_nonblank())
    p.key("C-u")  # kill the line
    ok = p.wait(lambda ls: p.at_prompt())

    p.type("i")
    p.key("Tab")
    ok = p.wait(lambda ls: any("iota" in l and "if" in l for l in ls[-10:]))
    r.check("tab lists the candidates for 'i'", ok, "\n".join(p.lines()[-6:]))
    p.key("C-u")
    p.wait(lambda ls: p.at_prompt())

    # An error: location, source line, caret; the session keeps its bindings.
    out = p.run("let bad = myLongVariable + true")
    ok = (out is not None and len(out) >= 3 and re.match(r"<stdin>:1:\d+: error: ", out[0]) is not None
          and "let bad = myLongVariable + true" in out[1] and "^" in out[2])
    r.check("type error shows file:line:col, the line and a caret", ok, repr(out))
    out = p.run("1 + )")
    r.check("syntax error in a completed line is reported",
            out is not None and any("error" in l for l in out), repr(out))
    out = p.run("myLongVariable")
    r.check("bindings survive errors", out == ["7"], repr(out))

    # Ctrl-C during a long computation cancels it and keeps the session.
    long_running = "loop x = 0 while true do x + 1"
    p.line(long_running)
    p.wait(lambda ls: p.last_nonblank() == PROMPT + long_running)
    before = p.prompt_count()
    time.sleep(1.0)  # let it get going; there is no output to wait for
    still_running = p.last_nonblank() == PROMPT + long_running
    r.check("long computation is running", still_running, p.last_nonblank())
    p.key("C-c")
    ok = p.wait(lambda ls: p.prompt_count() > before and p.at_prompt(), timeout=20)
    r.check("Ctrl-C cancels the computation and returns to the prompt", ok, "\n".join(p.lines()[-6:]))
    r.check("the cancellation is reported", any("interrupt" in l.lower() for l in p.lines()[-6:]),
            "\n".join(p.lines()[-6:]))
    out = p.run("f myLongVariable")
    r.check("bindings intact after Ctrl-C", out == ["8"], repr(out))

    # The same inside kernels working through a lot of data: nested loops in
    # every thread (about 10^10 operations, far more than a second's work).
    long_map = "sum (map (\\i -> sum (map (\\j -> i * j) (iota 100000))) (iota 100000))"
    p.line(long_map)
    p.wait(lambda ls: p.last_nonblank() == PROMPT + long_map)
    before = p.prompt_count()
    time.sleep(1.0)
    p.key("C-c")
    ok = p.wait(lambda ls: p.prompt_count() > before and p.at_prompt(), timeout=20)
    # The interruption is reported after the sequential-nesting warning (4 lines).
    r.check("Ctrl-C cancels a long map/sum", ok and any("interrupt" in l.lower() for l in p.lines()[-12:]),
            "\n".join(p.lines()[-12:]))
    out = p.run("myLongVariable")
    r.check("bindings intact after cancelling map/sum", out == ["7"], repr(out))

    # Ctrl-C at the prompt clears the line and does not exit.
    p.type("let half typed = ")
    p.wait(lambda ls: p.last_nonblank().startswith(PROMPT + "let half"))
    before = p.prompt_count()
    p.key("C-c")
    ok = p.wait(lambda ls: p.prompt_count() > before and p.at_prompt())
    r.check("Ctrl-C at the prompt gives a fresh prompt", ok, "\n".join(p.lines()[-4:]))
    r.check("Ctrl-C at the prompt does not exit", not p.dead()[0])
    p.line("let g y =")
    p.wait(lambda ls: p.last_nonblank() == CONT.rstrip())
    before = p.prompt_count()
    p.key("C-c")
    ok = p.wait(lambda ls: p.prompt_count() > before and p.at_prompt())
    r.check("Ctrl-C in a continuation drops the statement", ok, "\n".join(p.lines()[-4:]))
    out = p.run("2 + 3")
    r.check("REPL works after Ctrl-C at the prompt", out == ["5"], repr(out))

    p.line(":quit")
    status = p.wait_dead()
    r.check(":quit exits with status 0", status in (0, UNKNOWN_STATUS),
            "status %r\n%s" % (status, p.debug()))

    path = os.path.join(home, ".shoal_history")
    text = unvis(open(path).read()) if os.path.exists(path) else ""
    r.check("history saved to $HOME/.shoal_history", "sum (iota 10)" in text and ":quit" in text,
            repr(text[:300]))
    r.check("multi-line statement saved as one history entry", "let f x =\n  x + 1" in text,
            repr(text[:300]))


def session_two(p, r):
    ok = p.wait(lambda ls: p.at_prompt())
    r.check("second session starts", ok, "\n".join(p.lines()))
    # History from the first session is loaded: Up recalls ':quit', Up again '2 + 3'.
    p.key("Up")
    p.key("Up")
    ok = p.wait(lambda ls: p.last_nonblank() == PROMPT + "2 + 3")
    r.check("history from the previous session is recalled", ok, p.last_nonblank())
    before = p.prompt_count()
    p.key("Enter")
    ok = p.wait(lambda ls: p.prompt_count() > before and p.at_prompt())
    r.check("recalled statement runs", ok and "5" in p.lines()[-3:-1], "\n".join(p.lines()[-4:]))
    # Pasted lines that start with an operator no expression starts with
    # continue the statement before them, as in a script.
    p.type("let pasted = [1.0, 2.0, 3.0]\n|> sum\nlet twice = 2\n* pasted\n")
    ok = p.wait(lambda ls: p.at_prompt() and any("* pasted" in l for l in ls))
    out = p.run("(pasted, twice)")
    r.check("pasted continuation lines join their statement", ok and out == ["(6.0, 12.0)"],
            repr(out) + "\n" + "\n".join(p.lines()[-8:]))
    p.key("C-d")
    status = p.wait_dead()
    r.check("Ctrl-D on an empty line exits with status 0", status in (0, UNKNOWN_STATUS),
            "status %r\n%s" % (status, p.debug()))


if __name__ == "__main__":
    sys.exit(main())
