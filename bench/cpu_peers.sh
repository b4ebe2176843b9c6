# Sourced by the CPU benchmarks (bench/tiers, bench/cliffs): the python with
# numpy, numexpr and JAX on the CPU, from a venv made on first use in
# $BUILD/bench-venv-tiers. Sets $build and $python.
build=${BUILD:-build}
python=$build/bench-venv-tiers/bin/python
if [ ! -x "$python" ]; then
  python3 -m venv "$build/bench-venv-tiers" && "$build/bench-venv-tiers/bin/pip" install -q numpy numexpr "jax[cpu]"
fi
