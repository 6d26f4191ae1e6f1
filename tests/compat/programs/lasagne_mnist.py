"""Lasagne's examples/mnist.py networks (``build_mlp``, ``build_cnn``, imported from the fetched example,
unchanged) trained as its ``main`` trains them, on small synthetic 28x28 images (no download).

Usage: python -m coursekit.theano lasagne_mnist.py EXAMPLES_DIR mlp|cnn  -> prints the epoch losses as JSON.
"""
import importlib.util
import json
import sys

import numpy as np
import theano
import theano.tensor as T

import lasagne

spec = importlib.util.spec_from_file_location("lasagne_mnist_example", f"{sys.argv[1]}/mnist.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)  # defines the builders; its main() (which downloads MNIST) is not called

rng = np.random.RandomState(0)
n, classes = 200, 10
labels = rng.randint(0, classes, n).astype("int32")
images = rng.normal(0, 0.3, (n, 1, 28, 28)).astype(theano.config.floatX)
for k in range(classes):  # each class brightens its own band of rows: learnable, not trivial
    images[labels == k, 0, 2 * k + 4:2 * k + 7, 4:24] += 1.0

input_var, target_var = T.tensor4("inputs"), T.ivector("targets")
network = example.build_mlp(input_var) if sys.argv[2] == "mlp" else example.build_cnn(input_var)
prediction = lasagne.layers.get_output(network)
loss = lasagne.objectives.categorical_crossentropy(prediction, target_var).mean()
params = lasagne.layers.get_all_params(network, trainable=True)
updates = lasagne.updates.nesterov_momentum(loss, params, learning_rate=0.01, momentum=0.9)
train_fn = theano.function([input_var, target_var], loss, updates=updates)

losses = []
for epoch in range(int(sys.argv[3]) if len(sys.argv) > 3 else 4):
    total = 0.0
    for batch in example.iterate_minibatches(images, labels, 50, shuffle=True):
        total += float(train_fn(*batch))
    losses.append(total / (n // 50))
print(json.dumps(losses))
