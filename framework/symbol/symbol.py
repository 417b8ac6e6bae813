"""Symbols: computation graphs described before they run (MXNet's "Symbol Construction").

A :class:`Symbol` is a list of output entries of a graph of :class:`Node` objects, the
same nodes autograd records and the executor runs. Nothing is computed here: calling
``mx.sym.FullyConnected(data=x, num_hidden=10, name="fc1")`` only creates a node whose
inputs are ``x`` plus two new variables, ``fc1_weight`` and ``fc1_bias``: how a node is made
(parameters, names, inputs, auxiliary states) is :mod:`.creation`'s subject; :func:`create_symbol`
wraps the node's outputs in a Symbol.

Everything else reads the graph: ``list_arguments`` walks it depth first, ``infer_shape``
runs :mod:`framework.executor.infer` (through :mod:`.inference`), ``tojson`` writes
:mod:`.json_format`, ``optimize_for`` calls a backend (:mod:`.backends`), ``bind`` hands it
to the executor, and calling a symbol (``net(data=other)``) composes graphs. Variables are
made in :mod:`.variable`, and symbols are read back from JSON in :mod:`.loading`. The
methods that add operator nodes (``a + b``, ``a * 2``, ``a.reshape(...)``) are written in
:mod:`.methods` and installed on the class when ``mx.sym`` is imported.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..atomic_file import write_text_atomic
from ..context import current_context
from ..executor import bind, simple_bind
from ..operator.node import Entry, Node, topo_sort
from ..operator.params import NoParams, OperatorParamError
from . import backends, inference, json_format
from .attr_keys import expand_hidden, is_dunder, normalize_attr_key
from .creation import create_node
from .errors import NotImplementedForSymbol, SymbolError, SymbolTypeError  # noqa: F401 - importable from here
from .graph import VAR_VERSIONS, copy_graph, mutated_ids, output_name
from .json_format import HIDDEN_KEYS, attr_strings
from .outputs import SymbolOutputs, single_output

_STORAGE_TYPES = {"default": 0}


# ---------------------------------------------------------------------------- node creation
def create_symbol(
    op_name: str,
    hint: str,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    name: str | None = None,
    attr: dict | None = None,
) -> Symbol:
    """One operator node applied to symbols, as a Symbol: what every generated ``mx.sym.<op>`` calls
    (the arguments are :func:`~.creation.create_node`'s)."""
    return Symbol(create_node(op_name, hint, args, kwargs, name=name, attr=attr))


def call_op(op_name: str, *args: Any, **kwargs: Any) -> Symbol:
    """``mx.sym._internal.<op_name>(...)``: the hint is the lower-cased operator name."""
    name = kwargs.pop("name", None)
    attr = kwargs.pop("attr", None)
    return create_symbol(op_name, op_name.lower(), args, kwargs, name=name, attr=attr)


def Group(symbols: Sequence[Symbol], create_fn: Any = None) -> Symbol:
    """One symbol whose outputs are the outputs of ``symbols``, in order.

    ``create_fn`` is MXNet's class for the result (``mx.np``'s symbol or the legacy one): only
    ``Symbol`` (or None) exists in MXLab.
    """
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise SymbolTypeError("Group: expected a non-empty list of symbols as input")
    if create_fn not in (None, Symbol):
        raise SymbolTypeError(f"Group: create_fn must be Symbol (MXLab has no mx.np symbols), got {create_fn!r}")
    return Symbol([e for s in symbols for e in s.outputs])


# ---------------------------------------------------------------------------- the class
class Symbol(SymbolOutputs):
    """The outputs of a graph (``outputs``, a list of :class:`Entry`: node, output index), and
    everything MXNet's Symbol does with them (the operator methods come from :mod:`.methods`)."""

    __slots__ = ()

    # MXNet's C handle of the graph. MXLab has no C library: always None (documented).
    handle = None

    # ------------------------------------------------------------ identity and structure
    def __repr__(self) -> str:
        name = self.name
        if name is None:
            return f"<Symbol group [{', '.join(e.node.name for e in self.outputs)}]>"
        return f"<Symbol {name}>"

    __str__ = __repr__

    def __len__(self) -> int:
        return len(self.outputs)

    def __iter__(self) -> Iterator[Symbol]:
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index: int | str | slice) -> Symbol:
        """One output by position or by name (``"fc1_output"``); a slice gives a group."""
        count = len(self.outputs)
        if isinstance(index, slice):
            return Group([self[i] for i in range(*index.indices(count))])
        if isinstance(index, str):
            matches = [i for i, n in enumerate(self.list_outputs()) if n == index]
            if not matches:
                raise SymbolError(f"Cannot find output that matches name {index!r}; outputs: {self.list_outputs()}")
            if len(matches) > 1:
                raise SymbolError(f"There are multiple outputs with name {index!r}")
            index = matches[0]
        if not isinstance(index, int | np.integer) or isinstance(index, bool):
            raise SymbolTypeError(f"Symbol only supports integer or name indices, got {index!r}")
        if not -count <= index < count:
            raise IndexError(f"Symbol has {count} output(s), index {index} is out of range")
        return Symbol([self.outputs[int(index)]])

    def _single_node(self) -> Node | None:
        node = self.outputs[0].node
        return node if all(e.node is node for e in self.outputs) else None

    @property
    def name(self) -> str | None:
        """The node's name; None for a group of outputs of several nodes."""
        node = self._single_node()
        return None if node is None else node.name

    def _order(self) -> list[Node]:
        return topo_sort(self.outputs)

    def _inputs(self, which: str) -> list[Node]:
        order = self._order()
        mutated = mutated_ids(order) if which != "all" else set()
        nodes = [n for n in order if n.is_variable]
        if which == "args":
            return [n for n in nodes if n.id not in mutated]
        if which == "aux":
            return [n for n in nodes if n.id in mutated]
        return nodes

    def list_arguments(self) -> list[str]:
        """Names of the variables the graph reads (depth-first order), auxiliary states excluded."""
        return [n.name for n in self._inputs("args")]

    def list_auxiliary_states(self) -> list[str]:
        """Names of the variables operators write (BatchNorm's moving mean and variance)."""
        return [n.name for n in self._inputs("aux")]

    def list_inputs(self) -> list[str]:
        """Names of all variables: arguments and auxiliary states, depth-first."""
        return [n.name for n in self._inputs("all")]

    def list_outputs(self) -> list[str]:
        """``<node>_output`` (or ``<node>_<output name>``) per output; variables by their name."""
        return [output_name(e) for e in self.outputs]

    def optimize_for(
        self,
        backend: str,
        args: Any = None,
        aux: Any = None,
        ctx: Any = None,
        shape_dict: dict | None = None,
        type_dict: dict | None = None,
        stype_dict: dict | None = None,
        skip_infer: bool = False,
        **kwargs: Any,
    ) -> Symbol:
        """This symbol rewritten by ``backend``: a graph pass or a partitioner of a loaded library.

        ``args``/``aux`` (dicts of name -> NDArray, or lists in ``list_arguments`` order) give
        the known parameters, so the backend sees every node's shape and dtype
        (``__ext_shape__``/``__ext_dtype__``); ``shape_dict``/``type_dict`` add more. Keyword
        arguments are the backend's options, passed as strings. Parameters the backend creates
        are added to ``args``/``aux`` when those are dicts (as in MXNet 1.9.1). See
        :mod:`framework.symbol.backends` and docs/custom-operators.md.
        """
        return backends.optimize(
            self,
            backend,
            args,
            aux,
            ctx=ctx,
            shape_dict=shape_dict,
            type_dict=type_dict,
            stype_dict=stype_dict,
            skip_infer=skip_infer,
            options=kwargs,
        )

    def get_backend_symbol(self, backend: str) -> Symbol:
        """This symbol partitioned by ``backend`` without parameters (MXNet's ``get_backend_symbol``)."""
        return self.optimize_for(backend)

    def get_internals(self) -> Symbol:
        """A group of every visible output of every node of the graph, depth-first."""
        entries = []
        for node in self._order():
            if node.is_variable:  # a variable is read at its current version
                entries.append(Entry(node, 0, VAR_VERSIONS.get(node.id, 0)))
            else:
                entries += [Entry(node, i) for i in range(node.op.get_num_visible_outputs(node.attrs))]
        return Symbol(entries)

    def get_children(self) -> Symbol | None:
        """A group of the inputs of the output nodes; None for a variable."""
        seen: set[int] = set()
        entries: list[Entry] = []
        for e in self.outputs:
            if e.node.id not in seen:
                seen.add(e.node.id)
                entries += e.node.inputs
        return Symbol(entries) if entries else None

    # ------------------------------------------------------------ attributes
    def attr(self, key: str) -> str | None:
        """The attribute ``key`` of this (single-node) symbol, as a string; None if absent."""
        node = self._single_node()
        if node is None:
            return None
        if key == "name":
            return node.name
        attrs = attr_strings(node)
        if key in attrs:
            return attrs[key]
        if key in HIDDEN_KEYS:
            return attrs.get(f"__{key}__")
        return None

    def list_attr(self, recursive: bool = False) -> dict[str, str]:
        """The attributes of the (first) output node: parameters and hidden attributes."""
        if recursive:
            raise DeprecationWarning(
                "Symbol.list_attr with recursive=True has been deprecated. Please use attr_dict instead."
            )
        return expand_hidden(attr_strings(self.outputs[0].node))

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """``{node name: its attributes}`` for every node of the graph that has any."""
        result: dict[str, dict[str, str]] = {}
        for node in self._order():
            attrs = attr_strings(node)
            if attrs:
                result.setdefault(node.name, {}).update(expand_hidden(attrs))
        return result

    def _set_attr(self, **kwargs: str) -> None:
        """Set attributes of this single-node symbol; operator parameters are re-parsed."""
        node = self._single_node()
        if node is None:
            raise SymbolError("Symbol._set_attr only works for non-grouped symbols")
        updates: dict[str, str] = {}
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise SymbolError(f"Set Attr only accepts string values, got {key}={value!r}")
            updates[normalize_attr_key(key)] = value
        if node.op is None:
            node.attrs.extra.update(updates)
            return
        op = node.op
        unknown = [k for k in updates if not is_dunder(k) and k not in op.params.fields]
        if unknown and op.params is NoParams:  # nothing parses its attributes: MXNet keeps any (creation.py)
            node.attrs.extra.update(updates)
            return
        if unknown:
            raise OperatorParamError(
                f"{op.name} node {node.name!r}: unknown parameter(s) {unknown}; "
                f"parameters: {', '.join(op.params.fields)}"
            )
        strings = {**attr_strings(node), **updates}
        params = {k: v for k, v in strings.items() if not is_dunder(k)}
        parsed = op.params.parse(op.name, params)  # validates before anything changes
        node.attrs.extra.update(updates)
        node.attrs.parsed = parsed
        node.attrs.plan = None

    # ------------------------------------------------------------ inference (framework.symbol.inference)
    def infer_shape(self, *args: Any, **kwargs: Any) -> tuple[list | None, list | None, list | None]:
        """(argument shapes, output shapes, auxiliary shapes) from some known argument shapes.

        Known shapes come positionally (argument order) or by name. Returns ``(None, None,
        None)`` with a warning naming the arguments left unknown when the shapes cannot all be
        inferred. Conflicting shapes raise InferenceError.
        """
        return inference.infer_shape(self.outputs, args, kwargs)

    def infer_shape_partial(self, *args: Any, **kwargs: Any) -> tuple[list, list, list]:
        """Like infer_shape, but returns what is known: () for unknown shapes, 0 for unknown dims."""
        return inference.infer_shape_partial(self.outputs, args, kwargs)

    def infer_type(self, *args: Any, **kwargs: Any) -> tuple[list | None, list | None, list | None]:
        """(argument types, output types, auxiliary types) as NumPy types, from some known types."""
        return inference.infer_type(self.outputs, args, kwargs)

    def infer_type_partial(self, *args: Any, **kwargs: Any) -> tuple[list, list, list]:
        """Like infer_type, but returns None for the types it cannot infer."""
        return inference.infer_type_partial(self.outputs, args, kwargs)

    # ------------------------------------------------------------ serialization
    def tojson(self, remove_amp_cast: bool = True) -> str:
        """The graph in MXNet 1.x's JSON layout (loads in MXNet and in ``mx.sym.load_json``).

        ``remove_amp_cast`` is accepted for MXNet's signature: MXLab has no automatic mixed
        precision, so a graph never holds the ``amp_cast`` nodes it would remove.
        """
        return json_format.to_json(self.outputs)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        """Write ``tojson()`` to the file ``fname`` atomically (a crash leaves the old file intact)."""
        if not isinstance(fname, str):
            raise SymbolTypeError(f"save: fname must be a path string, got {fname!r}")
        write_text_atomic(fname, self.tojson(remove_amp_cast))

    def __getstate__(self) -> dict[str, str]:
        return {"handle": self.tojson()}

    def __setstate__(self, state: dict[str, str]) -> None:
        self.outputs = json_format.read_graph(state["handle"])

    def __copy__(self) -> Symbol:
        return Symbol(copy_graph(self.outputs))

    def __deepcopy__(self, memo: Any) -> Symbol:
        return Symbol(copy_graph(self.outputs))

    def debug_str(self) -> str:
        """A text dump of the graph: outputs, variables and each operator with its inputs."""
        lines = ["Symbol Outputs:"]
        lines += [f"\toutput[{i}]={e.node.name}({e.index})" for i, e in enumerate(self.outputs)]
        for node in self._order():
            if node.is_variable:
                lines.append(f"Variable:{node.name}")
                continue
            lines += ["--------------------", f"Op:{node.op.name}, Name={node.name}", "Inputs:"]
            for i, e in enumerate(node.inputs):
                version = f" version={e.version}" if e.node.is_variable else ""
                lines.append(f"\targ[{i}]={e.node.name}({e.index}){version}")
            attrs = attr_strings(node)
            if attrs:
                lines.append("Attrs:")
                lines += [f"\t{k}={v}" for k, v in sorted(attrs.items())]
            if node.control_deps:
                lines.append("Control deps:")
                lines += [f"\tcdep[{i}]={d.name}" for i, d in enumerate(node.control_deps)]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ execution (framework.executor)
    def bind(
        self,
        ctx: Any,
        args: Any,
        args_grad: Any = None,
        grad_req: Any = "write",
        aux_states: Any = None,
        group2ctx: Any = None,
        shared_exec: Any = None,
        **mxlab_options: Any,
    ) -> Any:
        """Bind arrays to the arguments (:func:`framework.executor.bind`, which documents each argument).

        ``group2ctx`` may only name this context (MXLab runs a graph on one device);
        ``mxlab_options`` are MXLab's keyword-only extras (``mirror``, ``plan_options``, ``bulk_size``).
        """
        return bind(self, ctx, args, args_grad, grad_req, aux_states, group2ctx, shared_exec, **mxlab_options)

    def simple_bind(
        self,
        ctx: Any,
        grad_req: Any = "write",
        type_dict: Any = None,
        stype_dict: Any = None,
        group2ctx: Any = None,
        shared_arg_names: Any = None,
        shared_exec: Any = None,
        shared_buffer: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Infer shapes from ``kwargs`` (name=shape), allocate and bind (:func:`framework.executor.simple_bind`)."""
        return simple_bind(
            self,
            ctx,
            grad_req,
            type_dict,
            stype_dict,
            group2ctx,
            shared_arg_names,
            shared_exec,
            shared_buffer,
            **kwargs,
        )

    def eval(self, ctx: Any = None, **kwargs: Any) -> list:
        """Bind ``kwargs`` (name -> NDArray) and run forward once: the list of outputs."""
        return self.bind(ctx or current_context(), kwargs).forward()

    # ------------------------------------------------------------ composition
    def __call__(self, *args: Any, **kwargs: Any) -> Symbol:
        """A copy of this graph with variables replaced: ``net(data=other)``."""
        s = self.__copy__()
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args: Any, name: str | None = None, **kwargs: Any) -> None:
        """Replace variables of this graph (in place) by the given single-output symbols."""
        if args and kwargs:
            raise SymbolTypeError(
                "compose only accepts input Symbols either as positional or keyword arguments, not both"
            )
        for value in (*args, *kwargs.values()):
            if not isinstance(value, Symbol):
                raise SymbolTypeError(f"Compose expects Symbols as arguments, got {value!r}")
        if args:
            raise SymbolError(
                "General composition only supports keyword arguments (as in MXNet): "
                f"call it as sym({self.list_inputs()[0] if self.list_inputs() else 'name'}=...)"
            )
        order = self._order()
        variables: dict[str, list[Node]] = {}
        for node in order:
            if node.is_variable:
                variables.setdefault(node.name, []).append(node)
        replace: dict[int, Entry] = {}
        for key, value in kwargs.items():
            if key not in variables:
                raise SymbolError(
                    f"compose: keyword argument name {key!r} not found; candidate arguments: {', '.join(variables)}"
                )
            entry = single_output(value, f"compose: keyword argument {key!r}")
            for node in variables[key]:
                replace[node.id] = entry
        for node in order:
            node.inputs = [replace.get(e.node.id, e) for e in node.inputs]
        self.outputs = [replace.get(e.node.id, e) for e in self.outputs]
        if name:
            node = self._single_node()
            if node is not None and not node.is_variable:
                node.attrs.name = name

    # ------------------------------------------------------------ copies
    def copy(self) -> Symbol:
        """A deep copy of the graph (MXNet's ``Symbol.copy``)."""
        return self.__copy__()

    def as_nd_ndarray(self) -> Symbol:
        """This symbol (MXNet converts ``mx.np`` symbols back; MXLab has only ``mx.sym`` symbols)."""
        return self


# ---------------------------------------------------------------------------- split_v2 (also a method)
def split_v2(ary: Symbol, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False) -> Symbol:
    """Split along ``axis`` at the given indices (a tuple) into a group of slices.

    MXNet's equal-sections form needs the axis length, which a symbol does not know: use
    ``split`` (``SliceChannel``) for that.
    """
    if isinstance(indices_or_sections, numbers.Integral):
        return call_op("split", ary, num_outputs=int(indices_or_sections), axis=axis, squeeze_axis=squeeze_axis)
    if not isinstance(indices_or_sections, tuple | list):
        raise SymbolTypeError(f"split_v2: indices_or_sections must be an int or a tuple, got {indices_or_sections!r}")
    bounds = [0, *(int(i) for i in indices_or_sections), None]
    parts = []
    for begin, end in itertools.pairwise(bounds):
        part = call_op("slice_axis", ary, axis=axis, begin=begin, end=end)
        parts.append(
            call_op("squeeze", part, axis=axis) if squeeze_axis and end is not None and end - begin == 1 else part
        )
    return Group(parts)
