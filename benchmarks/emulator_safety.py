"""What the CUDA emulator's safety costs per launch (issue 13): this checkout against a baseline.

    python benchmarks/emulator_safety.py                    # baseline: the emulator before the safety work
    python benchmarks/emulator_safety.py --baseline REV     # any other git revision
    python benchmarks/emulator_safety.py --no-save          # print only

The safety work added, per launch: installing/removing the fault and SIGINT
handlers and arming/disarming the watchdog timer (a few system calls);
guard-paged buffers for ``In``/``Out`` arguments (an mmap + mprotect + munmap
instead of a heap allocation); and fiber stacks with a guard page each
(which no longer fit in transparent huge pages).  Each workload below runs in
a fresh child process, once with the baseline revision's ``coursekit`` (from
``git archive``) and once with this checkout's, alternating, best of several
rounds.  All figures are emulator wall times on the CPU -- not GPU timings.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO_ROOT, dump_json, git_revision, machine_info, machine_slug, today, version_of  # noqa: E402

DEFAULT_BASELINE = "fbb58db"      # main just before the emulator safety commits

CHILD = r"""
import json, sys, time
import numpy as np
from coursekit import cuda
SRC = r'''
__global__ void block_sum(const float* in, float* out, int n)
{
    __shared__ float s[256];
    unsigned int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
__global__ void nothing(float* x, int n) { if (n < 0) x[0] = 1.0f; }
__global__ void scale(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
'''
def best(fn, n, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t) / n)
    return min(times)
mod = cuda.SourceModule(SRC, backend="emulator")
one = cuda.empty(1, np.float32, backend="emulator")
nothing, scale, block_sum = (mod.get_function(k) for k in ("nothing", "scale", "block_sum"))
k1 = np.int32(1)
x = np.random.rand(1000).astype(np.float32)
y = np.empty_like(x)
blocks = 2000
data = np.random.rand(blocks * 256).astype(np.float32)
d_in, d_out = cuda.to_device(data, backend="emulator"), cuda.empty(blocks, np.float32, backend="emulator")
n = np.int32(data.size)
print(json.dumps({
    "launch, 1 thread, device array": best(lambda: nothing((1,), (1,), (one, k1)), 2000),
    "launch, 1000 threads, In + Out of 1000 floats": best(
        lambda: scale(cuda.Out(y), cuda.In(x), np.int32(1000), block=(256, 1, 1), grid=(4, 1)), 300),
    "reduction, 2000 blocks x 256 threads": best(lambda: block_sum((blocks,), (256,), (d_in, d_out, n)), 1, 3),
}))
"""


def run_child(pythonpath):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-save", action="store_true")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ck-bench-baseline-") as old:
        archive = subprocess.run(["git", "-C", REPO_ROOT, "archive", opts.baseline, "coursekit"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        rounds = {"baseline": [], "now": []}
        for _ in range(opts.rounds):              # alternate, so load drift hits both alike
            rounds["baseline"].append(run_child(old))
            rounds["now"].append(run_child(REPO_ROOT))
    rows = []
    for name in rounds["now"][0]:
        before = min(r[name] for r in rounds["baseline"])
        after = min(r[name] for r in rounds["now"])
        rows.append({"workload": name, "baseline_s": before, "now_s": after, "ratio": after / before})
    print(f"emulator launch cost, baseline {opts.baseline} vs this checkout (CPU wall time, not a GPU timing)")
    print(f"{'workload':50s} {'baseline':>12s} {'now':>12s} {'now/base':>9s}")
    for r in rows:
        print(f"{r['workload']:50s} {r['baseline_s'] * 1e6:10.1f}us {r['now_s'] * 1e6:10.1f}us {r['ratio']:9.2f}")
    if not opts.no_save:
        info = machine_info()
        path = os.path.join(REPO_ROOT, "benchmarks", "results", f"{today()}-{machine_slug(info)}-emulator-safety.json")
        gxx = subprocess.run([os.environ.get("CXX", "g++"), "--version"], capture_output=True, text=True).stdout
        dump_json(path, {"machine": info, "revision": git_revision(), "baseline": opts.baseline,
                         "numpy": version_of("numpy"), "cxx": gxx.splitlines()[0] if gxx else None,
                         "rounds": opts.rounds, "date": today(),
                         "note": "emulator wall time on the CPU, best of rounds; not GPU timings", "rows": rows})
        print("wrote", os.path.relpath(path, REPO_ROOT))


if __name__ == "__main__":
    main()
