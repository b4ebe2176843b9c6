#!/usr/bin/env python3
"""Folds a SHOAL_HOST_SAMPLES file (repl/host_sampler.cpp) into the functions
that take the host's time: self time (the innermost frame in the binary or a
named library) and inclusive time (anywhere on the stack), named with
addr2line against the unstripped build.

Usage: python3 tests/gpu_machine/samples.py SAMPLES BINARY [TOP]
"""
import collections
import subprocess
import sys


def main():
    path, binary = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    maps, samples, in_samples = [], [], False
    for line in open(path):
        line = line.rstrip("\n")
        if line == "== samples":
            in_samples = True
        elif in_samples:
            samples.append([int(a, 16) for a in line.split()])
        else:
            parts = line.split()
            if len(parts) >= 6:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.append((lo, hi, int(parts[2], 16), parts[5]))

    def place(addr):
        for lo, hi, offset, name in maps:
            if lo <= addr < hi:
                return name, addr - lo + offset
        return "?", addr

    exe_name = next((m[3] for m in maps if m[3].endswith("/shoal")), None)
    own = sorted({place(a - 1)[1] for s in samples for a in s if place(a - 1)[0] == exe_name})
    names = {}
    if own:
        out = subprocess.run(["addr2line", "-f", "-C", "-e", binary] + [hex(a) for a in own],
                             capture_output=True, text=True).stdout.split("\n")
        for k, a in enumerate(own):
            names[a] = out[2 * k][:110]

    def name(addr):
        lib, off = place(addr - 1)
        if lib == exe_name:
            return names.get(off, "?")
        return lib.split("/")[-1]

    self_time, inclusive = collections.Counter(), collections.Counter()
    for s in samples:
        frames = [name(a) for a in s[2:]]  # the handler and libc's signal trampoline first
        if not frames:
            continue
        self_time[frames[0]] += 1
        for f in set(frames):
            inclusive[f] += 1
    n = len(samples)
    print(f"{n} samples (1 ms of CPU time each)")
    print("self:")
    for f, c in self_time.most_common(top):
        print(f"  {100 * c / n:5.1f}%  {f}")
    print("inclusive:")
    for f, c in inclusive.most_common(top):
        print(f"  {100 * c / n:5.1f}%  {f}")


if __name__ == "__main__":
    main()
