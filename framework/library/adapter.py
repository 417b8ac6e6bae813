"""One library operator as a record of the operator registry (parameters, inference, compute, state).

:class:`LibraryOp` translates each registry attribute (see :mod:`framework.library`) into
calls of the library's C functions (:mod:`.abi`): parameters go through ``parseAttrs`` as
strings (:class:`OpenFields`), outputs the graph asks to add to or not to write are computed
into temporaries, and stateful instances live in a per-node state box that deletes them when
the node's attributes are garbage collected.
"""

from __future__ import annotations

import ctypes
import json
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base import MXLabError
from ..context import Context
from ..operator import registry
from ..operator.control_flow import Subgraph, SubgraphParams
from ..operator.grad import make_backward_node
from ..operator.infer import ShapeT, shape_assign, shape_known, type_assign
from ..operator.kernel import OpContext, Req
from ..operator.node import Entry, Node, NodeAttrs
from ..operator.params import Param, ParamSet
from ..resource import ResourceRequest
from ..symbol import load_json
from ..symbol.json_format import to_json
from .abi import (
    BWD,
    CODE_DTYPES,
    DEVICE_INDEX,
    DTYPE_CODES,
    FWD,
    MAX_NDIM,
    MAX_OPERATOR_ARRAYS,
    MUTATE,
    PARSE,
    SHAPE,
    STATE,
    STYPE,
    STYPE_NAMES,
    SUBGRAPH_OP,
    TYPE,
    Library,
    LibraryError,
    LibraryInferenceError,
    LibraryMetadataError,
    LibraryParamError,
    call_local,
    device_args,
    tensor_args,
)


# ------------------------------------------------------------------------------ parameters
class OpenFields(dict):
    """The ``fields`` of a parameter set that accepts any keyword as a string parameter.

    Library operators (and ``Custom``) learn their keywords only at call time, so the
    front ends must treat every non-hidden keyword as a parameter: membership is always
    true, lookups of undeclared names give a string :class:`Param`, and iteration yields
    only the declared fields (so generated signatures and docs list just those).
    """

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return Param(str, "", "an attribute passed through as a string") if isinstance(key, str) else default


def _make_param_class(op: LibraryOp) -> type[ParamSet]:
    """A ParamSet accepting any keyword (as a string) and validated by the library's parseAttrs.

    Like MXNet 1.9.1, a node may hold one subgraph (a partitioner's subgraph node does): it
    lives in the node's ``subgraphs`` (symbol JSON writes it there) and reaches the library
    as the attribute ``subgraph_sym_json``, the subgraph's JSON, added to every call's attributes.
    """

    class LibraryAttrs(SubgraphParams):
        __doc__ = f"Attributes of {op.name} (from {op.lib.name}): any keyword, passed as strings."
        needs_subgraphs = False
        subgraph_attribute = SUBGRAPH_KEY if op.subgraph_op else None

        @classmethod
        def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
            values = {str(k): (v if isinstance(v, str) else str(v)) for k, v in kwargs.items() if k != "subgraphs"}
            values.pop("num_args", None)  # the front ends' count of positional inputs, not for the library
            graphs = _held_subgraph(op, values, kwargs.get("subgraphs"))
            inst = cls(values if graphs is None else {**values, "subgraphs": graphs})
            # what the library sees: the string attributes, plus the subgraph as its JSON
            given = values if graphs is None else {**values, SUBGRAPH_KEY: to_json(graphs[0].heads)}
            keys = (ctypes.c_char_p * max(len(given), 1))(*[k.encode() for k in given])
            vals = (ctypes.c_char_p * max(len(given), 1))(*[v.encode() for v in given.values()])
            object.__setattr__(inst, "_c_attrs", (keys, vals, len(given)))
            object.__setattr__(inst, "_subgraph", None)
            num_in, num_out = ctypes.c_int(-1), ctypes.c_int(-1)
            if op.has(PARSE):
                ok = op.lib._opCallParseAttrs(op.index, keys, vals, len(given), num_in, num_out)
                op.lib.check(ok, op.name, "parseAttrs", cls=LibraryParamError)
            else:  # a subgraph operator without parseAttrs: its subgraph says how many inputs and outputs
                if graphs is None:
                    raise LibraryParamError(
                        f"library {op.lib.name}: subgraph operator {op.name!r} has no parseAttrs, so it needs a "
                        f"subgraph (a partitioned node's 'subgraphs', or the attribute {SUBGRAPH_KEY!r})"
                    )
                subgraph = _SubgraphInfo(graphs[0], given[SUBGRAPH_KEY])
                object.__setattr__(inst, "_subgraph", subgraph)
                num_in.value, num_out.value = len(subgraph.input_names), subgraph.num_outputs
            if not (0 <= num_in.value <= MAX_OPERATOR_ARRAYS and 1 <= num_out.value <= MAX_OPERATOR_ARRAYS):
                raise LibraryParamError(
                    f"library {op.lib.name}: operator {op.name!r}: parseAttrs set num_in={num_in.value}, "
                    f"num_out={num_out.value} (need 0 <= num_in and 1 <= num_out, both <= {MAX_OPERATOR_ARRAYS})"
                )
            object.__setattr__(inst, "_counts", (num_in.value, num_out.value))
            object.__setattr__(inst, "_states", _StateBox(op))
            object.__setattr__(inst, "_mutate", None)
            return inst

        def with_subgraphs(self, subgraphs: Sequence[Subgraph]) -> SubgraphParams:
            # parsed again: parseAttrs must see the new subgraph
            return type(self).parse(op.name, {**self.to_strings(), "subgraphs": subgraphs})

        def to_strings(self) -> dict[str, str]:
            return {k: v for k, v in self._values.items() if k != "subgraphs"}

        @classmethod
        def describe(cls) -> str:
            return "**kwargs : str\n    Attributes passed to the library's parseAttrs as strings."

    LibraryAttrs.__name__ = LibraryAttrs.__qualname__ = f"{op.name}Attrs"
    LibraryAttrs.fields = OpenFields()
    return LibraryAttrs


#: The attribute a library operator's subgraph reaches the library as (MX_STR_SUBGRAPH_SYM_JSON).
SUBGRAPH_KEY = "subgraph_sym_json"


def _held_subgraph(op: LibraryOp, values: dict[str, str], given: Any) -> tuple[Subgraph] | None:
    """The one subgraph a node holds: given as ``subgraphs=``, or, for a subgraph operator, as the
    attribute ``subgraph_sym_json`` (moved out of ``values``: the node keeps it in ``subgraphs``)."""
    where = f"library {op.lib.name}: operator {op.name!r}"
    text = values.pop(SUBGRAPH_KEY, None) if op.subgraph_op else None
    if given is not None and text is not None:
        raise LibraryParamError(f"{where}: give its subgraph once, as 'subgraphs' or as {SUBGRAPH_KEY!r}, not both")
    if text is not None:
        try:
            given = [Subgraph(load_json(text).outputs)]
            listed = [doc["nodes"][i]["name"] for doc in [json.loads(text)] for i in doc["arg_nodes"]]
        except (MXLabError, ValueError, KeyError, IndexError, TypeError) as err:
            raise LibraryParamError(f"{where}: attribute {SUBGRAPH_KEY!r} is not a symbol's JSON ({err})") from None
        # the node's inputs are in the text's order; the library will be handed the subgraph's own
        if listed != given[0].input_names:
            raise LibraryParamError(
                f"{where}: attribute {SUBGRAPH_KEY!r} lists its inputs as {listed}, but the subgraph reads them "
                f"depth first as {given[0].input_names}; the node's inputs must follow that order"
            )
    if given is None:
        return None
    graphs = tuple(given) if isinstance(given, (list, tuple)) else (given,)
    if len(graphs) != 1 or not isinstance(graphs[0], Subgraph):
        raise LibraryParamError(f"{where}: a library operator holds one subgraph, got {given!r:.80}")
    return graphs  # type: ignore[return-value]


class _SubgraphInfo:
    """The subgraph a subgraph operator node holds, as a library without parseAttrs needs it.

    Its input variables, depth first (the JSON's ``arg_nodes``), are the operator's inputs; its
    heads are the outputs. When the library gives no inferShape/inferType, MXLab infers them on
    this subgraph instead.
    """

    #: MX_STR_EXTRA_INPUTS: inputs a graph pass appended to the node beyond the subgraph's own
    EXTRA_KEY = "__ext_extra_inputs__"

    def __init__(self, graph: Subgraph, text: str) -> None:
        self.input_names = graph.input_names
        self.num_outputs = graph.num_outputs
        self.text = text
        self._symbol: Any = None

    def extra_inputs(self, attrs: NodeAttrs) -> int:
        """How many inputs a graph pass appended (the node's hidden attribute ``__ext_extra_inputs__``)."""
        value = attrs.extra.get(self.EXTRA_KEY, "0")
        try:
            count = int(value)
        except ValueError:
            count = -1
        if not 0 <= count <= MAX_OPERATOR_ARRAYS:
            raise LibraryParamError(f"node {attrs.name!r}: {self.EXTRA_KEY} must be a count of inputs, got {value!r}")
        return count

    def symbol(self) -> Any:
        if self._symbol is None:
            self._symbol = load_json(self.text)
        return self._symbol

    def infer(self, kind: str, known: list) -> list | None:
        """The subgraph's output shapes or types given its inputs' (``kind``: "shape" or "type")."""
        own = known[: len(self.input_names)]  # extra inputs (after the subgraph's own) play no part
        given = {n: k for n, k in zip(self.input_names, own, strict=True) if k is not None}
        method = "infer_shape_partial" if kind == "shape" else "infer_type_partial"
        _, outs, _ = getattr(self.symbol(), method)(**given)
        return outs


class _StateBox:
    """The stateful instances (one per device) of one node; deleted with the node's attributes."""

    def __init__(self, op: LibraryOp) -> None:
        self.handles: dict[tuple[str, int], int] = {}
        self.lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _destroy_states, op.lib._opDestroyOpState, self.handles)

    def get(self, op: LibraryOp, attrs: NodeAttrs, ctx: Context, inputs: list) -> int:
        key = (ctx.device_type, ctx.device_id)
        with self.lock:
            handle = self.handles.get(key)
            if handle is None:
                shapes = [tuple(a.shape) for a in inputs]
                types = [np.dtype(a.dtype).name for a in inputs]
                handle = self.handles[key] = op.create_state(attrs, ctx, shapes, types)
            return handle


def _destroy_states(destroy: Any, handles: dict) -> None:
    for handle in handles.values():
        destroy(handle)
    handles.clear()


# ------------------------------------------------------------------------------ one operator
class LibraryOp:
    """The registry attributes of one library operator (and of its ``_backward_`` twin)."""

    def __init__(self, lib: Library, index: int, name: str, flags: int) -> None:
        self.lib, self.index, self.name, self.flags = lib, index, name, flags
        self.backward_name = f"_backward_{name}"
        self.stateful = bool(flags & (STATE["cpu"] | STATE["gpu"]))
        #: a 1.9.1 subgraph operator (setIsSubgraphOp): parseAttrs and inference are optional
        self.subgraph_op = bool(flags & SUBGRAPH_OP)
        self.params = _make_param_class(self)
        #: stateful instances created so far (for tests and curious learners)
        self.num_states_created = 0

    def has(self, bit: int) -> bool:
        return bool(self.flags & bit)

    def validate(self) -> None:
        """Required functions present, and no clash with an operator already registered."""
        missing = [
            what
            for bit, what in ((PARSE, "parseAttrs"), (TYPE, "inferType"), (SHAPE, "inferShape"))
            if not self.has(bit) and not self.subgraph_op
        ]
        if not (self.has(FWD["cpu"]) or self.has(FWD["gpu"]) or self.stateful):
            missing.append("forward (setForward) or createOpState (setCreateOpState)")
        if missing:
            raise LibraryError(
                f"library {self.lib.name}: operator {self.name!r} is missing required function(s): "
                + ", ".join(missing)
            )
        for name in (self.name, self.backward_name):
            if registry.exists(name):
                owner = registry.get(name).front_door
                raise LibraryError(
                    f"library {self.lib.name}: operator {name!r} is already registered (by {owner}); "
                    "rename it in the library"
                )

    def devices(self, backward: bool) -> list[str]:
        bits = STATE if self.stateful else (BWD if backward else FWD)
        return [d for d in ("cpu", "gpu") if self.has(bits[d])]

    def differentiable(self) -> bool:
        return self.stateful or bool(self.devices(backward=True))

    # -------------------------------------------------------------- counts and names
    @staticmethod
    def counts(attrs: NodeAttrs) -> tuple[int, int]:
        """(inputs, outputs) of the node: parseAttrs' counts, or its subgraph's plus appended inputs."""
        num_in, num_out = attrs.parsed._counts  # type: ignore[union-attr]
        subgraph = attrs.parsed._subgraph  # type: ignore[union-attr]
        if subgraph is not None:
            num_in += subgraph.extra_inputs(attrs)
        return num_in, num_out

    @staticmethod
    def c_attrs(attrs: NodeAttrs) -> tuple:
        return attrs.parsed._c_attrs  # type: ignore[union-attr]

    def mutate_inputs(self, attrs: NodeAttrs) -> list[int]:
        parsed = attrs.parsed
        if parsed._mutate is None:  # type: ignore[union-attr]
            num_in, _ = self.counts(attrs)
            indices, count = (ctypes.c_int * max(num_in, 1))(), ctypes.c_int(0)
            ok = self.lib._opCallMutateInputs(self.index, *self.c_attrs(attrs), num_in, indices, count)
            self.lib.check(ok, self.name, "mutateInputs", attrs.name)
            if not 0 <= count.value <= num_in:
                raise LibraryMetadataError(
                    f"library {self.lib.name}: operator {self.name!r}: mutateInputs reported {count.value} "
                    f"indices, but the operator has {num_in} inputs"
                )
            found = [int(indices[i]) for i in range(count.value)]
            bad = [i for i in found if not 0 <= i < num_in]
            if bad:
                raise LibraryError(
                    f"library {self.lib.name}: operator {self.name!r}: mutateInputs returned index {bad[0]}, "
                    f"but the operator has {num_in} inputs"
                )
            object.__setattr__(parsed, "_mutate", found)
        return list(parsed._mutate)  # type: ignore[union-attr]

    # -------------------------------------------------------------- inference (forward)
    def _check_stype(self, attrs: NodeAttrs) -> None:
        num_in, num_out = self.counts(attrs)
        stypes = (ctypes.c_int * (num_in + num_out))(*([0] * num_in + [-1] * num_out))
        ok = self.lib._opCallInferSType(self.index, *self.c_attrs(attrs), stypes, num_in, num_out)
        self.lib.check(ok, self.name, "inferSType", attrs.name, LibraryInferenceError)
        for i in range(num_in + num_out):
            if stypes[i] not in (0, -1):
                what = f"input {i}" if i < num_in else f"output {i - num_in}"
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r} (node {attrs.name!r}): inferSType chose "
                    f"storage type {STYPE_NAMES.get(stypes[i], stypes[i])!r} for {what}; MXLab supports only "
                    "dense arrays (kDefaultStorage)"
                )

    def infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        num_in, num_out = self.counts(attrs)
        if self.has(STYPE):
            self._check_stype(attrs)
        if not all(shape_known(s) for s in in_shapes):
            return False  # the C function needs every input shape
        if not self.has(SHAPE):  # a subgraph operator: infer on its subgraph
            found = attrs.parsed._subgraph.infer("shape", list(in_shapes))  # type: ignore[union-attr]
            for i, shape in enumerate(found or []):
                if shape is not None:
                    shape_assign(out_shapes, i, tuple(shape), attrs.name, f"output {i}")
            return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))
        in_ndims = (ctypes.c_int * max(num_in, 1))(*[len(s) for s in in_shapes])
        dims = [int(d) for s in in_shapes for d in s]
        in_dims = (ctypes.c_uint * max(len(dims), 1))(*dims)
        out_ndims = (ctypes.c_int * num_out)(*([-1] * num_out))
        out_dims = (ctypes.c_uint * (num_out * MAX_NDIM))()
        ok = self.lib._opCallInferShape(
            self.index, *self.c_attrs(attrs), num_in, in_ndims, in_dims, num_out, out_ndims, out_dims
        )
        self.lib.check(
            ok, self.name, f"inferShape (input shapes {list(map(tuple, in_shapes))})", attrs.name, LibraryInferenceError
        )
        for i in range(num_out):
            if out_ndims[i] < 0:
                continue
            if out_ndims[i] > MAX_NDIM:
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r} (node {attrs.name!r}): inferShape gave output "
                    f"{i} {out_ndims[i]} dimensions; at most {MAX_NDIM} are allowed"
                )
            shape = tuple(int(out_dims[i * MAX_NDIM + d]) for d in range(out_ndims[i]))
            shape_assign(out_shapes, i, shape, attrs.name, f"output {i}")
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    def infer_type(self, attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        num_in, num_out = self.counts(attrs)
        if any(t is None for t in in_types):
            return False
        if not self.has(TYPE):  # a subgraph operator: infer on its subgraph
            found = attrs.parsed._subgraph.infer("type", list(in_types))  # type: ignore[union-attr]
            for i, t in enumerate(found or []):
                if t is not None:
                    type_assign(out_types, i, _dtype_name(t), attrs.name, f"output {i}")
            return all(t is not None for t in out_types)
        codes = []
        for i, t in enumerate(in_types):
            if t not in DTYPE_CODES:
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r} (node {attrs.name!r}): input {i} has dtype "
                    f"{t}, which lib_api.h cannot describe"
                )
            codes.append(DTYPE_CODES[t])
        codes += [DTYPE_CODES.get(t, -1) if t is not None else -1 for t in out_types]
        types = (ctypes.c_int * (num_in + num_out))(*codes)
        ok = self.lib._opCallInferType(self.index, *self.c_attrs(attrs), types, num_in, num_out)
        self.lib.check(ok, self.name, f"inferType (input types {list(in_types)})", attrs.name, LibraryInferenceError)
        for i in range(num_in + num_out):
            code = types[i]
            if code in (-1, 100):
                continue
            name = CODE_DTYPES.get(code)
            if name is None:
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r}: inferType produced unknown type code {code}"
                )
            if i < num_in:
                type_assign(in_types, i, name, attrs.name, f"input {i}")
            else:
                type_assign(out_types, i - num_in, name, attrs.name, f"output {i - num_in}")
        return all(t is not None for t in list(in_types) + list(out_types))

    # -------------------------------------------------------------- inference (backward)
    def backward_infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        """Inputs: ograds (like outputs), forward inputs, forward outputs; outputs: like the inputs."""
        num_in, num_out = self.counts(attrs)
        for i in range(num_out):  # ograd i ~ output i
            shape_assign(in_shapes, i, in_shapes[num_out + num_in + i], attrs.name, f"output gradient {i}")
            shape_assign(in_shapes, num_out + num_in + i, in_shapes[i], attrs.name, f"output {i}")
        for i in range(num_in):  # input gradient i ~ input i
            shape_assign(out_shapes, i, in_shapes[num_out + i], attrs.name, f"gradient of input {i}")
            shape_assign(in_shapes, num_out + i, out_shapes[i], attrs.name, f"input {i}")
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    def backward_infer_type(self, attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        num_in, num_out = self.counts(attrs)
        for i in range(num_out):
            type_assign(in_types, i, in_types[num_out + num_in + i], attrs.name, f"output gradient {i}")
            type_assign(in_types, num_out + num_in + i, in_types[i], attrs.name, f"output {i}")
        for i in range(num_in):
            type_assign(out_types, i, in_types[num_out + i], attrs.name, f"gradient of input {i}")
            type_assign(in_types, num_out + i, out_types[i], attrs.name, f"input {i}")
        return all(t is not None for t in list(in_types) + list(out_types))

    def gradient(self, node: Node, out_grads: list[Entry]) -> list[Entry]:
        outputs = [Entry(node, i) for i in range(node.num_outputs())]
        backward = make_backward_node(node, self.backward_name, list(out_grads) + list(node.inputs) + outputs)
        return [Entry(backward, i) for i in range(len(node.inputs))]

    # -------------------------------------------------------------- state
    def create_state(
        self, attrs: NodeAttrs, ctx: Context, in_shapes: list | None = None, in_types: list | None = None
    ) -> int:
        """A new CustomStatefulOp instance for ``ctx`` (opaque pointer), via createOpState.

        The 1.9.1 API's createOpState also sees the device id and the input shapes and types.
        """
        device = ctx.device_type
        if not self.has(STATE[device]):
            raise LibraryError(
                f"library {self.lib.name}: operator {self.name!r} has no createOpState for {device} "
                f"(registered for {', '.join(self.devices(False)) or 'no device'})"
            )
        handle = ctypes.c_void_p()
        if self.lib.api_1_9:
            shapes = [tuple(int(d) for d in s) for s in (in_shapes or [])]
            ndims = (ctypes.c_int * max(len(shapes), 1))(*[len(s) for s in shapes])
            dims = [d for s in shapes for d in s]
            flat = (ctypes.c_uint * max(len(dims), 1))(*dims)
            codes = (ctypes.c_int * max(len(shapes), 1))(*[DTYPE_CODES.get(_dtype_name(t), -1) for t in in_types or []])
            ok = self.lib._opCallCreateOpState(
                self.index,
                DEVICE_INDEX[device],
                *self.c_attrs(attrs),
                ctx.device_id,
                len(shapes),
                ndims,
                flat,
                codes,
                handle,
            )
        else:
            ok = self.lib._opCallCreateOpState(self.index, DEVICE_INDEX[device], *self.c_attrs(attrs), handle)
        self.lib.check(ok, self.name, f"createOpState ({device})", attrs.name)
        self.num_states_created += 1
        return int(handle.value)

    # -------------------------------------------------------------- compute
    def forward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
        self._compute(True, attrs, op_ctx, inputs, req, outputs)

    def backward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
        self._compute(False, attrs, op_ctx, inputs, req, outputs)

    def _compute(
        self, is_forward: bool, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list
    ) -> None:
        xp, ctx = op_ctx.xp, op_ctx.ctx
        step = "forward" if is_forward else "backward"
        in_c = [xp.ascontiguousarray(a) for a in inputs]
        # Outputs the C code may overwrite directly, or temporaries (add / null / non-contiguous).
        out_c = []
        for out, r in zip(outputs, req, strict=True):
            if r is Req.ADD:
                out_c.append(xp.zeros(out.shape, out.dtype))
            elif r is Req.NULL or not out.flags.c_contiguous:
                out_c.append(xp.empty(out.shape, out.dtype))
            else:
                out_c.append(out)
        tensor_and_device_args = (
            *tensor_args(in_c, self.lib, self.name, "input"),
            *tensor_args(out_c, self.lib, self.name, "output"),
            *device_args(ctx, getattr(op_ctx.stream, "ptr", None)),
        )
        if self.lib.api_1_9:  # OpResource's random generators are seeded from the device's generator
            seed = int(op_ctx.random_generator(self.name).integers(0, 2**63 - 1))
            tensor_and_device_args = (*tensor_and_device_args, seed)
        call_local.buffers, call_local.ctx = [], ctx
        try:
            if self.stateful:
                handle = attrs.parsed._states.get(self, attrs, ctx, in_c)  # type: ignore[union-attr]
                ok = self.lib._opCallFStatefulCompute(int(is_forward), handle, *tensor_and_device_args)
                self.lib.check(ok, self.name, "Forward" if is_forward else "Backward", attrs.name)
            else:
                device = ctx.device_type
                have = self.devices(backward=not is_forward)
                if device not in have:
                    raise LibraryError(
                        f"library {self.lib.name}: operator {self.name!r} has no {step} for {device} "
                        f"(registered for {', '.join(have) or 'no device'})"
                    )
                ok = self.lib._opCallFCompute(
                    self.index,
                    int(is_forward),
                    DEVICE_INDEX[device],
                    *self.c_attrs(attrs),
                    *tensor_and_device_args,
                )
                self.lib.check(ok, self.name, f"{step} ({device})", attrs.name)
        finally:
            call_local.buffers, call_local.ctx = [], None
        for out, tmp, r in zip(outputs, out_c, req, strict=True):
            if tmp is out or r is Req.NULL:
                continue
            if r is Req.ADD:
                out[...] += tmp
            else:
                out[...] = tmp

    # -------------------------------------------------------------- registration
    def register(self) -> None:
        counts = self.counts
        forward_devices = self.devices(backward=False)
        op = (
            registry.register(self.name)
            .describe(f"Custom operator {self.name} loaded from {self.lib.path}.")
            .set_params(self.params)
            .set_num_inputs(lambda attrs: counts(attrs)[0])
            .set_num_outputs(lambda attrs: counts(attrs)[1])
            .set_key_var_num_args("num_args")  # inputs are positional: mx.nd.op(*arrays, **attrs)
            .set_infer_shape(self.infer_shape)
            .set_infer_type(self.infer_type)
            .set_compute(self.forward, forward_devices)
        )
        if self.lib.api_1_9:
            op.set_resource_request(lambda attrs: [ResourceRequest.RANDOM])
        if self.has(MUTATE):
            op.set_mutate_inputs(self.mutate_inputs)
        op.front_door = f"library {self.lib.name}"
        if self.stateful:
            op.create_state = self.create_state  # also tells the mirror pass not to recompute it
        if not self.differentiable():
            return
        op.set_gradient(self.gradient)
        backward = (
            registry.register(self.backward_name)
            .describe(f"Backward of {self.name} (library {self.lib.name}).")
            .set_params(self.params)
            .set_num_inputs(lambda attrs: counts(attrs)[0] + 2 * counts(attrs)[1])
            .set_num_outputs(lambda attrs: counts(attrs)[0])
            .set_infer_shape(self.backward_infer_shape)
            .set_infer_type(self.backward_infer_type)
            .set_compute(self.backward, self.devices(backward=True))
            .set_is_backward()
        )
        if self.lib.api_1_9:
            backward.set_resource_request(lambda attrs: [ResourceRequest.RANDOM])
        backward.front_door = op.front_door
        if self.stateful:
            backward.create_state = self.create_state


def _dtype_name(t: Any) -> str:
    """A dtype's name ("float32") whether it is given as a name, a NumPy dtype or a type."""
    return np.dtype(t).name
