"""Outsiders' Theano programs, run unchanged through ``python -m coursekit.theano`` (issue 27).

    python benchmarks/theano_programs.py            # every program; writes results/<date>-theano-programs.*
    python benchmarks/theano_programs.py --only lasagne-mnist-mlp

Each program comes from a public repository at a pinned commit, fetched at run time (``tests/compat/
libraries.py``); none is edited.  Where a program downloads a data set, the runner writes a small
*synthetic* file of the same format where the program looks for it first (so the program never reaches
the network); the numbers it prints are therefore not the published ones, and only "ran to the end,
exit 0" is recorded, with the porting report's missing names.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "compat"))
import libraries  # noqa: E402


def synthetic_mnist_idx(folder, n_train=11000, n_test=1000, seed=0):
    """MNIST's four gzip'd IDX files (Yann LeCun's format) holding random learnable digits-like images."""
    rng = np.random.default_rng(seed)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
        for k in range(10):
            images[labels == k, 2 * k + 4:2 * k + 7, 4:24] = 230
        with gzip.open(folder / f"{prefix}-images-idx3-ubyte.gz", "wb") as f:
            f.write(np.array([2051, n, 28, 28], ">i4").tobytes() + images.tobytes())
        with gzip.open(folder / f"{prefix}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(np.array([2049, n], ">i4").tobytes() + labels.tobytes())


NEWMU = ("newmu-theano-tutorials", "https://github.com/Newmu/Theano-Tutorials.git",
         "49de4c52f45ab7b05cea3dbad039270f816be70c", "COURSEKIT_NEWMU_SRC")


def newmu(name):
    """Alec Radford's Theano-Tutorials, Python 2: their print statements made calls (and nothing else)."""
    return libraries.checkout(*NEWMU, fix=libraries.python2_prints_to_python3) / name


def synthetic_mnist_pickle(folder, sizes=(1200, 600, 600), seed=0):
    """The Deep Learning Tutorials' ``mnist.pkl.gz``: (train, valid, test) pairs of float images and labels."""
    import pickle

    rng = np.random.default_rng(seed)
    sets = []
    for n in sizes:
        labels = rng.integers(0, 10, n)
        images = rng.random((n, 28, 28), dtype=np.float32) * 0.25
        for k in range(10):
            images[labels == k, 2 * k + 4:2 * k + 7, 4:24] = 0.9
        sets.append((images.reshape(n, 784), labels))
    with gzip.open(folder / "mnist.pkl.gz", "wb") as f:
        pickle.dump(tuple(sets), f)


DLT = ("deep-learning-tutorials", "https://github.com/lisa-lab/DeepLearningTutorials.git",
       "11c465105026cf87573937fc2d35ab7543678698", "COURSEKIT_DLT_SRC")


def dlt(name):
    return libraries.checkout(*DLT, sparse=["code"]) / "code" / name


def lasagne_example(name):
    return libraries.lasagne_source() / "examples" / name


# name -> (source description, program path getter, arguments, data maker or None, timeout seconds)
PROGRAMS = {
    "lasagne-mnist-mlp": ("Lasagne/Lasagne@5d3c63c examples/mnist.py", lambda: lasagne_example("mnist.py"),
                          ["mlp", "1"], synthetic_mnist_idx, 1800),
    "lasagne-mnist-custom-mlp": ("Lasagne/Lasagne@5d3c63c examples/mnist.py", lambda: lasagne_example("mnist.py"),
                                 ["custom_mlp:2,200,0.2,0.5", "1"], synthetic_mnist_idx, 1800),
    "lasagne-mnist-cnn": ("Lasagne/Lasagne@5d3c63c examples/mnist.py", lambda: lasagne_example("mnist.py"),
                          ["cnn", "1"], synthetic_mnist_idx, 3000),
    "newmu-0-multiply": ("Newmu/Theano-Tutorials@49de4c5 0_multiply.py (print statements made calls)",
                         lambda: newmu("0_multiply.py"), [], None, 600),
    "newmu-1-linear-regression": ("Newmu/Theano-Tutorials@49de4c5 1_linear_regression.py (print statements made "
                                  "calls)", lambda: newmu("1_linear_regression.py"), [], None, 900),
    "dlt-logistic-sgd": ("lisa-lab/DeepLearningTutorials@11c4651 code/logistic_sgd.py", lambda: dlt("logistic_sgd.py"),
                         [], synthetic_mnist_pickle, 1800),
    "dlt-mlp": ("lisa-lab/DeepLearningTutorials@11c4651 code/mlp.py", lambda: dlt("mlp.py"), [],
                synthetic_mnist_pickle, 2400),
    "dlt-dA": ("lisa-lab/DeepLearningTutorials@11c4651 code/dA.py (writes its filter images)", lambda: dlt("dA.py"),
               [], synthetic_mnist_pickle, 2400),
    "dlt-convolutional-mlp": ("lisa-lab/DeepLearningTutorials@11c4651 code/convolutional_mlp.py",
                              lambda: dlt("convolutional_mlp.py"), [], synthetic_mnist_pickle, 3000),
    "dlt-cA": ("lisa-lab/DeepLearningTutorials@11c4651 code/cA.py", lambda: dlt("cA.py"), [],
               synthetic_mnist_pickle, 2400),
    "dlt-rbm": ("lisa-lab/DeepLearningTutorials@11c4651 code/rbm.py", lambda: dlt("rbm.py"), [],
                synthetic_mnist_pickle, 3000),
    "dlt-SdA": ("lisa-lab/DeepLearningTutorials@11c4651 code/SdA.py", lambda: dlt("SdA.py"), [],
                synthetic_mnist_pickle, 3000),
    "dlt-DBN": ("lisa-lab/DeepLearningTutorials@11c4651 code/DBN.py", lambda: dlt("DBN.py"), [],
                synthetic_mnist_pickle, 3000),
    "lasagne-recurrent": ("Lasagne/Lasagne@5d3c63c examples/recurrent.py (its own synthetic adding problem)",
                          lambda: lasagne_example("recurrent.py"), [], None, 3000),
}

# Keras 1.x examples (issue 27, helper K): entries added only inside this block.
from keras_data import babi_tar, example, mnist_pickle, reuters_pickle, text_corpus  # noqa: E402

PROGRAMS.update({
    "keras-mnist-mlp": example("mnist_mlp", data=[lambda d: mnist_pickle(d, 60000, 10000)], timeout=1200),
    "keras-mnist-cnn": example("mnist_cnn", data=[lambda d: mnist_pickle(d, 1024, 256)]),
    "keras-antirectifier": example("antirectifier", data=[lambda d: mnist_pickle(d, 60000, 10000)], timeout=1200),
    "keras-mnist-siamese-graph": example("mnist_siamese_graph", timeout=900, data=[
        lambda d: mnist_pickle(d, 60000, 10000, rare_digit_count=26)]),
    "keras-mnist-transfer-cnn": example("mnist_transfer_cnn", data=[lambda d: mnist_pickle(d, 1024, 256)]),
    "keras-mnist-hierarchical-rnn": example("mnist_hierarchical_rnn", data=[lambda d: mnist_pickle(d, 256, 64)]),
    "keras-mnist-irnn": example("mnist_irnn", data=[lambda d: mnist_pickle(d, 32, 32)], timeout=1200),
    "keras-mnist-net2net": example("mnist_net2net", data=[lambda d: mnist_pickle(d, 512, 128)], timeout=900),
    "keras-mnist-net2net-py3-division": example(
        "mnist_net2net", data=[lambda d: mnist_pickle(d, 512, 128)], timeout=900,
        note="its Python 2 integer division `(kh - 1) / 2` written `//`: Python 3's `/` gives a float index",
        python2=[("student_w[i, i, (kh - 1) / 2, (kw - 1) / 2]", "student_w[i, i, (kh - 1) // 2, (kw - 1) // 2]")]),
    "keras-variational-autoencoder": example("variational_autoencoder", note="writes its plots with Agg",
                                             data=[lambda d: mnist_pickle(d, 500, 200)]),
    "keras-variational-autoencoder-deconv": example("variational_autoencoder_deconv", note="writes its plots "
                                                    "with Agg", data=[lambda d: mnist_pickle(d, 500, 200)]),
    "keras-reuters-mlp": example("reuters_mlp", data=[reuters_pickle]),
    "keras-babi-rnn": example("babi_rnn", data=[babi_tar]),
    "keras-babi-memnn": example("babi_memnn", data=[babi_tar]),
    "keras-lstm-text-generation": example("lstm_text_generation", data=[text_corpus]),
    "keras-mnist-swwae": example("mnist_swwae", note="writes its plot with Agg",
                                 data=[lambda d: mnist_pickle(d, 32, 25)], timeout=1200),
})

# More outsiders' programs (issue 27, helper P): entries added only inside this block.
import program_data as P  # noqa: E402  (benchmarks/program_data.py: synthetic data, sources, launchers)

_NEWMU_BIND = P.bind_onto("datasets", "/media/datasets")
PROGRAMS.update({
    **{f"newmu-{stem.replace('_', '-')}": (
        f"Newmu/Theano-Tutorials@49de4c5 {stem}.py (print statements made calls; its load.py reads "
        "/media/datasets/mnist, bound by bubblewrap onto a synthetic copy)",
        lambda stem=stem: P.needs_bwrap(newmu(f"{stem}.py")), [], P.newmu_mnist, timeout, _NEWMU_BIND)
       for stem, timeout in (("2_logistic_regression", 900), ("3_net", 900), ("4_modern_net", 300),
                             ("5_convolutional_net", 300))},
    "dlt-logistic-cg": ("lisa-lab/DeepLearningTutorials@11c4651 code/logistic_cg.py (scipy's fmin_cg)",
                        lambda: dlt("logistic_cg.py"), [], synthetic_mnist_pickle, 900),
    "dlt-lstm": ("lisa-lab/DeepLearningTutorials@11c4651 code/lstm.py (imdb.pkl synthetic)", lambda: dlt("lstm.py"),
                 [], P.imdb_pickle, 1200),
    "dlt-rnnslu": ("lisa-lab/DeepLearningTutorials@11c4651 code/rnnslu.py (ATIS fold 3 synthetic, via ATISDATA)",
                   lambda: dlt("rnnslu.py"), [], P.atis_fold3, 1200, P.with_env(ATISDATA="{work}/atis")),
    "theano-rnn-basic": ("gwtaylor/theano-rnn@f7a091d basic_rnn_example.py", lambda: P.gwtaylor("basic_rnn_example.py"),
                         [], None, 300),
    "theano-rnn-metarnn": ("gwtaylor/theano-rnn@f7a091d rnn.py (its own lag-task data; Python 2 print, xrange, "
                           "cPickle made Python 3)", lambda: P.gwtaylor("rnn.py"), [], None, 900),
    "theano-rnn-minibatch": ("gwtaylor/theano-rnn@f7a091d rnn_minibatch.py (its own data; Python 2 made Python 3 "
                             "as rnn.py, and time.clock() as time.perf_counter())", lambda: P.gwtaylor("rnn_minibatch.py"), [], None, 900),
    "book-ch13-python-op": ("PacktPublishing/Deep-Learning-with-Theano@94a0acc Chapter13/1-python-op.py (a Python op; "
                            "pprint, debugprint, pydotprint)", lambda: P.packt("Chapter13/1-python-op.py"), [], None,
                            300),
    "book-ch12-rbm": ("PacktPublishing/Deep-Learning-with-Theano@94a0acc Chapter12/1-rbm.py (reads "
                      "/sharedfiles/mnist.pkl.gz, bound by bubblewrap onto a synthetic copy; print statements "
                      "of its utils.py made calls)",
                      lambda: P.needs_bwrap(P.packt("Chapter12/1-rbm.py")), [],
                      P.in_subfolder("sharedfiles", synthetic_mnist_pickle), 1200,
                      P.bind_onto("sharedfiles", "/sharedfiles")),
    "lasagne-recipes-vae": ("Lasagne/Recipes@7b4516e examples/variational_autoencoder/variational_autoencoder.py "
                    "--num_epochs 1 (xrange made range)",
                    lambda: P.recipe("examples/variational_autoencoder/variational_autoencoder.py"),
                    ["--num_epochs", "1"], P.mnist_idx_gz, 900),
    "lasagne-recipes-vae-continuous": ("Lasagne/Recipes@7b4516e examples/variational_autoencoder/variational_autoencoder.py "
                               "--num_epochs 1 --continuous (xrange made range)",
                               lambda: P.recipe("examples/variational_autoencoder/variational_autoencoder.py"),
                               ["--num_epochs", "1", "--continuous"], P.mnist_idx_gz, 900),
})


def run(name, flags):
    source, path_of, args, make_data, timeout, *launch = PROGRAMS[name]  # launch(work): (command prefix, env)
    try:
        program = path_of()
    except libraries.Unavailable as exc:
        return {"program": name, "source": source, "result": f"not available: {exc}"}
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-"))
    made_env = make_data(work) if make_data is not None else None
    report = work / "porting-report.json"
    extra = [str(libraries.lasagne_source())] if name.startswith("lasagne") else []
    env = dict(os.environ, THEANO_FLAGS=flags, PYTHONPATH=os.pathsep.join([str(REPO), *extra]))
    env.update(made_env or {})  # a data maker may set the environment (Keras: its HOME/.keras, its path)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # on a shared machine, BLAS threads fighting for cores made
    env.setdefault("OMP_NUM_THREADS", "1")       # Lasagne's recurrent.py 13x slower (11.7 s vs 0.9 s a step)
    start = time.perf_counter()
    prefix, launch_env = launch[0](work) if launch else ([], {})  # e.g. bwrap binding a data folder
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "coursekit.theano", "--report-to", str(report), str(program),
                               *args], cwd=work, env={**env, **launch_env}, capture_output=True, text=True, timeout=timeout)
        shown = proc.stdout if proc.returncode == 0 and proc.stdout.strip() else proc.stdout + proc.stderr
        rc, tail = proc.returncode, shown.strip().splitlines()[-3:]  # what it printed last (its error if it failed)
    except subprocess.TimeoutExpired as exc:  # what it had printed by then says how far it got
        printed = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        rc, tail = "timeout", [*printed.strip().splitlines()[-2:], f"still running after {timeout} s"]
    missing = json.loads(report.read_text())["missing"] if report.exists() else []
    return {"program": name, "source": source, "args": args, "flags": flags, "exit": rc,
            "result": "ran to the end" if rc == 0 else "failed", "missing": missing, "last_lines": tail,
            "seconds": round(time.perf_counter() - start, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="comma-separated program names")
    parser.add_argument("--flags", default="device=cpu", help="THEANO_FLAGS for every program")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep today's results of the programs not run now")
    parser.add_argument("--tag", default="", help="a suffix for the results files (runs side by side)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(PROGRAMS)
    stem = REPO / "benchmarks" / "results" / f"{dt.date.today()}-theano-programs{'-' + args.tag if args.tag else ''}"
    earlier = json.loads(stem.with_suffix(".json").read_text()) if args.keep and stem.with_suffix(".json").exists() else []
    rows = [r for r in earlier if r["program"] not in names]  # --keep: today's other programs stay in the table
    for name in names:  # the table is rewritten after each program, so a long run keeps what it finished
        rows.append(run(name, args.flags))
        text = _table(rows, args.flags)
        if not args.no_save:
            stem.with_suffix(".md").write_text(text)
            stem.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(text)
    for r in rows:
        if r.get("exit") != 0:
            print(r["program"], "\n  ", "\n   ".join(r.get("last_lines", [])))


def _table(rows, flags):
    lines = [f"# Outsiders' Theano programs through `python -m coursekit.theano` ({flags})", "",
             f"{sum(r.get('exit') == 0 for r in rows)} of {len(rows)} ran to the end; {dt.date.today()}, "
             f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs. Data sets are synthetic files in the "
             "programs' own formats (the printed accuracies are not the published ones).", "",
             "| program | source | result | missing names | seconds |", "|---|---|---|---|---|"]
    for r in rows:
        last = (r.get("last_lines") or ["-"])[-1][:70].replace("|", "/")
        lines.append(f"| {r['program']} {' '.join(r.get('args', []))} | {r['source']} | {r['result']} "
                     f"(exit {r.get('exit')}); last line: `{last}` | {', '.join(r.get('missing', [])) or '-'} | "
                     f"{r.get('seconds', '-')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
