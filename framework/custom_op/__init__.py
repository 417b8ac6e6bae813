"""Operators written in Python on NDArrays: MXNet 1.x's ``mx.operator.CustomOp`` front door.

A custom operator is two classes and a registration, exactly as in MXNet::

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            y = 1 / (1 + mx.nd.exp(-in_data[0]))
            self.assign(out_data[0], req[0], y)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register("sigmoid")
    class SigmoidProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)
        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()

    y = mx.nd.Custom(x, op_type="sigmoid")          # or mx.sym.Custom(data, op_type=...)

Every ``Custom`` call is one record of the operator registry named ``Custom`` (plus
``_backward_Custom``): the keyword ``op_type`` picks the registered property class and
every other keyword is handed, as a string, to the property's constructor (MXNet does the
same). The property answers the registry's questions (argument, output and auxiliary-state
names, shape and type inference); ``create_operator`` builds the computing object once per
node (or imperative call pattern), device, input shapes and dtypes.

**How it runs (MXNet 1.x's design).** ``Custom`` is an *asynchronous* operator
(``OpDef.set_is_async``): the engine pushes it with ``push_async`` and
``FnProperty.ASYNC``, and its compute function only queues a job for the custom-op
thread and returns, so the engine worker (or the pushing thread) is free at once. On the
custom-op thread your ``forward``/``backward`` receive NDArrays over the operator's real
arrays, on their real context, each with a fresh engine variable (the real ones are held
by the running operation). Your ``mx.nd`` calls push work normally; when your code
returns, the thread waits until every operation pushed on those arrays has finished,
then calls ``on_complete``, and only then does the engine run what depends on the
outputs. An exception (yours, or one raised by work you pushed) becomes a
:class:`CustomOpError` naming the operator type and the step, raised at the next wait.
With the ``NaiveEngine`` the code runs inline and completes synchronously, as in MXNet.
The arrays you receive are valid only during the call (keep a ``.copy()`` if needed).

**Backward dependencies.** ``declare_backward_dependency`` is honoured for what your
``backward`` receives (undeclared ``in_data``/``out_data`` entries are still passed, as in
MXNet, so do not rely on them being None), but the ``_backward_Custom`` node always keeps
all of them alive: the memory planner cannot free them early (an MXLab simplification).

Modules: :mod:`.front_door` (``CustomOp``, ``CustomOpProp``, ``register``), :mod:`.threads`
(the custom-op threads), :mod:`.custom_operator` (the registered ``Custom`` operator).
"""

from __future__ import annotations

from . import custom_operator as _custom_operator  # noqa: F401 - registers Custom and _backward_Custom
from .front_door import CustomOp, CustomOpError, CustomOpProp, get_all_registered_operators, register

__all__ = ["CustomOp", "CustomOpProp", "CustomOpError", "get_all_registered_operators", "register"]
