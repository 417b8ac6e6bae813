"""Blocks: Gluon's layers and models, and ``hybridize``, the bridge to the graph executor.

A :class:`Block` is a piece of a network with parameters and child blocks. Assigning a
Block or a Parameter to an attribute registers it (``self.dense = nn.Dense(10)``), so
``collect_params`` finds every parameter of the tree. Names follow MXNet 1.x: a block
gets a prefix (``dense0_``) from the name scope it is created in, and its parameters are
``prefix + name`` (``dense0_weight``); children created inside ``with self.name_scope():``
get the parent's prefix in front (``hybridsequential0_dense0_``).

A :class:`HybridBlock` writes its computation once, ``hybrid_forward(F, x, **params)``,
for both halves of MXNet: called with NDArrays, ``F`` is ``mx.nd`` and every operator is
pushed to the engine as it is called (imperative). After ``hybridize()``, the next call
**traces** the block: it calls ``hybrid_forward`` with ``F = mx.sym`` on symbol variables
(``data``, and each parameter's ``var()``), which builds a Symbol of the whole block,
children included. That Symbol becomes a :class:`~framework.executor.cached_op.CachedOp`,
and every later call runs the cached, memory-planned graph (see docs/gluon.md).

The first call also finishes **deferred initialization**: the parameters whose shapes
had unknown (0) dimensions get them from the symbol's shape inference, given the
shapes of the actual inputs.

:class:`SymbolBlock` wraps an existing Symbol (an export loaded with
``SymbolBlock.imports``) as a block.
"""

from __future__ import annotations

import copy
import re
import threading
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from .. import initializer
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXLabError
from ..context import Context
from ..executor.cached_op import CachedOp
from ..ndarray import io as nd_io
from ..ndarray.ndarray import NDArray
from ..symbol import naming
from ..symbol.symbol import Symbol
from .parameter import DeferredInitializationError, Parameter, ParameterDict, _brief_print_list


class BlockError(MXLabError, ValueError):
    """A block was misused or failed; the message names the block."""


# ----------------------------------------------------------------------------- name scopes
class _BlockScope:
    """The name scope of a block: children created inside get prefixes ``<hint><count>_`` in it."""

    _current = threading.local()

    def __init__(self, block: Block) -> None:
        self._block = block
        self._counter: dict[str, int] = {}
        self._old_scope: _BlockScope | None = None
        self._name_scope: naming.Prefix | None = None

    @staticmethod
    def create(prefix: str | None, params: ParameterDict | None, hint: str) -> tuple[str, ParameterDict]:
        """The prefix and parameter dictionary of a new block, from the enclosing scope."""
        current: _BlockScope | None = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = naming.current().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self) -> _BlockScope:
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = naming.Prefix(self._block.prefix)  # symbols traced inside get the prefix too
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._block._empty_prefix:
            return
        assert self._name_scope is not None
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


# ----------------------------------------------------------------------------- hooks
class HookHandle:
    """Returned by ``register_forward_hook``: ``detach()`` removes the hook."""

    _next_id = 0

    def __init__(self) -> None:
        self._hooks: OrderedDict | None = None
        self._id = HookHandle._next_id
        HookHandle._next_id += 1

    def attach(self, hooks: OrderedDict, hook: Callable) -> None:
        if self._hooks is not None:
            raise BlockError("HookHandle: the handle is already attached")
        self._hooks = hooks
        hooks[self._id] = hook

    def detach(self) -> None:
        if self._hooks is not None and self._id in self._hooks:
            del self._hooks[self._id]
        self._hooks = None

    def __enter__(self) -> HookHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()


# ----------------------------------------------------------------------------- nested inputs
def _flatten(args: Any, what: str) -> tuple[list, Any]:
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
        items, fmt = _flatten(item, what)
        flat.extend(items)
        formats.append(fmt)
    return flat, formats


def _regroup(args: list, fmt: Any) -> tuple[Any, list]:
    """Inverse of :func:`_flatten`: (nested structure, the arguments left over)."""
    if isinstance(fmt, int):
        if fmt in (0, -1):
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    result = []
    for item in fmt:
        value, args = _regroup(args, item)
        result.append(value)
    return result, args


def _indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


# ----------------------------------------------------------------------------- Block
class Block:
    """The base class of layers and models (MXNet's ``gluon.Block``): implement ``forward``."""

    #: Containers (Sequential) only run their children: ``summary`` lists the children instead.
    _is_container: ClassVar[bool] = False

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children: OrderedDict[str, Block] = OrderedDict()
        self._reg_params: dict[str, Parameter] = {}
        self._forward_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._forward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()

    def __repr__(self) -> str:
        children = "\n".join(
            f"  ({key}): {_indent(repr(block), 2)}" for key, block in self.__dict__.items() if isinstance(block, Block)
        )
        return f"{type(self).__name__}(\n{children}\n)"

    def __setattr__(self, name: str, value: Any) -> None:
        """Registers Blocks and Parameters assigned to attributes."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, Parameter | Block) and not isinstance(value, type(existing)):
                raise TypeError(
                    f"Changing attribute type for {name} from {type(existing)} to {type(value)} is not allowed."
                )
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise BlockError(
                    f"{self.name}: overriding Parameter attribute {name} is not allowed. If you want to share "
                    "parameters between blocks, please set 'params' at Block construction instead."
                )
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self) -> str:
        return type(self).__name__.lower()

    @property
    def prefix(self) -> str:
        """Prefix of this block's parameters and children (``dense0_``)."""
        return self._prefix

    @property
    def name(self) -> str:
        return self._name

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (children's not included: see ``collect_params``)."""
        return self._params

    def name_scope(self) -> _BlockScope:
        """``with self.name_scope():`` around the creation of children gives them this block's prefix."""
        return self._scope

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """Parameters of this block and all its children; ``select`` is a regex on full names."""
        result = ParameterDict(self._params.prefix)
        if not select:
            result.update(self.params)
        else:
            pattern = re.compile(select)
            result.update({name: value for name, value in self.params.items() if pattern.match(name)})
        for child in self._children.values():
            result.update(child.collect_params(select=select))
        return result

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        """Parameters by structural name (``0.weight``, ``encoder.dense.bias``), as save_parameters writes."""
        if prefix:
            prefix += "."
        result = {prefix + key: value for key, value in self._reg_params.items()}
        for name, child in self._children.items():
            result.update(child._collect_params_with_prefix(prefix + name))
        return result

    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:
        """Save parameters by structural name (MXNet 1.x's ``.params`` file, loadable by MXNet)."""
        params = self._collect_params_with_prefix()
        if deduplicate:  # a shared parameter is saved once, under its last name
            by_param = {id(v): k for k, v in params.items()}
            params = {k: v for k, v in params.items() if by_param[id(v)] == k}
        nd_io.save(filename, {key: value._reduce() for key, value in params.items()})

    def load_parameters(
        self,
        filename: str,
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """Load parameters saved by ``save_parameters`` (here or in MXNet 1.x)."""
        loaded = nd_io.load(filename)
        if not isinstance(loaded, dict):
            raise BlockError(f"{self.name}: {filename} holds a list of arrays, not named parameters")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in key for key in loaded):  # an old-style file, saved by ParameterDict.save
            self.collect_params().load(
                filename,
                ctx,
                allow_missing,
                ignore_extra,
                self.prefix,
                cast_dtype=cast_dtype,
                dtype_source=dtype_source,
            )
            return
        if not allow_missing:
            names_of: dict[int, list[str]] = defaultdict(list)
            for key, param in params.items():
                names_of[id(param)].append(key)
            for key, param in params.items():
                if not any(name in loaded for name in names_of[id(param)]):
                    raise BlockError(
                        f"{self.name}: Parameter '{key}' is missing in file '{filename}', which contains "
                        f"parameters: {_brief_print_list(loaded)}. Set allow_missing=True to ignore missing "
                        "parameters."
                    )
        for key, value in loaded.items():
            if key not in params:
                if ignore_extra:
                    continue
                raise BlockError(
                    f"{self.name}: Parameter '{key}' loaded from file '{filename}' is not present in the block, "
                    f"which contains parameters {_brief_print_list(params)}. Set ignore_extra=True to ignore."
                )
            params[key]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    # MXNet 1.x's deprecated names for the two functions above
    def save_params(self, filename: str) -> None:
        warnings.warn("save_params is deprecated. Please use save_parameters.", DeprecationWarning, stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename: str, ctx: Context | Sequence[Context] | None = None, **kwargs: Any) -> None:
        warnings.warn("load_params is deprecated. Please use load_parameters.", DeprecationWarning, stacklevel=2)
        self.load_parameters(filename, ctx, **kwargs)

    def register_child(self, block: Block, name: str | None = None) -> None:
        """Register ``block`` as a child (attributes do this automatically)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook: Callable) -> HookHandle:
        """``hook(block, inputs)`` runs before each forward."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook: Callable) -> HookHandle:
        """``hook(block, inputs, outputs)`` runs after each forward."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn: Callable[[Block], Any]) -> Block:
        """Call ``fn(block)`` on every child (recursively), then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(
        self,
        init: Any = None,
        ctx: Context | Sequence[Context] | None = None,
        verbose: bool = False,
        force_reinit: bool = False,
    ) -> None:
        """Initialize the parameters of this block and its children (default: ``mx.init.Uniform()``)."""
        self.collect_params().initialize(
            init if init is not None else initializer.Uniform(), ctx, verbose, force_reinit
        )

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize the HybridBlocks among the children (a plain Block itself stays imperative)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype: Any) -> None:
        """Cast parameters (and children's) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self.params.values():
            param.cast(dtype)

    def __call__(self, *args: Any) -> Any:
        """Run the pre-hooks, ``forward``, then the hooks."""
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement forward")

    def summary(self, *inputs: Any) -> None:
        """Print each layer's output shape and parameter count for one forward pass on ``inputs``.

        The network must be initialized and not hybridized (a cached graph runs no child blocks).
        """
        rows: list[tuple[str, str, int]] = []
        seen: set[int] = set()
        counts = {"total": 0, "trainable": 0, "shared": 0}
        kinds: dict[str, int] = defaultdict(int)

        def shape_of(value: Any) -> Any:
            if isinstance(value, NDArray):
                return value.shape
            if isinstance(value, list | tuple):
                return [shape_of(v) for v in value]
            return value

        def hook(block: Block, _inputs: Any, outputs: Any) -> None:
            kind = type(block).__name__
            kinds[kind] += 1
            params = 0
            for p in block.params.values():
                size = int(np.prod(p.shape)) if p.shape else 0
                params += size
                counts["total"] += size
                if p.grad_req != "null":
                    counts["trainable"] += size
                if id(p) in seen:
                    counts["shared"] += size
                seen.add(id(p))
            rows.append((f"{kind}-{kinds[kind]}", str(shape_of(outputs)), params))

        def check_and_attach(block: Block) -> None:
            if isinstance(block, HybridBlock) and block._active:
                raise BlockError(f'"{block.name}" must not be hybridized to print summary.')
            if not block._is_container:  # a Sequential's row would repeat its children's
                handles.append(block.register_forward_hook(hook))

        handles: list[HookHandle] = []
        try:
            self.apply(check_and_attach)
        except BlockError:
            for handle in handles:
                handle.detach()
            raise
        try:
            self(*inputs)
        finally:
            for handle in handles:
                handle.detach()
        line = "-" * 80
        print(line)
        print(f"{'Layer (type)':>20}{'Output Shape':>42}{'Param #':>15}")
        print("=" * 80)
        print(f"{'Input':>20}{shape_of(list(inputs) if len(inputs) > 1 else inputs[0])!s:>42}{0:>15}")
        for name, shape, params in rows:
            print(f"{name:>20}{shape:>42}{params:>15}")
        print("=" * 80)
        print("Parameters in forward computation graph, duplicate included")
        print(f"   Total params: {counts['total']}")
        print(f"   Trainable params: {counts['trainable']}")
        print(f"   Non-trainable params: {counts['total'] - counts['trainable']}")
        print(f"Shared params in forward computation graph: {counts['shared']}")
        print(f"Unique parameters in model: {counts['total'] - counts['shared']}")
        print(line)


# ----------------------------------------------------------------------------- HybridBlock


class HybridBlock(Block):
    """A Block whose ``hybrid_forward(F, x, *args, **params)`` runs on NDArrays or traces to a Symbol."""

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._cached_graph: tuple = ()
        self._cached_op: CachedOp | None = None
        self._cached_op_args: list[tuple[bool, Any]] = []
        self._out_format: Any = None
        self._in_format: Any = None
        self._active = False
        self._flags: list[tuple[str, Any]] = []

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
        self._cached_op = None
        self._cached_op_args = []

    def hybridize(
        self,
        active: bool = True,
        backend: str | None = None,
        clear: bool = True,
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
        drops the graph traced so far. ``backend`` and its options (``**kwargs``) partition
        the graph for an accelerator library in MXNet; MXLab has none, so they must be absent.
        """
        if backend is not None or kwargs:
            raise BlockError(
                f"{self.name}: hybridize(backend={backend!r}, {sorted(kwargs)}): MXLab has no subgraph backends "
                "(partitioning for TensorRT, oneDNN, ...); call hybridize() without a backend or its options"
            )
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
        options: dict[str, Any] = {"static_alloc": static_alloc, "static_shape": static_shape, "clear": clear}
        options.update(inline_limit=inline_limit, forward_bulk_size=forward_bulk_size)
        options.update(backward_bulk_size=backward_bulk_size)
        super().hybridize(active, **options)

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        super().cast(dtype)

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
            flat, self._in_format = _flatten(list(args), "input")
            count = sum(a is not None for a in flat)
            if count == 0:
                raise BlockError(f"{self.name}: a hybridized block needs at least one input that is not None")
            names = iter([f"data{i}" for i in range(count)] if count > 1 else ["data"])
            placed = [None if a is None else sym.var(next(names)) for a in flat]
            inputs = [v for v in placed if v is not None]
            grouped, _ = _regroup(placed, self._in_format)
            out = self._trace(grouped)
            outputs, self._out_format = _flatten(out, "output")
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
        flat, _ = _flatten(list(args), "input")
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
    def _build_cache(self, *args: Any) -> None:
        """The CachedOp of the traced graph, told which inputs are data and which parameters."""
        data, out = self._get_graph(*args)
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
        flat, fmt = _flatten(list(args), "input")
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
        try:
            out = self._cached_op(*cargs)
        except MXLabError as err:
            hint = self._dtype_hint(flat)
            raise BlockError(f"{self.name} ({type(self).__name__}, hybridized): {err}{hint}") from err
        outputs = [out] if isinstance(out, NDArray) else out
        return _regroup(outputs, self._out_format)[0]

    def forward(self, x: Any, *args: Any) -> Any:
        """NDArrays: run (imperatively, or the cached graph when hybridized); Symbols: trace."""
        flat = [a for a in _flatten([x, *args], "input")[0] if a is not None]
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
        given = {a.dtype.name for a in inputs if isinstance(a, NDArray) and a.dtype.kind == "f"}
        params = {np.dtype(p.dtype).name for p in self.collect_params().values()}
        if not given or given <= params:
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


# ----------------------------------------------------------------------------- SymbolBlock
def _common_prefix(names: list[str]) -> str:
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


class SymbolBlock(HybridBlock):
    """A block made from a Symbol: its non-input variables become parameters (MXNet's ``SymbolBlock``)."""

    def __init__(self, outputs: Any, inputs: Any, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, list | tuple) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        flat_outputs, self._out_format = _flatten(outputs, "output")
        out = sym.Group(flat_outputs) if len(flat_outputs) > 1 else flat_outputs[0]
        input_names = set()
        for s in syms:
            if len(s.get_internals().list_outputs()) != 1:
                raise BlockError(f"SymbolBlock: input symbols must be variables, but {s} is an output of operators")
            input_names.add(s.name)
        for name in out.list_arguments():
            if name not in input_names:
                self.params.get(name, allow_deferred_init=True)
        for name in out.list_auxiliary_states():
            if name not in input_names:
                self.params.get(name, grad_req="null", allow_deferred_init=True)
        self._cached_graph = syms, out
        strip = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[strip:]: value for key, value in self._params.items()}
        self._active = True  # a SymbolBlock always runs its graph

    @staticmethod
    def imports(
        symbol_file: str,
        input_names: str | Sequence[str],
        param_file: str | None = None,
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
    ) -> SymbolBlock:
        """A SymbolBlock from an export (``-symbol.json`` and ``-NNNN.params``), here or from MXNet."""
        graph = sym.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        inputs = [sym.var(name) for name in input_names]
        block = SymbolBlock(graph, inputs)
        if param_file is not None:
            block.collect_params().load(
                param_file, ctx, allow_missing, ignore_extra, cast_dtype=True, dtype_source="saved"
            )
        return block

    def forward(self, x: Any, *args: Any) -> Any:
        if isinstance(x, NDArray):
            return self._call_cached_op(x, *args)
        flat, fmt = _flatten([x, *args], "input")
        if fmt != self._in_format:
            raise BlockError(f"SymbolBlock: invalid input format {fmt}, expected {self._in_format}")
        graph = copy.copy(self._cached_graph[1])
        graph._compose(**{s.name: v for s, v in zip(self._cached_graph[0], flat, strict=True)})
        return _regroup(list(graph), self._out_format)[0]

    def _clear_cached_op(self) -> None:
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph  # the graph is the block itself: only the CachedOp is rebuilt

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("SymbolBlock runs its symbol; it has no hybrid_forward")

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        super().cast(dtype)
