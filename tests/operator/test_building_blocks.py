"""The shared pieces operator families are built from: window geometry, family tables, helpers."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from framework.operator import InferenceError, OperatorParamError, registry
from framework.operator.nn.geometry import Geometry, check_layout, check_rank, per_axis
from framework.operator.tensor.common import merge_or_raise, normalize_axis
from framework.operator.tensor.elemwise_binary import BINARY_MATHS, SCALAR_OPS, BinaryMath, ScalarOp
from framework.operator.tensor.elemwise_unary import UNARY_OPS, UnaryOp


# ----------------------------------------------------------------------------- geometry
@pytest.mark.parametrize(
    ("size", "kernel", "stride", "dilate", "pad"), list(itertools.product([5, 8], [1, 3], [1, 2], [1, 2], [0, 1]))
)
def test_window_positions_follow_the_floor_and_ceil_rules(size, kernel, stride, dilate, pad):
    g = Geometry((kernel,), (stride,), (dilate,), (pad,))
    span = dilate * (kernel - 1) + 1
    assert g.dilated(0) == span
    assert g.padded(0, size) == size + 2 * pad and g.padded_shape((size,)) == (size + 2 * pad,)
    assert g.out_size(0, size) == (size + 2 * pad - span) // stride + 1
    assert g.out_size(0, size, ceil=True) == -(-(size + 2 * pad - span) // stride) + 1
    # a deconvolution without adj is undone by the convolution of the same geometry
    assert g.out_size(0, g.transposed_out_size(0, size)) == size
    assert g.transposed_out_size(0, size, adj=1) == g.transposed_out_size(0, size) + 1


def test_per_axis_fills_defaults_and_names_bad_values():
    params = SimpleNamespace(stride=(), pad=(1,), dilate=(0, 1))
    assert per_axis("Conv", params, "stride", (3, 3), 1, 1) == (1, 1)
    with pytest.raises(OperatorParamError, match=r"Conv: pad must have the same number of dimensions as kernel"):
        per_axis("Conv", params, "pad", (3, 3), 0, 0)
    with pytest.raises(OperatorParamError, match=r"Conv: dilate must be >= 1 in every dimension, got dilate=\(0, 1\)"):
        per_axis("Conv", params, "dilate", (3, 3), 1, 1)


def test_layout_and_rank_checks_name_what_is_wrong():
    check_layout("Pooling", None, 2, "2-D pooling")
    check_layout("Pooling", "NCHW", 2, "2-D pooling")
    with pytest.raises(OperatorParamError, match=r"layout 'NHWC' is not supported for 2-D pooling.*NCHW only"):
        check_layout("Pooling", "NHWC", 2, "2-D pooling")
    check_rank("Conv", None, 4, "data")
    with pytest.raises(InferenceError, match=r"Conv: data should be 4-D \(batch, channel, y, x\).*\(2, 3\)"):
        check_rank("Conv", (2, 3), 4, "data")


# ----------------------------------------------------------------------------- family tables
def test_every_unary_table_entry_is_registered_with_its_description_and_aliases():
    for op in UNARY_OPS:
        assert registry.get(op.name).description == op.description
        for other in op.aliases:
            assert registry.get(other) is registry.get(op.name)
        assert registry.exists(f"_backward_{op.name}") == (op.derivative is not None)


def test_every_binary_operation_has_a_same_shape_and_a_broadcast_operator():
    for kind, maths in BINARY_MATHS.items():
        broadcast = registry.get(f"broadcast_{kind}")
        assert broadcast.description.startswith(maths.description)
        assert registry.exists(f"_backward_broadcast_{kind}") == maths.differentiable
    for op in SCALAR_OPS:
        assert registry.get(op.camel_alias) is registry.get(op.name)


def test_table_records_reject_inconsistent_entries():
    with pytest.raises(ValueError, match=r"UnaryOp 'f': uses must be 'in' or 'out', got 'both'"):
        UnaryOp("f", "exp", "f", lambda xp, g, x: g, uses="both")
    with pytest.raises(ValueError, match=r"UnaryOp 'f': give a derivative or a gradient_op, not both"):
        UnaryOp("f", "exp", "f", lambda xp, g, x: g, gradient_op="negative")
    with pytest.raises(ValueError, match=r"BinaryMath 'f': give both lhs_grad and rhs_grad, or neither"):
        BinaryMath("f", "add", "f", lhs_grad=lambda xp, g, a, b: g)
    with pytest.raises(ValueError, match=r"ScalarOp 'f': uses must be 'in', 'out' or 'none', got 'x'"):
        ScalarOp("f", lambda *a: None, "f", "F", lambda xp, g, v, s: g, uses="x")


# ----------------------------------------------------------------------------- tensor helpers
def test_common_helpers_raise_with_the_operator_and_values():
    assert merge_or_raise("Concat", (2, 0), (0, 3), "output") == (2, 3)
    with pytest.raises(InferenceError, match=r"Concat: shape inconsistent for output: \(2, 3\) vs \(2, 4\)"):
        merge_or_raise("Concat", (2, 3), (2, 4), "output")
    assert normalize_axis("sum", -1, 3) == 2
    with pytest.raises(InferenceError, match=r"sum: axis=3 is out of range for an input with 3 dimension"):
        normalize_axis("sum", 3, 3)
