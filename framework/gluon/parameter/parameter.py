"""A Gluon Parameter: one named weight, replicated on each context, created now or on the first forward.

A :class:`Parameter` is what a layer declares (``dense0_weight``): its shape (0 marks a
dimension not known yet), dtype, initializer, gradient request and learning-rate and
weight-decay multipliers. It owns one NDArray per context it was initialized on (data
parallelism keeps a replica per device) and, unless ``grad_req='null'``, one gradient
buffer per replica, marked for autograd (``mark_variables``) so that ``backward`` fills it.

**Deferred initialization.** A layer built without its input size (``Dense(10)``) has a
weight of shape ``(10, 0)``. ``initialize`` then only remembers the initializer and the
contexts; the first forward pass infers the missing dimensions (from the traced symbol,
see :mod:`..block`), sets ``shape``, and calls ``_finish_deferred_init``, which creates
the arrays. Asking for the data before that raises :class:`DeferredInitializationError`.

The fixed-valued :class:`~.constant.Constant` and the name-keyed
:class:`~.parameter_dict.ParameterDict` build on this class in their own modules.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import autograd, initializer
from ...context import Context, cpu, current_context
from ...errors import SparseStorageError
from ...ndarray.creation import zeros
from ...ndarray.ndarray import NDArray, array
from ...symbol.symbol import Symbol
from ...symbol.variable import var
from .errors import DeferredInitializationError, ParameterError

GRAD_REQS = ("write", "add", "null")


def _as_context_list(ctx: Context | Sequence[Context] | None) -> list[Context]:
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    contexts = list(ctx)
    if not contexts or not all(isinstance(c, Context) for c in contexts):
        raise ParameterError(f"ctx must be a Context or a non-empty list of Contexts, got {ctx!r}")
    return contexts


class Parameter:
    """A weight of a Block, replicated on each context it is initialized on (MXNet's ``gluon.Parameter``)."""

    def __init__(
        self,
        name: str,
        grad_req: str = "write",
        shape: int | Sequence[int] | None = None,
        dtype: Any = "float32",
        lr_mult: float = 1.0,
        wd_mult: float = 1.0,
        init: Any = None,
        allow_deferred_init: bool = False,
        differentiable: bool = True,
        stype: str = "default",
        grad_stype: str = "default",
    ) -> None:
        self._var: Symbol | None = None
        self._data: list[NDArray] | None = None
        self._grad: list[NDArray] | None = None
        self._ctx_list: list[Context] | None = None
        self._deferred_init: tuple = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = "null"
        if isinstance(shape, int):
            shape = (shape,)
        self._shape: tuple[int, ...] | None = None if shape is None else tuple(int(d) for d in shape)
        self.name = name
        self._dtype = np.dtype(dtype).name
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value != "default":
                raise ParameterError(f"Parameter '{name}': MXLab has dense storage only, got {what}={value!r}")
        self.grad_req = grad_req

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    # ------------------------------------------------------------------ attributes
    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in GRAD_REQS:
            raise ParameterError(f"Parameter '{self.name}': grad_req must be one of {GRAD_REQS}, got {req!r}")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            if self._data is not None:
                for arr in self._data:  # no longer a variable of autograd
                    arr._grad, arr._grad_req, arr._entry = None, "null", None
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self) -> str:
        return self._dtype

    @dtype.setter
    def dtype(self, dtype: Any) -> None:
        self._dtype = np.dtype(dtype).name

    @property
    def shape(self) -> tuple[int, ...] | None:
        return self._shape

    @shape.setter
    def shape(self, new_shape: Sequence[int] | None) -> None:
        """Fill in unknown (0) dimensions; a known dimension may not change."""
        if new_shape is None:
            return
        new_shape = tuple(int(d) for d in new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        compatible = len(self._shape) == len(new_shape) and all(
            old in (-1, 0, new) for old, new in zip(self._shape, new_shape, strict=True)
        )
        if not compatible:
            raise ParameterError(
                f"Parameter '{self.name}': expected shape {self._shape} is incompatible with given shape {new_shape}"
            )
        self._shape = new_shape

    def _shape_is_known(self) -> bool:
        return self._shape is not None and all(d > 0 for d in self._shape)

    # ------------------------------------------------------------------ initialization
    def initialize(
        self,
        init: Any = None,
        ctx: Context | Sequence[Context] | None = None,
        default_init: Any = None,
        force_reinit: bool = False,
    ) -> None:
        """Create the arrays on ``ctx`` with ``init`` (else the parameter's own, else ``default_init``).

        When the shape is not known yet and deferred initialization is allowed, only remember
        what to do; the first forward pass finishes it.
        """
        if default_init is None:
            default_init = initializer.Uniform()
        if self._data is not None and not force_reinit:
            warnings.warn(
                f"Parameter '{self.name}' is already initialized, ignoring. Set force_reinit=True to re-initialize.",
                stacklevel=2,
            )
            return
        self._data = self._grad = None
        contexts = _as_context_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not self._shape_is_known():
            if self._allow_deferred_init:
                self._deferred_init = (init, contexts, default_init, None)
                return
            raise ParameterError(
                f"Cannot initialize Parameter '{self.name}' because it has invalid shape: {self.shape}."
            )
        self._deferred_init = (init, contexts, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        """Create the arrays now that the shape is known (called by the first forward pass)."""
        if not self._deferred_init:
            return
        init, contexts, default_init, data = self._deferred_init
        if not self._shape_is_known():
            raise DeferredInitializationError(
                f"Cannot initialize Parameter '{self.name}' because it has invalid shape: {self.shape}. "
                "Please specify in_units, in_channels, etc for `Block`s."
            )
        self._deferred_init = ()
        assert self._shape is not None
        with autograd.pause():
            if data is None:
                data = zeros(self._shape, cpu(), self.dtype)
                # The chosen initializer rides in the description's __init__ attribute: it fills
                # the array whatever the name's suffix (a bias with init='zeros', a weight with Xavier).
                initializer.create(default_init)(initializer.InitDesc(self.name, {"__init__": init}), data)
            self._init_impl(data, contexts)

    def _init_impl(self, data: NDArray, contexts: list[Context]) -> None:
        self._ctx_list = list(contexts)
        with autograd.pause():
            self._data = [data.copyto(c) for c in contexts]  # a replica per context, never the caller's array
        self._init_grad()

    def _init_grad(self) -> None:
        if self.grad_req == "null" or self._data is None:
            self._grad = None
            return
        self._grad = [zeros(d.shape, d.context, d.dtype) for d in self._data]
        autograd.mark_variables(self._data, self._grad, self.grad_req)

    def _load_init(self, data: NDArray, ctx: Context | Sequence[Context] | None, cast_dtype: bool = False,
                   dtype_source: str = "current") -> None:  # fmt: skip
        """Take the values loaded from a file (checking shape and dtype), initializing if needed."""
        if self._shape is not None:
            ok = len(self._shape) == len(data.shape) and all(
                mine in (0, -1, saved) for mine, saved in zip(self._shape, data.shape, strict=True)
            )
            if not ok:
                raise ParameterError(
                    f"Failed loading Parameter '{self.name}' from saved params: shape incompatible "
                    f"expected {self._shape} vs saved {tuple(data.shape)}"
                )
            self.shape = tuple(data.shape)
        else:
            self._shape = tuple(data.shape)
        if np.dtype(self.dtype) != data.dtype:
            if not cast_dtype:
                raise ParameterError(
                    f"Failed loading Parameter '{self.name}' from saved params: dtype incompatible "
                    f"expected {self.dtype} vs saved {np.dtype(data.dtype).name}. "
                    "Set cast_dtype=True to cast the dtype of saved params."
                )
            if dtype_source == "saved":
                self.dtype = data.dtype
            else:
                data = data.astype(self.dtype)
        if self._data is None:
            if self._deferred_init:
                contexts = self._deferred_init[1]
                if ctx is not None and set(_as_context_list(ctx)) != set(contexts):
                    raise ParameterError(
                        f"Failed to load Parameter '{self.name}' on {ctx} because it was previously "
                        f"initialized on {contexts}."
                    )
            else:
                contexts = _as_context_list(ctx) if ctx is not None else [cpu()]
            self._deferred_init = ()
            self._init_impl(data, contexts)
        else:
            self.set_data(data)

    # ------------------------------------------------------------------ access
    def _check_and_get(self, arrays: list[NDArray] | None, ctx: Any) -> Any:
        if arrays is not None:
            if ctx is list:
                return arrays
            assert self._ctx_list is not None
            if ctx is None:
                if len(arrays) == 1:
                    return arrays[0]
                ctx = current_context()
            if ctx in self._ctx_list:
                return arrays[self._ctx_list.index(ctx)]
            raise ParameterError(
                f"Parameter '{self.name}' was not initialized on context {ctx}. "
                f"It was only initialized on {self._ctx_list}."
            )
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization was deferred. "
                "Actual initialization happens during the first forward pass. Please pass one batch of data "
                "through the network before accessing Parameters. You can also avoid deferred initialization "
                "by specifying in_units, num_features, etc., for network layers."
            )
        raise ParameterError(
            f"Parameter '{self.name}' has not been initialized. Note that you should initialize parameters "
            "and create Trainer with Block.collect_params() instead of Block.params because the later does "
            "not include Parameters of nested child Blocks"
        )

    def data(self, ctx: Context | None = None) -> NDArray:
        """The array on ``ctx`` (the only one when there is one context)."""
        return self._check_and_get(self._data, ctx)

    def list_data(self) -> list[NDArray]:
        return self._check_and_get(self._data, list)

    def row_sparse_data(self, row_id: NDArray) -> NDArray:
        """MXNet's rows of a ``row_sparse`` parameter; MXLab's parameters are dense, so this raises."""
        raise SparseStorageError(
            f"Parameter '{self.name}': row_sparse_data needs stype='row_sparse', which MXLab does not have; use data()"
        )

    def list_row_sparse_data(self, row_id: NDArray) -> list[NDArray]:
        """MXNet's per-context ``row_sparse_data``; raises for the same reason."""
        raise SparseStorageError(
            f"Parameter '{self.name}': list_row_sparse_data needs stype='row_sparse', which MXLab does not have; "
            "use list_data()"
        )

    def grad(self, ctx: Context | None = None) -> NDArray:
        if self._data is not None and self._grad is None:
            raise ParameterError(f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'")
        return self._check_and_get(self._grad, ctx)

    def list_grad(self) -> list[NDArray]:
        if self._data is not None and self._grad is None:
            raise ParameterError(f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'")
        return self._check_and_get(self._grad, list)

    def list_ctx(self) -> list[Context]:
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            raise ParameterError(f"Parameter '{self.name}' has not been initialized")
        assert self._ctx_list is not None
        return list(self._ctx_list)

    def set_data(self, data: Any) -> None:
        """Write ``data`` into every replica (or keep it for a deferred initialization)."""
        if not isinstance(data, NDArray):
            data = array(np.asarray(data), dtype=self.dtype)
        self.shape = tuple(data.shape)
        if self._data is None:
            if not self._deferred_init:
                raise ParameterError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        for arr in self._data:
            arr[:] = data

    def zero_grad(self) -> None:
        """Set the gradient buffers to 0 (needed with ``grad_req='add'``)."""
        if self._grad is None:
            return
        for g in self._grad:
            g[:] = 0

    def reset_ctx(self, ctx: Context | Sequence[Context]) -> None:
        """Move the parameter to other contexts (the replicas are averaged first)."""
        contexts = _as_context_list(ctx)
        if self._data is not None:
            data = self._reduce()
            self._init_impl(data, contexts)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, contexts, default_init, data)
        else:
            raise ParameterError(
                f"Cannot reset context for Parameter '{self.name}' because it has not been initialized."
            )

    def _reduce(self) -> NDArray:
        """The average of the replicas, on the CPU (what save and reset_ctx keep)."""
        block = self.list_data()
        with autograd.pause():
            if len(block) == 1:
                return block[0].copyto(cpu())
            total = block[0].copyto(cpu())
            for replica in block[1:]:
                total += replica.copyto(cpu())
            return total / len(block)

    def cast(self, dtype: Any) -> None:
        """Change the dtype of the data and gradients."""
        self.dtype = dtype
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(self.dtype) for d in self._data]
        self._init_grad()

    def var(self) -> Symbol:
        """The symbol variable standing for this parameter in a traced graph."""
        if self._var is None:
            self._var = var(
                self.name,
                shape=self.shape,
                dtype=self.dtype,
                lr_mult=self.lr_mult,
                wd_mult=self.wd_mult,
                init=self.init,
            )
        return self._var
