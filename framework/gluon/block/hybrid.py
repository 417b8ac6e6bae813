"""``HybridBlock``: one ``hybrid_forward`` for both halves, traced to a cached graph on ``hybridize()``.

Also the nested-input helpers that turn (lists of) arrays or symbols into the flat lists a
graph takes and back, which :mod:`.symbol_block` shares.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from ...base import MXLabError
from ...executor.cached_op import CachedOp
from ...ndarray import io as nd_io
from ...ndarray.ndarray import NDArray
from ...symbol.backends import get_backend
from ...symbol.symbol import Symbol
from ..parameter import DeferredInitializationError, ParameterDict
from .base import Block, BlockError


# ----------------------------------------------------------------------------- nested inputs
def flatten_args(args: Any, what: str) -> tuple[list, Any]:
    """Nested lists of arrays/symbols (or None) -> a flat list and the format to rebuild them."""
    if args is None:  # an optional input left out: kept in place, never a graph input
        return [None], -1
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        length = len(args.list_outputs())
        return [args], length if length > 1 else 0
    if not isinstance(args, list | tuple):
        raise BlockError(
            f"When hybridized, the {what} of HybridBlock must be (nested) list of Symbol or NDArray, "
            f"but got {args!r} of type {type(args).__name__}"
        )
    flat, formats = [], []
    for item in args:
        items, fmt = flatten_args(item, what)
        flat.extend(items)
        formats.append(fmt)
    return flat, formats


def regroup_args(args: list, fmt: Any) -> tuple[Any, list]:
    """Inverse of :func:`flatten_args`: (nested structure, the arguments left over)."""
    if isinstance(fmt, int):
        if fmt in (0, -1):
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    result = []
    for item in fmt:
        value, args = regroup_args(args, item)
        result.append(value)
    return result, args


# ----------------------------------------------------------------------------- HybridBlock


class HybridBlock(Block):
    """A Block whose ``hybrid_forward(F, x, *args, **params)`` runs on NDArrays or traces to a Symbol."""

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._cached_graph: tuple = ()
        self._graph_optimized = False
        self._cached_op: CachedOp | None = None
        self._cached_op_args: list[tuple[bool, Any]] = []
        self._out_format: Any = None
        self._in_format: Any = None
        self._active = False
        self._flags: list[tuple[str, Any]] = []
        self._callback: Any = None  # register_op_hook's callback, handed to the CachedOp at each call
        self._monitor_all = False
        #: the optimize_for backend (a loaded library's pass or partitioner) and its options
        self._backend: str | None = None
        self._backend_opts: dict[str, Any] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block: Block, name: str | None = None) -> None:
        if not isinstance(block, HybridBlock):
            raise BlockError(
                f"Children of HybridBlock must also be HybridBlock, but {block!r} has type {type(block)}. "
                "If you are using Sequential, please try HybridSequential instead."
            )
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self) -> None:
        self._cached_graph = ()
        self._graph_optimized = False
        self._cached_op = None
        self._cached_op_args = []

    def _runs_as_graph(self) -> bool:
        return self._active

    def hybridize(
        self,
        active: bool = True,
        backend: str | None = None,
        backend_opts: dict[str, Any] | None = None,
        clear: bool = True,
        partition_if_dynamic: bool = True,
        static_alloc: bool = False,
        static_shape: bool = False,
        inline_limit: int = 2,
        forward_bulk_size: int | None = None,
        backward_bulk_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Run this block (and its children) as a cached graph from the next call on.

        MXNet 1.9.1's signature: ``static_alloc``/``static_shape``/``inline_limit`` and the bulk
        sizes become the CachedOp's flags (see :mod:`framework.executor.cached_op`); ``clear``
        drops the graph traced (and optimized) so far; without it a new ``backend`` applies on top
        of the graph the previous one optimized, as in MXNet. ``backend`` names a graph pass or partitioner of a loaded
        extension library (``mx.library.load``): the traced graph goes through
        ``Symbol.optimize_for(backend, **backend_opts)`` before it is cached; other keyword
        arguments are backend options too, as MXNet 1.9.1 still accepts them.
        ``partition_if_dynamic`` is accepted for compatibility (MXLab's graphs have static shapes).
        """
        if backend is None and (backend_opts or kwargs):
            raise BlockError(
                f"{self.name}: hybridize: backend options {sorted({**(backend_opts or {}), **kwargs})} given without "
                "a backend"
            )
        if backend is not None:
            get_backend(backend)  # an unknown name fails here, naming the registered backends
        self._backend = backend
        self._backend_opts = {**(backend_opts or {}), **kwargs}
        self._active = bool(active)
        if static_shape and not static_alloc:
            warnings.warn(f"{self.name}: static_shape=True is meant to be used with static_alloc=True", stacklevel=2)
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape), ("inline_limit", inline_limit)]
        if forward_bulk_size is not None:
            self._flags.append(("forward_bulk_size", forward_bulk_size))
        if backward_bulk_size is not None:
            self._flags.append(("backward_bulk_size", backward_bulk_size))
        if clear:
            self._clear_cached_op()
        elif backend is not None:  # keep the graph optimized so far: the new backend applies on top of it
            self._cached_op = None
            self._graph_optimized = False
        options: dict[str, Any] = {"static_alloc": static_alloc, "static_shape": static_shape, "clear": clear}
        options.update(inline_limit=inline_limit, forward_bulk_size=forward_bulk_size)
        options.update(backward_bulk_size=backward_bulk_size)
        super().hybridize(active, **options)

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        super().cast(dtype)

    def register_op_hook(self, callback: Any, monitor_all: bool = False) -> None:
        """``callback(name, op_name, array)`` for every operator the cached graph runs, from the next call on.

        The hook acts while this block runs hybridized (an imperative call runs no graph, as in
        MXNet); children get it too, for when they run as graphs of their own.
        """
        if callback is not None and not callable(callback):
            raise BlockError(f"{self.name}: register_op_hook needs callable(name, op_name, array), got {callback!r}")
        self._callback = callback
        self._monitor_all = bool(monitor_all)
        super().register_op_hook(callback, monitor_all)

    def _structure_entry(self) -> dict[str, Any]:
        entry = super()._structure_entry()
        if not self._cached_graph:
            entry["hybridized"] = False
            return entry
        inputs, out = self._cached_graph
        entry.update(in_format=self._in_format, out_format=self._out_format)
        entry.update(inputs=[i.tojson() for i in inputs], symbol=out.tojson(), hybridized=True)
        return entry

    def _restore_structure(self, entry: dict[str, Any]) -> None:
        if not entry.get("hybridized"):
            return
        self._clear_cached_op()
        self._in_format, self._out_format = entry["in_format"], entry["out_format"]
        self._cached_graph = [sym.load_json(i) for i in entry["inputs"]], sym.load_json(entry["symbol"])
        self._active = True

    # ------------------------------------------------------------------ tracing
    def _trace(self, inputs: list[Symbol]) -> Any:
        """``hybrid_forward`` with F = mx.sym: the block as a Symbol (errors name the block)."""
        params = {name: p.var() for name, p in self._reg_params.items()}
        with self.name_scope():
            try:
                return self.hybrid_forward(sym, *inputs, **params)
            except BlockError:
                raise
            except Exception as err:
                raise BlockError(
                    f"{self.name} ({type(self).__name__}): hybrid_forward failed while tracing it with symbols "
                    f"(F = mx.sym): {type(err).__name__}: {err}. A hybridized block may use only F.* operators "
                    "and Symbol methods on its inputs (no NumPy, .asnumpy() or Python control flow on values)."
                ) from err

    def _get_graph(self, *args: Any) -> tuple[list[Symbol], Symbol]:
        if not self._cached_graph:
            flat, self._in_format = flatten_args(list(args), "input")
            count = sum(a is not None for a in flat)
            if count == 0:
                raise BlockError(f"{self.name}: a hybridized block needs at least one input that is not None")
            names = iter([f"data{i}" for i in range(count)] if count > 1 else ["data"])
            placed = [None if a is None else sym.var(next(names)) for a in flat]
            inputs = [v for v in placed if v is not None]
            grouped, _ = regroup_args(placed, self._in_format)
            out = self._trace(grouped)
            outputs, self._out_format = flatten_args(out, "output")
            self._cached_graph = inputs, (sym.Group(outputs) if len(outputs) > 1 else outputs[0])
        return self._cached_graph

    def infer_shape(self, *args: Any) -> None:
        """Fill in the unknown dimensions of the parameters from the shapes of ``args``."""
        self._infer_attrs("infer_shape_partial", "shape", *args)

    def infer_type(self, *args: Any) -> None:
        """Set the parameters' dtypes from the dtypes of ``args``."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _infer_attrs(self, method: str, attr: str, *args: Any) -> None:
        inputs, out = self._get_graph(*args)
        flat, _ = flatten_args(list(args), "input")
        real = [a for a in flat if a is not None]
        given = {str(i.name): getattr(a, attr) for i, a in zip(inputs, real, strict=True)}
        arg_attrs, _, aux_attrs = getattr(out, method)(**given)
        if arg_attrs is None:
            raise BlockError(f"{self.name}: cannot infer the {attr} of the parameters from inputs {given}")
        found = dict(zip(out.list_arguments(), arg_attrs, strict=True))
        found.update(zip(out.list_auxiliary_states(), aux_attrs, strict=True))
        for param in self.collect_params().values():
            if param.name in found and found[param.name] is not None:
                setattr(param, attr, found[param.name])

    def _deferred_infer_shape(self, *args: Any) -> None:
        try:
            self.infer_shape(*args)
        except Exception as err:
            raise BlockError(
                f"{self.name}: deferred initialization failed because shape cannot be inferred: {err}"
            ) from err

    # ------------------------------------------------------------------ running
    def optimize_for(
        self,
        x: Any,
        *args: Any,
        backend: str | None = None,
        backend_opts: dict[str, Any] | None = None,
        clear: bool = False,
        partition_if_dynamic: bool = True,
        static_alloc: bool = False,
        static_shape: bool = False,
        inline_limit: int = 2,
        forward_bulk_size: int | None = None,
        backward_bulk_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Hybridize with ``backend`` and partition the graph now, for inputs like ``x, *args``.

        ``clear=False`` (MXNet's default here) applies ``backend`` on top of an earlier
        ``optimize_for``'s result; ``clear=True`` starts again from the traced graph.

        Nothing is computed: the block is traced, the graph goes through the backend (a loaded
        library's graph pass or partitioner, see ``Symbol.optimize_for``) with the inputs' and
        initialized parameters' shapes, and the result is cached (``export`` writes it).
        """
        if backend is None:
            raise BlockError(f"{self.name}: optimize_for needs a backend (a loaded library's pass or partitioner)")
        self.hybridize(
            True,
            backend,
            backend_opts,
            clear=clear,
            partition_if_dynamic=partition_if_dynamic,
            static_alloc=static_alloc,
            static_shape=static_shape,
            inline_limit=inline_limit,
            forward_bulk_size=forward_bulk_size,
            backward_bulk_size=backward_bulk_size,
            **kwargs,
        )
        self._build_cache(x, *args)

    def _optimized_graph(self, data: list[Symbol], out: Symbol, *args: Any) -> Symbol:
        """``out`` through the hybridize backend, given the input arrays and the initialized parameters."""
        flat = [a for a in flatten_args(list(args), "input")[0] if a is not None]
        known: dict[str, Any] = {str(d.name): a for d, a in zip(data, flat, strict=True)}
        ctx = flat[0].context
        for name, param in self.collect_params().items():
            try:
                known[name] = param.data(ctx)
            except DeferredInitializationError:
                continue  # its shape follows from the others
        wanted = set(out.list_inputs())
        given = {k: v for k, v in known.items() if k in wanted}
        arrays = dict(given)  # optimize_for adds the parameters a backend creates
        optimized = out.optimize_for(self._backend, args=arrays, ctx=ctx, **self._backend_opts)
        created = sorted(set(arrays) - set(given))
        if created:
            raise BlockError(
                f"{self.name}: backend {self._backend!r} created parameters {created}; MXLab's Gluon blocks cannot "
                "take new parameters from a backend (use Symbol.optimize_for with an args dict)"
            )
        return optimized

    def _build_cache(self, *args: Any) -> None:
        """The CachedOp of the traced graph, told which inputs are data and which parameters."""
        data, out = self._get_graph(*args)
        if self._backend is not None and not self._graph_optimized:
            out = self._optimized_graph(data, out, *args)
            self._cached_graph = data, out  # export writes the optimized graph
            self._graph_optimized = True
        data_names = {d.name: i for i, d in enumerate(data)}
        params = self.collect_params()
        input_names = out.list_inputs()
        unknown = [n for n in input_names if n not in params and n not in data_names]
        if unknown:
            raise BlockError(f"{self.name}: unknown input(s) to HybridBlock: {unknown}")
        unused = [f"{i}-th" for name, i in data_names.items() if name not in input_names]
        if unused:
            warnings.warn(
                f"The {', '.join(unused)} input to HybridBlock is not used by any computation. Is this intended?",
                stacklevel=4,
            )
        unused_params = [n for n in params if n not in input_names]
        if unused_params:
            warnings.warn(
                f"Parameter {', '.join(unused_params)} is not used by any computation. Is this intended?", stacklevel=4
            )
        data_indices, param_indices = [], []
        self._cached_op_args = []
        for i, name in enumerate(input_names):
            if name in data_names:
                data_indices.append(i)
                self._cached_op_args.append((True, data_names[name]))
            else:
                param_indices.append(i)
                self._cached_op_args.append((False, params[name]))
        flags = [("data_indices", data_indices), ("param_indices", param_indices), *self._flags]
        self._cached_op = CachedOp(out, flags)

    def _call_cached_op(self, *args: Any) -> Any:
        if self._cached_op is None:
            self._build_cache(*args)
        assert self._cached_op is not None
        flat, fmt = flatten_args(list(args), "input")
        if fmt != self._in_format:
            raise BlockError(f"{self.name}: invalid input format {fmt}, the block was traced with {self._in_format}")
        flat = [a for a in flat if a is not None]  # the graph's inputs, in order
        ctx = flat[0].context
        try:
            cargs = [flat[i] if is_arg else i.data(ctx) for is_arg, i in self._cached_op_args]
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            cargs = []
            for is_arg, item in self._cached_op_args:
                if not is_arg:
                    item._finish_deferred_init()
                cargs.append(flat[item] if is_arg else item.data(ctx))
        self._cached_op.register_op_hook(self._callback, self._monitor_all)
        try:
            out = self._cached_op(*cargs)
        except MXLabError as err:
            hint = self._dtype_hint(flat)
            raise BlockError(f"{self.name} ({type(self).__name__}, hybridized): {err}{hint}") from err
        outputs = [out] if isinstance(out, NDArray) else out
        return regroup_args(outputs, self._out_format)[0]

    def forward(self, x: Any, *args: Any) -> Any:
        """NDArrays: run (imperatively, or the cached graph when hybridized); Symbols: trace."""
        flat = [a for a in flatten_args([x, *args], "input")[0] if a is not None]
        has_symbol = any(isinstance(a, Symbol) for a in flat)
        has_ndarray = any(isinstance(a, NDArray) for a in flat)
        if has_symbol and has_ndarray:
            raise BlockError(
                f"{self.name}: in HybridBlock, there must be one NDArray or one Symbol in the input. "
                "Please check the type of the args."
            )
        if has_symbol:
            return self._trace([x, *args])
        ctx = flat[0].context
        if self._active:
            return self._call_cached_op(x, *args)
        try:
            params = {name: p.data(ctx) for name, p in self._reg_params.items()}
        except DeferredInitializationError:
            self._deferred_infer_shape(x, *args)
            for p in self._reg_params.values():
                p._finish_deferred_init()
            params = {name: p.data(ctx) for name, p in self._reg_params.items()}
        try:
            return self.hybrid_forward(nd, x, *args, **params)
        except MXLabError as err:
            if isinstance(err, BlockError):
                raise
            hint = self._dtype_hint(flat)
            raise BlockError(f"{self.name} ({type(self).__name__}): {err}{hint}") from err

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward")

    def _dtype_hint(self, inputs: list[Any]) -> str:
        """A hint when floating-point inputs and parameters differ in dtype (a batch made as float64)."""
        given = {np.dtype(a.dtype).name for a in inputs if isinstance(a, NDArray) and np.dtype(a.dtype).kind == "f"}
        params = {np.dtype(p.dtype).name for p in self.collect_params().values()}
        if not given or not params or given <= params:  # no parameters: no dtype to disagree with
            return ""
        return (
            f" (the inputs are {sorted(given)} but the parameters {sorted(params)}: make the batch in the "
            "parameters' dtype (mx.nd.array(..., dtype='float32')), or cast the block with net.cast())"
        )

    # ------------------------------------------------------------------ export
    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> tuple[str, str]:
        """Write ``path-symbol.json`` and ``path-%04d.params`` (``arg:``/``aux:`` names), as MXNet does."""
        if not self._cached_graph:
            raise BlockError(
                f"{self.name}: please first call block.hybridize() and then run forward with this block at least "
                "once before calling export."
            )
        graph = self._cached_graph[1]
        symbol_file = f"{path}-symbol.json"
        graph.save(symbol_file)
        arg_names = set(graph.list_arguments())
        aux_names = set(graph.list_auxiliary_states())
        arg_dict = {}
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = param._reduce()
            elif name in aux_names:
                arg_dict[f"aux:{name}"] = param._reduce()
        params_file = f"{path}-{epoch:04d}.params"
        nd_io.save(params_file, arg_dict)
        return symbol_file, params_file
