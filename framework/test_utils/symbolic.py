"""Checking a symbol against NumPy: forward values, backward values, finite differences.

These are MXNet's ``mx.test_utils`` helpers for symbols, the ones seed 004 uses to test the
``quadratic`` operator. Each one binds the symbol to arrays, runs the executor and compares
what came out with what should have come out:

* :func:`check_symbolic_forward`: the outputs against expected arrays;
* :func:`check_symbolic_backward`: the gradients against expected arrays. The gradient
  buffers start filled with noise, so the check also proves that the operator honours the
  gradient request: ``write`` must overwrite the noise, ``add`` must add to it (the result
  minus the noise is compared), ``null`` must leave it untouched;
* :func:`check_numeric_gradient`: the gradients against finite differences. The output is
  multiplied by random weights in [0.1, 1.1) and summed, which makes one number ``L`` out
  of it (``MakeLoss``); then each input element ``x`` is moved to ``x + eps/2`` and
  ``x - eps/2`` and ``(L(x + eps/2) - L(x - eps/2)) / eps`` must match the backward pass.
  The weights are random so that a gradient that is wrong in only one output element
  cannot hide behind a symmetric loss;
* :func:`simple_forward`: run a symbol on NumPy inputs and get NumPy outputs back.

``location`` (the input values) is a list in ``sym.list_arguments()`` order or a dict by
argument name; NumPy arrays are converted to ``dtype`` (``"asnumpy"`` keeps their own). A
failure says which output or argument is wrong, at which index, and the two values.
Random numbers come from NumPy's global generator, as in MXNet, so ``np.random.seed``
makes a failing check reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import MXLabError
from ..context import Context, current_context
from ..executor import Executor, bind
from ..ndarray.ndarray import NDArray
from ..symbol import MakeLoss as _make_loss
from ..symbol import Symbol, Variable
from .compare import assert_almost_equal
from .tolerances import default_numeric_eps

__all__ = [
    "SymbolCheckError",
    "check_numeric_gradient",
    "numeric_grad",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "simple_forward",
]

_FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_GRAD_REQS = ("write", "add", "null")


class SymbolCheckError(MXLabError, ValueError):
    """The check itself was called wrongly (names that do not match the symbol, bad dtype...)."""


# ----------------------------------------------------------------------------- inputs
def _check_symbol(sym: Any, who: str) -> None:
    if not isinstance(sym, Symbol):
        hint = (
            " (to check a Python function of NDArrays, use mx.test_utils.check_imperative_gradient)"
            if callable(sym)
            else ""
        )
        raise TypeError(f"{who}: expected a Symbol, got {type(sym).__name__}{hint}")


def _check_dtype(dtype: Any, who: str, allow_asnumpy: bool = True) -> np.dtype | None:
    """The dtype to create arrays with; None means "keep each NumPy array's own" (``"asnumpy"``)."""
    if allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy":
        return None
    try:
        resolved = None if dtype is None else np.dtype(dtype)  # np.dtype(None) would be float64
    except TypeError:
        resolved = None
    if resolved is None or resolved not in _FLOAT_TYPES:
        allowed = "'asnumpy', " if allow_asnumpy else ""
        raise SymbolCheckError(f"{who}: dtype must be {allowed}np.float16, np.float32 or np.float64, got {dtype!r}")
    return resolved


def _to_ndarray(value: Any, ctx: Context, dtype: np.dtype | None) -> NDArray:
    """An NDArray on ``ctx``: NumPy values are converted to ``dtype`` (None: their own dtype)."""
    if isinstance(value, NDArray):
        return value.as_in_context(ctx) if value.context != ctx else value
    value = np.asarray(value)
    return nd.array(value, ctx=ctx, dtype=value.dtype if dtype is None else dtype)


def _by_name(values: Any, names: list[str], what: str, who: str) -> dict[str, Any]:
    """``values`` (a list in ``names`` order or a dict by name) as a dict; every name must be given."""
    if isinstance(values, Mapping):
        if set(values) != set(names):
            missing = [n for n in names if n not in values]
            extra = sorted(set(values) - set(names))
            raise SymbolCheckError(
                f"{who}: the names in {what} do not match the symbol: symbol has {names}; "
                f"missing {missing}, unknown {extra}"
            )
        return {n: values[n] for n in names}
    if isinstance(values, list | tuple):
        if len(values) != len(names):
            raise SymbolCheckError(f"{who}: {what} has {len(values)} arrays, but the symbol has {len(names)}: {names}")
        return dict(zip(names, values, strict=True))
    raise SymbolCheckError(f"{who}: {what} must be a list or a dict of arrays, got {type(values).__name__}")


def _parse_location(sym: Symbol, location: Any, ctx: Context, dtype: np.dtype | None, who: str) -> dict[str, NDArray]:
    """Argument values by name, as NDArrays (MXNet's ``_parse_location``)."""
    values = _by_name(location, sym.list_arguments(), "location", who)
    return {k: _to_ndarray(v, ctx, dtype) for k, v in values.items()}


def _parse_aux_states(
    sym: Symbol, aux_states: Any, ctx: Context, dtype: np.dtype | None, who: str
) -> dict[str, NDArray] | None:
    """Auxiliary-state values by name, as NDArrays; None when none were given."""
    names = sym.list_auxiliary_states()
    if aux_states is None:
        if names:
            raise SymbolCheckError(f"{who}: the symbol has auxiliary states {names}; pass their values as aux_states")
        return None
    values = _by_name(aux_states, names, "aux_states", who)
    return {k: _to_ndarray(v, ctx, dtype) for k, v in values.items()}


def _check_dense(grad_stype_dict: Mapping[str, Any] | None, who: str) -> None:
    for name, stype in (grad_stype_dict or {}).items():
        if stype not in (None, "default"):
            raise SymbolCheckError(
                f"{who}: gradient of {name!r} asks for storage type {stype!r}; MXLab has dense arrays only"
            )


def _grad_req_dict(grad_req: Any, names: list[str], who: str) -> dict[str, str]:
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(names, grad_req)
    elif isinstance(grad_req, Mapping):
        reqs = dict(grad_req)
    elif isinstance(grad_req, list | tuple):
        reqs = _by_name(list(grad_req), names, "grad_req", who)
    else:
        raise SymbolCheckError(f"{who}: grad_req must be a str, a list or a dict, got {type(grad_req).__name__}")
    for name, req in reqs.items():
        if req not in _GRAD_REQS:
            raise SymbolCheckError(f"{who}: invalid grad_req {req!r} for argument {name!r}; use one of {_GRAD_REQS}")
    return reqs


def _compare(expected: Any, got: Any, rtol: float | None, atol: float | None, equal_nan: bool, what: str) -> None:
    """assert_almost_equal with a first line that says what was being compared."""
    try:
        assert_almost_equal(expected, got, rtol, atol, names=("expected", "got"), equal_nan=equal_nan)
    except AssertionError as err:
        raise AssertionError(f"{what}: {err}") from None


# ----------------------------------------------------------------------------- the checks
def simple_forward(sym: Symbol, ctx: Context | None = None, is_train: bool = False, **inputs: Any) -> Any:
    """Run ``sym`` once on NumPy inputs (by argument name); the output, or a list of outputs, as NumPy.

    As in MXNet, NumPy inputs become float32 arrays.
    """
    _check_symbol(sym, "simple_forward")
    ctx = ctx or current_context()
    args = {k: _to_ndarray(v, ctx, np.dtype(np.float32)) for k, v in inputs.items()}
    executor = bind(sym, ctx, args=args)
    executor.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in executor.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def check_symbolic_forward(
    sym: Symbol,
    location: Sequence[Any] | Mapping[str, Any],
    expected: Sequence[Any] | Mapping[str, Any],
    rtol: float | None = None,
    atol: float | None = None,
    aux_states: Sequence[Any] | Mapping[str, Any] | None = None,
    ctx: Context | None = None,
    equal_nan: bool = False,
    dtype: Any = np.float32,
) -> list[NDArray]:
    """Check the forward outputs of ``sym`` at ``location`` against ``expected``; returns the outputs.

    ``expected`` is a list in ``sym.list_outputs()`` order or a dict by output name.
    Tolerances default to the loosest of the two dtypes compared (``test_utils``).
    """
    who = "check_symbolic_forward"
    _check_symbol(sym, who)
    ctx = ctx or current_context()
    dtype = _check_dtype(dtype, who)
    args = _parse_location(sym, location, ctx, dtype, who)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, who)
    output_names = sym.list_outputs()
    expected = _by_name(expected, output_names, "expected", who)
    executor = bind(sym, ctx, args=args, aux_states=aux)
    outputs = executor.forward(is_train=False)
    for i, (name, got) in enumerate(zip(output_names, outputs, strict=True)):
        _compare(expected[name], got, rtol, atol, equal_nan, f"{who}: output {i} ({name!r}) is wrong")
    return executor.outputs


def check_symbolic_backward(
    sym: Symbol,
    location: Sequence[Any] | Mapping[str, Any],
    out_grads: Sequence[Any] | Mapping[str, Any] | None,
    expected: Sequence[Any] | Mapping[str, Any],
    rtol: float | None = None,
    atol: float | None = None,
    aux_states: Sequence[Any] | Mapping[str, Any] | None = None,
    grad_req: str | Sequence[str] | Mapping[str, str] = "write",
    ctx: Context | None = None,
    grad_stypes: Mapping[str, str] | None = None,
    equal_nan: bool = False,
    dtype: Any = np.float32,
    *,
    grad_stype_dict: Mapping[str, str] | None = None,
) -> dict[str, NDArray]:
    """Check the gradients of ``sym`` at ``location`` against ``expected``; returns the gradient arrays.

    ``out_grads`` are the head gradients (list by output or dict by output name; None for a
    loss output). ``expected`` is a list in ``list_arguments()`` order (it may stop early)
    or a dict by argument name; only those arguments get gradient buffers. Each buffer
    starts as noise, and ``grad_req`` decides what is compared: ``write`` the buffer,
    ``add`` the buffer minus the noise, ``null`` the untouched noise. ``grad_stypes`` is
    MXNet 1.9.1's name for the gradients' storage types (only ``"default"`` exists
    in MXLab); ``grad_stype_dict`` is the older name, by keyword.
    """
    who = "check_symbolic_backward"
    _check_symbol(sym, who)
    _check_dense(grad_stype_dict or grad_stypes, who)
    ctx = ctx or current_context()
    dtype = _check_dtype(dtype, who)
    arg_names = sym.list_arguments()
    args = _parse_location(sym, location, ctx, dtype, who)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, who)
    if isinstance(expected, Mapping):
        unknown = sorted(set(expected) - set(arg_names))
        if unknown:
            raise SymbolCheckError(
                f"{who}: expected names {unknown}, which are not arguments of the symbol {arg_names}"
            )
        expected = {n: expected[n] for n in arg_names if n in expected}
    elif isinstance(expected, list | tuple):
        if len(expected) > len(arg_names):
            raise SymbolCheckError(
                f"{who}: expected has {len(expected)} gradients, but the symbol has {len(arg_names)} arguments"
            )
        expected = dict(zip(arg_names, expected, strict=False))
    else:
        raise SymbolCheckError(f"{who}: expected must be a list or a dict of arrays, got {type(expected).__name__}")
    expected = {k: np.asarray(v.asnumpy() if isinstance(v, NDArray) else v) for k, v in expected.items()}
    reqs = _grad_req_dict(grad_req, arg_names, who)

    # Dirty the gradient buffers, so that `write` must overwrite and `add` must add.
    initial: dict[str, np.ndarray] = {}
    grads: dict[str, NDArray] = {}
    for name, value in expected.items():
        noise = np.random.normal(size=args[name].shape)
        grads[name] = nd.array(noise, ctx=ctx, dtype=value.dtype if dtype is None else dtype)
        initial[name] = grads[name].asnumpy()  # the noise as the buffer's dtype holds it

    executor = bind(sym, ctx, args=args, args_grad=grads, grad_req=reqs, aux_states=aux)
    executor.forward(is_train=True)
    if isinstance(out_grads, Mapping):
        out_grads = {k: _to_ndarray(v, ctx, dtype) for k, v in out_grads.items()}
    elif out_grads is not None:
        out_grads = [_to_ndarray(v, ctx, dtype) for v in out_grads]
    executor.backward(out_grads)

    for name, want in expected.items():
        got = grads[name].asnumpy()
        req = reqs.get(name, "null")
        what = f"{who}: gradient of argument {name!r} (grad_req={req!r})"
        if req == "write":
            _compare(want, got, rtol, atol, equal_nan, f"{what} is wrong")
        elif req == "add":
            _compare(want, got - initial[name], rtol, atol, equal_nan, f"{what} added the wrong amount")
        elif not np.array_equal(got, initial[name], equal_nan=True):
            where = np.argwhere(got != initial[name])[0]
            raise AssertionError(
                f"{what} was changed, although grad_req='null' must leave the buffer alone: "
                f"at index {tuple(int(i) for i in where)} it held {initial[name][tuple(where)]!r}, "
                f"now {got[tuple(where)]!r}"
            )
    return grads


def _numeric_grads(
    executor: Executor,
    location: dict[str, np.ndarray],
    names: list[str],
    aux_states: dict[str, np.ndarray] | None,
    eps: float,
    use_forward_train: bool,
) -> dict[str, np.ndarray]:
    """Central differences of the executor's (scalar-summed) first output, one element at a time."""
    results = {}
    for name in names:
        values = np.array(location[name], copy=True, order="C")
        target = executor.arg_dict[name]
        numeric = np.zeros(values.shape, dtype=np.float64)
        flat_values, flat_numeric = values.reshape(-1), numeric.reshape(-1)

        def loss(values: np.ndarray = values, target: NDArray = target) -> float:
            target[:] = values
            if aux_states is not None:  # a training forward may update them (BatchNorm)
                for key, value in aux_states.items():
                    executor.aux_dict[key][:] = value
            executor.forward(is_train=use_forward_train)
            return float(executor.outputs[0].asnumpy().astype(np.float64).sum())

        for i in range(flat_values.size):
            original = flat_values[i]
            flat_values[i] = original + eps / 2
            plus = loss()
            flat_values[i] = original - eps / 2
            minus = loss()
            flat_values[i] = original
            flat_numeric[i] = (plus - minus) / eps
        target[:] = values  # back to the original point
        results[name] = numeric
    return results


def numeric_grad(
    executor: Executor,
    location: Mapping[str, np.ndarray],
    aux_states: Mapping[str, np.ndarray] | None = None,
    eps: float = 1e-4,
    use_forward_train: bool = True,
    dtype: Any = np.float32,
) -> dict[str, np.ndarray]:
    """Finite-difference gradients of the sum of ``executor``'s first output, per argument in
    ``location`` (a dict of NumPy arrays, every argument of the executor). Integer arguments
    get zeros. The executor's arguments are left at ``location`` afterwards.
    """
    dtype = _check_dtype(dtype, "numeric_grad", allow_asnumpy=False)
    if not isinstance(location, Mapping):
        raise SymbolCheckError(f"numeric_grad: location must be a dict by argument name, got {type(location).__name__}")
    values = {k: np.asarray(v, dtype=dtype if np.asarray(v).dtype.kind == "f" else None) for k, v in location.items()}
    for name, value in values.items():
        if name not in executor.arg_dict:
            raise SymbolCheckError(f"numeric_grad: {name!r} is not an argument of the executor")
        executor.arg_dict[name][:] = value
    aux = None if aux_states is None else {k: np.asarray(v) for k, v in aux_states.items()}
    floats = [k for k, v in values.items() if v.dtype.kind == "f"]
    grads = _numeric_grads(executor, values, floats, aux, eps, use_forward_train)
    return {k: grads[k].astype(dtype) if k in grads else np.zeros(v.shape, dtype=v.dtype) for k, v in values.items()}


def check_numeric_gradient(
    sym: Symbol,
    location: Sequence[Any] | Mapping[str, Any],
    aux_states: Sequence[Any] | Mapping[str, Any] | None = None,
    numeric_eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    grad_nodes: Sequence[str] | Mapping[str, str] | None = None,
    use_forward_train: bool = True,
    ctx: Context | None = None,
    grad_stype_dict: Mapping[str, str] | None = None,
    dtype: Any = np.float64,
) -> None:
    """Check the backward pass of ``sym`` against finite differences at ``location``.

    ``grad_nodes`` names the arguments to check (all by default), or maps names to a
    ``grad_req``. The eps defaults to 2^-6 / 2^-9 / 2^-14 for float16 / 32 / 64; tolerances
    default to those of the dtype. Unlike MXNet (float32), the default dtype is float64,
    where finite differences are accurate enough to trust.
    """
    who = "check_numeric_gradient"
    _check_symbol(sym, who)
    _check_dense(grad_stype_dict, who)
    ctx = ctx or current_context()
    dtype = _check_dtype(dtype, who, allow_asnumpy=False)
    if len(sym.list_outputs()) != 1:
        raise SymbolCheckError(
            f"{who}: the symbol has {len(sym.list_outputs())} outputs {sym.list_outputs()}; "
            "check one at a time (sym[i])"
        )
    arg_names = sym.list_arguments()
    args = _parse_location(sym, location, ctx, dtype, who)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, who)
    location_npy = {k: v.asnumpy() for k, v in args.items()}
    aux_npy = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        reqs = dict.fromkeys(arg_names, "write")
    elif isinstance(grad_nodes, Mapping):
        reqs = _grad_req_dict(dict(grad_nodes), arg_names, who)
    elif isinstance(grad_nodes, list | tuple):
        reqs = dict.fromkeys(grad_nodes, "write")
    else:
        raise SymbolCheckError(f"{who}: grad_nodes must be a list or a dict of names, got {type(grad_nodes).__name__}")
    unknown = [n for n in reqs if n not in arg_names]
    if unknown:
        raise SymbolCheckError(f"{who}: grad_nodes names {unknown}, which are not arguments of the symbol {arg_names}")

    # The scalar loss: the output weighted by random numbers in [0.1, 1.1), summed by MakeLoss.
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in args.items()})
    if out_shapes is None:
        raise SymbolCheckError(f"{who}: cannot infer the output shape from location {location_npy.keys()}")
    out_shape = out_shapes[0]
    loss = _make_loss(sym * Variable("__random_proj"))
    args["__random_proj"] = nd.array(np.random.rand(*out_shape) + 0.1, ctx=ctx, dtype=dtype)
    initial = {k: np.random.normal(0, 0.01, size=args[k].shape) for k in reqs}
    grads = {k: nd.array(v, ctx=ctx, dtype=dtype) for k, v in initial.items()}
    initial = {k: g.asnumpy() for k, g in grads.items()}  # as the buffer's dtype holds it

    executor = bind(loss, ctx, args=args, args_grad=grads, grad_req=reqs, aux_states=aux)
    executor.forward(is_train=True)
    eps = numeric_eps if numeric_eps is not None else default_numeric_eps()[dtype]
    if dtype != np.float64 and eps < 1e-5:
        raise SymbolCheckError(
            f"{who}: numeric_eps={eps:g} is too small for {dtype.name}; finite differences need >= 1e-5"
        )
    executor.backward()
    symbolic = {k: g.asnumpy() for k, g in grads.items()}

    checked = [k for k in arg_names if k in reqs and reqs[k] != "null" and location_npy[k].dtype.kind == "f"]
    numeric = _numeric_grads(executor, location_npy, checked, aux_npy, eps, use_forward_train)
    for name in arg_names:
        if name not in reqs:
            continue
        req = reqs[name]
        what = f"{who}: gradient of argument {name!r} (grad_req={req!r})"
        if req == "null":
            if not np.array_equal(symbolic[name], initial[name], equal_nan=True):
                raise AssertionError(f"{what} was changed, although grad_req='null' must leave the buffer alone")
            continue
        if name not in numeric:
            continue
        got = symbolic[name] if req == "write" else symbolic[name] - initial[name]
        try:
            assert_almost_equal(
                numeric[name].astype(dtype), got, rtol, atol, names=("finite differences", "backward"), equal_nan=False
            )
        except AssertionError as err:
            raise AssertionError(
                f"{what} disagrees with finite differences (eps={eps:g}; both are gradients of "
                f"sum(output * random weights in [0.1, 1.1))): {err}"
            ) from None
