#!/usr/bin/env python3
"""Writes the libFuzzer seed corpora, tests/fuzz/corpus/<target>/, from the
program tests, the examples and the loaders' test data (run it again after
they change; the files are committed so CI needs no Python step).

  parse, typecheck   statements / expressions of tests/programs and examples
  session            the same, grouped a few lines at a time, each with a mode
                     byte (backend, one statement or a script: fuzz_session.cpp)
  emit               the function definitions of the examples
  loaders            tests/data/programs/*.npy and *.csv with a loader byte
  cache_entry        valid and broken kernel cache entries (the seeds' key)

Standard library only."""
import hashlib
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus")
MAX = 4096  # -max_len of the fuzz tests


def sources():
    for folder in ("tests/programs", "examples"):
        d = os.path.join(ROOT, folder)
        for name in sorted(os.listdir(d)):
            if name.endswith(".shoal"):
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    yield name, f.read()


def statements(text):
    """Statements by the layout rule's simplest reading: a line at column 1
    starts one, indented lines continue it; comments dropped."""
    out, cur = [], []
    for line in text.splitlines():
        code = re.sub(r"\s*--.*$", "", line)
        if not code.strip():
            continue
        if not line[0].isspace() and cur:
            out.append("\n".join(cur))
            cur = []
        cur.append(code)
    if cur:
        out.append("\n".join(cur))
    return [s for s in out if len(s) < MAX and "\0" not in s]


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data[:MAX])


def cache_entry(kind, image, log, key=bytes(range(32))):
    header = b"SHOALKC\x1a" + struct.pack("<II", 1, kind) + key + struct.pack("<QQ", len(image), len(log))
    return header + hashlib.sha256(header + image + log).digest() + image + log


def main():
    for target in ("parse", "typecheck", "session", "emit", "loaders", "cache_entry"):
        d = os.path.join(OUT, target)
        if os.path.isdir(d):
            for f in os.listdir(d):
                os.remove(os.path.join(d, f))
    seen = set()
    for name, text in sources():
        stem = name[:-6]
        stmts = statements(text)
        write("parse", stem, text.encode()[:MAX])
        for i in range(0, len(stmts), 6):
            chunk = "\n".join(stmts[i:i + 6])
            write("session", "%s-%d" % (stem, i // 6), bytes([(i // 6) % 4]) + chunk.encode())
        for s in stmts:
            if s.startswith(("let ", ":")) or "\n" in s or s in seen:
                continue
            seen.add(s)
            if len(seen) % 3 == 0:  # a third: enough to start from, fewer files
                write("typecheck", "%s-%d" % (stem, len(seen)), s)
        defs = [s for s in stmts if re.match(r"let [a-z_][A-Za-z0-9_']* [a-z(]", s)]
        if defs:
            write("emit", stem, "\n".join(defs))
    data = os.path.join(ROOT, "tests/data/programs")
    for name in sorted(os.listdir(data)):
        path = os.path.join(data, name)
        with open(path, "rb") as f:
            body = f.read()
        if name.endswith(".npy"):
            write("loaders", name + "-header", b"\x00" + body)
            write("loaders", name, b"\x01" + body)
        elif name.endswith(".csv"):
            write("loaders", name, b"\x02" + body)
            write("loaders", name + "-vector", b"\x03" + body)
    image = b"\x7fELF" + bytes(60)
    write("cache_entry", "cubin", cache_entry(1, image, b"ptxas info: 12 registers"))
    write("cache_entry", "ptx", cache_entry(2, b".version 8.0\n.target sm_90\n", b""))
    write("cache_entry", "object", cache_entry(3, image * 4, b""))
    write("cache_entry", "truncated", cache_entry(1, image, b"log")[:80])
    write("cache_entry", "flipped", bytes(b ^ (1 if i == 100 else 0) for i, b in enumerate(cache_entry(1, image, b""))))
    for target in sorted(os.listdir(OUT)):
        print(target, len(os.listdir(os.path.join(OUT, target))))


if __name__ == "__main__":
    main()
