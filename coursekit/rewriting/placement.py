"""GPU placement: one pass that decides where every node runs.

Walking the graph in topological order, a node moves to the GPU when its op
declares a GPU twin (``gpu_name``, see :mod:`coursekit.tensor.xpop`, or a
custom op's own GPU code) and computes in float32 (or ints/bools).  What stays
on the host is declared by the op too (``host_input``); nothing here knows an
op class by name.  Values then live on
the device or on the host, and a transfer op is inserted exactly where a
value crosses from one side to the other:

* ``GpuFromHost`` where a device op reads a host value (a function input, a
  host-only op's result, a float32 shared variable kept on the host);
* ``HostFromGpu`` where a host op or a function output reads a device value.

Each crossing is made once per value (both sides remember their copy), so a
``GpuFromHost(HostFromGpu(x))`` pair never appears; the ``transfer`` stage
removes any pair the user wrote by hand.  On ``device='cpu'`` nothing is
lifted: device-resident shared variables get a ``HostFromGpu`` and
``gpu_from_host`` is dropped.

Scalar work stays on the host, as Theano's GPU optimiser kept it (the
``host_scalars`` rule, tagged ``host_scalars``; ``mode.excluding("host_scalars")``
turns it off for one function, ``optimizer_excluding=host_scalars`` in
``COURSEKIT_FLAGS`` for all): a node whose outputs are known to hold one element (0-d, or
every dimension broadcastable) and whose inputs are host values runs on the
host, and a one-element host value read by an elementwise kernel is passed
as the kernel's scalar argument instead of being copied to the device.  A
launch plus two copies costs a GPU tens of microseconds (the H100 measured
11.2 us per synchronised launch); one element costs the host well under one.
Types carry no sizes beyond broadcastable dimensions, so "tiny" means "one
element" here: larger values cross only where a device op needs them.
"""
from __future__ import annotations

from ..devices import DeviceError, current, float64_on_gpu
from ..devices.gpu_ops import gpu_op_for
from ..devices.transfer import GpuFromHost, HostFromGpu
from ..devices.types import GpuArrayType
from ..graph import Apply, Constant, format_trace
from ..tensor.elemwise import DimShuffle
from . import global_rewrite, local_rewrite

GPU_DTYPES = {"float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"}

# Nodes that stay on the host although their op has a GPU twin, as rules: (name, test of the node given what
# placement knows so far).  Each reads only the op's own declarations; the first that holds keeps the node home.
# * shape work: a node computing only from shapes (``shape_only`` ops' results, such as ``Shape``) and
#   constants stays on the host, as Theano kept it: ``flatten(2)`` of a device array reads the shape on the
#   host and indexes it there, with no round trip through the device (integer results only);
# * follows its inputs: an op declaring ``follows_inputs`` (``MakeVector``) runs on the device only when one
#   of its inputs already lives there (``T.stack`` of two device sums: one launch, not two copies home).
def _shape_work(placer, node):
    """Integer results from shapes and constants (a float such as ``1 / x.size`` that a kernel reads is lifted:
    kept home it would cross to the device as a copy, unless it reaches the kernel as a scalar argument)."""
    return (all(isinstance(v, Constant) or v in placer.shape_values for v in node.inputs)
            and any(not isinstance(v, Constant) for v in node.inputs)
            and all(o.type.dtype[0] in "iub" for o in node.outputs))


def _inputs_on_host(placer, node):
    return getattr(node.op, "follows_inputs", False) and all(placer.device_value(v) is None for v in node.inputs)


PLACEMENT_RULES = (("shape work stays on the host", _shape_work),
                   ("follows its inputs", _inputs_on_host))


def one_element(var):
    """Is ``var`` known, from its type alone, to hold exactly one element?"""
    return all(var.type.broadcastable)


class _Placer:
    def __init__(self, fgraph, target):
        self.fgraph, self.target = fgraph, target
        self.host_of, self.dev_of = {}, {}
        self.float64_ops = []
        self.host_scalars = getattr(fgraph, "host_scalar_nodes", None)   # None: the host_scalars rule is off
        self.shape_values = set()   # host values computed from shapes alone (PLACEMENT_RULES' shape work)

    def stays_on_host(self, node):
        """The name of the first of PLACEMENT_RULES that keeps ``node`` on the host, or None."""
        return next((name for name, holds in PLACEMENT_RULES if holds(self, node)), None)

    def scalar_argument(self, gpu_op, var):
        """Does ``var`` reach ``gpu_op`` as a kernel's scalar argument (host_scalars rule): a one-element host
        value read by an op whose kernels take such values (``scalar_arguments``), never one already on the device."""
        return (self.host_scalars is not None and getattr(gpu_op.cpu_op, "scalar_arguments", False)
                and all(var.type.broadcastable) and self.device_value(var) is None)

    def host(self, var):
        if var in self.host_of:
            return self.host_of[var]
        if isinstance(var.type, GpuArrayType) and var not in self.dev_of:
            self.dev_of[var] = var
        if var in self.dev_of:
            dev = self.dev_of[var]
            result = HostFromGpu(dev.type.device)(dev)
        else:
            result = var  # a host leaf
        self.host_of[var] = result
        return result

    def device_value(self, var):
        """``var`` where it already lives on the device (a device shared variable, or a lifted node's output), else None.

        A shape-only op reads that without a transfer, even when it is the value's first reader.
        """
        if var in self.dev_of:
            return self.dev_of[var]
        return var if isinstance(var.type, GpuArrayType) else None

    def dev(self, var, target=None):
        target = target or self.target
        if var in self.dev_of:
            return self.dev_of[var]
        if isinstance(var.type, GpuArrayType):
            result = var
        elif isinstance(var, Constant):
            # a device constant: copied to the device once, at compile time
            data = target.to_device(var.data)
            result = Constant(GpuArrayType(var.type.dtype, var.type.broadcastable, target), data)
        else:
            result = GpuFromHost(target)(self.host(var))
        self.dev_of[var] = result
        return result

    def place_node(self, node):
        op = node.op
        if isinstance(op, GpuFromHost):  # written by the user (gpu_from_host)
            src = node.inputs[0]
            if self.target is not None:
                self.dev_of[node.outputs[0]] = self.dev(src)
            else:
                self.host_of[node.outputs[0]] = self.host(src)
            return
        if isinstance(op, HostFromGpu):
            self.host_of[node.outputs[0]] = self.host(node.inputs[0])
            return
        if any(isinstance(v.type, GpuArrayType) for v in node.inputs + node.outputs) and not self._pinned(node):
            self.place_device_node(node)
            return
        gpu_op = None
        stays = self.stays_on_host(node)
        if getattr(op, "shape_only", False) or (stays is not None and _shape_work(self, node)):
            self.shape_values.update(node.outputs)
        if self.target is not None and stays is None and not (self.host_scalars and node in self.host_scalars):
            dtypes = {v.type.dtype for v in node.inputs + node.outputs}
            if dtypes <= GPU_DTYPES:
                gpu_op = gpu_op_for(node, self.target)
            elif "float64" in dtypes and gpu_op_for(node, self.target) is not None:
                self.float64_ops.append(node)
        if gpu_op is not None:
            # inputs the op declares host-side (shapes, scalars, indices) stay; the rest go to the device
            inputs = [self.host(_scalar_source(v)) if self.scalar_argument(gpu_op, v) else
                      self.host(v) if gpu_op.host_input(k, v) else self.dev(v) for k, v in enumerate(node.inputs)]
            new = gpu_op.make_node(*inputs)
            new.cpu_node = node  # DebugMode compares the GPU op with this CPU node
            for old, out in zip(node.outputs, new.outputs):
                out.tag.trace = old.tag.trace
                self.dev_of[old] = out
            return
        shape_only = getattr(op, "shape_only", False)
        inputs = [self.device_value(v) if shape_only and self.device_value(v) is not None else self.host(v)
                  for v in node.inputs]
        if all(a is b for a, b in zip(inputs, node.inputs)):
            new_outputs = node.outputs
        else:
            new_outputs = node.clone_with_new_inputs(inputs).outputs
        for old, out in zip(node.outputs, new_outputs):
            self.host_of[old] = out

    def _pinned(self, node):
        """Does the usual placement apply?  Not to a GPU op built by user code for another device (or none
        yet: ``gpu_contiguous``), nor to a host op that makes device values itself (the tutorial's PyCUDA op);
        a host op that merely reads a device value (``exp`` of a device shared variable) is placed as usual."""
        if getattr(node.op, "cpu_op", None) is not None:
            return False
        return not any(isinstance(v.type, GpuArrayType) for v in node.outputs)

    def place_device_node(self, node):
        """A node whose ``make_node`` asked for device values (Theano's ``gpu_contiguous``, a PyCUDA op): its
        device-typed inputs and outputs move to this function's device; on the CPU a GPU op built by user
        code becomes its CPU op, and a host op that only works on device memory is a clear error."""
        op, target = node.op, self.target
        cpu_op = getattr(op, "cpu_op", None)
        if target is None and cpu_op is not None:
            new = cpu_op.make_node(*[self.host(v) for v in node.inputs])
            for old, out in zip(node.outputs, new.outputs):
                out.tag.trace = old.tag.trace
                self.host_of[old] = out
            return
        if target is None:
            raise DeviceError(
                f"{op} works on device memory (its make_node asked for GPU inputs or outputs), but this function "
                f"is compiled for device='cpu' (the node was built at {format_trace(node.outputs[0].tag.trace)}). "
                "Compile it with device='gpu' (a real GPU, else the simulated one) or device='sim': "
                "with config.change(device='sim'): function(...)")
        if cpu_op is not None:  # retargeted to this function's device, its inputs where the op declares
            op = type(op)(cpu_op, target)
            outputs = op.make_node(*[self.host(v) if op.host_input(k, v) else self.dev(v)
                                     for k, v in enumerate(node.inputs)]).outputs
        else:  # the user's op keeps its own node shape; only the device is filled in
            outputs = [GpuArrayType(o.type.dtype, o.type.broadcastable, target).make_variable(o.name)
                       if isinstance(o.type, GpuArrayType) else o.type.make_variable(o.name) for o in node.outputs]
            Apply(op, [self.dev(v) if isinstance(v.type, GpuArrayType) else self.host(v) for v in node.inputs],
                  outputs)
        for old, out in zip(node.outputs, outputs):
            out.tag.trace = old.tag.trace
            (self.dev_of if isinstance(out.type, GpuArrayType) else self.host_of)[old] = out

    def output(self, k, var):
        fgraph = self.fgraph
        if k >= fgraph.n_outputs:  # an update: it goes where its shared variable lives
            target = fgraph.update_targets[k - fgraph.n_outputs]
            if isinstance(target.type, GpuArrayType):
                return self.dev(var, target.type.device)
            return self.host(var)
        # a host array, unless the user ended this output on the device with gpu_from_host: never because a
        # rewrite happened to leave a device variable there (``A * 1`` -> the shared ``A``) or a value lives there
        if self.target is not None and var.owner is not None and isinstance(var.owner.op, GpuFromHost):
            return self.dev(var)
        return self.host(var)


def _scalar_source(var):
    """The 0-d value a one-element ``var`` broadcasts (``1/N`` padded to ``(1,)`` for a vector kernel), else
    ``var``: a kernel takes it as a scalar argument as it is, so the padding need not run on the host."""
    node = var.owner
    if (node is not None and isinstance(node.op, DimShuffle) and not node.op.drop and node.inputs[0].type.ndim == 0
            and not isinstance(node.inputs[0].type, GpuArrayType)):
        return node.inputs[0]
    return var


@global_rewrite("placement", "gpu", "fast_compile", "host_scalars")
def host_scalars(fgraph):
    """Mark the scalar work that stays on the host (see the module docstring); ``place_on_device`` reads the mark.

    A node stays when its outputs hold one element and it reads only shapes, or each input is a constant, a
    host leaf (a function input, a host shared variable) or the output of a node that stays on the host.
    Runs before placement.
    """
    if fgraph.placed or getattr(fgraph, "host_scalar_nodes", None) is not None:
        return 0
    stays, order = set(), fgraph.toposort()
    for node in order:
        if not all(one_element(o) for o in node.outputs):
            continue
        # a shape read (NumElements of a device array, for mean's 1/N) is host data wherever its input lives
        if getattr(node.op, "shape_only", False) or all(isinstance(v, Constant) or (v.owner is None and not isinstance(v.type, GpuArrayType))
               or v.owner in stays for v in node.inputs):
            stays.add(node)
    for node in reversed(order):   # keep only what no device op would have to copy over again
        if node in stays and not all(_takes_host_value(client, var, stays)
                                     for var in node.outputs for client, _ in fgraph.clients.get(var, ())):
            stays.discard(node)
    fgraph.host_scalar_nodes = stays
    if stays:
        fgraph.rewrite_log.append(("placement", "host_scalars", f"{len(stays)} node(s) stay on the host"))
    return 0


def _takes_host_value(client, var, stays):
    """Can ``client`` read the one-element host value ``var`` without a copy to the device?"""
    if client == "output" or client in stays:
        return True
    op = client.op
    if getattr(op, "scalar_arguments", False) and all(var.type.broadcastable):   # 0-d, or 1/N broadcast: (1,)
        return True
    may_go = (getattr(op, "device", "cpu") == "gpu" or getattr(op, "gpu_name", None)
              or hasattr(op, "gpu_perform") or hasattr(op, "make_gpu_thunk"))
    return not may_go or (hasattr(op, "host_input") and op.host_input(client.inputs.index(var), var))


@global_rewrite("placement", "gpu", "fast_compile")
def place_on_device(fgraph):
    """Decide host or device for every node and insert the transfers (runs once per graph)."""
    if fgraph.placed:
        return 0
    fgraph.placed = True
    device = current()
    target = device if device.is_gpu else None
    fgraph.device = device
    needs_work = target is not None or any(isinstance(v.type, GpuArrayType) for v in fgraph.variables())
    if not needs_work:
        return 0
    placer = _Placer(fgraph, target)
    for node in fgraph.toposort():
        placer.place_node(node)
    fgraph.outputs = [placer.output(k, v) for k, v in enumerate(fgraph.outputs)]
    fgraph.rebuild()
    if placer.float64_ops:
        names = sorted({str(n.op) for n in placer.float64_ops})
        float64_on_gpu(f"{len(placer.float64_ops)} op(s) compute in float64 and stay on the CPU ({', '.join(names)}); "
                       f"float64 enters the graph at {where_float64_enters(placer.float64_ops[0])}")
    fgraph.rewrite_log.append(("placement", "place_on_device", device.label))
    return 0  # the pass is not repeated


def where_float64_enters(node):
    """The user's line where float64 first flows towards ``node``: a float64 input or shared variable, or the
    first op that makes float64 out of other dtypes (an int/float mix, a division of ints)."""
    stack, seen = [node], set()
    entry = None
    while stack:  # walk up the float64 ancestors of node; where several streams enter, one is named
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        float64_inputs = [v for v in current.inputs if v.type.dtype == "float64" and not isinstance(v, Constant)]
        leaves = [v for v in float64_inputs if v.owner is None]
        if leaves:
            entry = f"{leaves[0].name or 'a float64 input'} ({format_trace(leaves[0].tag.trace)})"
        elif not float64_inputs:
            entry = f"{current.op} ({format_trace(current.outputs[0].tag.trace)})"
        stack.extend(v.owner for v in float64_inputs if v.owner is not None)
    return entry


@local_rewrite("transfer", "gpu", "fast_compile", tracks=[GpuFromHost, HostFromGpu])
def cut_transfer_pairs(fgraph, node):
    """GpuFromHost(HostFromGpu(x)) -> x and HostFromGpu(GpuFromHost(x)) -> x"""
    op = node.op
    if isinstance(op, (GpuFromHost, HostFromGpu)):
        inner = node.inputs[0].owner
        pair = HostFromGpu if isinstance(op, GpuFromHost) else GpuFromHost
        if inner is not None and isinstance(inner.op, pair):
            x = inner.inputs[0]
            if isinstance(op, GpuFromHost) and x.type.device.name != op.device_name:
                return None
            return [x]
    return None
