"""Mutants of a solution cell: the small, plausible bugs a judge must catch.

Python is mutated through :mod:`ast` (only nodes on the lines of a solution region); CUDA C, which
lives in Python string constants holding ``__global__``, through a token-level mutator. Each mutant
changes one thing, the way a student's slip does:

* Python: an arithmetic operator swapped (``+``/``-``, ``*``/``/``, ``//``/``/``), a comparison
  swapped (``<``/``<=``/``>``, ``==``/``!=``, ``is``/``is not``), ``and``/``or``, ``min``/``max``, an
  integer constant moved by one, a unary minus dropped, a guard dropped (an ``if`` test made ``True``),
  the first two arguments of a call swapped, a cast dropped (``.astype(...)``, ``np.float32(...)``,
  ``float(...)``, a ``dtype=`` keyword), one statement deleted;
* CUDA C: the same operator and comparison swaps, ``&&``/``||``, integer constants ±1, an ``if``
  guard made ``1``, ``__syncthreads()`` dropped or moved under the kernel's first guard condition
  (a barrier that the threads outside the guard skip), ``.x``/``.y`` of a thread or block index
  transposed, the operands of ``a * b + c`` index arithmetic transposed (``c * b + a``), ``fmaxf``/
  ``fminf`` swapped.

Why one change per mutant: the tool asks whether each judge notices a single plausible slip; two
slips at once are easier to notice, not harder.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass

BIN_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
             ast.Pow: ast.Mult, ast.Mod: ast.FloorDiv}
CMP_SWAPS = {ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE, ast.Lt), ast.GtE: (ast.Gt,),
             ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
             ast.In: (ast.NotIn,), ast.NotIn: (ast.In,)}
CASTS = {"float", "int", "float32", "float64", "int32", "asarray", "ascontiguousarray"}
NAME_SWAPS = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum", "zeros_like": "ones_like",
              "ones_like": "zeros_like"}


@dataclass(frozen=True)
class Mutant:
    """One changed copy of a cell: ``what`` says the change and where (line in the cell, 1-based)."""

    what: str
    source: str


# --- Python, through ast -------------------------------------------------------------------------


def _mutations(node):
    """``(label, make)`` pairs for one node; ``make(node)`` changes the (copied) node in place or
    returns a replacement."""
    found = []
    if isinstance(node, ast.BinOp) and type(node.op) in BIN_SWAPS:
        new = BIN_SWAPS[type(node.op)]
        found.append((f"{type(node.op).__name__} -> {new.__name__}", lambda n, new=new: setattr(n, "op", new())))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMP_SWAPS:
        for new in CMP_SWAPS[type(node.ops[0])]:
            found.append((f"{type(node.ops[0]).__name__} -> {new.__name__}",
                          lambda n, new=new: setattr(n, "ops", [new()])))
    if isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        found.append((f"{type(node.op).__name__} -> {new.__name__}", lambda n, new=new: setattr(n, "op", new())))
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        for delta in (1, -1):
            found.append((f"{node.value} -> {node.value + delta}",
                          lambda n, d=delta: setattr(n, "value", n.value + d)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        found.append((f"{type(node.op).__name__} dropped", lambda n: n.operand))
    if isinstance(node, (ast.If, ast.IfExp)):
        found.append(("guard dropped (test made True)", lambda n: setattr(n, "test", ast.Constant(True))))
    if isinstance(node, ast.Call):
        found.extend(_call_mutations(node))
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = node.id if isinstance(node, ast.Name) else node.attr
        if name in NAME_SWAPS and isinstance(getattr(node, "ctx", None), ast.Load):
            field = "id" if isinstance(node, ast.Name) else "attr"
            found.append((f"{name} -> {NAME_SWAPS[name]}",
                          lambda n, f=field, new=NAME_SWAPS[name]: setattr(n, f, new)))
    return found


def _call_mutations(node):
    found = []
    if len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
        found.append(("first two arguments swapped",
                      lambda n: setattr(n, "args", [n.args[1], n.args[0], *n.args[2:]])))
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name == "astype" and isinstance(func, ast.Attribute):
        found.append(("cast dropped (.astype)", lambda n: n.func.value))
    elif name in CASTS and len(node.args) == 1 and not node.keywords:
        found.append((f"cast dropped ({name})", lambda n: n.args[0]))
    for k, keyword in enumerate(node.keywords):
        if keyword.arg == "dtype":
            found.append(("dtype= dropped", lambda n, k=k: setattr(n, "keywords", n.keywords[:k] + n.keywords[k + 1:])))
    return found


class _Replace(ast.NodeTransformer):
    """Apply one mutation to the node numbered ``target`` (in ``ast.walk`` order of the copy)."""

    def __init__(self, target, make):
        self.target, self.make, self.count = target, make, -1

    def visit(self, node):
        self.count += 1
        if self.count == self.target:
            result = self.make(node)
            return node if result is None else result
        return self.generic_visit(node)


def _numbered(tree):
    """Nodes in the order :class:`_Replace` visits them (pre-order, fields in order)."""
    order = []

    def walk(node):
        order.append(node)
        for child in ast.iter_child_nodes(node):
            walk(child)
    walk(tree)
    return order


def _statements(tree, lines):
    """Statements inside the region lines whose removal leaves valid code (a body keeps one statement)."""
    found = []
    for parent in ast.walk(tree):
        for field in ("body", "orelse"):
            body = getattr(parent, field, None)
            if isinstance(body, list) and len(body) > 1:
                found += [(parent, field, k) for k, stmt in enumerate(body)
                          if isinstance(stmt, ast.stmt) and stmt.lineno in lines]
    return found


def python_mutants(source: str, lines: set[int]) -> list[Mutant]:
    """Mutants of the Python code on ``lines`` (1-based line numbers of the cell) of ``source``."""
    tree = ast.parse(source)
    mutants = []
    for number, node in enumerate(_numbered(tree)):
        if getattr(node, "lineno", None) not in lines:
            continue
        for label, make in _mutations(node):
            copied = copy.deepcopy(tree)
            changed = _Replace(number, make).visit(copied)
            ast.fix_missing_locations(changed)
            mutants.append(Mutant(f"line {node.lineno}: {label}", ast.unparse(changed)))
    for parent, field, k in _statements(tree, lines):
        copied = copy.deepcopy(tree)
        index = _numbered(tree).index(parent)
        twin = _numbered(copied)[index]
        line = getattr(parent, field)[k].lineno
        getattr(twin, field).pop(k)
        mutants.append(Mutant(f"line {line}: statement deleted", ast.unparse(copied)))
    return mutants


# --- CUDA C, through tokens ----------------------------------------------------------------------

TOKEN_RE = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/|\#[^\n]*)
  | (?P<number>\d+\.\d*[fF]?|\d+[uUlLfF]*|\.\d+[fF]?)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|\+\+|--|->|&&|\|\||<=|>=|==|!=|\+=|-=|\*=|/=|<<|>>|[-+*/%<>=!&|^~?:;,.(){}\[\]])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)
C_TYPES = {"float", "int", "unsigned", "double", "char", "void", "const", "long", "short", "__half", "bool",
           "size_t", "uint", "float2", "float4"}
C_SWAPS = {"+": ["-"], "-": ["+"], "*": ["/"], "/": ["*"], "<": ["<=", ">"], "<=": ["<"], ">": [">="],
           ">=": [">"], "==": ["!="], "!=": ["=="], "&&": ["||"], "||": ["&&"], "+=": ["-="], "-=": ["+="],
           "*=": ["/="], "/=": ["*="], "%": ["/"], "fmaxf": ["fminf"], "fminf": ["fmaxf"], "max": ["min"],
           "min": ["max"]}
INDEX_NAMES = {"threadIdx", "blockIdx", "blockDim"}


def tokens(code: str) -> list[tuple[str, str]]:
    """``(kind, text)`` for every token of ``code``; joining the texts gives ``code`` back."""
    return [(m.lastgroup, m.group()) for m in TOKEN_RE.finditer(code)]


def _significant(toks, k, step):
    k += step
    while 0 <= k < len(toks) and toks[k][0] == "space":
        k += step
    return k if 0 <= k < len(toks) else None


def _is_declaration_star(toks, k):
    before = _significant(toks, k, -1)
    return before is None or toks[before][1] in C_TYPES or toks[before][1] in ("(", ",")


def _first_guard(toks):
    """The text of the first ``if (...)`` condition, or None: the guard a moved barrier hides under."""
    for k, (_, text) in enumerate(toks):
        if text == "if":
            start = _significant(toks, k, 1)
            depth, end = 0, start
            while end is not None and end < len(toks):
                depth += {"(": 1, ")": -1}.get(toks[end][1], 0)
                if depth == 0:
                    return "".join(t for _, t in toks[start:end + 1])
                end += 1
    return None


def _line_of(toks, k):
    return 1 + sum(text.count("\n") for _, text in toks[:k])


def _barrier_mutants(toks, k, guard):
    found = []
    semi = _significant(toks, _significant(toks, _significant(toks, k, 1), 1), 1)   # ( ) ;
    if semi is not None and toks[semi][1] == ";":
        found.append(("__syncthreads() dropped", {k: "", semi: ""}))
        if guard:
            found.append((f"__syncthreads() moved under if {guard}", {k: f"if {guard} __syncthreads"}))
    return found


def _token_mutations(toks, k, guard):
    kind, text = toks[k]
    found = []
    if text in C_SWAPS and not (text == "*" and _is_declaration_star(toks, k)):
        found += [(f"{text} -> {new}", {k: new}) for new in C_SWAPS[text]]
    if kind == "number" and re.fullmatch(r"\d+[uUlL]*", text):
        digits = re.match(r"\d+", text).group()
        found += [(f"{text} -> {int(digits) + d}", {k: str(int(digits) + d) + text[len(digits):]})
                  for d in (1, -1) if int(digits) + d >= 0]
    if text == "if":
        start = _significant(toks, k, 1)
        end, depth = start, 0
        while end is not None and end < len(toks):
            depth += {"(": 1, ")": -1}.get(toks[end][1], 0)
            if depth == 0:
                break
            end += 1
        found.append(("if guard made 1", {**{j: "" for j in range(start, end)}, end: "(1)"}))
    if text == "__syncthreads":
        found += _barrier_mutants(toks, k, guard)
    if text in INDEX_NAMES:
        dot = _significant(toks, k, 1)
        member = _significant(toks, dot, 1) if dot is not None else None
        if member is not None and toks[dot][1] == "." and toks[member][1] in ("x", "y"):
            other = "y" if toks[member][1] == "x" else "x"
            found.append((f"{text}.{toks[member][1]} -> {text}.{other}", {member: other}))
    found += _transpose(toks, k)
    return found


def _transpose(toks, k):
    """``a * b + c`` -> ``c * b + a`` when ``a`` and ``c`` are plain names: an index or stride transposed."""
    if toks[k][0] != "name" or toks[k][1] in C_TYPES:
        return []
    star = _significant(toks, k, 1)
    if star is None or toks[star][1] != "*" or _is_declaration_star(toks, star):
        return []
    before = _significant(toks, k, -1)
    if before is not None and toks[before][1] in (".", "->"):
        return []
    middle = _significant(toks, star, 1)
    plus = _significant(toks, middle, 1) if middle is not None else None
    last = _significant(toks, plus, 1) if plus is not None else None
    if None in (middle, plus, last) or toks[plus][1] != "+" or toks[last][0] != "name" or toks[middle][0] != "name":
        return []
    after = _significant(toks, last, 1)
    if after is not None and toks[after][1] in (".", "(", "[", "->"):
        return []
    a, c = toks[k][1], toks[last][1]
    if a == c:
        return []
    return [(f"{a} * {toks[middle][1]} + {c} -> {c} * {toks[middle][1]} + {a}", {k: c, last: a})]


def cuda_mutants(code: str) -> list[tuple[str, str]]:
    """``(what, mutated code)`` for every token-level mutant of the CUDA C ``code``."""
    toks = tokens(code)
    guard = _first_guard(toks)
    found = []
    for k in range(len(toks)):
        if toks[k][0] == "space":
            continue
        for label, edits in _token_mutations(toks, k, guard):
            text = "".join(edits.get(j, t) for j, (_, t) in enumerate(toks))
            found.append((f"kernel line {_line_of(toks, k)}: {label}", text))
    return found


def kernel_mutants(source: str, lines: set[int]) -> list[Mutant]:
    """Mutants of the CUDA C in string constants (holding ``__global__``) on the region's ``lines``."""
    tree = ast.parse(source)
    mutants = []
    for number, node in enumerate(_numbered(tree)):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and "__global__" in node.value):
            continue
        if node.lineno not in lines:
            continue
        for what, code in cuda_mutants(node.value):
            copied = copy.deepcopy(tree)
            _numbered(copied)[number].value = code
            mutants.append(Mutant(f"line {node.lineno}, {what}", ast.unparse(copied)))
    return mutants


def mutants_of(source: str, lines: set[int]) -> list[Mutant]:
    """Every mutant of a cell's solution region (Python and CUDA C), in a fixed order."""
    return python_mutants(source, lines) + kernel_mutants(source, lines)
