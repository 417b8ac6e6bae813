"""Reading a symbol back: ``mx.sym.load`` (a file) and ``mx.sym.load_json`` (a string).

Both accept MXLab's JSON and MXNet's (every layout since 0.8, upgraded as MXNet does:
:mod:`framework.symbol.json_format`). Writing is ``Symbol.tojson``/``Symbol.save``.
"""

from __future__ import annotations

from ..errors import read_existing
from .errors import SymbolTypeError
from .json_format import SymbolJSONError, read_graph
from .symbol import Symbol


def load_json(json_str: str) -> Symbol:
    """The symbol saved as ``json_str`` by ``tojson`` (MXLab's or MXNet's)."""
    if not isinstance(json_str, str):
        raise SymbolTypeError(f"load_json: expected a JSON string, got {type(json_str).__name__}")
    return Symbol(read_graph(json_str))


def load(fname: str) -> Symbol:
    """The symbol saved in the file ``fname`` (``save``, ``export`` or MXNet's ``-symbol.json``).

    A malformed file raises :class:`SymbolJSONError` naming the file and where in it.
    """
    if not isinstance(fname, str):
        raise SymbolTypeError(f"load: fname must be a path string, got {fname!r}")
    raw = read_existing(fname, "mx.sym.load")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SymbolJSONError(
            f"symbol JSON file {fname!r}: byte {err.start}: not UTF-8 text ({raw[err.start : err.start + 8]!r})"
        ) from None
    return Symbol(read_graph(text, source=fname))
