"""A small layered layout for graph pictures, in pure Python.

``pydotprint`` in Theano needed the graphviz program, which many students do
not have.  A compiled graph is a DAG that is usually narrow and deep, so the
classic Sugiyama recipe, cut down, is enough to draw it clearly:

1. **layers** — each Apply node sits one row below its deepest input (longest
   path); a leaf (input, shared variable, constant) sits just above its first
   reader, and an output just below the node computing it;
2. **dummy points** — an edge that skips rows gets one invisible point per
   skipped row, so it bends around the boxes instead of crossing them;
3. **ordering** — a few sweeps sort each row by the mean position of its
   neighbours in the row above (then below): this removes most crossings;
4. **x coordinates** — each box is pulled toward the mean x of its
   neighbours; averaging a left-packed and a right-packed placement of the
   same order keeps boxes apart without an optimiser.

The result (:class:`Layout`) is plain data; ``svg.py`` and the matplotlib
renderer draw the same layout, so the PNG and the SVG show the same picture.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..compile.sharedvalue import SharedVariable
from ..graph import Constant, apply_nodes_between
from ..profiling import op_kind
from .text import graph_parts, leaf_text

ROW_HEIGHT = 78
GAP = 26
MARGIN = 20
CHAR_WIDTH = 7.0   # px per character at the 12 px font the renderers use
MAX_LABEL = 38


@dataclass
class Box:
    """One thing drawn: a variable (ellipse), an Apply node (box) or a dummy point."""

    key: int
    kind: str            # input shared constant output | cpu gpu transfer | dummy
    label: str = ""
    sublabel: str = ""
    title: str = ""      # full text, shown as a tooltip
    is_output: bool = False
    layer: int = 0
    x: float = 0.0       # centre
    y: float = 0.0
    w: float = 8.0
    h: float = 0.0

    @property
    def shape(self):
        if self.kind == "dummy":
            return "point"
        return "box" if self.kind in ("cpu", "gpu", "transfer") else "ellipse"


@dataclass
class Edge:
    src: int
    dst: int
    label: str = ""
    title: str = ""
    slot: tuple = (0, 1)                        # (input position, number of inputs) at the reader
    path: list = field(default_factory=list)    # keys, dummies included
    points: list = field(default_factory=list)  # (x, y) from src to dst


@dataclass
class Layout:
    boxes: dict
    edges: list
    width: float
    height: float
    title: str


def short_type(var):
    """``float32 vector`` for a TensorType, else the type's text."""
    t = var.type
    if hasattr(t, "dtype") and hasattr(t, "kind_name"):
        return f"{t.dtype} {t.kind_name()}"
    return str(t)


def _clip(text):
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _leaf_kind(var):
    if isinstance(var, SharedVariable):
        return "shared"
    return "constant" if isinstance(var, Constant) else "input"


def build_layout(obj):
    """Lay out the graph of a function, an Apply, a variable or a list of them."""
    outputs, nodes, labels = graph_parts(obj)
    if nodes is None:
        nodes = apply_nodes_between([], outputs)
    boxes, edges = {}, []
    node_ids = {id(n) for n in nodes}

    def leaf_box(var, reader=None):
        # a constant is drawn once per reader: one shared "1.0" would tie the whole picture together
        key = ("const", id(var), id(reader), len(boxes)) if isinstance(var, Constant) and reader else id(var)
        if key not in boxes:
            boxes[key] = Box(key, _leaf_kind(var), _clip(leaf_text(var)), short_type(var),
                             f"{leaf_text(var)} : {var.type}")
        return boxes[key]

    for node in nodes:
        kind = op_kind(node.op)
        outs = ", ".join(short_type(o) for o in node.outputs)
        sub = ("⇅ transfer  " if kind == "transfer" else "") + outs
        boxes[id(node)] = Box(id(node), kind, _clip(str(node.op)), _clip(sub),
                              f"{node.op}  [{kind}, device={getattr(node.op, 'device', '?')}] -> {outs}")
        many_inputs = len(node.inputs) > 1
        for i, var in enumerate(node.inputs):
            label = str(i) if many_inputs else ""
            if var.owner is not None and id(var.owner) in node_ids:
                if len(var.owner.outputs) > 1:
                    label = f"out{var.index}→{label or 0}"
                src = id(var.owner)
            else:
                src = leaf_box(var, reader=node).key
            edges.append(Edge(src, id(node), label, f"{var} : {var.type}", slot=(i, len(node.inputs))))
    for pos, var in enumerate(outputs):
        note = labels.get(pos, f"output {pos}")
        if var.owner is None or id(var.owner) not in node_ids:
            box = leaf_box(var)
            box.is_output, box.sublabel = True, _clip(f"{box.sublabel} ({note})")
            continue
        key = ("out", id(var))
        if key in boxes:
            boxes[key].label = _clip(f"{boxes[key].label}, {note}")
            continue
        name = f"{var.name}: {note}" if var.name else note
        boxes[key] = Box(key, "output", _clip(name), short_type(var), f"{name} : {var.type}", is_output=True)
        edges.append(Edge(id(var.owner), key, "", f"{var} : {var.type}"))

    _assign_layers(boxes, edges, nodes)
    rows = _add_dummies(boxes, edges)
    _order_rows(rows, boxes, edges)
    width, height = _place(rows, boxes, edges)
    name = getattr(obj, "name", None)
    device = getattr(obj, "device", None)
    title = " — ".join(str(t) for t in (name, device) if t)
    return Layout(boxes, edges, width, height, title)


def _assign_layers(boxes, edges, nodes):
    preds, succs = {}, {}
    for e in edges:
        preds.setdefault(e.dst, []).append(e.src)
        succs.setdefault(e.src, []).append(e.dst)
    apply_keys = {id(n) for n in nodes}
    for node in nodes:  # toposort order: predecessors first
        box = boxes[id(node)]
        box.layer = max([boxes[p].layer + 1 for p in preds.get(id(node), []) if p in apply_keys] or [1])
    for key, box in boxes.items():
        if box.kind in ("input", "shared", "constant"):
            readers = [boxes[s].layer for s in succs.get(key, []) if s in apply_keys]
            box.layer = min(readers) - 1 if readers else 0
    for key, box in boxes.items():
        if box.kind == "output":
            box.layer = max(boxes[p].layer for p in preds[key]) + 1
    for box in boxes.values():
        lines = 2 if box.sublabel else 1
        box.w = max(len(box.label), len(box.sublabel)) * CHAR_WIDTH + (34 if box.shape == "ellipse" else 18)
        box.h = 18 + 15 * lines if box.shape == "box" else 16 + 15 * lines


def _add_dummies(boxes, edges):
    """Split edges that skip rows; return the rows (lists of keys, in first-seen order)."""
    n_dummy = 0
    for e in edges:
        top, bottom = boxes[e.src].layer, boxes[e.dst].layer
        e.path = [e.src]
        for layer in range(top + 1, bottom):
            key = ("dummy", n_dummy)
            n_dummy += 1
            boxes[key] = Box(key, "dummy", layer=layer)
            e.path.append(key)
        e.path.append(e.dst)
    n_rows = max(b.layer for b in boxes.values()) + 1 if boxes else 0
    rows = [[] for _ in range(n_rows)]
    for key, box in boxes.items():
        rows[box.layer].append(key)
    return rows


def _neighbours(edges):
    up, down = {}, {}
    for e in edges:
        for a, b in zip(e.path, e.path[1:]):
            down.setdefault(a, []).append(b)
            up.setdefault(b, []).append(a)
    return up, down


def _order_rows(rows, boxes, edges, sweeps=4):
    """Barycentre heuristic: sort each row by its neighbours' mean position."""
    up, down = _neighbours(edges)
    for sweep in range(sweeps):
        going_down = sweep % 2 == 0
        row_ids = range(1, len(rows)) if going_down else range(len(rows) - 2, -1, -1)
        links = up if going_down else down
        for r in row_ids:
            ref = rows[r - 1] if going_down else rows[r + 1]
            where = {k: i for i, k in enumerate(ref)}
            current = {k: i for i, k in enumerate(rows[r])}

            def barycentre(key):
                pos = [where[n] for n in links.get(key, []) if n in where]
                return sum(pos) / len(pos) if pos else current[key]

            rows[r].sort(key=barycentre)


def _place(rows, boxes, edges):
    """x by neighbour pulling with overlap-free packing; y by row; edge points."""
    up, down = _neighbours(edges)
    row_tops, y = [], MARGIN
    for row in rows:
        tallest = max((boxes[k].h for k in row), default=0)
        row_tops.append((y, tallest))
        y += tallest + ROW_HEIGHT - 30
    for row, (top, tallest) in zip(rows, row_tops):
        x = 0.0
        for k in row:
            boxes[k].x, boxes[k].y = x + boxes[k].w / 2, top + tallest / 2
            x += boxes[k].w + GAP
        shift = -x / 2
        for k in row:
            boxes[k].x += shift
    for sweep in range(6):
        links = up if sweep % 2 == 0 else down
        for row in (rows if sweep % 2 == 0 else rows[::-1]):
            wanted = []
            for k in row:
                xs = [boxes[n].x for n in links.get(k, [])]
                wanted.append(sum(xs) / len(xs) if xs else boxes[k].x)
            for k, x in zip(row, _pack([boxes[k] for k in row], wanted)):
                boxes[k].x = x
    left = min((b.x - b.w / 2 for b in boxes.values()), default=0)
    right = max((b.x + b.w / 2 for b in boxes.values()), default=0)
    for b in boxes.values():
        b.x += MARGIN - left
    for e in edges:
        src, dst = boxes[e.src], boxes[e.dst]
        position, n_inputs = e.slot  # spread the arrows along the reader's top edge, in input order
        step = min(16.0, (dst.w - 16) / max(n_inputs - 1, 1))
        end_x = dst.x + (position - (n_inputs - 1) / 2) * step
        e.points = ([(src.x, src.y + src.h / 2)] + [(boxes[k].x, boxes[k].y) for k in e.path[1:-1]]
                    + [(end_x, dst.y - dst.h / 2)])
    return right - left + 2 * MARGIN, y - ROW_HEIGHT + 30 + MARGIN


def _pack(row_boxes, wanted):
    """Centres as close to ``wanted`` as the row order allows, boxes ``GAP`` apart."""
    n = len(row_boxes)
    left_packed, edge = [], float("-inf")
    for b, x in zip(row_boxes, wanted):
        x = max(x, edge + GAP + b.w / 2)
        left_packed.append(x)
        edge = x + b.w / 2
    right_packed, edge = [0.0] * n, float("inf")
    for i in range(n - 1, -1, -1):
        b = row_boxes[i]
        right_packed[i] = min(wanted[i], edge - GAP - b.w / 2)
        edge = right_packed[i] - b.w / 2
    return [(a + b) / 2 for a, b in zip(left_packed, right_packed)]
