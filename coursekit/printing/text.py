"""Graphs as text: ``debugprint`` (a Theano-style tree) and ``pp`` (one-line infix).

``debugprint`` is the tool students use to see what the compiler did to their
expression, so its output follows Theano's layout closely (tutorials and the
seeds show that layout)::

    Elemwise{add} [id A] <TensorType(float32, vector)> ''   3
     |Elemwise{exp} [id B] <TensorType(float32, vector)> ''   2
     | |x [id C] <TensorType(float32, vector)>
     |TensorConstant{1.0} [id D] <TensorType(float32, vector)>

Each line is one variable: the op that computes it (or its name, for a
leaf), an id, its type, its name in quotes, and, for a compiled function,
the position of its Apply node in the toposort (the order the thunks run).
A subtree that was already printed is shown again as a single line with the
same id and no children: the graph is a DAG, and the id is how you see that
two paths use the same computed value (that is what the merge rewrite makes).
"""
from __future__ import annotations

import sys

from ..graph import Apply, Constant, Variable, apply_nodes_between


# --------------------------------------------------------------- what to draw
def graph_parts(obj):
    """Normalise what users pass to the printers into (outputs, toposort, labels).

    ``obj`` may be a variable, a list of variables, an Apply node, a
    FunctionGraph or a compiled function.  ``toposort`` is ``None`` unless
    the graph was compiled (then the node order is the run order).
    ``labels`` maps output position -> a note such as ``update of W``.
    """
    fgraph = getattr(getattr(obj, "maker", None), "fgraph", None)
    if fgraph is None and hasattr(obj, "toposort") and hasattr(obj, "outputs") and not isinstance(obj, Apply):
        fgraph = obj
    if fgraph is not None:
        nodes = list(getattr(obj, "nodes", None) or fgraph.toposort())
        outputs = list(fgraph.outputs)
        labels = {}
        n_out = fgraph.n_outputs
        for k, target in enumerate(fgraph.update_targets):
            labels[n_out + k] = f"update of {target.name or target}"
        return outputs, nodes, labels
    if isinstance(obj, Apply):
        return list(obj.outputs), None, {}
    if isinstance(obj, Variable):
        return [obj], None, {}
    if isinstance(obj, (list, tuple)) and all(isinstance(v, Variable) for v in obj):
        return list(obj), None, {}
    raise TypeError(f"cannot print a {type(obj).__name__}: pass a variable, a list of variables, "
                    "an Apply node or a compiled function")


def leaf_text(var):
    """How a leaf is named: its name, ``TensorConstant{1.0}``, or its type."""
    if isinstance(var, Constant):
        text = str(var)
        return text if text.startswith(type(var).__name__) else f"{type(var).__name__}{{{text}}}"
    return var.name if var.name is not None else f"<{var.type}>"


def output_text(var):
    """How a computed variable is named: its op, with ``.k`` when the op has several outputs."""
    node = var.owner
    return str(node.op) if len(node.outputs) == 1 else f"{node.op}.{var.index}"


# ---------------------------------------------------------------- debugprint
def char_id(number):
    """0 -> A, 25 -> Z, 26 -> BA: Theano's letter ids (base 26, A is zero)."""
    text = ""
    while True:
        text = chr(ord("A") + number % 26) + text
        number //= 26
        if number == 0:
            return text


class _Ids:
    """Gives each Apply node (or leaf variable) an id the first time it is printed."""

    def __init__(self, style):
        if style not in ("CHAR", "int", "id", ""):
            raise ValueError(f"ids={style!r}: use 'CHAR' (A, B, ...), 'int', 'id' (Python id) or '' (none)")
        self.style, self.given = style, {}

    def __call__(self, obj):
        if not self.style:
            return ""
        key = id(obj)
        if key not in self.given:
            n = len(self.given)
            self.given[key] = {"CHAR": char_id(n), "int": str(n), "id": str(key)}[self.style]
        return f" [id {self.given[key]}]"


def debugprint(obj, file=None, print_type=True, ids="CHAR", depth=-1):
    """Print the graph of ``obj`` as an indented tree (Theano's ``debugprint``).

    ``obj``: a variable, a list of variables, an Apply node or a compiled
    function (then the optimised graph it runs is printed, every Apply
    annotated with its toposort index, and update outputs are labelled).
    ``file``: ``None`` prints to stdout, ``"str"`` returns the text, and a
    file object is written to.  ``ids``: ``"CHAR"``, ``"int"``, ``"id"`` or
    ``""``.  ``depth``: how many levels to show (-1: all).
    """
    outputs, toposort, labels = graph_parts(obj)
    order = {id(node): i for i, node in enumerate(toposort)} if toposort is not None else None
    printer = _TreePrinter(_Ids(ids), print_type, order)
    for pos, var in enumerate(outputs):
        printer.visit(var, prefix="", depth=depth, note=labels.get(pos, ""))
    text = "".join(line + "\n" for line in printer.lines)
    if file == "str":
        return text
    (sys.stdout if file is None else file).write(text)
    return None


class _TreePrinter:
    def __init__(self, ids, print_type, order):
        self.ids, self.print_type, self.order = ids, print_type, order
        self.lines, self.done = [], set()

    def visit(self, var, prefix, depth, note=""):
        """Print ``var`` and, below it, its inputs (with an explicit stack: a graph 10,000 ops deep
        prints without running out of Python's recursion limit)."""
        stack = [(var, prefix, depth, note)]
        while stack:
            var, prefix, depth, note = stack.pop()
            type_text = f" <{var.type}>" if self.print_type else ""
            node = var.owner
            if node is None:
                self.lines.append(f"{prefix}{leaf_text(var)}{self.ids(var)}{type_text}" + (f"   ({note})" if note else ""))
                continue
            line = f"{prefix}{output_text(var)}{self.ids(node)}{type_text} '{var.name or ''}'"
            if self.order is not None:
                line += f"   {self.order.get(id(node), '?')}"
            if note:
                line += f"   ({note})"
            self.lines.append(line)
            if id(node) in self.done or depth == 0:
                continue  # printed before (shared subtree): the id is the reference
            self.done.add(id(node))
            stack.extend((inp, prefix + " |", depth - 1, "") for inp in reversed(node.inputs))


# ------------------------------------------------------------------------ pp
_INFIX = {"add": ("+", 1), "sub": ("-", 1), "mul": ("*", 2), "true_div": ("/", 2), "int_div": ("//", 2),
          "mod": ("%", 2), "pow": ("**", 4)}
_ATOM = 9


def pp(obj):
    """One-line infix text of a graph: ``exp(x) + 1.0``.

    Arithmetic elementwise ops are written as operators (with only the
    parentheses precedence needs), other elementwise ops as function calls
    named after their scalar op, and every other op as ``Op{props}(args)``.
    For several outputs (or a compiled function) one line per output.
    """
    outputs, _, labels = graph_parts(obj)
    lines = []
    for pos, var in enumerate(outputs):
        text = _pp(var)[0]
        lines.append(f"{text}   ({labels[pos]})" if pos in labels else text)
    return "\n".join(lines)


def _pp(var):
    """(text, precedence) of a variable.  The nodes are written in topological order, each
    from its inputs' texts (no recursion: a graph 10,000 ops deep prints too)."""
    texts = {}
    for node in apply_nodes_between([], [var]):
        for out in node.outputs:
            texts[out] = _pp_node(out, texts)
    return texts[var] if var in texts else _pp_leaf(var)


def _pp_leaf(var):
    return (str(var) if isinstance(var, Constant) else leaf_text(var)), _ATOM


def _pp_node(var, texts):
    node = var.owner
    scalar = getattr(node.op, "scalar_op", None)
    name = getattr(scalar, "name", None)
    args = [texts[i] if i in texts else _pp_leaf(i) for i in node.inputs]
    if name in _INFIX and len(args) == 2:
        symbol, prec = _INFIX[name]
        left = args[0][0] if args[0][1] >= prec else f"({args[0][0]})"
        right_ok = args[1][1] > prec or (args[1][1] == prec and name in ("add", "mul"))
        right = args[1][0] if right_ok else f"({args[1][0]})"
        if name == "pow":  # right-associative
            left = args[0][0] if args[0][1] > prec else f"({args[0][0]})"
            right = args[1][0] if args[1][1] >= prec else f"({args[1][0]})"
        return f"{left} {symbol} {right}", prec
    if name == "neg":
        inner, prec = args[0]
        return (f"-{inner}" if prec >= 3 else f"-({inner})"), 3
    head = name if name is not None and not name.startswith("Composite") else output_text(var)
    return f"{head}({', '.join(a[0] for a in args)})", _ATOM

