"""Typed operator parameters: parsing values and strings, defaults, and clear errors."""

from __future__ import annotations

import pytest

from framework.operator.params import REQUIRED, DType, OperatorParamError, Param, ParamSet, Shape


class ConvLikeParam(ParamSet):
    kernel = Param(Shape, REQUIRED, "Kernel size.")
    num_filter = Param(int, REQUIRED, "Number of filters.", low=1)
    stride = Param(Shape, Shape(), "Stride.")
    no_bias = Param(bool, False, "Whether to omit the bias.")
    act = Param(str, "relu", "Activation.", choices=["relu", "tanh"])
    slope = Param(float, 0.25, "Slope.", low=0.0, high=1.0)
    dtype = Param(DType, "float32", "Output type.")
    axis = Param(int, None, "Optional axis.")


def test_values_and_attribute_strings_parse_to_the_same_struct():
    from_values = ConvLikeParam.parse("Conv", {"kernel": (3, 3), "num_filter": 8, "no_bias": True, "axis": 1})
    from_strings = ConvLikeParam.parse("Conv", {"kernel": "(3, 3)", "num_filter": "8", "no_bias": "True", "axis": "1"})
    assert from_values == from_strings
    assert from_values.kernel == (3, 3) and from_values.num_filter == 8 and from_values.no_bias is True
    assert from_values.slope == 0.25 and from_values.act == "relu" and from_values.dtype == "float32"
    assert ConvLikeParam.parse("Conv", {"kernel": 3, "num_filter": 1}).axis is None


def test_round_trip_through_mxnet_strings():
    parsed = ConvLikeParam.parse("Conv", {"kernel": (5,), "num_filter": 2, "dtype": "float16"})
    strings = parsed.to_strings()
    assert strings["kernel"] == "(5,)" and strings["no_bias"] == "False" and strings["axis"] == "None"
    assert ConvLikeParam.parse("Conv", strings) == parsed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_filter": 1}, "Conv: required parameter 'kernel' is missing"),
        (
            {"kernel": (3,), "num_filter": 1, "kernal": 3},
            "Conv: unknown parameter\\(s\\) 'kernal'; allowed parameters: kernel",
        ),
        ({"kernel": (3,), "num_filter": 0}, "Conv: parameter 'num_filter' expects a value >= 1, got 0"),
        ({"kernel": (3,), "num_filter": 1, "slope": 2.0}, "parameter 'slope' expects a value <= 1.0, got 2.0"),
        (
            {"kernel": (3,), "num_filter": 1, "act": "gelu"},
            "parameter 'act' expects one of \\['relu', 'tanh'\\], got 'gelu'",
        ),
        ({"kernel": "three", "num_filter": 1}, "parameter 'kernel' expects a tuple of integers"),
        ({"kernel": (3,), "num_filter": 1.5}, "parameter 'num_filter' expects an integer, got 1.5"),
        ({"kernel": (3,), "num_filter": True}, "parameter 'num_filter' expects an integer, got True"),
        ({"kernel": (3,), "num_filter": 1, "no_bias": "yes"}, "parameter 'no_bias' expects a boolean"),
        ({"kernel": (3,), "num_filter": 1, "dtype": "complex64"}, "parameter 'dtype' expects a dtype name"),
        ({"kernel": (3,), "num_filter": None}, "parameter 'num_filter' expects a value \\(None is not allowed\\)"),
    ],
)
def test_bad_parameters_name_the_operator_and_the_parameter(kwargs, message):
    with pytest.raises(OperatorParamError, match=message):
        ConvLikeParam.parse("Conv", kwargs)


def test_parsed_structs_are_read_only_and_describe_themselves():
    parsed = ConvLikeParam.parse("Conv", {"kernel": (1,), "num_filter": 1})
    with pytest.raises(AttributeError, match="read-only"):
        parsed.num_filter = 3
    text = ConvLikeParam.describe()
    assert "kernel : Shape(tuple), required" in text
    assert "slope : float, optional, default=0.25" in text
    assert "act : {'relu', 'tanh'}, optional, default='relu'" in text
