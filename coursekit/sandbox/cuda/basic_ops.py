"""``theano.sandbox.cuda.basic_ops`` compatibility: the transfer ops."""
from ...devices.transfer import GpuFromHost, HostFromGpu, gpu_from_host, host_from_gpu  # noqa: F401
