"""Operators: one registry, several front doors (seed 004, seed 000 "Operators in MXNet").

* ``register_op(name)``: the native registration API of seed 004 (``registry.register``,
  chained ``.set_num_inputs(...).set_compute(...)``). ``mx.operator.register`` is MXNet's
  decorator for Python ``CustomOpProp`` classes (framework/custom_op/), which
  framework/__init__.py installs here because custom operators build on NDArray.
* ``framework.operator.legacy``: the OperatorProperty front door (Forward/Backward classes).
* ``framework.operator.simple_op``: the SimpleOp front door (unary/binary functions).

Importing this package registers every built-in operator (``tensor/``, ``nn/``, ``linalg/``, ``image/``).
"""

from __future__ import annotations

from . import contrib, image, linalg, nn, optimizer, random, registry, sequence, tensor
from .control_flow import subgraph as _control_flow  # noqa: F401 - importing the package registers _foreach, _while_loop, _cond
from .detection import boxes as _detection  # noqa: F401 - importing the detection package registers its family
from .grad import (
    elemwise_grad_use_in,
    elemwise_grad_use_in_out,
    elemwise_grad_use_none,
    elemwise_grad_use_out,
    zero_grad,
)
from .infer import InferenceError, elemwise_shape, elemwise_type, shape_assign, type_assign
from .kernel import ADD, INPLACE, NULL, WRITE, OpContext, Req, assign, assign_ufunc
from .nn import ctc_loss, kl_sparse_reg, normalization, svm_output, v1  # noqa: F401  (issue 17: normalisation and losses)
from .node import Entry, Node, NodeAttrs
from .params import REQUIRED, DType, OperatorParamError, Param, ParamSet, Shape
from .registry import OpDef, OperatorError, get, list_operators
from .registry import register as register_op
from .rnn import fused, param_concat  # noqa: F401 - registers the fused RNN family
from .spatial import layout as _spatial  # noqa: F401 - importing the spatial package registers its family

__all__ = [
    "ADD",
    "INPLACE",
    "NULL",
    "REQUIRED",
    "WRITE",
    "DType",
    "Entry",
    "InferenceError",
    "Node",
    "NodeAttrs",
    "OpContext",
    "OpDef",
    "OperatorError",
    "OperatorParamError",
    "Param",
    "ParamSet",
    "Req",
    "Shape",
    "assign",
    "assign_ufunc",
    "contrib",
    "elemwise_grad_use_in",
    "elemwise_grad_use_in_out",
    "elemwise_grad_use_none",
    "elemwise_grad_use_out",
    "elemwise_shape",
    "elemwise_type",
    "get",
    "image",
    "linalg",
    "list_operators",
    "nn",
    "optimizer",
    "random",
    "register_op",
    "registry",
    "sequence",
    "shape_assign",
    "tensor",
    "type_assign",
    "zero_grad",
]
