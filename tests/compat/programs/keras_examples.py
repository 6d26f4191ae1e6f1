"""The models of Keras 1.2.2's examples/mnist_mlp.py and examples/imdb_lstm.py (same layers, optimizers and
losses, written here against the Keras 1 API), fitted on small synthetic data (no download), Theano back end.

Usage: python -m coursekit.theano keras_examples.py mnist_mlp|imdb_lstm  -> prints the epoch losses as JSON.
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "theano")

import numpy as np  # noqa: E402
from keras.layers import LSTM, Activation, Dense, Dropout, Embedding  # noqa: E402
from keras.models import Sequential  # noqa: E402
from keras.optimizers import RMSprop  # noqa: E402
from keras.preprocessing import sequence  # noqa: E402
from keras.utils import np_utils  # noqa: E402

rng = np.random.RandomState(1337)
model = Sequential()
if sys.argv[1] == "mnist_mlp":
    n, classes = 256, 10
    y = rng.randint(0, classes, n)
    x = rng.rand(n, 784).astype("float32") * 0.3
    for k in range(classes):
        x[y == k, 70 * k:70 * k + 40] += 0.7
    y = np_utils.to_categorical(y, classes)
    model.add(Dense(512, input_shape=(784,)))
    model.add(Activation("relu"))
    model.add(Dropout(0.2))
    model.add(Dense(512))
    model.add(Activation("relu"))
    model.add(Dropout(0.2))
    model.add(Dense(10))
    model.add(Activation("softmax"))
    model.compile(loss="categorical_crossentropy", optimizer=RMSprop(), metrics=["accuracy"])
    batch = 128
else:
    n, max_features, maxlen = 256, 20, 12
    texts = [list(rng.randint(2, max_features, rng.randint(4, 12))) for _ in range(n)]
    y = np.array([int(1 in t or 3 in t) for t in texts])  # the label: does word 1 or 3 occur?
    for t, label in zip(texts, y):
        if rng.rand() < 0.5 and not label:
            t[rng.randint(len(t))] = 1
    y = np.array([int(1 in t or 3 in t) for t in texts])
    x = sequence.pad_sequences(texts, maxlen=maxlen)
    model.add(Embedding(max_features, 16, dropout=0.2))
    model.add(LSTM(16, dropout_W=0.2, dropout_U=0.2))
    model.add(Dense(1))
    model.add(Activation("sigmoid"))
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    batch = 32
history = model.fit(x, y, batch_size=batch, nb_epoch=int(sys.argv[2]) if len(sys.argv) > 2 else 5, verbose=0)
print(json.dumps([float(v) for v in history.history["loss"]]))
