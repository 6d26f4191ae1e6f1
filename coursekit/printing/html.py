"""``function_html``: how a compiled function shows itself in Jupyter.

A student who evaluates ``f`` in a cell should see, without calling anything,
what the course keeps asking about: which device the function runs on, the
ops in the order they run and where each one runs, a picture of the graph
(transfers in red), and — one click away — the exact Python a call executes.

The picture is embedded as a PNG ``<img>`` (a ``data:`` URL), not as inline
SVG: a notebook opened fresh is untrusted, and JupyterLab and Notebook then
sanitise HTML outputs, which strips inline ``<svg>`` (leaving its words run
together) but keeps an ``<img>``.  So the view looks the same before and
after the student re-runs the cell.
"""
from __future__ import annotations

import base64
from html import escape

from ..costmodel import price_nodes
from ..profiling import format_time, op_kind
from .layout import short_type
from .picture import pydotprint

MAX_PICTURE_NODES = 60
_KIND_COLOURS = {"cpu": "#e65100", "gpu": "#4527a0", "transfer": "#c62828"}


def function_html(f):
    """HTML for ``Function._repr_html_``: header, toposort table, picture, generated source."""
    nodes = list(getattr(f, "nodes", None) or f.maker.fgraph.toposort())
    kinds = [op_kind(node.op) for node in nodes]
    counts = {k: kinds.count(k) for k in ("cpu", "gpu", "transfer") if k in kinds}
    summary = ", ".join(f"{n} {k.upper() if k != 'transfer' else 'transfer'}" for k, n in counts.items())
    header = (f"<b>coursekit function</b> <code>{escape(str(getattr(f, 'name', '')))}</code> on "
              f"<b>{escape(str(getattr(f, 'device', '?')))}</b>: {len(nodes)} nodes"
              + (f" ({summary})" if summary else ""))
    compile_time = getattr(f, "compile_time", None)
    if compile_time is not None:
        header += f", compiled in {compile_time * 1e3:.1f} ms"
    modelled, model_label = _modelled_per_node(f, nodes, kinds)
    parts = [f'<div class="coursekit-function"><p>{header}</p>', _toposort_table(nodes, kinds, modelled, model_label)]
    if 0 < len(nodes) <= MAX_PICTURE_NODES:
        png = base64.b64encode(pydotprint(f).png()).decode("ascii")
        parts.append(f'<div><img src="data:image/png;base64,{png}" style="max-width:100%" '
                     f'alt="graph of {escape(str(getattr(f, "name", "") or "the function"))}"></div>')
    elif nodes:
        parts.append(f"<p><i>{len(nodes)} nodes: picture skipped (more than {MAX_PICTURE_NODES}); "
                     "call coursekit.printing.pydotprint(f) to draw it anyway.</i></p>")
    source = getattr(f, "source", None)
    if source:
        parts.append("<details><summary>Generated Python (<code>f.source</code>)</summary>"
                     f"<pre>{escape(source)}</pre></details>")
    parts.append("</div>")
    return "\n".join(parts)


def _modelled_per_node(f, nodes, kinds):
    """Modelled seconds per call of each GPU/transfer node, from the function's profile (if it has one)."""
    if "gpu" not in kinds and "transfer" not in kinds:
        return None, None
    profile = getattr(f, "profile", None)
    records = [r for r in getattr(profile, "records", []) if r.fn_ref() is f and r.timed_calls]
    if not records:
        return {}, None
    call = price_nodes(records[0].nodes, records[0].input_info, f)
    index = {id(node): i for i, node in enumerate(nodes)}
    return {index[id(node)]: cost.total for node, cost in call.rows if id(node) in index}, call.label


def _toposort_table(nodes, kinds, modelled=None, model_label=None):
    style = 'style="text-align:left; padding:1px 8px; font-family:monospace"'
    extra = f"<th {style}>{escape(model_label)} per call</th>" if model_label else ""
    rows = [f"<tr><th {style}>#</th><th {style}>op</th><th {style}>inputs → outputs</th>"
            f"<th {style}>device</th>{extra}</tr>"]
    for i, (node, kind) in enumerate(zip(nodes, kinds)):
        ins = ", ".join(short_type(v) for v in node.inputs)
        outs = ", ".join(short_type(v) for v in node.outputs)
        where = "⇅ transfer" if kind == "transfer" else escape(str(getattr(node.op, "device", "?")))
        colour = _KIND_COLOURS.get(kind, "inherit")
        rows.append(f"<tr><td {style}>{i}</td><td {style}>{escape(str(node.op))}</td>"
                    f"<td {style}>{escape(ins)} → {escape(outs)}</td>"
                    f'<td {style}><span style="color:{colour}; font-weight:bold">{where}</span></td>'
                    + (f"<td {style}>{_seconds(modelled.get(i))}</td>" if model_label else "") + "</tr>")
    table = f'<table class="coursekit-toposort">{"".join(rows)}</table>'
    if modelled == {}:  # GPU ops, but no call recorded yet: say how to see what a GPU would take
        table += ("<p><i>Modelled GPU times appear here once the function has run with profile=True; or use "
                  "coursekit.lessons.time_call(f, ...).modelled.</i></p>")
    return table


def _seconds(value):
    if value is None:
        return "—"
    return format_time(value)
