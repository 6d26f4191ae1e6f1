"""``theano.misc.pycuda_init`` compatibility.

In Theano this import made PyCUDA share Theano's CUDA context, so that kernels
compiled by PyCUDA could read Theano's device arrays.  In coursekit there is
one device object per device: ``coursekit.cuda.SourceModule`` compiles for the
device ``config.device`` selects (a real GPU, else the CPU emulator on the
simulated GPU's memory), which is the memory compiled functions use.  There is
no second context to join, so importing this module changes nothing.
"""
