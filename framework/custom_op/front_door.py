"""What a custom-operator author writes against: ``CustomOp``, ``CustomOpProp`` and ``register``.

These classes only hold the user's code and the table of registered property classes; the
registry record that runs them is :mod:`.custom_operator`, and the threads they run on are
:mod:`.threads`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import MXLabError
from ..context import Context
from ..ndarray.ndarray import NDArray


class CustomOpError(MXLabError, ValueError):
    """A Python custom operator is unknown, misdeclared, or raised in forward/backward."""


class CustomOp:
    """The computing half: ``forward`` and ``backward`` on NDArrays (MXNet's ``CustomOp``)."""

    def forward(self, is_train: bool, req: list[str], in_data: list, out_data: list, aux: list) -> None:
        """Compute ``out_data`` from ``in_data``; write with ``self.assign(out_data[i], req[i], value)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def backward(self, req: list[str], out_grad: list, in_data: list, out_data: list, in_grad: list, aux: list) -> None:
        """Compute ``in_grad`` (one per argument) with ``self.assign(in_grad[i], req[i], value)``."""
        raise NotImplementedError(f"{type(self).__name__} has no backward()")

    def assign(self, dst: NDArray, req: str, src: Any) -> None:
        """Write ``src`` into ``dst`` as ``req`` ('null', 'write', 'inplace', 'add') says."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise CustomOpError(f"assign: unknown req {req!r}; expected 'null', 'write', 'inplace' or 'add'")

    @staticmethod
    def as_array(array: NDArray) -> Any:
        """The NumPy/CuPy array behind ``array`` (waits for pending writes): for raw kernels.

        An MXLab extension; writes through it land in ``array`` directly.
        """
        array.wait_to_read()
        return array._data


class CustomOpProp:
    """The describing half (MXNet's ``CustomOpProp``); defaults: one input, one output, same shape."""

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape: list) -> tuple:
        """(argument shapes, output shapes, auxiliary shapes) from the argument shapes."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: list) -> tuple:
        """(argument, output, auxiliary) dtypes; by default all take the first argument's."""
        return (
            in_type,
            [in_type[0]] * len(self.list_outputs()),
            [in_type[0]] * len(self.list_auxiliary_states()),
        )

    def infer_storage_type(self, in_stype: list) -> tuple:
        """Storage types; MXLab is dense only, so anything but 'default' is rejected."""
        return (
            in_stype,
            ["default"] * len(self.list_outputs()),
            ["default"] * len(self.list_auxiliary_states()),
        )

    def list_arguments(self) -> list[str]:
        return ["data"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def list_auxiliary_states(self) -> list[str]:
        return []

    def declare_backward_dependency(self, out_grad: list[int], in_data: list[int], out_data: list[int]) -> list[int]:
        """What backward reads: out_grad when need_top_grad, then in_data and out_data."""
        deps: list[int] = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx: Context, in_shapes: list, in_dtypes: list) -> CustomOp:
        """Build the :class:`CustomOp` for device ``ctx``."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_operator()")


registered: dict[str, type[CustomOpProp]] = {}


class _Registration:
    """What ``register(name)`` returns: the decorator, which also explains a seed-004 style chain."""

    def __init__(self, reg_name: str) -> None:
        self.reg_name = reg_name

    def __call__(self, prop_cls: type[CustomOpProp]) -> type[CustomOpProp]:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise CustomOpError(f"register({self.reg_name!r}): expected a CustomOpProp subclass, got {prop_cls!r}")
        registered[self.reg_name] = prop_cls
        return prop_cls

    def __getattr__(self, name: str) -> Any:
        if name.startswith("set_"):  # register("x").set_num_inputs(...): the native registry's chain
            raise AttributeError(
                f"mx.operator.register({self.reg_name!r}) is MXNet's decorator for CustomOpProp classes; "
                f"the native registration chain is mx.operator.register_op({self.reg_name!r}).{name}(...)"
            )
        raise AttributeError(name)


def register(reg_name: str) -> Callable[[type[CustomOpProp]], type[CustomOpProp]]:
    """Class decorator: make a CustomOpProp subclass available as ``Custom(op_type=reg_name)``."""
    if not isinstance(reg_name, str) or not reg_name:
        raise CustomOpError(f"register: the name must be a non-empty string, got {reg_name!r}")
    return _Registration(reg_name)


def get_all_registered_operators() -> list[str]:
    """Names registered with :func:`register`."""
    return sorted(registered)
