"""The Python ``Custom`` operator is an asynchronous engine operation (MXNet 1.x's design).

Its forward/backward run on the custom-op thread, on NDArrays over the real arrays on
their real context, and may push any NDArray work: the engine worker that dispatched the
operator is already free. Each test runs on the configurations that matter, including a
ThreadedEngine with a single worker (one shared pool: the case that deadlocked when user
code ran while occupying a worker). Every wait has a timeout, so a regression fails
instead of hanging.
"""

from __future__ import annotations

import threading
from typing import ClassVar

import numpy as np
import pytest

import framework as mx
from framework import custom_op
from framework.base import EngineError
from framework.custom_op import CustomOp, CustomOpError, CustomOpProp
from framework.operator import registry
from framework.operator.kernel import WRITE, OpContext

pytestmark = pytest.mark.timeout(60)

CONFIGS = [("ThreadedEngine", 1), ("ThreadedEngine", 2), ("ThreadedEnginePerDevice", 1), ("NaiveEngine", None)]


@pytest.fixture(params=CONFIGS, ids=lambda c: c[0] if c[1] is None else f"{c[0]}-{c[1]}w")
def engine(request):
    """The process-wide engine for the test; stopped afterwards only if it drained."""
    kind, workers = request.param
    engine = mx.engine.create(kind, workers)
    with mx.engine.use(engine):
        yield engine
    if engine._wait_idle(10):  # a deadlocked engine is left alone so the failure is reported
        engine.stop()


def settle(engine) -> None:
    """Wait (bounded) for everything pushed so far; re-raises the first error."""
    engine.wait_for_all(timeout=20)


# ------------------------------------------------------------------ an operator written with NDArray ops
SEEN: list[tuple[str, str, str]] = []  # (step, thread name, context of in_data[0])


class RowSoftplus(CustomOp):
    """softplus(x) = log(1 + exp(x)), row by row through slices, written with self.assign."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x, y = in_data[0], out_data[0]
        SEEN.append(("forward", threading.current_thread().name, str(x.context)))
        for i in range(x.shape[0]):
            self.assign(y[i], req[0], mx.nd.log(1 + mx.nd.exp(x[i])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        SEEN.append(("backward", threading.current_thread().name, str(in_data[0].context)))
        sigmoid = 1 / (1 + mx.nd.exp(-in_data[0]))
        self.assign(in_grad[0], req[0], out_grad[0] * sigmoid)


@custom_op.register("async_softplus")
class RowSoftplusProp(CustomOpProp):
    def __init__(self) -> None:
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return RowSoftplus()


X = np.array([[-1.0, 0.0, 2.0], [0.5, -3.0, 1.0]], dtype=np.float32)


def softplus(x):
    return np.log1p(np.exp(x))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def check_threads(engine, steps: set[str]) -> None:
    """User code ran on the real context, and (threaded engines) on the custom-op thread."""
    seen = [s for s in SEEN if s[0] in steps]
    assert {s[0] for s in seen} == steps
    assert {s[2] for s in seen} == {"cpu(0)"}  # the real context: no side context any more
    names = {s[1] for s in seen}
    if engine.type_name == "NaiveEngine":
        assert names == {threading.current_thread().name}  # inline, as in MXNet
    else:
        assert all(n.startswith("mxlab-custom-op/") for n in names), names


def test_imperative_forward(engine):
    SEEN.clear()
    y = mx.nd.Custom(mx.nd.array(X), op_type="async_softplus")
    settle(engine)
    np.testing.assert_allclose(y.asnumpy(), softplus(X), rtol=1e-5)
    check_threads(engine, {"forward"})


def test_autograd_forward_and_backward(engine):
    SEEN.clear()
    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="async_softplus")
        loss = (y * 2).sum()
    loss.backward()
    settle(engine)
    np.testing.assert_allclose(y.asnumpy(), softplus(X), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * sigmoid(X), rtol=1e-5)
    check_threads(engine, {"forward", "backward"})


def test_bound_symbol_forward_backward_with_add_request(engine):
    SEEN.clear()
    data = mx.sym.var("data")
    net = mx.sym.Custom(mx.sym.exp(data), op_type="async_softplus", name="sp") * 3
    grad = mx.nd.ones(X.shape)
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(X)}, args_grad={"data": grad}, grad_req="add")
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones(X.shape))
    settle(engine)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), 3 * softplus(np.exp(X)), rtol=1e-5)
    expected = 1 + 2 * 3 * sigmoid(np.exp(X)) * np.exp(X)
    np.testing.assert_allclose(grad.asnumpy(), expected, rtol=1e-5)
    check_threads(engine, {"forward", "backward"})


# ------------------------------------------------------------------ many in flight
class AddOne(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@custom_op.register("async_add_one")
class AddOneProp(CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return AddOne()


def test_dependent_chain_of_fifty_custom_ops_keeps_order(engine):
    x = mx.nd.array(X)
    z = x
    for i in range(50):
        z = mx.nd.Custom(z, op_type="async_add_one")
        if i % 10 == 9:
            z = z * 1  # built-in operators interleaved with the custom ones
    settle(engine)
    np.testing.assert_allclose(z.asnumpy(), X + 50)


def test_same_array_updated_in_place_by_fifty_custom_ops(engine):
    acc = mx.nd.zeros(X.shape)
    for _ in range(50):
        mx.nd.Custom(acc, op_type="async_add_one", out=acc)
    settle(engine)
    np.testing.assert_allclose(acc.asnumpy(), 50.0)


def test_many_independent_executors_at_once(engine):
    net = mx.sym.Custom(mx.sym.var("data"), op_type="async_softplus")
    execs = [net.bind(mx.cpu(), {"data": mx.nd.array(X + i)}) for i in range(8)]
    for ex in execs:
        ex.forward()
    settle(engine)
    for i, ex in enumerate(execs):
        np.testing.assert_allclose(ex.outputs[0].asnumpy(), softplus(X + i), rtol=1e-5)


# ------------------------------------------------------------------ nesting and synchronous reads
class Nested(CustomOp):
    """Calls another custom operator and reads its result inside forward."""

    def forward(self, is_train, req, in_data, out_data, aux):
        inner = mx.nd.Custom(in_data[0], op_type="async_add_one")
        value = inner.asnumpy()  # a synchronous read while this operator is running
        self.assign(out_data[0], req[0], mx.nd.array(value * 2))


@custom_op.register("async_nested")
class NestedProp(CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return Nested()


def test_custom_op_may_call_and_wait_for_another(engine):
    y = mx.nd.Custom(mx.nd.array(X), op_type="async_nested")
    settle(engine)
    np.testing.assert_allclose(y.asnumpy(), (X + 1) * 2)


# ------------------------------------------------------------------ errors
class Broken(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        mx.nd.exp(in_data[0])  # some work in flight when it fails
        raise RuntimeError("forward exploded")

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise ZeroDivisionError("backward exploded")


@custom_op.register("async_broken")
class BrokenProp(CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return Broken()


def test_exception_in_forward_is_raised_at_the_next_sync_point_naming_the_op(engine):
    y = mx.nd.Custom(mx.nd.array(X), op_type="async_broken")
    z = y + 1  # a dependant: skipped, inherits the error
    expected = r"Custom operator 'async_broken'.*forward raised RuntimeError: forward exploded"
    with pytest.raises(CustomOpError, match=expected):
        z.wait_to_read()
    settle(engine)  # reported once; the engine keeps working
    ok = mx.nd.Custom(mx.nd.array(X), op_type="async_add_one")
    settle(engine)
    np.testing.assert_allclose(ok.asnumpy(), X + 1)


def test_exception_in_backward_names_backward(engine):
    class BrokenBackward(Broken):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])

    @custom_op.register("async_broken_backward")
    class Prop(CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return BrokenBackward()

    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="async_broken_backward")
    y.backward()
    with pytest.raises(CustomOpError, match=r"'async_broken_backward'.*backward raised ZeroDivisionError"):
        settle(engine)


class FailsInside(CustomOp):
    """The failure happens in work the forward pushed (a nested custom op that raises)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.Custom(in_data[0], op_type="async_broken"))


@custom_op.register("async_fails_inside")
class FailsInsideProp(CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return FailsInside()


def test_error_in_work_pushed_by_forward_is_reported_by_the_outer_op(engine):
    y = mx.nd.Custom(mx.nd.array(X), op_type="async_fails_inside")
    with pytest.raises(CustomOpError, match=r"'async_fails_inside'.*forward raised CustomOpError.*forward exploded"):
        y.wait_to_read()
    settle(engine)  # nothing left unreported


class Keeper(CustomOp):
    kept: ClassVar[list] = []

    def forward(self, is_train, req, in_data, out_data, aux):
        Keeper.kept.append(in_data[0])
        self.assign(out_data[0], req[0], in_data[0])


@custom_op.register("async_keeper")
class KeeperProp(CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return Keeper()


def test_arrays_handed_to_user_code_are_valid_only_during_the_call(engine):
    Keeper.kept.clear()
    y = mx.nd.Custom(mx.nd.array(X), op_type="async_keeper")
    settle(engine)
    np.testing.assert_allclose(y.asnumpy(), X)
    expected = r"in_data\[0\] of Custom operator 'async_keeper'.*valid only during the call"
    with pytest.raises(EngineError, match=expected):
        (Keeper.kept[0] + 1).wait_to_read()


# ------------------------------------------------------------------ write requests
class IgnoresReq(CustomOp):
    """Writes every gradient whatever req says (sloppy, but must not crash)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        in_grad[0][:] = out_grad[0] * in_data[1]
        in_grad[1][:] = out_grad[0] * in_data[0]


@custom_op.register("async_ignores_req")
class IgnoresReqProp(CustomOpProp):
    def list_arguments(self):
        return ["a", "b"]

    def create_operator(self, ctx, shapes, dtypes):
        return IgnoresReq()


def test_null_request_gets_a_scratch_array_and_leaves_the_buffer_alone(engine):
    net = mx.sym.Custom(mx.sym.var("a"), mx.sym.var("b"), op_type="async_ignores_req")
    grad_a, grad_b = mx.nd.zeros(X.shape), mx.nd.full(X.shape, 7.0)
    ex = net.bind(
        mx.cpu(),
        {"a": mx.nd.array(X), "b": mx.nd.full(X.shape, 2.0)},
        args_grad={"a": grad_a, "b": grad_b},
        grad_req={"a": "write", "b": "null"},
    )
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones(X.shape))
    settle(engine)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), X * 2)
    np.testing.assert_allclose(grad_a.asnumpy(), 2.0)
    np.testing.assert_allclose(grad_b.asnumpy(), 7.0)  # req null: untouched


def test_called_outside_the_engine_runs_synchronously():
    """Direct calls of the compute function (test utilities) have no on_complete: run at once."""
    op = registry.get("Custom")
    attrs = op.parse_attrs({"op_type": "async_add_one"})
    out = np.zeros_like(X)
    op.get_compute("cpu")(attrs, OpContext(False, mx.cpu()), [X.copy()], [WRITE], [out])
    np.testing.assert_allclose(out, X + 1)
    attrs = op.parse_attrs({"op_type": "async_broken"})
    with pytest.raises(CustomOpError, match="forward raised RuntimeError"):
        op.get_compute("cpu")(attrs, OpContext(False, mx.cpu()), [X.copy()], [WRITE], [out])


# ------------------------------------------------------------------ the custom-op thread pool
def test_custom_op_threads_run_a_chain_on_one_thread_and_grow_only_for_nesting():
    pool = custom_op.threads.CustomOpThreads(max_threads=3)
    ran: list[str] = []
    finished = threading.Event()

    def chained(i: int):
        def job():
            ran.append(threading.current_thread().name)
            # completing job i queues job i + 1 (what on_complete does for a dependent chain)
            return (lambda: pool.submit(chained(i + 1))) if i < 20 else finished.set

        return job

    pool.submit(chained(0))
    assert finished.wait(10)
    assert pool.num_threads == 1 and set(ran) == {"mxlab-custom-op/0"}

    inner_done = threading.Event()

    def inner():
        inner_done.set()
        return lambda: None

    def outer():  # waits for a job it queued itself: needs a second thread
        pool.submit(inner)
        assert inner_done.wait(10)
        return lambda: None

    pool.submit(outer)
    assert inner_done.wait(10)
    assert pool.num_threads == 2

    release = threading.Event()
    blocked = [threading.Event() for _ in range(4)]

    def blocker(i: int):
        def job():
            blocked[i].set()
            release.wait(10)
            return lambda: None

        return job

    for i in range(4):
        pool.submit(blocker(i))
    assert blocked[2].wait(10)
    assert pool.num_threads == 3  # capped at max_threads: the fourth job waits its turn
    assert not blocked[3].is_set()
    release.set()
    assert blocked[3].wait(10)
