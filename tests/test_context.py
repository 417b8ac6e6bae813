"""Contexts and the array seam."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import backend
from framework.base import ContextError


def test_contexts_compare_hash_and_print_like_mxnet():
    assert mx.cpu(1) == mx.Context("cpu", 1)
    assert mx.cpu(0) != mx.cpu(1)
    assert len({mx.cpu(0), mx.cpu(0), mx.cpu(1)}) == 2
    assert repr(mx.gpu(2)) == "gpu(2)"
    assert mx.cpu().device_typeid == 1 and mx.gpu().device_typeid == 2
    assert mx.Context(mx.cpu(3)) == mx.cpu(3)


def test_with_blocks_set_the_current_context_and_nest():
    assert mx.current_context() == mx.cpu(0)
    with mx.cpu(1):
        assert mx.current_context() == mx.cpu(1)
        with mx.cpu(2):
            assert mx.current_context() == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("tpu", 0), "device_type must be 'cpu' or 'gpu', got 'tpu'"),
        (("cpu", -1), "device_id must be a non-negative int, got -1"),
        (("cpu", 1.0), "device_id must be a non-negative int, got 1.0"),
        (("cpu", True), "device_id must be a non-negative int, got True"),
    ],
)
def test_malformed_contexts_are_refused(args, message):
    with pytest.raises(ContextError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mx.Context(*args)


def test_cpu_uses_numpy_and_has_no_stream():
    assert backend.array_module(mx.cpu()) is np
    assert backend.new_stream(mx.cpu()) is None
    backend.synchronize(mx.cpu())
    buffer = backend.empty_buffer(mx.cpu(), 64)
    assert buffer.dtype == np.uint8 and buffer.shape == (64,)


@pytest.mark.skipif(mx.num_gpus() > 0, reason="checks the message shown on machines without a GPU")
def test_gpu_without_cuda_says_no_gpu_is_available():
    assert mx.num_gpus() == 0
    with pytest.raises(ContextError, match=r"gpu\(0\) requested but no GPU is available"):
        backend.array_module(mx.gpu(0))
    with pytest.raises(ContextError, match="no GPU is available"):
        backend.check_context(mx.gpu(0))


@pytest.mark.gpu
def test_gpu_uses_cupy_with_per_worker_streams():
    xp = backend.array_module(mx.gpu(0))
    assert xp.__name__ == "cupy"
    first, second = backend.new_stream(mx.gpu(0)), backend.new_stream(mx.gpu(0))
    assert first is not second
    with backend.use_stream(mx.gpu(0), first):
        x = xp.arange(10)
    backend.synchronize_stream(first)
    assert int(x.sum()) == 45
