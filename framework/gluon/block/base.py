"""``Block``: a piece of a network with parameters, children, name scopes, hooks and saving.

Everything a Gluon layer has whether or not it can be hybridized lives here; the tracing
to a Symbol is :mod:`.hybrid`, the wrapping of an existing Symbol is :mod:`.symbol_block`.
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ... import initializer
from ...base import MXLabError
from ...context import Context
from ...ndarray import io as nd_io
from ...ndarray.ndarray import NDArray
from ...symbol import naming
from ..parameter import Parameter, ParameterDict
from ..parameter.parameter_dict import _brief_print_list
from ..utils import HookHandle


class BlockError(MXLabError, ValueError):
    """A block was misused or failed; the message names the block."""


#: The fields of a block's entry in a ``-model.json`` file; every other key is a child's entry.
_ENTRY_FIELDS = ("orig_name", "children", "hybridized", "in_format", "out_format", "inputs", "symbol")


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

    def _warn_unregistered_blocks(self) -> None:
        """Warn about Blocks kept in a plain list, tuple or dict attribute (MXNet does, from
        ``collect_params`` and so ``initialize``): they are not children, so their parameters are
        not collected, initialized, saved or trained."""
        children = {id(child) for child in self._children.values()}

        def holds_unregistered(value: Any) -> bool:
            if isinstance(value, list | tuple):
                return any(holds_unregistered(item) for item in value)
            if isinstance(value, dict):
                return any(holds_unregistered(item) for item in value.values())
            return isinstance(value, Block) and id(value) not in children

        for key, value in vars(self).items():
            if isinstance(value, list | tuple | dict) and not key.startswith("__") and key != "_children":
                if holds_unregistered(value):
                    warnings.warn(
                        f'"{type(self).__name__}.{key}" is an unregistered container with Blocks. Note that Blocks '
                        "inside the list, tuple or dict will not be registered automatically. Make sure to register "
                        "them using register_child() or switching to nn.Sequential/nn.HybridSequential instead.",
                        stacklevel=3,
                    )

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """Parameters of this block and all its children; ``select`` is a regex on full names."""
        self._warn_unregistered_blocks()
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

    def load_params(
        self,
        filename: str,
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
    ) -> None:
        warnings.warn("load_params is deprecated. Please use load_parameters.", DeprecationWarning, stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # ------------------------------------------------------------------ structure files (save / load)
    def save(self, prefix: str) -> None:
        """Write ``prefix-model.json`` (the block tree, with traced graphs) and ``prefix-model.params``.

        MXNet 1.9.1's format: each block is an entry keyed by its class name and its position in
        a depth-first walk (``dense3``), holding its name when saved (``orig_name``), the names
        its parent gave its children, and for a HybridBlock that has traced itself the graph and
        its input/output formats. :meth:`load` needs the same network built the same way.
        """
        model: dict[str, Any] = {}
        position = 0

        def describe(block: Block, parent: dict[str, Any]) -> None:
            nonlocal position
            entry = block._structure_entry()
            parent[f"{type(block).__name__.lower()}{position}"] = entry
            children: dict[str, str] = {}
            entry["children"] = children
            for key, child in block._children.items():
                position += 1
                children[child.name] = key
                describe(child, entry)

        describe(self, model)
        with open(f"{prefix}-model.json", "w") as f:
            json.dump(model, f)
        self.save_parameters(f"{prefix}-model.params")

    def load(self, prefix: str) -> None:
        """Read what :meth:`save` wrote (here or in MXNet 1.9.1) into this network, built as when saved.

        Nothing is rebuilt: each block takes back its saved name (its parameters are renamed to
        match), its children their saved keys, a HybridBlock its traced graph (and becomes
        hybridized); then the parameters load from ``prefix-model.params``.
        """
        filename = f"{prefix}-model.json"
        with open(filename) as f:
            model = json.load(f)
        pairs: list[tuple[Block, dict[str, Any]]] = []  # each block with its entry, all found before any change

        def match(block: Block, parent: dict[str, Any]) -> None:
            key = f"{type(block).__name__.lower()}{len(pairs)}"
            if key not in parent:
                raise BlockError(
                    f"{self.name}: {filename} has no entry {key!r} for block {block.name} ({type(block).__name__}); "
                    f"it holds {sorted(k for k in parent if k not in _ENTRY_FIELDS)}: the network must be built "
                    "exactly as the saved one"
                )
            entry = parent[key]
            if len(entry["children"]) != len(block._children):
                raise BlockError(
                    f"{self.name}: {filename} gives {entry['orig_name']} {len(entry['children'])} children, "
                    f"block {block.name} has {len(block._children)}"
                )
            pairs.append((block, entry))
            for child in block._children.values():
                match(child, entry)

        match(self, model)
        for block, entry in pairs:
            block._name = entry["orig_name"]
            block._restore_structure(entry)
            for old_name in list(block.params.keys()):  # parameters follow the block's saved name
                param = block.params._params.pop(old_name)
                block.params._params[f"{block.name}_{old_name[len(block.params.prefix) :]}"] = param
        for block, entry in pairs:  # children (named as saved now) take back the keys their parent saved
            children = list(block._children.values())
            block._children.clear()
            for child in children:
                block._children[entry["children"][child.name]] = child
        self.load_parameters(f"{prefix}-model.params")

    def _structure_entry(self) -> dict[str, Any]:
        """What :meth:`save` records about this block itself (a HybridBlock adds its traced graph)."""
        return {"orig_name": self.name}

    def _restore_structure(self, entry: dict[str, Any]) -> None:
        """Take back what :meth:`_structure_entry` recorded, beyond the name (nothing for a plain Block)."""

    # ------------------------------------------------------------------ operator hooks
    def register_op_hook(self, callback: Callable[[str, str, NDArray], None], monitor_all: bool = False) -> None:
        """Call ``callback(name, op_name, array)`` for every operator a hybridized child runs.

        Only cached graphs report (an imperative block runs no graph, as in MXNet): the names are
        ``<node>_output`` (and with ``monitor_all`` each input first, ``<node>_<input>``).
        """
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

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

    def _runs_as_graph(self) -> bool:
        """Whether calls run a cached graph (a hybridized HybridBlock); a plain Block never does."""
        return False

    def summary(self, *inputs: Any) -> None:
        """Print each layer's output shape and parameter count for one forward pass on ``inputs``.

        The network must be initialized and not hybridized (a cached graph runs no child blocks).
        """
        rows: list[tuple[str, str, int]] = []
        seen: set[int] = set()
        counts = {"total": 0, "trainable": 0, "shared": 0}

        def shape_of(value: Any) -> Any:
            if isinstance(value, NDArray):
                return value.shape
            if isinstance(value, list | tuple):
                return [shape_of(v) for v in value]
            return value

        def hook(block: Block, _inputs: Any, outputs: Any) -> None:
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
            # one count over all layers, in the order they finish: MXNet's "<type>-<k>" names
            rows.append((f"{type(block).__name__}-{len(rows) + 1}", str(shape_of(outputs)), params))

        def check_and_attach(block: Block) -> None:
            if block._runs_as_graph():
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
        row = "{:>20}  {:>42} {:>15}".format  # MXNet's columns
        print(row("Layer (type)", "Output Shape", "Param #"))
        print("=" * 80)
        print(row("Input", str(shape_of(list(inputs) if len(inputs) > 1 else inputs[0])), 0))
        for name, shape, params in rows:
            print(row(name, shape, params))
        print("=" * 80)
        print("Parameters in forward computation graph, duplicate included")
        print(f"   Total params: {counts['total']}")
        print(f"   Trainable params: {counts['trainable']}")
        print(f"   Non-trainable params: {counts['total'] - counts['trainable']}")
        print(f"Shared params in forward computation graph: {counts['shared']}")
        print(f"Unique parameters in model: {counts['total'] - counts['shared']}")
        print(line)
