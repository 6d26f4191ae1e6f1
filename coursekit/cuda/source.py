"""Reading a student's CUDA source: kernel signatures and emulator rewrites.

The emulator needs to know each ``__global__`` kernel's parameters (to check
arguments before launching: a Python ``int`` for an ``int`` parameter would be
garbage on a GPU) and has to turn ``extern __shared__`` arrays into something
C++ accepts.  A full C++ parser would be overkill: kernels are short, so we
blank out comments and string literals (keeping every character position and
newline, so offsets still map to the student's line numbers) and scan tokens.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

SOURCE_NAME = "kernel.cu"   # the file name compilers and AddressSanitizer report

# C type (after dropping qualifiers) -> NumPy dtypes that may be passed for it.
C_TYPES = {
    "float": ("float32",), "double": ("float64",),
    "int": ("int32",), "signed": ("int32",), "signed int": ("int32",), "int32_t": ("int32",),
    "unsigned": ("uint32",), "unsigned int": ("uint32",), "uint32_t": ("uint32",), "uint": ("uint32",),
    "short": ("int16",), "short int": ("int16",), "int16_t": ("int16",),
    "unsigned short": ("uint16",), "unsigned short int": ("uint16",), "uint16_t": ("uint16",),
    "char": ("int8", "uint8", "bool"), "signed char": ("int8",), "int8_t": ("int8",),
    "unsigned char": ("uint8", "bool"), "uint8_t": ("uint8", "bool"),
    "long": ("int64",), "long int": ("int64",), "long long": ("int64",), "long long int": ("int64",),
    "int64_t": ("int64",), "ptrdiff_t": ("int64",),
    "unsigned long": ("uint64",), "unsigned long long": ("uint64",), "unsigned long long int": ("uint64",),
    "uint64_t": ("uint64",), "size_t": ("uint64",),
    "bool": ("bool",), "half": ("float16",), "__half": ("float16",),
    "float2": ("complex64", "float32"), "double2": ("complex128", "float64"),
    "float4": ("float32",), "float3": ("float32",), "int2": ("int32",), "int4": ("int32",),
}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "__grid_constant__"}


@dataclass
class Param:
    name: str
    ctype: str              # as written, whitespace-normalised (for messages)
    is_pointer: bool
    base: str               # element / scalar type without qualifiers
    dtypes: tuple | None    # acceptable NumPy dtype names, None = not checked
    allowed: frozenset = field(default=None, compare=False, repr=False)   # the same as np.dtype objects

    def __post_init__(self):
        self.allowed = None if self.dtypes is None else frozenset(np.dtype(d) for d in self.dtypes)

    @property
    def dtype(self):
        return np.dtype(self.dtypes[0]) if self.dtypes else None

    def decl(self):
        return f"{self.ctype} {self.name}"


@dataclass
class KernelSignature:
    name: str
    params: list = field(default_factory=list)
    line: int = 1
    is_template: bool = False
    template_params: tuple = ()

    def __str__(self):
        return f"__global__ void {self.name}({', '.join(p.decl() for p in self.params)})"


def blank_comments_and_strings(src: str) -> str:
    """Same length as ``src``; comments and literals become spaces, newlines stay."""
    out = list(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


def _matching(text: str, open_pos: int) -> int:
    """Index of the bracket closing the one at ``open_pos``."""
    pairs = {"(": ")", "<": ">", "[": "]", "{": "}"}
    opener = text[open_pos]
    depth = 0
    for k in range(open_pos, len(text)):
        if text[k] == opener:
            depth += 1
        elif text[k] == pairs[opener]:
            depth -= 1
            if depth == 0:
                return k
    return len(text)


def _split_top_level(text: str) -> list:
    parts, depth, start = [], 0, 0
    for k, c in enumerate(text):
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_param(text: str, index: int) -> Param:
    text = text.split("=")[0].strip()          # drop a default value
    is_array = bool(re.search(r"\[\s*\w*\s*\]\s*$", text))
    text = re.sub(r"\[\s*\w*\s*\]\s*$", "", text).strip()
    tokens = re.findall(r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|\*|&|<[^>]*>", text)
    words = [t for t in tokens if t not in ("*", "&")]
    name = f"arg{index}"
    if len(words) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) and words[-1] not in _QUALIFIERS:
        if not (len(words) == 2 and words[0] in ("unsigned", "signed", "long", "short") and words[1] in ("int", "long", "char", "short")):
            name = words[-1]
            text = text[: text.rfind(name)].strip()
    ctype = re.sub(r"\*(?=\w)", "* ", re.sub(r"\s*\*", "*", " ".join(text.split())))
    is_pointer = "*" in ctype or is_array
    base_words = [w for w in re.findall(r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*", ctype) if w not in _QUALIFIERS]
    base = " ".join(base_words).replace("std::", "")
    if is_array:
        ctype += "*"
    dtypes = None if base == "void" else C_TYPES.get(base)
    return Param(name=name, ctype=ctype, is_pointer=is_pointer, base=base, dtypes=dtypes)


def find_kernels(src: str) -> list:
    """Every ``__global__`` function in the source, with its parameters."""
    clean = blank_comments_and_strings(src)
    kernels = []
    for m in re.finditer(r"\b__global__\b", clean):
        pos = m.end()
        prev_ident = None
        while pos < len(clean):
            t = re.compile(r"\s*([A-Za-z_]\w*|\(|[^\sA-Za-z_(])").match(clean, pos)
            if not t:
                break
            tok = t.group(1)
            if tok == "(":
                paren = t.start(1)
                if prev_ident in ("__launch_bounds__", "__align__", "alignas", "__attribute__", "__declspec"):
                    pos = _matching(clean, paren) + 1
                    prev_ident = None
                    continue
                close = _matching(clean, paren)
                params = [parse_param(p, i) for i, p in enumerate(_split_top_level(clean[paren + 1:close]))]
                if len(params) == 1 and params[0].ctype == "void" and not params[0].is_pointer:
                    params = []
                head = clean[max(clean.rfind(";", 0, m.start()), clean.rfind("}", 0, m.start())) + 1:m.start()]
                tmpl = re.search(r"\btemplate\s*<(.*)>", head, re.S)
                tparams = tuple(re.findall(r"(\w+)\s*(?:=[^,]*)?$", t)[0] for t in _split_top_level(tmpl.group(1))
                                if re.findall(r"(\w+)\s*(?:=[^,]*)?$", t)) if tmpl else ()
                kernels.append(KernelSignature(prev_ident or "?", params, line_of(clean, m.start()),
                                               is_template=bool(tmpl), template_params=tparams))
                break
            prev_ident = tok if re.fullmatch(r"[A-Za-z_]\w*", tok) else prev_ident
            pos = t.end()
    # a prototype and a definition of the same kernel: keep one
    seen, unique = set(), []
    for k in kernels:
        if k.name not in seen:
            seen.add(k.name)
            unique.append(k)
    return unique


_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\b[^;{}]*;")


def rewrite_extern_shared(src: str) -> str:
    """``extern __shared__ T name[];`` -> ``__ck_dyn_shared<T> name;`` (same lines).

    Dynamic shared memory has no C++ spelling; the prelude's ``__ck_dyn_shared``
    converts to a ``T*`` pointing at the launch's dynamic shared buffer.
    """
    clean = blank_comments_and_strings(src)
    pieces, last = [], 0
    for m in _EXTERN_SHARED.finditer(clean):
        decl = clean[m.start():m.end() - 1]
        decl = re.sub(r"\bextern\b|\b__shared__\b", " ", decl)
        decl = re.sub(r"\b(__align__|alignas|__attribute__)\s*\((?:[^()]|\([^()]*\))*\)", " ", decl)
        d = re.fullmatch(r"\s*(.+?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*", decl, re.S)
        if not d:
            continue     # leave it: the compiler will point at the line
        ctype = " ".join(d.group(1).split())
        replacement = f"__ck_dyn_shared<{ctype}> {d.group(2)};"
        replacement += "\n" * clean.count("\n", m.start(), m.end())
        pieces.append(src[last:m.start()])
        pieces.append(replacement)
        last = m.end()
    pieces.append(src[last:])
    return "".join(pieces)


def emulator_translation_unit(src: str, entries: list) -> str:
    """The C++ file the host compiler sees: prelude, student source, entry trampolines.

    ``entries`` is a list of C++ expressions naming kernels (``"k"`` or
    ``"k<float>"``); entry i is exported as ``__ck_entry_i``.
    """
    body = rewrite_extern_shared(src)
    lines = ['#include "ck_prelude.h"', f'#line 1 "{SOURCE_NAME}"', body, "", '#line 1 "<coursekit entry points>"']
    for i, expr in enumerate(entries):
        lines.append(f'extern "C" __attribute__((visibility("default"))) void __ck_entry_{i}(const char* a) '
                     f"{{ __ck_call(&{expr}, a); }}")
    table = ", ".join(f"__ck_entry_{i}" for i in range(len(entries))) or "nullptr"
    lines.append(f'extern "C" __attribute__((visibility("default"))) void (*const __ck_entries[])(const char*) = {{{table}}};')
    lines.append(f'extern "C" __attribute__((visibility("default"))) const int __ck_n_entries = {len(entries)};')
    return "\n".join(lines) + "\n"


def source_line(src: str, line: int) -> str:
    lines = src.splitlines()
    return lines[line - 1].strip() if line and 0 < line <= len(lines) else ""
