"""Synthetic data, pinned sources and launchers for the outsiders' programs of helper P's block (issue 27).

Every file written here is *synthetic*, in the format the program reads (so it never downloads), and
small, so that a program finishes in minutes on one shared core; its printed scores are therefore not the
published ones.  Where a program reads its data from an absolute path (Newmu's ``load.py`` reads
``/media/datasets/mnist/``), :func:`bind_onto` runs it under bubblewrap with a temporary folder mounted
at that path: the program and its loader stay unchanged, and nothing is written outside the temporary
folder.
"""
from __future__ import annotations

import gzip
import os
import pathlib
import pickle
import shutil
import sys

import numpy as np

import libraries  # tests/compat/libraries.py, put on sys.path by theano_programs.py

GWTAYLOR = ("gwtaylor-theano-rnn-py3", "https://github.com/gwtaylor/theano-rnn.git",
            "f7a091d791f6d0871e5f8e38f5841066efe40d03", "COURSEKIT_THEANO_RNN_SRC")
RECIPES = ("lasagne-recipes", "https://github.com/Lasagne/Recipes.git",
           "7b4516e722aab6055841d02168eba049a11fe6da", "COURSEKIT_RECIPES_SRC")
# lib2to3's fixers for what these Python 2 programs use beyond print statements (nothing else is changed)
PYTHON2_FIXERS = ["lib2to3.fixes.fix_print", "lib2to3.fixes.fix_xrange", "lib2to3.fixes.fix_imports"]
# (old, new): standard-library names Python 3.8 removed, which lib2to3 predates
REMOVED_NAMES = [("time.clock()", "time.perf_counter()")]


def python2_to_python3(root, fixers=tuple(PYTHON2_FIXERS)):
    """Rewrite the Python 2 spellings ``fixers`` name (print statements, ``xrange``, ``cPickle``) in every
    ``*.py`` under ``root`` with lib2to3's own fixers (a file lib2to3 cannot parse is left as it is), and
    the :data:`REMOVED_NAMES`."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from lib2to3 import refactor

    tool = refactor.RefactoringTool(list(fixers))
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        for old, new in REMOVED_NAMES:
            text = text.replace(old, new)
        try:
            text = str(tool.refactor_string(text, str(path)))
        except Exception:  # noqa: BLE001 - lib2to3 cannot parse it: leave it
            pass
        path.write_text(text)


def gwtaylor(name):
    """Graham Taylor's theano-rnn (Python 2: print statements, xrange, cPickle and time.clock made Python 3)."""
    return libraries.checkout(*GWTAYLOR, fix=python2_to_python3) / name


def recipe(path):
    """Lasagne/Recipes (Python 2 spellings made Python 3 as in :func:`gwtaylor`)."""
    return libraries.checkout(*RECIPES, fix=python2_to_python3) / path


PACKT = ("deep-learning-with-theano-py3", "https://github.com/PacktPublishing/Deep-Learning-with-Theano.git",
         "94a0acce79a5324d5522e866e9f4fe40acb8ce6f", "COURSEKIT_PACKT_SRC")
PACKT_CHAPTERS = ["Chapter12", "Chapter13"]  # the chapters tried (the checkout is cached with these only)


def packt(path):
    """Christopher Bourez's *Deep Learning with Theano* (Packt, 2017): the book's chapter programs (Python 2
    spellings in its helper modules made Python 3 as in :func:`gwtaylor`)."""
    return libraries.checkout(*PACKT, sparse=PACKT_CHAPTERS, fix=python2_to_python3) / path


def in_subfolder(name, maker):
    """A data maker writing what ``maker`` writes into ``work/name`` (a folder a launcher binds elsewhere)."""
    def make(work):
        (work / name).mkdir()
        maker(work / name)
    return make


def needs_bwrap(path):
    """``path``, once bubblewrap is known to be installed (else the program is 'not available')."""
    if shutil.which("bwrap") is None:
        raise libraries.Unavailable("bubblewrap (bwrap) is not installed, so the absolute data path cannot be bound")
    return path


def bind_onto(folder, target):
    """A launcher: run the program with ``work/folder`` mounted at the absolute path ``target``.

    Bubblewrap builds the program's root from the machine's top-level folders, except the one ``target``
    lies in (``/media`` for ``/media/datasets``), which is an empty tmpfs holding only the bound folder: the
    mount point is made in memory, never on the machine's disk."""
    top = "/" + target.strip("/").split("/")[0]

    def launch(work):
        args = ["bwrap"]
        for entry in sorted(pathlib.Path("/").iterdir()):
            if str(entry) == top:
                continue
            if entry.is_symlink():
                args += ["--symlink", os.readlink(entry), str(entry)]
            else:
                args += ["--dev-bind", str(entry), str(entry)]
        return args + ["--tmpfs", top, "--bind", str(work / folder), target, "--chdir", str(work),
                       "--die-with-parent", "--"], {}
    return launch


def with_env(**names):
    """A launcher that only sets environment variables (``{work}`` in a value is the run's folder)."""
    def launch(work):
        return [], {k: v.format(work=work) for k, v in names.items()}
    return launch


# ------------------------------------------------------------------------------------------ data makers
def _digits(rng, n):
    """``n`` 28x28 uint8 images whose label is drawn as a bright bar at a label-dependent row."""
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
    for k in range(10):
        images[labels == k, 2 * k + 4:2 * k + 7, 4:24] = 230
    return images, labels


def newmu_mnist(work, seed=0):
    """``datasets/mnist/`` as Newmu's ``load.py`` reads it: the four *uncompressed* IDX files, of exactly
    60000 and 10000 images (it reshapes to those counts)."""
    rng = np.random.default_rng(seed)
    folder = work / "datasets" / "mnist"
    folder.mkdir(parents=True)
    for prefix, n in (("train", 60000), ("t10k", 10000)):
        images, labels = _digits(rng, n)
        (folder / f"{prefix}-images-idx3-ubyte").write_bytes(
            np.array([2051, n, 28, 28], ">i4").tobytes() + images.tobytes())
        (folder / f"{prefix}-labels-idx1-ubyte").write_bytes(np.array([2049, n], ">i4").tobytes() + labels.tobytes())


def mnist_idx_gz(work, n_train=10600, n_test=300, seed=0):
    """The four gzip'd IDX files in ``work`` (Lasagne's examples: the last 10000 training images validate)."""
    rng = np.random.default_rng(seed)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images, labels = _digits(rng, n)
        with gzip.open(work / f"{prefix}-images-idx3-ubyte.gz", "wb") as f:
            f.write(np.array([2051, n, 28, 28], ">i4").tobytes() + images.tobytes())
        with gzip.open(work / f"{prefix}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(np.array([2049, n], ">i4").tobytes() + labels.tobytes())


def imdb_pickle(work, n_train=400, n_test=200, n_words=2000, seed=0):
    """The Deep Learning Tutorials' ``imdb.pkl``: two pickles, (sequences of word ids, 0/1 labels) for train
    and test.  A review is positive when it holds more 'good' ids (2..99) than 'bad' ones (100..199)."""
    rng = np.random.default_rng(seed)
    with open(work / "imdb.pkl", "wb") as f:
        for n in (n_train, n_test):
            seqs, labels = [], []
            for _ in range(n):
                label = int(rng.integers(0, 2))
                words = rng.integers(200, n_words, int(rng.integers(5, 30)))
                cue = rng.integers(2, 100, 3) if label else rng.integers(100, 200, 3)
                words[rng.integers(0, len(words), 3)] = cue
                seqs.append([int(w) for w in words])
                labels.append(label)
            pickle.dump((seqs, labels), f, protocol=2)


def atis_fold3(work, n_sentences=(60, 20, 20), seed=0):
    """``atis/atis.fold3.pkl.gz`` for DLT's rnnslu.py: (train, valid, test, dicts); a set is (word ids,
    named-entity ids, label ids) per sentence, and the labels are IOB tags that conlleval.pl reads."""
    rng = np.random.default_rng(seed)
    words = ["flights", "from", "to", "on", "show", "me", "boston", "denver", "dallas", "monday", "friday", "morning"]
    cities, days = {"boston", "denver", "dallas"}, {"monday", "friday"}
    labels = ["O", "B-fromloc.city_name", "B-toloc.city_name", "B-depart_date.day_name"]
    words2idx, labels2idx = {w: i for i, w in enumerate(words)}, {t: i for i, t in enumerate(labels)}
    sets = []
    for n in n_sentences:
        lex, ne, y = [], [], []
        for _ in range(n):
            sentence = ["show", "me", "flights", "from", str(rng.choice(sorted(cities))), "to",
                        str(rng.choice(sorted(cities))), "on", str(rng.choice(sorted(days)))]
            tags = ["O"] * 4 + ["B-fromloc.city_name", "O", "B-toloc.city_name", "O", "B-depart_date.day_name"]
            lex.append(np.array([words2idx[w] for w in sentence], dtype=np.int32))
            ne.append(np.zeros(len(sentence), dtype=np.int32))
            y.append(np.array([labels2idx[t] for t in tags], dtype=np.int32))
        sets.append((lex, ne, y))
    folder = work / "atis"
    folder.mkdir()
    with gzip.open(folder / "atis.fold3.pkl.gz", "wb") as f:
        pickle.dump((*sets, {"words2idx": words2idx, "labels2idx": labels2idx, "tables2idx": {}}), f, protocol=2)


if __name__ == "__main__":
    sys.exit("program_data.py is imported by theano_programs.py; run that instead")
