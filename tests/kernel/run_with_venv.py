#!/usr/bin/env python3
"""Runs a kernel test script with the test virtual environment's Python.

usage: run_with_venv.py BUILD_DIR SCRIPT [ARGS...]

The Python is $SHOAL_TEST_PYTHON, else BUILD_DIR/venv/bin/python (made by
`bash .ci/dev test`). Without one that can import jupyter_client the test is
skipped (exit 77), never failed. The Jupyter environment is isolated: the
kernelspec comes from BUILD_DIR/share/jupyter; config, data and runtime
directories are temporary, so a user's Jupyter setup cannot interfere.
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77


def find_python(build_dir):
    candidates = []
    if os.environ.get("SHOAL_TEST_PYTHON"):
        candidates.append(os.environ["SHOAL_TEST_PYTHON"])
    candidates.append(os.path.join(build_dir, "venv", "bin", "python"))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build_dir = os.path.abspath(sys.argv[1])
    script = sys.argv[2]
    kernelspec = os.path.join(build_dir, "share", "jupyter", "kernels", "shoal", "kernel.json")
    if not os.path.isfile(kernelspec):
        print(f"SKIP: no kernelspec at {kernelspec} (shoal-kernel not built: xeus-dev missing?)")
        return SKIP
    python = find_python(build_dir)
    if python is None:
        print(f"SKIP: no test Python ({build_dir}/venv/bin/python or $SHOAL_TEST_PYTHON); "
              "`bash .ci/dev test` creates it")
        return SKIP
    probe = subprocess.run([python, "-c", "import jupyter_client, jupyter_kernel_test, nbclient, nbformat"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: {python} lacks the Jupyter test packages:\n{probe.stderr}")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="shoal-jupyter-") as tmp:
        env = dict(os.environ)
        env["JUPYTER_PATH"] = os.path.join(build_dir, "share", "jupyter")
        env["JUPYTER_CONFIG_DIR"] = os.path.join(tmp, "config")
        env["JUPYTER_DATA_DIR"] = os.path.join(tmp, "data")
        env["JUPYTER_RUNTIME_DIR"] = os.path.join(tmp, "runtime")
        env["IPYTHONDIR"] = os.path.join(tmp, "ipython")
        env["JUPYTER_PLATFORM_DIRS"] = "1"
        env["SHOAL_BUILD_DIR"] = build_dir
        env.pop("JUPYTER_PREFER_ENV_PATH", None)
        return subprocess.call([python] + sys.argv[2:], env=env)


if __name__ == "__main__":
    sys.exit(main())
