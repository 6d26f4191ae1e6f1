"""Small synthetic stand-ins for the data sets Keras 1.2.2's examples load, so they run without a network.

Keras 1.x looks for ``~/.keras/keras.json`` (which back end, which image axis order) and fetches its data sets
into ``~/.keras/datasets`` only when the file is not already there (``keras.utils.data_utils.get_file``).
:func:`keras_example_setup` gives each example program a fresh HOME holding that configuration (the Theano
back end) and files in exactly the formats ``keras.datasets.*.load_data`` and the examples' own readers
parse (a pickled MNIST, Reuters' pickled word-id lists, bAbI's tar of text files, a text corpus), small
enough that an example finishes with its own epoch counts on one shared core.  The numbers the examples
print are therefore not the published ones.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import pathlib
import pickle
import sys
import tarfile

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "compat"))
import libraries  # noqa: E402

KERAS_REPO = ("keras-examples", "https://github.com/keras-team/keras.git",
              "4fa7e5d454dd4f3f33f1d756a2a8659f2e789141", "COURSEKIT_KERAS_SRC")  # the tag 1.2.2
SOURCE = "keras-team/keras@1.2.2 (4fa7e5d) examples/"


def keras_example(name):
    """The path of Keras 1.2.2's ``examples/<name>``, from a checkout of the tag (``COURSEKIT_KERAS_SRC`` may
    name a local clone or mirror of keras-team/keras)."""
    return libraries.checkout(*KERAS_REPO, sparse=["examples"]) / "examples" / name


def adapted_example(name, replacements):
    """A copy of ``examples/<name>`` with ``replacements`` ((old, new) source fragments, each of which must
    occur) made: only Python 2 -> 3 spellings, each named in the program's source description."""
    text = keras_example(name).read_text()
    for old, new in replacements:
        if old not in text:
            raise libraries.Unavailable(f"the adaptation {old!r} -> {new!r} no longer applies to {name}")
        text = text.replace(old, new)
    dest = libraries.CACHE / "keras-examples-adapted" / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def mnist_pickle(datasets, n_train, n_test, rare_digit_count=None, seed=0):
    """``mnist.pkl.gz`` as ``keras.datasets.mnist.load_data`` reads it: ((x_train, y_train), (x_test, y_test)),
    uint8 images (n, 28, 28) and uint8 labels.  Digit k is a bright bar in row band k, so the nets can learn.
    ``rare_digit_count``: the digit 9 appears only this often (the siamese example pairs every digit as often
    as its rarest one, so this sizes its training set)."""
    rng = np.random.default_rng(seed)
    sets = []
    for n in (n_train, n_test):
        labels = rng.integers(0, 9 if rare_digit_count else 10, n).astype(np.uint8)
        if rare_digit_count:
            labels[rng.choice(n, rare_digit_count, replace=False)] = 9
        images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
        for k in range(10):
            images[labels == k, 2 * k + 4:2 * k + 7, 4:24] = 230
        sets.append((images, labels))
    with gzip.open(datasets / "mnist.pkl.gz", "wb") as f:
        pickle.dump(tuple(sets), f, protocol=2)


def reuters_pickle(datasets, n=800, vocabulary=1500, topics=46, seed=0):
    """``reuters.pkl`` as ``keras.datasets.reuters.load_data`` reads it: (word-id lists, topic labels), the
    lists of varied lengths; each topic has a few words of its own, so the topic can be learnt."""
    rng = np.random.default_rng(seed)
    labels = [int(t) for t in rng.integers(0, topics, n)]
    texts = []
    for topic in labels:
        words = rng.integers(50, vocabulary, rng.integers(20, 120))
        words[rng.choice(len(words), 5)] = 3 + 1 + topic  # ids below 50 mark the topic (after index_from)
        texts.append([int(w) for w in words])
    with open(datasets / "reuters.pkl", "wb") as f:
        pickle.dump((texts, labels), f, protocol=2)


def babi_tar(datasets, stories=60, seed=0):
    """``babi-tasks-v1-2.tar.gz`` holding the two tasks the bAbI examples read (qa1 of ``en-10k``, qa2 of
    ``en``), in bAbI's line format: ``<id> <sentence>`` and ``<id> <question>\\t<answer>\\t<fact ids>``."""
    rng = np.random.default_rng(seed)
    people, places = ["Mary", "John", "Sandra", "Daniel"], ["kitchen", "garden", "office", "hallway", "bathroom"]

    def task(n):
        lines = []
        for _ in range(n):
            where, number = {}, 1
            for _ in range(2):
                for _ in range(2):
                    who, place = people[rng.integers(4)], places[rng.integers(5)]
                    where[who] = (place, number)
                    lines.append(f"{number} {who} went to the {place}.")
                    number += 1
                who = list(where)[rng.integers(len(where))]
                lines.append(f"{number} Where is {who}? \t{where[who][0]}\t{where[who][1]}")
                number += 1
        return ("\n".join(lines) + "\n").encode()

    with tarfile.open(datasets / "babi-tasks-v1-2.tar.gz", "w:gz") as tar:
        for folder, name in (("en-10k", "qa1_single-supporting-fact"), ("en", "qa2_two-supporting-facts")):
            for split, n in (("train", stories), ("test", stories // 3)):
                data = task(n)
                info = tarfile.TarInfo(f"tasks_1-20_v1-2/{folder}/{name}_{split}.txt")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def text_corpus(datasets, chars=3000, seed=0):
    """``nietzsche.txt``: a short text of a few repeated sentences (the character model's corpus)."""
    rng = np.random.default_rng(seed)
    sentences = ["what is truth? ", "the will to power is a will. ", "man is a rope over an abyss. "]
    text = ""
    while len(text) < chars:
        text += sentences[rng.integers(len(sentences))]
    (datasets / "nietzsche.txt").write_text(text)


def keras_example_setup(work, dim_ordering="th", data=()):
    """A HOME for one example run inside ``work``: ``~/.keras/keras.json`` choosing the Theano back end and
    ``dim_ordering``, and the data files ``data`` (callables of the datasets folder) made there.  Returns the
    environment the runner adds: HOME, the Keras install on PYTHONPATH, and Agg for the examples' plots."""
    home = pathlib.Path(work) / "home"
    datasets = home / ".keras" / "datasets"
    datasets.mkdir(parents=True)
    (home / ".keras" / "keras.json").write_text(json.dumps(
        {"backend": "theano", "image_dim_ordering": dim_ordering, "floatx": "float32", "epsilon": 1e-07}))
    for make in data:
        make(datasets)
    return {"HOME": str(home), "MPLBACKEND": "Agg", "KERAS_BACKEND": "theano",
            "PYTHONPATH": os.pathsep.join([str(REPO), str(libraries.keras_path())])}


def example(name, dim_ordering="th", data=(), note="", timeout=600, args=(), python2=()):
    """A :data:`theano_programs.PROGRAMS` entry for Keras 1.2.2's ``examples/<name>.py``; ``python2``: the
    (old, new) Python 2 -> 3 adaptations of its source, if any (``note`` must name them)."""
    path = (lambda: adapted_example(f"{name}.py", python2)) if python2 else (lambda: keras_example(f"{name}.py"))
    return (f"{SOURCE}{name}.py{' (' + note + ')' if note else ''}", path,
            list(args), lambda work: keras_example_setup(work, dim_ordering, data), timeout)
