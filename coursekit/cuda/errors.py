"""Exceptions raised by ``coursekit.cuda``.

Each one says what went wrong, where (kernel, parameter, source line) and what
to do, because the reader is a student in a notebook, not a CUDA expert.
They all derive from :class:`CudaError` so a grader can catch them in one go.
"""


class CudaError(Exception):
    """Base class of every error raised by coursekit.cuda."""


class CompileError(CudaError):
    """The kernel source does not compile (message holds the compiler's own words).

    ``line`` is the first line number of the student's source that the compiler
    complained about (or None); ``log`` is the full compiler output.
    """

    def __init__(self, message, log="", line=None, compiler=""):
        super().__init__(message)
        self.log = log
        self.line = line
        self.compiler = compiler


class KernelArgumentError(CudaError, TypeError):
    """An argument does not match the kernel's parameter list."""


class LaunchConfigError(CudaError, ValueError):
    """grid / block / shared-memory sizes a GPU would refuse."""


class KernelRuntimeError(CudaError, RuntimeError):
    """The kernel failed while running: divergent barrier, failed assert, __trap()."""


class RaceConditionError(KernelRuntimeError):
    """Forward and reverse thread orders gave different results (checked mode)."""


class MemoryAccessError(KernelRuntimeError):
    """AddressSanitizer caught an out-of-bounds or otherwise invalid access (checked mode)."""

    def __init__(self, message, line=None, report=""):
        super().__init__(message)
        self.line = line
        self.report = report


class StackOverflowError(KernelRuntimeError):
    """A CUDA thread's locals or recursion outgrew its stack (it hit the guard page below it)."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


class IntegerDivisionError(KernelRuntimeError):
    """An integer division or ``%`` by zero (or INT_MIN / -1) in a kernel: a GPU gives garbage, silently."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


class KernelTimeoutError(KernelRuntimeError):
    """The emulator's watchdog stopped a launch that ran longer than COURSEKIT_CUDA_TIMEOUT seconds."""


class BackendUnavailableError(CudaError):
    """The requested backend (e.g. the real GPU) is not available here."""
