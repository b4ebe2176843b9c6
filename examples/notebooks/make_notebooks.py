#!/usr/bin/env python3
"""Writes the example notebooks of this directory (without outputs).

    python3 examples/notebooks/make_notebooks.py

The notebooks are plain nbformat 4 JSON; this script only saves typing.
tests/kernel/run_notebooks.py executes them with the Shoal kernel.
A cell tagged "raises-exception" may fail: nbclient allows its error (the
tour shows one); an error in any other cell fails the test.
"""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.dirname(HERE)

METADATA = {
    "kernelspec": {"display_name": "Shoal", "language": "shoal", "name": "shoal"},
    "language_info": {
        "name": "shoal",
        "file_extension": ".shoal",
        "mimetype": "text/x-shoal",
        "codemirror_mode": "haskell",
        "pygments_lexer": "haskell",
    },
}


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")}


def code(text, tags=()):
    meta = {"tags": list(tags)} if tags else {}
    return {"cell_type": "code", "execution_count": None, "metadata": meta, "outputs": [],
            "source": text.strip("\n")}


def write(name, cells):
    nb = {"cells": cells, "metadata": METADATA, "nbformat": 4, "nbformat_minor": 5}
    for i, c in enumerate(nb["cells"]):
        c["id"] = f"{os.path.splitext(name)[0].replace('_', '-')}-{i:02d}"
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False)
        f.write("\n")


def tour():
    write("tour.ipynb", [
        md("""
# A tour of Shoal

Shoal is an interactive array language: `map`, `reduce`, `scan`, slices,
`filter`, `sort`, ... This notebook runs on the same session as the terminal
REPL (`build/shoal`): every statement and `:command` works in a cell. The
value of a cell's last expression is its result; arrays are also shown as a
table with their shape and element type.
"""),
        code("sum (iota 10)"),
        code("let xs = generate 5 (\\i -> float i * 0.5)\nxs"),
        md("A cell may hold several statements. `let` prints nothing; the last expression is the result."),
        code("let fwd x = x[1:] - x[:-1]\nfwd [1.0, 4.0, 9.0, 16.0]"),
        code(":type fwd"),
        code("filter (\\x -> x % 2 == 0) (iota 10)"),
        code("scan (+) 0 [1, 2, 3, 4]"),
        md("Matrices are shown as tables; long arrays are summarised as in the REPL."),
        code("generate (4, 3) (\\i j -> i * 3 + j)"),
        code("iota 1000"),
        code("let (c, p) = map (\\s -> (s + 1.0, s - 1.0)) xs\nc"),
        code(":env"),
        code(":help sum"),
        md("""
## Errors

An error shows the source line and a caret. The session keeps its bindings:
a failed statement leaves everything as it was.
"""),
        code("let n = 3\nlet y = 1.5 + n", tags=["raises-exception"]),
        code("n + 1"),
        md("""
## What the compiler makes of it

`:cuda e` evaluates `e` with the array compiler and shows the launch plan and
the generated CUDA source, highlighted; `:ir e` shows the kernel IR.
"""),
        code("let saxpy (a : float) (x : [float]) (y : [float]) : [float] = a * x + y\n"
             ":cuda saxpy 2.0 xs xs"),
        code(":ir sum (map (\\x -> x * x) (iota 100))"),
        md("""
## Plots

`:plot` draws a vector as a line (a matrix as a heat map, a pair `(x, y)` as
y over x) and `:hist` a histogram; more in `plots.ipynb`.
"""),
        code(":plot sin (generate 200 (\\i -> float i * 0.05))"),
    ])


def header_and_body(path):
    """Splits an example into its leading comment block and the program."""
    lines = open(path).read().rstrip("\n").split("\n")
    head = []
    while lines and lines[0].startswith("--"):
        head.append(lines.pop(0)[2:].strip())
    return " ".join(head), "\n".join(lines)


# For each seed program: the expression shown with :cuda (bound by the program).
SEED_CUDA = [
    ("saxpy", "SAXPY", "saxpy 2.5 x y"),
    ("sdot", "SDOT", "sdot x y"),
    ("rmse", "RMSE", "rmse pred obs"),
    ("sine", "Array sine", "sin xs"),
    ("forward_difference", "Forward difference", "fwd ys"),
    ("spencer", "Spencer's 15-point moving average", "spencer signal"),
    ("prefix_sum", "Prefix sums", "scan (+) 0 xs"),
    ("segscan", "Segmented scan", "segscan (+) 0 flags vals"),
    ("filter", "Filter", "filter (\\x -> x % 2 == 0) xs"),
    ("histogram", "Histogram", "permute (+) (fill 10 0) (\\i -> bin xs[i]) (fill n 1)"),
    ("blackscholes", "Black-Scholes", "map (\\i -> option price[i] strike[i] years[i]) (iota n)"),
    ("addsum", "addSum", "addSum xs ys"),
    ("ndp", "Nested data parallelism", "map (\\i -> sum (take i xs)) (iota 1000)"),
    ("jacobi", "Jacobi iteration", "step u0"),
    ("bitonic", "Bitonic sort", "tmerge 4 halves"),
]


def seed_programs():
    cells = [md("""
# The seed programs

The programs of `examples/*.shoal`, each followed by `:cuda`: the launch plan
the array compiler builds for its central expression and the CUDA C++ it
generates, then `:profile`: what each kernel did on the CPU executor (time,
global bytes loaded and stored, 32-byte sectors, bank conflicts, atomics).
Every program starts from `:reset`, so each one stands alone.
""")]
    for stem, title, expr in SEED_CUDA:
        about, body = header_and_body(os.path.join(EXAMPLES, stem + ".shoal"))
        cells.append(md(f"## {title}\n\n{about}\n\n(`examples/{stem}.shoal`)"))
        cells.append(code(":reset\n" + body))
        cells.append(code(":cuda " + expr))
        cells.append(code(":profile " + expr))
    write("seed_programs.ipynb", cells)


def plots():
    write("plots.ipynb", [
        md("""
# Plots

`:plot a` draws a vector as a line and a matrix as a heat map, `:plot (x, y)`
draws y over x, and `:hist a` a histogram. In a notebook they are SVG; in the
terminal REPL, Unicode plots sized to the terminal. Large arrays are binned
(minimum and maximum per pixel column), so a million points plot quickly.
"""),
        code("let xs = generate 200 (\\i -> float i * 0.05)\n:plot sin xs"),
        code(":plot (xs, cos xs * xs)"),
        code(":plot generate (40, 60) (\\i j -> sin (float i * 0.2) * cos (float j * 0.15))"),
        code(":hist map (\\x -> x * x) (random 10000)"),
        code(":plot generate 1000000 (\\i -> sin (float i * 0.0001) + 0.1 * sin (float i * 0.01))"),
    ])


if __name__ == "__main__":
    tour()
    seed_programs()
    plots()
