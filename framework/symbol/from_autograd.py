"""``mx.autograd.get_symbol``: the computation autograd recorded for an array, as a Symbol.

The autograd tape and a symbol are graphs of the same :class:`~framework.operator.node.Node`
objects, so the recorded history of an array needs no translation, only a copy without the
arrays the tape keeps: the result prints, saves as JSON and binds like any symbol, its
leaves (marked arrays and constants) becoming variables. It lives with the symbols because
it makes one; ``framework/__init__.py`` attaches it to ``mx.autograd``, as in MXNet.
"""

from __future__ import annotations

from ..autograd import AutogradError, is_custom_function
from ..ndarray.ndarray import NDArray
from ..operator.node import Entry, Node, NodeAttrs, topo_sort, variable
from .symbol import Symbol


def get_symbol(x: NDArray) -> Symbol:
    """The recorded computation that produced ``x`` (inside ``autograd.record()``), as a Symbol."""
    if not isinstance(x, NDArray):
        raise AutogradError(f"get_symbol: expected an NDArray, got {type(x).__name__}")
    if x._entry is None:
        raise AutogradError("get_symbol: the array was not computed inside autograd.record()")
    copies: dict[int, Node] = {}
    for node in topo_sort([x._entry]):
        if is_custom_function(node):
            raise AutogradError("get_symbol: the history holds an autograd.Function, which has no symbol form")
        if node.is_variable:
            copies[node.id] = variable(node.name)
            continue
        attrs = NodeAttrs(node.name, node.op, node.attrs.parsed, dict(node.attrs.extra))
        copies[node.id] = Node(node.op, attrs, [Entry(copies[e.node.id], e.index) for e in node.inputs])
    return Symbol([Entry(copies[x._entry.node.id], x._entry.index)])


__all__ = ["get_symbol"]
