"""mx.random's samplers, mx.context's extras, mx.AttrScope and mx.contrib, as in MXNet 1.9.1."""

from __future__ import annotations

import re

import numpy as np
import pytest

import framework as mx


def test_random_samplers_are_the_ndarray_ones_and_follow_the_seed():
    for name in mx.ndarray.random.SAMPLERS:
        assert getattr(mx.random, name) is getattr(mx.nd.random, name)
    mx.random.seed(7)
    first = mx.random.uniform(-1, 1, shape=(3, 4)).asnumpy()
    mx.random.seed(7)
    again = mx.random.uniform(-1, 1, shape=(3, 4)).asnumpy()
    np.testing.assert_array_equal(first, again)
    assert first.min() >= -1 and first.max() < 1
    assert mx.random.randn(2, 3).shape == (2, 3)
    draws = mx.random.randint(0, 5, shape=(200,)).asnumpy()
    assert draws.min() >= 0 and draws.max() <= 4
    assert mx.random.normal(0, 1, shape=(4,), dtype="float64").dtype == np.float64


def test_context_extras():
    assert mx.cpu_pinned(2) == mx.cpu(2)
    assert mx.context.cpu_shared(1) == mx.cpu(1)
    assert mx.context.num_gpus() == mx.num_gpus()
    assert mx.context.Context.default_ctx == mx.cpu(0)
    with mx.cpu(3):
        assert mx.current_context() == mx.cpu(3)
        assert mx.nd.zeros((1,)).context == mx.cpu(3)
    assert mx.current_context() == mx.cpu(0)


def test_default_ctx_can_be_set_and_rejects_non_contexts():
    try:
        mx.Context.default_ctx = mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
    finally:
        mx.Context.default_ctx = mx.cpu(0)
    with pytest.raises(mx.base.ContextError, match="default_ctx must be a Context"):
        mx.Context.default_ctx = "cpu"


@pytest.mark.skipif(mx.num_gpus() > 0, reason="checks the no-GPU error")
def test_gpu_memory_info_without_gpu_says_why():
    with pytest.raises(mx.base.ContextError, match="no GPU"):
        mx.context.gpu_memory_info(0)


def test_attr_scope_applies_to_operators_and_variables_and_nests():
    with mx.AttrScope(ctx_group="dev1", note="outer"):
        data = mx.sym.var("data")
        with mx.attribute.AttrScope(note="inner"):
            fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
        explicit = mx.sym.var("w", attr={"ctx_group": "dev2"})
    plain = mx.sym.var("plain")
    attrs = fc.attr_dict()
    assert attrs["data"]["ctx_group"] == "dev1" and attrs["data"]["note"] == "outer"
    assert attrs["fc"]["ctx_group"] == "dev1" and attrs["fc"]["note"] == "inner"
    assert attrs["fc_weight"]["ctx_group"] == "dev1"  # created with the node
    assert explicit.attr("ctx_group") == "dev2"  # attr= wins over the scope
    assert plain.attr("ctx_group") is None  # the scope ended


def test_attr_scope_rejects_non_string_values():
    with pytest.raises(ValueError, match="'lr' must be a string"):
        mx.AttrScope(lr=0.1)


def test_attr_scope_attributes_survive_json():
    with mx.AttrScope(ctx_group="dev1"):
        net = mx.sym.var("a") * 2
    again = mx.sym.load_json(net.tojson())
    assert again.attr("ctx_group") == "dev1"


def test_contrib_namespaces():
    assert mx.contrib.nd is mx.nd.contrib and mx.contrib.ndarray is mx.nd.contrib
    assert mx.contrib.sym is mx.sym.contrib and mx.contrib.symbol is mx.sym.contrib


def test_contrib_autograd_old_api():
    x = mx.nd.array([1.0, 2.0, 3.0])
    grads, loss = mx.contrib.autograd.grad_and_loss(lambda v: (v * v).sum())(x)
    np.testing.assert_allclose(grads[0].asnumpy(), [2, 4, 6])
    np.testing.assert_allclose(loss.asnumpy(), [14])
    only = mx.contrib.autograd.grad(lambda u, v: (u * v).sum(), argnum=1)(x, mx.nd.array([5.0, 6.0, 7.0]))
    np.testing.assert_allclose(only[0].asnumpy(), [1, 2, 3])
    assert not mx.autograd.is_training() and not mx.autograd.is_recording()
    with mx.contrib.autograd.train_section():
        assert mx.autograd.is_training() and mx.autograd.is_recording()
        with mx.contrib.autograd.test_section():
            assert not mx.autograd.is_training() and not mx.autograd.is_recording()
        assert mx.autograd.is_recording()
    assert not mx.autograd.is_recording()
    with pytest.raises(TypeError, match="argument 0 must be an NDArray"):
        mx.contrib.autograd.grad(lambda v: v)(np.ones(2))


def test_contrib_dataloaderiter_pads_the_last_batch():
    batches = [(np.ones((4, 2)), np.zeros((4,))), (2 * np.ones((3, 2)), np.ones((3,)))]
    it = mx.contrib.io.DataLoaderIter(batches)
    assert it.provide_data[0].shape == (4, 2) and it.provide_label[0].name == "softmax_label"
    got = list(it)
    assert [b.pad for b in got] == [0, 1]
    np.testing.assert_allclose(got[1].data[0].asnumpy()[:3], 2)
    it.reset()
    assert len(list(it)) == 2
    with pytest.raises(mx.io.DataIterError, match="no batch"):
        mx.contrib.io.DataLoaderIter([])
    with pytest.raises(mx.io.DataIterError, match=r"\(data, label\) pair"):
        mx.contrib.io.DataLoaderIter([np.ones(3)])


def test_attr_scope_current_is_the_innermost_scope_and_settable():
    outside = mx.AttrScope.current
    assert isinstance(outside, mx.AttrScope) and outside.get(None) == {}
    with mx.AttrScope(group="a") as scope:
        assert mx.AttrScope.current is scope
    assert mx.AttrScope.current is outside
    mine = mx.AttrScope(ctx_group="dev1")
    mx.AttrScope.current = mine
    try:
        assert mx.sym.var("x").attr("ctx_group") == "dev1"
    finally:
        mx.AttrScope.current = outside
    with pytest.raises(TypeError, match="must be an AttrScope"):
        mx.AttrScope.current = {"a": "b"}


def test_rnd_is_random():
    assert mx.rnd is mx.random


def test_registry_registers_aliases_and_creates_by_name_or_json():
    class Schedule:
        pass

    register = mx.registry.get_register_func(Schedule, "schedule")
    alias = mx.registry.get_alias_func(Schedule, "schedule")
    create = mx.registry.get_create_func(Schedule, "schedule")

    @alias("const")
    @register
    class Constant(Schedule):
        def __init__(self, value=1):
            self.value = value

    assert create("constant").value == 1 and create("CONST", 3).value == 3
    assert create('["constant", {"value": 2}]').value == 2
    assert create('{"schedule": "constant", "value": 4}').value == 4
    assert create(schedule="const", value=5).value == 5
    instance = Constant(7)
    assert create(instance) is instance
    assert mx.registry.get_registry(Schedule) == {"constant": Constant, "const": Constant}
    with pytest.raises(mx.registry.RegistryError, match="'linear' is not a registered schedule"):
        create("linear")
    with pytest.raises(mx.registry.RegistryError, match="subclasses of Schedule"):
        register(dict)
    with pytest.raises(mx.registry.RegistryError, match="already an instance"):
        create(instance, 3)

    class Other(Schedule):
        pass

    with pytest.warns(UserWarning, match="replaces"):
        register(Other, "constant")


def test_log_get_logger_writes_mxnets_line_format(tmp_path):
    path = tmp_path / "train.log"
    logger = mx.log.get_logger("mxlab_log_test", filename=str(path), level=mx.log.INFO)
    assert mx.log.get_logger("mxlab_log_test") is logger and len(logger.handlers) == 1
    logger.info("Epoch[0] done")
    logger.debug("hidden")
    for handler in logger.handlers:
        handler.flush()
    (line,) = path.read_text().splitlines()
    assert re.fullmatch(r"I\d{4} \d\d:\d\d:\d\d \d+ test_mx_namespaces\.py:\d+\] Epoch\[0\] done", line), line
    with pytest.warns(DeprecationWarning, match="get_logger"):
        assert mx.log.getLogger("mxlab_log_test") is logger
