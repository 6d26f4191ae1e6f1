#!/usr/bin/env bash
# Fetch, HERE (a machine with the package index), the wheels benchmarks/gpu_run.sh needs on the device
# machine, which reaches no index: Python 3.12 x86-64 wheels of benchmarks/gpu_wheels.txt into .whl/
# (ignored by git; about 12 MiB). Then carry it: run(command="bash benchmarks/gpu_run.sh", carry=[".whl"]).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
grep -v '^#' benchmarks/gpu_wheels.txt | xargs python3 -m pip download -q --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl
du -sh .whl
