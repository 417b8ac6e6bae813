"""``PythonModule`` and ``PythonLossModule``: modules written in plain Python instead of a symbol.

A module only has to answer the BaseModule steps (bind, forward, backward, get_outputs,
get_input_grads...). ``PythonModule`` answers the parameter and optimizer steps with "nothing to
do" (it has no parameters), so a subclass only writes the computation. ``PythonLossModule`` is the
common case: the last module of a :class:`~.sequential_module.SequentialModule` whose loss gradient
is a Python function ``grad_func(scores, labels)``; its output is its input (the scores), and
``backward`` hands the gradient back to the module before it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from .. import ndarray as nd
from ..initializer import Uniform
from ..ndarray import NDArray
from .base_module import BaseModule
from .executor_group import ModuleError


def _names(value: Sequence[str] | None) -> list[str] | None:
    return list(value) if value is not None else None


class PythonModule(BaseModule):
    """A parameter-free module whose computation a subclass writes in Python.

    Subclasses implement ``forward``, ``backward``, ``get_outputs``, ``get_input_grads`` and
    ``_compute_output_shapes`` (called by ``bind``).

    Args:
        data_names / label_names / output_names: the names of the inputs and outputs.
    """

    def __init__(
        self,
        data_names: Sequence[str],
        label_names: Sequence[str] | None,
        output_names: Sequence[str],
        logger: Any = logging,
    ) -> None:
        super().__init__(logger=logger)
        self._data_names = _names(data_names)
        self._label_names = _names(label_names)
        self._output_names = _names(output_names)
        self._data_shapes: list[Any] | None = None
        self._label_shapes: list[Any] | None = None
        self._output_shapes: list[Any] | None = None

    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    @property
    def data_shapes(self) -> list[Any] | None:
        return self._data_shapes

    @property
    def label_shapes(self) -> list[Any] | None:
        return self._label_shapes

    @property
    def output_shapes(self) -> list[Any] | None:
        return self._output_shapes

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """No parameters: two empty dicts."""
        return {}, {}

    def init_params(
        self,
        initializer: Any = Uniform(0.01),  # noqa: B008 - MXNet's default
        arg_params: Any = None,
        aux_params: Any = None,
        allow_missing: bool = False,
        force_init: bool = False,
        allow_extra: bool = False,
    ) -> None:
        """Nothing to initialise; the module counts as initialised."""
        self.params_initialized = True

    def update(self) -> None:
        """No parameters to update."""

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Score the outputs against ``labels`` (ignored when the module was bound without labels)."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise ModuleError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def bind(
        self,
        data_shapes: Any,
        label_shapes: Any = None,
        for_training: bool = True,
        inputs_need_grad: bool = False,
        force_rebind: bool = False,
        shared_module: Any = None,
        grad_req: Any = "write",
    ) -> None:
        """Record the input shapes and compute the output shapes (no memory to allocate)."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise ModuleError(f"{type(self).__name__}.bind: only grad_req='write' is supported, got {grad_req!r}")
        data_shapes = list(data_shapes)
        given = [desc[0] for desc in data_shapes]
        if given != self._data_names:
            raise ModuleError(f"{type(self).__name__}.bind: data_shapes name {given}, expected {self._data_names}")
        if label_shapes is not None:
            label_shapes = list(label_shapes)
            given = [desc[0] for desc in label_shapes]
            if self._label_names is None or given != self._label_names:
                raise ModuleError(
                    f"{type(self).__name__}.bind: label_shapes name {given}, expected {self._label_names}"
                )
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """``[(output_name, shape), ...]`` from ``self._data_shapes``: the subclass knows its computation."""
        raise NotImplementedError(f"{type(self).__name__} must implement _compute_output_shapes")

    def init_optimizer(
        self,
        kvstore: Any = "local",
        optimizer: Any = "sgd",
        optimizer_params: Any = (("learning_rate", 0.01),),
        force_init: bool = False,
    ) -> None:
        """No parameters, so no optimizer; the module counts as ready to update."""
        self.optimizer_initialized = True


class PythonLossModule(PythonModule):
    """A loss written in Python: the output is the input scores; the gradient is ``grad_func(scores, labels)``.

    Args:
        name: the output is named ``name + '_output'``.
        data_names / label_names: exactly one each.
        grad_func: ``grad_func(scores, labels) -> gradient`` (an NDArray or anything ``mx.nd.array`` takes).
    """

    def __init__(
        self,
        name: str = "pyloss",
        data_names: Sequence[str] = ("data",),
        label_names: Sequence[str] = ("softmax_label",),
        logger: Any = logging,
        grad_func: Callable[[NDArray, NDArray], Any] | None = None,
    ) -> None:
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or self._label_names is None or len(self._label_names) != 1:
            raise ModuleError(
                f"PythonLossModule: needs one data and one label name, got {data_names!r} and {label_names!r}"
            )
        if grad_func is not None and not callable(grad_func):
            raise ModuleError(f"PythonLossModule: grad_func must be callable, got {type(grad_func).__name__}")
        self._name = name
        self._scores: NDArray | None = None
        self._labels: NDArray | None = None
        self._scores_grad: NDArray | None = None
        self._grad_func = grad_func

    def _compute_output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return [(self._name + "_output", tuple(self._data_shapes[0][1]))]

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Keep the scores (and, in training, the labels) for ``backward``."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context: bool = True) -> list[Any]:
        if not merge_multi_context:
            raise ModuleError("PythonLossModule.get_outputs: only merge_multi_context=True is supported")
        return [self._scores]

    def backward(self, out_grads: Any = None) -> None:
        """The gradient of the loss with respect to the scores: ``grad_func(scores, labels)``."""
        if out_grads is not None:
            raise ModuleError("PythonLossModule.backward: a loss module takes no out_grads")
        if not self.for_training:
            raise ModuleError("PythonLossModule.backward: bind with for_training=True first")
        self._backward_impl()

    def _backward_impl(self) -> None:
        """Compute ``self._scores_grad``; override it instead of passing ``grad_func``."""
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule: give grad_func or override _backward_impl")
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        if not merge_multi_context:
            raise ModuleError("PythonLossModule.get_input_grads: only merge_multi_context=True is supported")
        return [self._scores_grad]

    def install_monitor(self, mon: Any) -> None:
        raise NotImplementedError("PythonLossModule has no executors to monitor")
