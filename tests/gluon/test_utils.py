"""gluon.utils' MXNet 1.9.1 helpers: HookHandle, replace_file, shape_is_known, download (absent)."""

from __future__ import annotations

import hashlib
import pickle
from collections import OrderedDict

import pytest

import framework as mx
from framework import gluon
from framework.gluon.utils import DownloadError, HookHandle, check_sha1, download, replace_file, shape_is_known


def test_hook_handle_attaches_detaches_and_is_the_blocks_handle():
    hooks: OrderedDict = OrderedDict()
    handle = HookHandle()
    handle.attach(hooks, print)
    assert list(hooks.values()) == [print]
    with pytest.raises(mx.base.MXNetError, match="cannot be attached twice"):
        handle.attach(hooks, print)
    with handle:
        pass
    assert not hooks
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    calls = []
    first = net.register_forward_hook(lambda *a: calls.append(1))
    second = net.register_forward_hook(lambda *a: calls.append(2))
    assert isinstance(first, HookHandle) and gluon.block.HookHandle is HookHandle
    net(mx.nd.ones((1, 3)))
    first.detach()
    net(mx.nd.ones((1, 3)))
    assert calls == [1, 2, 2]
    second.detach()
    second.detach()  # detaching twice is harmless


def test_hook_handle_pickles_with_or_without_its_table():
    hooks: OrderedDict = OrderedDict()
    handle = HookHandle()
    handle.attach(hooks, len)
    table, restored = pickle.loads(pickle.dumps((hooks, handle)))
    restored.detach()
    assert not table and list(hooks.values()) == [len]
    del hooks
    orphan = pickle.loads(pickle.dumps(handle))  # the table is gone: the handle detaches from nothing
    orphan.detach()


def test_replace_file_moves_in_one_step_and_cleans_up_on_failure(tmp_path):
    src, dst = tmp_path / "new", tmp_path / "old"
    src.write_text("new")
    dst.write_text("old")
    replace_file(str(src), str(dst))
    assert dst.read_text() == "new" and not src.exists()
    src.write_text("again")
    with pytest.raises(OSError, match="Moving temporary file .*new to .*missing/dst failed"):
        replace_file(str(src), str(tmp_path / "missing" / "dst"))
    assert not src.exists()


def test_shape_is_known_under_both_shape_semantics():
    assert shape_is_known((2, 3)) and not shape_is_known((2, 0)) and not shape_is_known(None)
    assert not shape_is_known(())
    with mx.np_shape(True):
        assert shape_is_known(()) and shape_is_known((2, 0)) and not shape_is_known((2, -1))
        with pytest.raises(ValueError, match="cannot be less than -1"):
            shape_is_known((2, -2))
    with pytest.raises(ValueError, match="cannot be less than 0"):
        shape_is_known((-1, 2))


def test_download_never_reaches_the_network(tmp_path):
    with pytest.raises(DownloadError, match="download\\('http://example.com/w.params'\\): MXLab does not use"):
        download("http://example.com/w.params", path=str(tmp_path))
    present = tmp_path / "w.params"
    present.write_bytes(b"weights")
    digest = hashlib.sha1(b"weights").hexdigest()
    assert download("http://example.com/w.params", path=str(tmp_path), sha1_hash=digest) == str(present)
    assert check_sha1(str(present), digest)
    with pytest.raises(DownloadError, match="SHA-1 0000"):
        download("http://example.com/w.params", path=str(tmp_path), sha1_hash="0000")
    with pytest.raises(DownloadError, match="place it at"):
        download("http://example.com/w.params", path=str(present), overwrite=True)
