"""mx.test_utils environment, stderr, retries, GPUs, statistics and local-only data sets."""

from __future__ import annotations

import bz2
import gzip
import os
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from scipy import stats

import framework as mx
from framework import config
from framework import test_utils as tu


def test_environment_sets_and_restores_and_mxlab_sees_it():
    os.environ.pop("MXLAB_TEST_ENV_A", None)
    os.environ["MXLAB_TEST_ENV_B"] = "old"
    with tu.environment({"MXLAB_TEST_ENV_A": "1", "MXLAB_TEST_ENV_B": None}):
        assert os.environ["MXLAB_TEST_ENV_A"] == "1" and "MXLAB_TEST_ENV_B" not in os.environ
    assert "MXLAB_TEST_ENV_A" not in os.environ and os.environ["MXLAB_TEST_ENV_B"] == "old"
    del os.environ["MXLAB_TEST_ENV_B"]
    with tu.environment("MXNET_EXEC_ENABLE_INPLACE", "0"):  # an MXNet alias MXLab reads at use
        assert config.get("MXLAB_EXEC_ENABLE_INPLACE") in (False, 0)
    with pytest.raises(RuntimeError), tu.environment("MXLAB_TEST_ENV_A", "2"):
        raise RuntimeError("restored anyway")
    assert "MXLAB_TEST_ENV_A" not in os.environ
    with pytest.raises(tu.HelperArgumentError, match="pass \\(name, value\\) or one dict"):
        with tu.environment("A", "1", "B"):
            pass


def test_set_env_var_returns_the_previous_value():
    os.environ.pop("MXLAB_TEST_ENV_C", None)
    assert tu.set_env_var("MXLAB_TEST_ENV_C", "x", default_val="none") == "none"
    assert tu.set_env_var("MXLAB_TEST_ENV_C", "y") == "x"
    del os.environ["MXLAB_TEST_ENV_C"]


def test_discard_stderr_silences_file_descriptor_2():
    code = (
        "import os, sys\n"
        "from framework.test_utils import discard_stderr\n"
        "with discard_stderr():\n"
        "    os.write(2, b'hidden')\n"
        "    print('also hidden', file=sys.stderr)\n"
        "os.write(2, b'shown')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env={**os.environ}, timeout=120, check=True
    )
    assert done.stderr == b"shown"


def test_assert_exception_and_retry():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError, match="did not raise ValueError"):
        tu.assert_exception(int, ValueError, "3")
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 2

    flaky()
    assert len(calls) == 2

    @tu.retry(2)
    def always_fails():
        raise AssertionError("still wrong")

    with pytest.raises(AssertionError, match="still wrong"):
        always_fails()
    with pytest.raises(tu.HelperArgumentError):
        tu.retry(0)


def test_gpu_queries_and_op_runnable():
    assert list(tu.list_gpus()) == list(range(mx.num_gpus()))
    assert tu.is_op_runnable()
    assert tu.get_im2rec_path().endswith(os.path.join("tools", "im2rec.py"))
    assert os.path.isfile(tu.get_im2rec_path("MXLAB_NO_SUCH_HOME"))


def test_statistics_of_a_good_and_a_bad_generator():
    np.random.seed(0)
    buckets, probs = tu.gen_buckets_probs_with_ppf(stats.norm.ppf, 5)
    assert len(buckets) == 5 and probs == [0.2] * 5 and buckets[0][0] == -np.inf
    good = lambda n: np.random.normal(0, 1, size=n)  # noqa: E731
    p, observed, expected = tu.chi_square_check(good, buckets, probs, nsamples=20000)
    assert p > 1e-4 and observed.sum() == 20000 and expected.sum() == 20000
    tu.verify_generator(good, buckets, probs, nsamples=20000, nrepeat=3)
    bad = lambda n: np.random.normal(0.3, 1, size=n)  # noqa: E731
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(bad, buckets, probs, nsamples=20000, nrepeat=3)
    assert tu.mean_check(good, 0, 1, nsamples=20000) and not tu.mean_check(bad, 0, 1, nsamples=20000)
    assert tu.var_check(good, 1, nsamples=20000) and not tu.var_check(lambda n: 2 * good(n), 1, nsamples=20000)
    discrete = lambda n: np.random.randint(0, 3, size=n)  # noqa: E731
    p, observed, _ = tu.chi_square_check(discrete, [0, 1, 2], [1 / 3] * 3, nsamples=3000)
    assert observed.sum() == 3000 and p > 1e-4
    with pytest.raises(tu.HelperArgumentError, match="as long as probs"):
        tu.chi_square_check(good, buckets, probs[:2])


def _write_idx(path, magic, dims, payload, gz):
    raw = struct.pack(">I" + "I" * len(dims), magic, *dims) + payload
    if gz:
        with gzip.open(str(path) + ".gz", "wb") as handle:
            handle.write(raw)
    else:
        path.write_bytes(raw)


def test_mnist_reads_local_files_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(tu.DatasetMissingError, match="MXLab does not download.*train-images-idx3-ubyte"):
        tu.get_mnist()
    with pytest.raises(tu.DatasetMissingError, match="data/train-images-idx3-ubyte"):
        tu.get_mnist_ubyte()
    with pytest.raises(tu.DatasetMissingError, match="data/cifar/train.rec"):
        tu.get_cifar10()
    with pytest.raises(tu.DatasetMissingError, match="MXLab does not download files; fetch http://x/y.gz"):
        tu.download("http://x/y.gz")
    (tmp_path / "data").mkdir()
    pixels = np.arange(2 * 28 * 28, dtype=np.uint8).tobytes()
    for prefix, gz in (("train", True), ("t10k", False)):
        _write_idx(tmp_path / "data" / f"{prefix}-images-idx3-ubyte", 2051, (2, 28, 28), pixels, gz)
        _write_idx(tmp_path / "data" / f"{prefix}-labels-idx1-ubyte", 2049, (2,), bytes([3, 7]), gz)
    mnist = tu.get_mnist()
    assert mnist["train_data"].shape == (2, 1, 28, 28) and mnist["train_data"].dtype == np.float32
    np.testing.assert_array_equal(mnist["test_label"], [3, 7])
    assert float(mnist["test_data"].max()) <= 1.0
    with pytest.raises(tu.DatasetMissingError):
        tu.get_mnist_ubyte()  # the training files are gzipped: the MNISTIter needs them raw
    for prefix in ("train",):
        _write_idx(tmp_path / "data" / f"{prefix}-images-idx3-ubyte", 2051, (2, 28, 28), pixels, False)
        _write_idx(tmp_path / "data" / f"{prefix}-labels-idx1-ubyte", 2049, (2,), bytes([3, 7]), False)
    _train, val = tu.get_mnist_iterator(2, (784,))
    assert next(iter(val)).data[0].shape == (2, 784)
    assert tu.download("http://x/train-images-idx3-ubyte", dirname="data").endswith("train-images-idx3-ubyte")


def test_dummy_iter_repeats_the_first_batch():
    real = mx.io.NDArrayIter(np.arange(12.0).reshape(6, 2), np.arange(6.0), batch_size=2)
    dummy = tu.DummyIter(real)
    batches = [next(dummy) for _ in range(5)]
    assert all(b is batches[0] for b in batches)
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), [[0, 1], [2, 3]])
    assert dummy.provide_data == real.provide_data and dummy.batch_size == 2


def test_platform_queries():
    assert tu.has_tvm_ops() is False
    assert isinstance(tu.is_aarch64_run(), bool)
    with tu.environment("CD_JOB", "1"):
        assert tu.is_cd_run()
    with tu.environment("CD_JOB", None):
        assert not tu.is_cd_run()


def test_archives_are_extracted_from_local_files_only(tmp_path):
    with pytest.raises(tu.DatasetMissingError, match="does not download.*http://x/a.zip"):
        tu.get_zip_data(str(tmp_path), "http://x/a.zip", "a.zip")
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zipped:
        zipped.writestr("inner.txt", "hello")
    tu.get_zip_data(str(tmp_path), "http://x/a.zip", "a.zip")
    assert (tmp_path / "inner.txt").read_text() == "hello"
    with pytest.raises(tu.DatasetMissingError, match="b.bz2 is missing"):
        tu.get_bz2_data(str(tmp_path), "b.txt", "http://x/b.bz2", "b.bz2")
    (tmp_path / "b.bz2").write_bytes(bz2.compress(b"data"))
    tu.get_bz2_data(str(tmp_path), "b.txt", "http://x/b.bz2", "b.bz2")
    assert (tmp_path / "b.txt").read_bytes() == b"data" and not (tmp_path / "b.bz2").exists()
    with pytest.raises(tu.DatasetMissingError, match="net-symbol.json.*does not download models"):
        tu.download_model("net", dst_dir=str(tmp_path))
    (tmp_path / "net-symbol.json").write_text("{}")
    (tmp_path / "net-0000.params").write_bytes(b"")
    assert tu.download_model("net", dst_dir=str(tmp_path))[0].endswith("net-symbol.json")
