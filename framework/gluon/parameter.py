"""Gluon parameters: a named weight with one copy per context, and a dictionary of them.

A :class:`Parameter` is what a layer declares (``dense0_weight``): its shape (0 marks a
dimension not known yet), dtype, initializer, gradient request and learning-rate and
weight-decay multipliers. It owns one NDArray per context it was initialized on (data
parallelism keeps a replica per device) and, unless ``grad_req='null'``, one gradient
buffer per replica, marked for autograd (``mark_variables``) so that ``backward`` fills it.

**Deferred initialization.** A layer built without its input size (``Dense(10)``) has a
weight of shape ``(10, 0)``. ``initialize`` then only remembers the initializer and the
contexts; the first forward pass infers the missing dimensions (from the traced symbol,
see :mod:`.block`), sets ``shape``, and calls ``_finish_deferred_init``, which creates
the arrays. Asking for the data before that raises :class:`DeferredInitializationError`.

:class:`ParameterDict` maps full names to parameters, adds its ``prefix`` to the names it
is asked for, and can share parameters with another dictionary; it saves and loads them
in MXNet's ``.params`` format (:mod:`framework.ndarray.io`).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .. import autograd, initializer
from ..base import MXLabError
from ..context import Context, cpu, current_context
from ..errors import SparseStorageError
from ..ndarray import io as nd_io
from ..ndarray.creation import zeros
from ..ndarray.ndarray import NDArray, array
from ..symbol.symbol import Symbol
from ..symbol.variable import var

#: What a Gluon block computes on: symbols while tracing, arrays when running (MXNet's name).
tensor_types = (Symbol, NDArray)

GRAD_REQS = ("write", "add", "null")


class DeferredInitializationError(MXLabError, RuntimeError):
    """The parameter's shape is not known yet: run one forward pass first."""


class ParameterError(MXLabError, ValueError):
    """A parameter was used in a way its state does not allow (the message names it)."""


def _brief_print_list(names: Sequence[str] | Any, limit: int = 7) -> str:
    """``'a', 'b', ..., 'z'``: a long list of names, shortened."""
    names = list(names)
    if len(names) > limit:
        return (
            _brief_print_list(names[: limit // 2], limit) + ", ..., " + _brief_print_list(names[-limit // 2 :], limit)
        )
    return ", ".join(f"'{n}'" for n in names)


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
                    f"expected {self.dtype} vs saved {data.dtype.name}. "
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


class _ConstantInit(initializer.Initializer):
    """Fills an array with a Constant's value."""

    def __init__(self, value: NDArray) -> None:
        super().__init__()
        self._value = value

    def _init_weight(self, name: str, arr: NDArray) -> None:
        arr[:] = self._value

    def _init_default(self, name: str, arr: NDArray) -> None:
        arr[:] = self._value


class Constant(Parameter):
    """A parameter that never changes (``grad_req='null'``), initialized to ``value``."""

    def __init__(self, name: str, value: Any) -> None:
        if not isinstance(value, NDArray):
            value = array(np.asarray(value))
        self.value = value
        super().__init__(
            name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_ConstantInit(value), differentiable=False
        )

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self) -> str:
        return "null"

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            warnings.warn(
                f'Constant parameter "{self.name}" does not support grad_req other than "null", '
                f'and new value "{req}" is ignored.',
                stacklevel=2,
            )
        self._grad_req = "null"

    def var(self) -> Symbol:
        if self._var is None:  # the value is not stored in symbol JSON: no __init__ attribute
            self._var = var(self.name, shape=self.shape, dtype=self.dtype)
        return self._var


class ParameterDict(Mapping):
    """Parameters by full name, handing out ``prefix + name`` (MXNet's ``gluon.ParameterDict``)."""

    def __init__(self, prefix: str = "", shared: ParameterDict | None = None) -> None:
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        body = "\n".join(f"  {p!r}" for p in self.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    @property
    def prefix(self) -> str:
        return self._prefix

    def _get_impl(self, name: str) -> Parameter | None:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs: Any) -> Parameter:  # type: ignore[override]
        """The parameter ``prefix + name``, created with ``kwargs`` if it does not exist.

        An existing parameter must agree with ``kwargs`` (unknown dimensions of its shape are
        filled in from ``shape``).
        """
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for key, value in kwargs.items():
            existing = getattr(param, key, None)
            if existing is None:
                setattr(param, key, value)
                continue
            if key == "shape" and value is not None:
                wanted = (value,) if isinstance(value, int) else tuple(value)
                if len(wanted) == len(existing):
                    merged, matched = [], True
                    for want, have in zip(wanted, existing, strict=True):
                        if want != have and want > 0 and have > 0:
                            matched = False
                            break
                        merged.append(have if want in (0, -1) else want)
                    if matched:
                        param._shape = tuple(merged)
                        continue
            elif key == "dtype" and np.dtype(value) == np.dtype(existing):
                continue
            if value is not None and value != existing:
                raise ParameterError(
                    f"Cannot retrieve Parameter '{name}' because desired attribute does not match with stored "
                    f"for attribute '{key}': desired '{value}' vs stored '{existing}'."
                )
        return param

    def get_constant(self, name: str, value: Any = None) -> Constant:
        """The constant ``prefix + name``, created from ``value`` if it does not exist."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(
                    f"No constant named '{name}'. Please specify value if you want to create a new constant."
                )
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise ParameterError(f"Parameter '{name}' already exists but it is not a constant.")
            values = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            if param.shape != values.shape or not (param.value.asnumpy() == values).all():
                raise ParameterError(f"Constant '{name}' already exists but its value doesn't match new value")
        assert isinstance(param, Constant)
        return param

    def update(self, other: Mapping[str, Parameter]) -> None:
        """Add the parameters of ``other`` (a name must not stand for two different parameters)."""
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise ParameterError(
                    f"Cannot update self with other because they have different Parameters with the same name '{key}'"
                )
        for key, value in other.items():
            self._params[key] = value

    def initialize(
        self,
        init: Any = None,
        ctx: Context | Sequence[Context] | None = None,
        verbose: bool = False,
        force_reinit: bool = False,
    ) -> None:
        """Initialize every parameter; ``init`` is the default for those without their own."""
        if init is None:
            init = initializer.Uniform()
        if verbose:
            initializer.create(init).set_verbosity(verbose=verbose)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx: Context | Sequence[Context]) -> None:
        for param in self.values():
            param.reset_ctx(ctx)

    def list_ctx(self) -> list[Context]:
        contexts: list[Context] = []
        for param in self.values():
            contexts.extend(c for c in param.list_ctx() if c not in contexts)
        return contexts

    def setattr(self, name: str, value: Any) -> None:
        """Set an attribute (``grad_req``, ``lr_mult``, ...) on every parameter."""
        for param in self.values():
            setattr(param, name, value)

    def save(self, filename: str, strip_prefix: str = "") -> None:
        """Save the (averaged) values by name, without ``strip_prefix``, in MXNet's ``.params`` format."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ParameterError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's name '{param.name}' "
                    f"does not start with '{strip_prefix}'. This may be due to your Block shares parameters from "
                    "other Blocks or you forgot to use 'with name_scope()' when creating child blocks."
                )
            arg_dict[param.name[len(strip_prefix) :]] = param._reduce()
        nd_io.save(filename, arg_dict)

    def load(
        self,
        filename: str,
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
        restore_prefix: str = "",
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """Load values saved by :meth:`save` (or an export's ``arg:``/``aux:`` file)."""
        for name in self.keys():
            if not name.startswith(restore_prefix):
                raise ParameterError(
                    f"restore_prefix is '{restore_prefix}' but Parameters name '{name}' "
                    f"does not start with '{restore_prefix}'"
                )
        loaded = nd_io.load(filename)
        if not isinstance(loaded, dict):
            raise ParameterError(f"{filename}: expected a file of named arrays, found a list of {len(loaded)} arrays")
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(
        self,
        param_dict: Mapping[str, NDArray],
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
        restore_prefix: str = "",
        filename: str | None = None,
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """Load values from a dict of arrays (names as :meth:`save` writes them)."""
        strip = len(restore_prefix)
        arg_dict = {restore_prefix + (k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in param_dict.items()}
        where = f"file: {filename}" if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise ParameterError(
                        f"Parameter '{name[strip:]}' is missing in {where}, which contains parameters: "
                        f"{_brief_print_list(arg_dict)}. Please make sure source and target networks have the "
                        "same prefix (or pass allow_missing=True)."
                    )
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterError(
                        f"Parameter '{name[strip:]}' loaded from {where} is not present in ParameterDict, choices "
                        f"are: {_brief_print_list(self._params)}. Set ignore_extra to True to ignore. Please make "
                        "sure source and target networks have the same prefix."
                    )
                continue
            self._params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
