"""What a compute function receives besides its arrays, and the one way it writes results.

Compute functions have MXNet's signature ``compute(attrs, op_ctx, inputs, req, outputs)``:
raw NumPy/CuPy arrays in and out, and one write request per output. They must honour the
request through :func:`assign` (or :func:`assign_ufunc`), so ``add`` accumulates and
``null`` leaves the output untouched for every operator.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .. import backend
from ..context import Context
from .infer import InferenceError


class Req(enum.Enum):
    """MXNet's ``OpReqType``: how to write an output."""

    NULL = "null"  # do not write (the gradient is not needed)
    WRITE = "write"  # overwrite the output
    INPLACE = "inplace"  # overwrite; the output shares memory with an input
    ADD = "add"  # add to what is already there (gradient accumulation)

    @classmethod
    def parse(cls, value: str | Req) -> Req:
        if isinstance(value, Req):
            return value
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"grad_req/req must be one of null, write, inplace, add; got {value!r}") from None


NULL, WRITE, INPLACE, ADD = Req.NULL, Req.WRITE, Req.INPLACE, Req.ADD


class OpContext:
    """Runtime information for one call: training or not, device, stream, resources."""

    __slots__ = ("is_train", "ctx", "stream", "requested", "xp", "async_on_complete")

    def __init__(
        self,
        is_train: bool,
        ctx: Context,
        stream: Any = None,
        requested: list | None = None,
        async_on_complete: Callable[..., None] | None = None,
    ) -> None:
        self.is_train = is_train
        self.ctx = ctx
        self.stream = stream
        #: Resources (random generator, temp space) in the order the operator requested them.
        self.requested = requested or []
        #: The array module for ``ctx``: numpy on CPU, cupy on GPU.
        self.xp: ModuleType = backend.array_module(ctx)
        #: For asynchronous operators (``OpDef.set_is_async``) run by the engine: call it
        #: once when the outputs are final (MXNet's ``OpContext::async_on_complete``).
        self.async_on_complete = async_on_complete

    def random_generator(self, op_name: str) -> Any:
        """The random generator the operator requested (``ResourceRequest.RANDOM``, first in its list).

        Drawing from it, rather than from NumPy's global state, is what lets the engine order draws
        per device and ``mx.random.seed(s, ctx)`` make them reproducible.
        """
        if not self.requested:
            raise InferenceError(f"{op_name}: no random resource was handed to the operator (request RANDOM)")
        return self.requested[0].generator


def assign(out: Any, req: Req, value: Any) -> None:
    """Write ``value`` into ``out`` as ``req`` says (MXNet's ``KERNEL_ASSIGN``)."""
    if req is Req.NULL:
        return
    if req is Req.ADD:
        out += value
    else:
        out[...] = value


def assign_ufunc(out: Any, req: Req, ufunc: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Like :func:`assign` for ``ufunc(*args)``, computing straight into ``out`` when writing.

    Avoids a temporary for ``write``/``inplace``; ``add`` needs one.
    """
    if req is Req.NULL:
        return
    if req is Req.ADD:
        out += ufunc(*args, **kwargs)
    else:
        ufunc(*args, out=out, **kwargs)
