#!/usr/bin/env bash
# The wheels a lent GPU machine lacks (it has jax with CUDA, flax, optax, chex, orbax and no
# network; benchmarks/README.md, "On a GPU machine without network"), downloaded here into .whl/ for
# `run` to carry (carry [".whl"]; about 30 MB). mujoco-mjx at this venv's version, so both
# machines run the same simulator; Python 3.12 wheels, the GPU machine's.
#   bash benchmarks/gpu/wheels.sh            (then: run ... carry [".whl"])
set -euo pipefail
python=${PYTHON:-.venv/bin/python}
mjx=$("$python" -c "import importlib.metadata as m; print(m.version('mujoco-mjx'))")
rm -rf .whl && mkdir -p .whl
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    brax==0.14.2 mujoco==4.0.0 mujoco-core==4.0.0 "mujoco-mjx==$mjx" playground==0.2.0 \
    ml_collections tyro docstring_parser typeguard tensorboardX trimesh jaxopt glfw mediapy \
    pytest pluggy iniconfig packaging pygments
ls .whl | wc -l
du -sh .whl
