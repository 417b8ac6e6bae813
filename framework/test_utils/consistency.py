"""Running one computation several ways and comparing: contexts, dtypes, optimizers, speed.

:func:`check_consistency` binds the same symbol once per entry of ``ctx_list`` (a context,
input shapes and a ``type_dict``), feeds every executor the same random inputs, and checks
that forward outputs and backward gradients agree with the most precise run (float64 before
float32 before float16), each comparison with the tolerance of the less precise dtype.
That is how MXNet tests that its GPU kernels compute what its CPU kernels do; in MXLab it
also compares ``cpu(0)`` with ``cpu(1)`` (separate engine workers and memory pools) and, with
CuPy, the GPU.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..context import Context
from ..engine import Engine
from ..symbol import Symbol
from .compare import assert_almost_equal, compare_ndarray_tuple
from .tolerances import HelperArgumentError, default_context, get_tols


def _itemsize(dtype: Any) -> int:
    return np.dtype(dtype).itemsize


def check_consistency(
    sym: Symbol | Sequence[Symbol],
    ctx_list: Sequence[Mapping[str, Any]],
    scale: float = 1.0,
    grad_req: str | Sequence[str] | Mapping[str, str] = "write",
    arg_params: dict[str, Any] | None = None,
    aux_params: dict[str, Any] | None = None,
    rtol: float | dict[Any, float] | None = None,
    atol: float | dict[Any, float] | None = None,
    raise_on_err: bool = True,
    ground_truth: dict[str, Any] | None = None,
    equal_nan: bool = False,
    use_uniform: bool = False,
    rand_type: Any = np.float64,
) -> dict[str, Any]:
    """Check that ``sym`` computes the same outputs and gradients on every entry of ``ctx_list``.

    Each entry is ``{"ctx": mx.cpu(0), "<input>": shape, ..., "type_dict": {"<input>": dtype}}``,
    the keyword arguments of ``simple_bind``. Inputs not in ``arg_params`` are drawn from
    N(0, scale) (or U(-0.92 scale, 0.92 scale) with ``use_uniform``); auxiliary states not in
    ``aux_params`` start at 0. Returns the reference outputs and gradients by name. With
    ``raise_on_err=False`` disagreements are printed instead of raised.
    """
    if len(ctx_list) < 2:
        raise HelperArgumentError(f"check_consistency: ctx_list needs at least 2 entries, got {len(ctx_list)}")
    symbols = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    if len(symbols) != len(ctx_list):
        raise HelperArgumentError(f"check_consistency: {len(symbols)} symbols for {len(ctx_list)} contexts")
    output_names, arg_names = symbols[0].list_outputs(), symbols[0].list_arguments()
    executors = []
    for i, (s, spec) in enumerate(zip(symbols, ctx_list, strict=True)):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise HelperArgumentError(f"check_consistency: symbol {i} has other arguments or outputs than symbol 0")
        bind_args = dict(spec)
        ctx = bind_args.pop("ctx", default_context())
        executors.append(s.simple_bind(ctx, grad_req=grad_req, **bind_args))

    arg_params = dict(arg_params or {})
    aux_params = dict(aux_params or {})
    for name, arr in sorted(executors[0].arg_dict.items()):
        if name not in arg_params:
            if use_uniform:
                values = np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape)
            else:
                values = np.random.normal(size=arr.shape, scale=scale)
            arg_params[name] = values.astype(rand_type)
    for name in executors[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in executors:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_dict.values():
                if arr is not None:
                    arr[:] = 0

    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in executors]
    reference = max(range(len(executors)), key=lambda i: _itemsize(dtypes[i]))  # the most precise run

    def compare(got: Any, expected: Any, what: str, i: int) -> None:
        try:
            rt, at = get_tols(got, expected, rtol, atol)
            assert_almost_equal(got, expected, rt, at, names=(f"run {i}", f"run {reference}"), equal_nan=equal_nan)
        except AssertionError as err:
            message = f"check_consistency: {what} of run {i} ({ctx_list[i].get('ctx')}, {dtypes[i]}) differs: {err}"
            if raise_on_err:
                raise AssertionError(message) from None
            print(message)

    for exe in executors:
        exe.forward(is_train=False)
    truth = ground_truth
    if truth is None:
        truth = {k: v.copy() for k, v in executors[reference].output_dict.items()}
    for i, exe in enumerate(executors):
        if i != reference:
            for name, out in zip(output_names, exe.outputs, strict=True):
                compare(out, truth[name], f"forward output {name!r}", i)

    if grad_req != "null":
        for exe in executors:
            exe.forward(is_train=True)
        # Every run gets the same head gradients: run 0's outputs, in the least precise dtype.
        least = [min((exe.outputs[j].dtype for exe in executors), key=_itemsize) for j in range(len(output_names))]
        heads = [executors[0].outputs[j].astype(least[j]).asnumpy() for j in range(len(output_names))]
        for exe in executors:
            exe.backward(
                [nd.array(h, ctx=out.context, dtype=out.dtype) for h, out in zip(heads, exe.outputs, strict=True)]
            )
        if ground_truth is None:
            truth.update({k: (None if v is None else v.copy()) for k, v in executors[reference].grad_dict.items()})
        for i, exe in enumerate(executors):
            if i == reference:
                continue
            for name in arg_names:
                got, expected = exe.grad_dict.get(name), truth.get(name)
                if got is None or expected is None:
                    if (got is None) != (expected is None):
                        compare(np.zeros(1), np.ones(1), f"presence of the gradient of {name!r}", i)
                    continue
                compare(got, expected, f"gradient of {name!r}", i)
    return truth


def check_speed(
    sym: Symbol,
    location: Mapping[str, np.ndarray] | None = None,
    ctx: Context | None = None,
    N: int = 20,
    grad_req: str | Mapping[str, str] | None = None,
    typ: str = "whole",
    **kwargs: Any,
) -> float:
    """Seconds per run of ``sym``: forward and backward (``typ="whole"``) or forward only
    (``"forward"``), averaged over ``N`` runs after one warm-up. Shapes come from ``location``
    (a dict of arrays, random N(0, 1) if None) or from ``kwargs``."""
    if typ not in ("whole", "forward"):
        raise HelperArgumentError(f'check_speed: typ must be "whole" or "forward", got {typ!r}')
    ctx = ctx or default_context()
    grad_req = grad_req or "write"
    if location is None:
        exe = sym.simple_bind(ctx, grad_req=grad_req, **kwargs)
        location = {k: np.random.normal(size=arr.shape, scale=1.0) for k, arr in exe.arg_dict.items()}
    else:
        if not isinstance(location, Mapping):
            raise HelperArgumentError(f"check_speed: location must be a dict of arrays, got {type(location).__name__}")
        exe = sym.simple_bind(ctx, grad_req=grad_req, **{k: np.shape(v) for k, v in location.items()})
    for name, values in location.items():
        exe.arg_dict[name][:] = np.asarray(values).astype(exe.arg_dict[name].dtype)

    def run() -> None:
        exe.forward(is_train=typ == "whole")
        if typ == "whole":
            exe.backward(out_grads=exe.outputs)

    run()
    Engine.get().wait_for_all()
    tic = time.perf_counter()
    for _ in range(N):
        run()
    Engine.get().wait_for_all()
    return (time.perf_counter() - tic) / N


def compare_optimizer(
    opt1: Any,
    opt2: Any,
    shape: Any,
    dtype: Any,
    w_stype: str = "default",
    g_stype: str = "default",
    rtol: float = 1e-4,
    atol: float = 1e-5,
    compare_states: bool = True,
    ntensors: int = 1,
) -> None:
    """Check that two optimizers make the same update from the same random weight and gradient
    (and create the same states). Dense storage only."""
    for what, stype in (("w_stype", w_stype), ("g_stype", g_stype)):
        if stype != "default":
            raise HelperArgumentError(
                f"compare_optimizer: {what}={stype!r} needs sparse storage, which MXLab does not have"
            )
    shapes = [shape] if ntensors == 1 else list(shape)
    if len(shapes) != ntensors:
        raise HelperArgumentError(f"compare_optimizer: ntensors={ntensors} but {len(shapes)} shapes given")
    ctx = default_context()
    for index, s in enumerate(shapes):
        w2 = nd.random.uniform(shape=s, ctx=ctx, dtype=dtype)
        g2 = nd.random.uniform(shape=s, ctx=ctx, dtype=dtype)
        w1, g1 = w2.copyto(ctx), g2.copyto(ctx)
        state1 = opt1.create_state_multi_precision(index, w1)
        state2 = opt2.create_state_multi_precision(index, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(index, w1, g1, state1)
        opt2.update_multi_precision(index, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol, names=("opt1 weight", "opt2 weight"))


def same_symbol_structure(sym1: Symbol, sym2: Symbol) -> bool:
    """Whether the two graphs have the same operators node by node (names and parameters aside)."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return len(nodes1) == len(nodes2) and all(a["op"] == b["op"] for a, b in zip(nodes1, nodes2, strict=True))


__all__ = ["check_consistency", "check_speed", "compare_optimizer", "same_symbol_structure"]


def check_gluon_hybridize_consistency(
    net_builder: Any,
    data_l: Sequence[Any],
    numpy_func: Any = None,
    test_grad: bool = True,
    rtol: float = 1e-4,
    atol: float = 1e-4,
) -> None:
    """The same Gluon block, imperative and hybridized (``static_alloc`` on and off), gives the same
    outputs (and, with ``test_grad``, the same input and parameter gradients) on ``data_l``; with
    ``numpy_func``, also NumPy's outputs.

    ``net_builder()`` must return a fresh, uninitialised block each call. Only the block's own
    methods are used (``initialize``, ``hybridize``, ``collect_params``), so this helper needs no
    import of Gluon, which sits above the test utilities in the layer order.
    """
    inputs = [d if isinstance(d, nd.NDArray) else nd.array(d) for d in data_l]
    saved: dict[str, Any] | None = None
    results = []
    for mode in ("imperative", "hybridized", "static"):
        net = net_builder()
        net.initialize()
        if mode != "imperative":
            net.hybridize(static_alloc=mode == "static", static_shape=mode == "static")
        net(*[x.copy() for x in inputs])  # deferred shapes resolve on the first call
        params = net.collect_params()
        if saved is None:
            saved = {name: p.data().copy() for name, p in params.items()}
        else:
            for p, value in zip(params.values(), saved.values(), strict=True):
                p.set_data(value)
        xs = [x.copy() for x in inputs]
        for x in xs:
            x.attach_grad()
        with autograd.record():
            out = net(*xs)
        outs = list(out) if isinstance(out, list | tuple) else [out]
        if test_grad:
            autograd.backward(outs)
        grads = [x.grad.asnumpy() for x in xs] + [
            p.grad().asnumpy() for p in params.values() if test_grad and p.grad_req != "null"
        ]
        results.append((mode, [o.asnumpy() for o in outs], grads if test_grad else []))
    first_mode, first_outs, first_grads = results[0]
    for mode, outs, grads in results[1:]:
        for i, (a, b) in enumerate(zip(outs, first_outs, strict=True)):
            assert_almost_equal(a, b, rtol=rtol, atol=atol, names=(f"{mode} output {i}", f"{first_mode} output {i}"))
        for i, (a, b) in enumerate(zip(grads, first_grads, strict=True)):
            assert_almost_equal(
                a, b, rtol=rtol, atol=atol, names=(f"{mode} gradient {i}", f"{first_mode} gradient {i}")
            )
    if numpy_func is not None:
        expected = numpy_func(*[x.asnumpy() for x in inputs])
        expected = list(expected) if isinstance(expected, list | tuple) else [expected]
        for i, (a, b) in enumerate(zip(first_outs, expected, strict=True)):
            assert_almost_equal(a, b, rtol=rtol, atol=atol, names=(f"output {i}", f"numpy_func output {i}"))
