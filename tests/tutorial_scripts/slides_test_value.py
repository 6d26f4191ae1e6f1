# The seed slides' "enable on-the-fly graph computations" example, ported: only the imports changed. The slide
# elides what follows ("..."); the last three lines are ours, a use of x whose test value is computed eagerly.
# Like every Theano script of its time it assumes floatX=float64: numpy.random.rand gives float64 test values.
import numpy
import coursekit as theano
import coursekit.tensor as T

# enable on-the-fly graph computations
theano.config.compute_test_value = 'warn'

# input which will be of shape (5, 10)
x = T.matrix('x')
# provide Theano with a default test-value
x.tag.test_value = numpy.random.rand(5, 10)

gram = T.dot(x, x.T)
print('test value of gram:', gram.tag.test_value.shape, gram.tag.test_value.dtype)
assert numpy.allclose(gram.tag.test_value, numpy.dot(x.tag.test_value, x.tag.test_value.T))
