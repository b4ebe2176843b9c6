"""The kernelspec: the one CMake writes into the build tree and the ones
`shoal-kernel install [--user | --prefix P]` writes (standard library only).

usage: test_install.py BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def check_spec(directory, binary):
    with open(os.path.join(directory, "kernel.json")) as f:
        spec = json.load(f)
    assert spec["argv"] == [binary, "-f", "{connection_file}"], spec["argv"]
    assert spec["display_name"] == "Shoal", spec
    assert spec["language"] == "shoal", spec
    assert spec["interrupt_mode"] == "signal", spec
    for size in (32, 64):
        with open(os.path.join(directory, f"logo-{size}x{size}.png"), "rb") as f:
            head = f.read(24)
        assert head[:8] == PNG_MAGIC, f"logo-{size}x{size}.png is not a PNG"
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert (width, height) == (size, size), (size, width, height)


def main():
    build = os.path.abspath(sys.argv[1])
    binary = os.path.join(build, "shoal-kernel")
    if not os.path.exists(binary):
        print("SKIP: shoal-kernel is not built")
        return 77
    check_spec(os.path.join(build, "share", "jupyter", "kernels", "shoal"), binary)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "prefix")
        subprocess.run([binary, "install", "--prefix", prefix], check=True)
        check_spec(os.path.join(prefix, "share", "jupyter", "kernels", "shoal"), binary)
        env = dict(os.environ, HOME=os.path.join(tmp, "home"))
        env.pop("JUPYTER_DATA_DIR", None)
        env.pop("XDG_DATA_HOME", None)
        subprocess.run([binary, "install", "--user"], check=True, env=env)
        check_spec(os.path.join(tmp, "home", ".local", "share", "jupyter", "kernels", "shoal"), binary)
        env["JUPYTER_DATA_DIR"] = os.path.join(tmp, "data")
        subprocess.run([binary, "install", "--user"], check=True, env=env)
        check_spec(os.path.join(tmp, "data", "kernels", "shoal"), binary)
        bad = subprocess.run([binary, "install", "--nonsense"], capture_output=True, text=True)
        assert bad.returncode == 2 and "usage" in bad.stderr, bad
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("shoal-kernel "), version
    print("ok: kernelspec in the build tree, install --prefix, install --user")
    return 0


if __name__ == "__main__":
    sys.exit(main())
