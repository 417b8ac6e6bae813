"""NumPy scalars and 0-d arrays are accepted wherever an operator takes a Python number (as in MXNet).

Over every registered operator: each int, float, bool and shape parameter parses a NumPy-typed
value exactly as it parses the same Python value (same result, or the same complaint).
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.operator import registry
from framework.operator.params import REQUIRED, FloatTuple, OperatorParamError, Shape, python_scalar


def _python_value(field):
    """A value of the field's type: its default, else one inside its declared range."""
    if field.default is not REQUIRED and field.default is not None:
        return field.default
    if field.type is Shape:
        return (1, 2)
    if field.type is FloatTuple:
        return (0.5, 2.0)
    if field.type is bool:
        return True
    low = field.low if field.low is not None else 1
    return int(low) if field.type is int else float(low)


def _numpy_variants(field, value):
    """The same value as NumPy scalars of several kinds and as a 0-d array."""
    if field.type is Shape:
        return [tuple(np.int64(v) for v in value), tuple(np.int32(v) for v in value), np.array(value)]
    if field.type is FloatTuple:
        return [tuple(np.float64(v) for v in value), tuple(np.float32(v) for v in value), np.array(value)]
    if field.type is bool:
        return [np.bool_(value), np.array(value)]
    if field.type is int:
        return [
            np.int64(value),
            np.int32(value),
            np.uint8(value) if 0 <= value < 256 else np.int16(value),
            np.array(value),
        ]
    # float32 rounds: the Python value it must match is the rounded one.
    return [np.float32(value), np.float64(value), np.array(value, dtype=np.float64)]


def _python_equivalent(variant):
    if isinstance(variant, np.float32):
        return float(variant)  # rounded to float32 precision, written as a Python float
    if isinstance(variant, tuple) and any(isinstance(v, np.float32) for v in variant):
        return tuple(float(v) for v in variant)  # a tuple of float32 (variances=(0.1, ...)) rounds too
    return None


def _numeric_fields():
    for name in registry.list_operators():
        params = registry.get(name).params
        for field in params.fields.values():
            if field.type in (int, float, bool, Shape, FloatTuple) and field.choices is None:
                yield pytest.param(name, field, id=f"{name}.{field.name}")


@pytest.mark.parametrize(("op_name", "field"), list(_numeric_fields()))
def test_numpy_typed_parameter_parses_like_the_python_value(op_name, field):
    value = _python_value(field)
    try:
        expected = field.parse(op_name, value)
    except OperatorParamError:
        expected = OperatorParamError
    for variant in _numpy_variants(field, value):
        rounded = _python_equivalent(variant)
        wanted = expected if rounded is None else field.parse(op_name, rounded)
        if wanted is OperatorParamError:
            with pytest.raises(OperatorParamError):
                field.parse(op_name, variant)
            continue
        parsed = field.parse(op_name, variant)
        assert parsed == wanted and type(parsed) is type(wanted), (variant, parsed, wanted)


def test_the_walk_covers_every_kind_of_parameter():
    kinds = {param.values[1].type for param in _numeric_fields()}
    assert kinds == {int, float, bool, Shape, FloatTuple}


def test_python_scalar_unwraps_numpy_numbers_only():
    assert python_scalar(np.int64(3)) == 3 and type(python_scalar(np.int64(3))) is int
    assert type(python_scalar(np.float32(0.5))) is float
    assert python_scalar(np.bool_(True)) is True
    assert python_scalar(np.array(2)) == 2
    vector = np.array([1, 2])
    assert python_scalar(vector) is vector


@pytest.mark.parametrize("bad", [np.float32(1.5), np.array(2.5), np.array([1, 2]), "x"])
def test_a_non_integer_numpy_value_is_refused_naming_the_parameter(bad):
    with pytest.raises(OperatorParamError, match="'depth' expects an integer"):
        mx.nd.one_hot(mx.nd.array([0, 1]), depth=bad)


def test_numpy_typed_parameters_in_imperative_calls():
    x = mx.nd.array(np.arange(6).reshape(2, 3))
    assert mx.nd.sum(x, axis=(np.int64(1),)).shape == (2,)
    assert mx.nd.sum(x, axis=np.array(0), keepdims=np.bool_(True)).shape == (1, 3)
    clipped = mx.nd.clip(x, a_min=np.float32(1), a_max=np.float64(4)).asnumpy()
    assert clipped.min() == 1 and clipped.max() == 4
    assert mx.nd.one_hot(mx.nd.array([0, 2]), depth=np.int64(3)).shape == (2, 3)
    assert x.reshape((np.int64(3), np.int32(2))).shape == (3, 2)
    assert mx.nd.zeros((np.int64(2), np.int8(3))).shape == (2, 3)
