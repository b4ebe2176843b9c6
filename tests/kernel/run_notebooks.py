"""Executes example notebooks end to end with the Shoal kernel (nbclient).

usage: run_notebooks.py NOTEBOOK.ipynb ...

A cell error fails the test (except in cells tagged "raises-exception").
Each notebook runs in a fresh kernel, in a temporary working directory.
Run through tests/kernel/run_with_venv.py (ctest does).
"""
import os
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError


def check_outputs(path, nb):
    """Sanity checks beyond "no error": every code cell that is expected to
    show something does, and rich outputs are well-formed."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            if out.output_type in ("execute_result", "display_data"):
                if "text/plain" not in out.data:
                    problems.append(f"cell {i}: {out.output_type} without text/plain")
    return problems


def run(path):
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="shoal-nb-") as cwd:
        client = NotebookClient(nb, kernel_name="shoal", timeout=300, startup_timeout=60,
                                allow_errors=False, resources={"metadata": {"path": cwd}})
        started = time.monotonic()
        try:
            client.execute()
        except (CellExecutionError, CellTimeoutError) as e:
            print(f"FAIL {path}:\n{e}")
            return False
        elapsed = time.monotonic() - started
    problems = check_outputs(path, nb)
    for p in problems:
        print(f"FAIL {path}: {p}")
    if problems:
        return False
    cells = sum(1 for c in nb.cells if c.cell_type == "code")
    print(f"ok   {os.path.basename(path)}: {cells} code cells in {elapsed:.1f}s")
    return True


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for path in sys.argv[1:]:
        ok = run(path) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
