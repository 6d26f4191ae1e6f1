#!/usr/bin/env bash
# The prepared GPU run: one device call (about 8 minutes) turns a lent NVIDIA GPU into evidence.
#
#   bash benchmarks/gpu_run.sh              # on the device machine, from the repository root
#   bash benchmarks/gpu_run.sh --dry-run    # anywhere: the same steps on the CuPy stand-in, small (CI runs it)
#
# Steps, each with its own time limit, each writing under $OUT as soon as it ends (a time-out of the
# whole call still returns every step that finished):
#   1. the card, driver and versions                          -> $OUT/card.txt
#   2. python -m coursekit calibrate (a preset of this card)  -> results/ (preset JSON + printout)
#   3. benchmarks/model_accuracy.py --many-launch: W1, W4, the transfer sweep and the lessons' many-launch
#      calls (lessons 5, 8, 10), measured and modelled with the built-in h100 preset; then --held-out on
#      those rows and the committed corpus                      -> results/
#   4. benchmarks/gpu_kernels.py: lesson 11's transposes and strided gather as CuPy raw kernels timed with
#      CUDA events, against the model's counted-sector price; SourceModule against RawKernel -> results/
#   5. benchmarks/run.py --device gpu --quick, W1-W4, coursekit beside NumPy, CuPy, JAX, PyTorch -> results/
#   6. every lesson and solution with COURSEKIT_FLAGS=device=gpu -> notebooks/gpu-runs/ (card in metadata)
# What comes back (the device tool returns at most 8 files): card.txt, log.txt, results.tar.gz,
# gpu-runs.tar.gz, summary.txt.  Unpack them into benchmarks/results/ and notebooks/gpu-runs/ to commit.
#
# What it needs on the device machine (it installs nothing from outside): the image's python3 with CuPy,
# JAX and PyTorch; coursekit from this checkout (PYTHONPATH, no install); and, to execute notebooks,
# Jupyter's kernel machinery, which the image lacks: carry the wheels listed in benchmarks/gpu_wheels.txt
# (fetched here by benchmarks/gpu_wheels.sh into .whl/, about 12 MiB) with carry=[".whl"]. The device
# call, in full:
#   bash benchmarks/gpu_run.sh     with run(command="bash benchmarks/gpu_run.sh", carry=[".whl"], timeout_s=570)
# Without .whl/ every step but the notebooks still runs, and the log says why the notebooks did not.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT=${OUT:-$REPO/gpu-run-out}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-run.XXXXXX")
mkdir -p "$OUT" "$WORK/results" "$WORK/config"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg COURSEKIT_CONFIG_DIR="$WORK/config" COURSEKIT_FLAGS=device=gpu
export XLA_PYTHON_CLIENT_PREALLOCATE=false   # JAX would otherwise take 75% of the card from the steps after it
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
[ -x "$REPO/.venv/bin/python" ] && [ $DRY = 1 ] && PY=${PYTHON:-$REPO/.venv/bin/python}
LOG="$OUT/log.txt"
: > "$LOG"
say() { echo "[gpu_run $(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
results() {   # results.tar.gz holds everything measured so far (rewritten whole, then renamed)
  tar czf "$OUT/results.tar.gz.partial" -C "$WORK" results config && mv "$OUT/results.tar.gz.partial" "$OUT/results.tar.gz"
}
step() {      # step NAME SECONDS COMMAND...: run with a time limit, log it, keep going whatever happens
  local name=$1 limit=$2; shift 2
  say "step $name (at most ${limit} s): $*"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  say "step $name: exit $rc after $((SECONDS - start)) s$([ $rc = 124 ] && echo ' (TIMED OUT)')"
  echo "$name: exit $rc, $((SECONDS - start)) s" >> "$OUT/summary.txt"
  results
}
: > "$OUT/summary.txt"

if [ $DRY = 1 ]; then
  # the CuPy stand-in as `cupy` in every process (kernels of executed notebooks too): NumPy memory and
  # coursekit's CUDA emulator; it counts, it never times a GPU
  mkdir -p "$WORK/standin/cupy" "$WORK/standin/cupyx"
  printf 'import sys, cupy_standin\nsys.modules["cupy"] = cupy_standin\n' > "$WORK/standin/cupy/__init__.py"
  printf 'import sys, cupy_standin\nsys.modules["cupyx"] = cupy_standin.cupyx\n' > "$WORK/standin/cupyx/__init__.py"
  export PYTHONPATH="$WORK/standin:$REPO/tests:$PYTHONPATH"
  SMALL=--small QUICK="--only W2 --systems numpy,coursekit --repeats 1" NOTEBOOKS=--only=01 DEADLINE=60
  say "DRY RUN on the CuPy stand-in: every figure below is a CPU figure, none is a GPU measurement"
else
  SMALL="" QUICK="--only W1,W2,W3,W4 --systems numpy,coursekit,cupy,jax,torch" NOTEBOOKS="" DEADLINE=200
  if [ -d "$REPO/.whl" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu-run-site "$REPO"/.whl/*.whl \
      && export PYTHONPATH="$PYTHONPATH:/tmp/gpu-run-site" && say "installed the carried wheels (.whl/)"
  fi
fi

"$PY" benchmarks/gpu_run.py card > "$OUT/card.txt" 2>>"$LOG"; cat "$OUT/card.txt" | tee -a "$LOG"
nvidia-smi >> "$OUT/card.txt" 2>/dev/null
"$PY" -c "import sys, numpy; print('python', sys.version.split()[0], 'numpy', numpy.__version__)" >> "$OUT/card.txt"

if [ $DRY = 1 ]; then   # calibrate streams 256 MiB copies and 4096^3 products: minutes of CPU on the stand-in
  say "step calibrate: not run in the dry run (a real-GPU measurement; tests/costmodel/test_calibrate.py covers its fitting)"
  echo "calibrate: skipped (dry run)" >> "$OUT/summary.txt"
else
  step calibrate 90 "$PY" -m coursekit calibrate
fi
step model-accuracy 150 "$PY" benchmarks/model_accuracy.py --many-launch --gpu-model h100 --out "$WORK/results" $SMALL
NEW=$(ls "$WORK"/results/*-model-accuracy-*many-launch*.json 2>/dev/null | head -1)
if [ -n "$NEW" ] && [ $DRY = 0 ]; then
  step held-out 60 "$PY" benchmarks/model_accuracy.py --held-out --corpus-file "$NEW" \
    --corpus-file 2026-11-24-h100-lent-model-accuracy-calibrated.json --corpus-file 2026-11-24-h100-lent-model-accuracy-datasheet.json
else   # the dry run's rows are stand-in times: held out against the committed corpus only, to run the code
  step held-out 60 "$PY" benchmarks/model_accuracy.py --held-out
fi
step gpu-kernels 90 "$PY" benchmarks/gpu_kernels.py --out "$WORK/results" $SMALL
step run-py 120 "$PY" benchmarks/run.py --device gpu --quick $QUICK --out "$WORK/results"
# the notebooks: what time is left of the call's budget (GPU_RUN_SECONDS, default 480), lessons first (they
# time things: one at a time), then solutions; no notebook starts after the deadline
if [ $DRY = 0 ]; then
  DEADLINE=$(( ${GPU_RUN_SECONDS:-480} - SECONDS - 60 ))
  [ "$DEADLINE" -lt 30 ] && DEADLINE=30
fi
step notebooks $((DEADLINE + 60)) "$PY" benchmarks/gpu_run.py notebooks --dest "$WORK/gpu-runs" \
  --deadline "$DEADLINE" --tar "$OUT/gpu-runs.tar.gz" $NOTEBOOKS
say "done in $SECONDS s; results in $OUT (card.txt, log.txt, summary.txt, results.tar.gz, gpu-runs.tar.gz)"
