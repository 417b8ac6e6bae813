"""``SymbolBlock``: an existing Symbol (an export, here or from MXNet) used as a Gluon block.

Its non-input variables become parameters; it always runs its graph (it is hybridized from
the start and has no ``hybrid_forward``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ... import symbol as sym
from ...context import Context
from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol
from ..parameter import ParameterDict
from .base import BlockError
from .hybrid import HybridBlock, flatten_args, regroup_args


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
        syms, self._in_format = flatten_args(inputs, "input")
        flat_outputs, self._out_format = flatten_args(outputs, "output")
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
        flat, fmt = flatten_args([x, *args], "input")
        if fmt != self._in_format:
            raise BlockError(f"SymbolBlock: invalid input format {fmt}, expected {self._in_format}")
        graph = copy.copy(self._cached_graph[1])
        graph._compose(**{s.name: v for s, v in zip(self._cached_graph[0], flat, strict=True)})
        return regroup_args(list(graph), self._out_format)[0]

    def _clear_cached_op(self) -> None:
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph  # the graph is the block itself: only the CachedOp is rebuilt

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("SymbolBlock runs its symbol; it has no hybrid_forward")

    def reset_ctx(self, ctx: Context | Sequence[Context]) -> None:
        """Move every parameter to ``ctx`` (a list: one copy per context); the CachedOp binds anew there."""
        for param in self.collect_params().values():
            param.reset_ctx(ctx)

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        super().cast(dtype)
