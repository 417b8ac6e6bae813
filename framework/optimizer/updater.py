"""The :class:`Updater`: an optimizer plus the state of every weight, and saving those states.

``set_states`` also reads states that MXNet 1.x pickled (a Module's ``.states`` file, a Gluon
Trainer's ``save_states``): their NDArrays are ``mxnet.ndarray.ndarray.NDArray`` objects whose
state is the array's bytes in the NDArray file format, and a saved optimizer is MXNet's class
with its attribute dict. :class:`_StateUnpickler` reads neither class from MXNet (it is not
installed): it keeps their states, and the arrays become MXLab NDArrays.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import numpy as np

from ..context import Context
from ..ndarray import NDArray, array
from ..ndarray.io import LIST_MAGIC, load_frombuffer
from .base import Optimizer, OptimizerError

#: Attributes of an MXNet-pickled optimizer not taken over: objects of MXNet's own, and the
#: names-to-index tables, which the running Module or Trainer set up for its own parameters.
_NOT_ADOPTED = frozenset({"lr_scheduler", "param_dict", "sym_info", "idx2name"})


def _rebuild_ndarray(values: np.ndarray, device_type: str, device_id: int) -> NDArray:
    """Unpickling half of an NDArray inside saved optimizer states."""
    return array(values, ctx=Context(device_type, device_id), dtype=values.dtype)


class _StatePickler(pickle.Pickler):
    """Pickles NDArrays by value (after waiting for their pending writes) with their context."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, NDArray):
            return _rebuild_ndarray, (obj.asnumpy(), obj.context.device_type, obj.context.device_id)
        return NotImplemented


class _PickledByMXNet:
    """An object MXNet 1.x pickled (an NDArray, an optimizer): rebuilt empty, then given its state."""

    mxnet_name = ""

    def __init__(self, *args: Any) -> None:
        self.state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _PickledArray(_PickledByMXNet):
    """``mxnet.ndarray.ndarray.NDArray``: its state is ``{"handle": <the array in NDArray file format>}``."""

    mxnet_name = "mxnet.ndarray.ndarray.NDArray"

    def to_ndarray(self) -> NDArray:
        raw = bytes(self.state["handle"])  # one array record; a file of one array around it
        header = np.array([LIST_MAGIC, 0, 1], "<u8").tobytes()
        (value,) = load_frombuffer(header + raw + np.zeros(1, "<u8").tobytes(), source="MXNet-pickled optimizer states")
        return value


class _StateUnpickler(pickle.Unpickler):
    """Unpickles saved states, MXLab's or MXNet 1.x's (whose classes are stood in for)."""

    def find_class(self, module: str, name: str) -> Any:
        if module.split(".", maxsplit=1)[0] != "mxnet":
            return super().find_class(module, name)
        if (module, name) == ("mxnet.ndarray.ndarray", "NDArray"):
            return _PickledArray
        return type(name, (_PickledByMXNet,), {"mxnet_name": f"{module}.{name}"})


def _from_mxnet(value: Any) -> Any:
    """``value`` with every MXNet-pickled array made an NDArray (tuples, lists and dicts walked)."""
    if isinstance(value, _PickledArray):
        return value.to_ndarray()
    if isinstance(value, tuple | list):
        converted = [_from_mxnet(v) for v in value]
        return tuple(converted) if isinstance(value, tuple) else converted
    if isinstance(value, dict):
        return {k: _from_mxnet(v) for k, v in value.items()}
    return value


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _StatePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


class Updater:
    """The callable ``updater(index, grad, weight)``: an optimizer plus every weight's state.

    States are created on first sight of an index. After ``set_states`` they are moved to
    the context of the weight they belong to on its next update.
    """

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise OptimizerError(f"Updater expects an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.states: dict[Any, Any] = {}
        self.states_synced: dict[Any, bool] = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        """Update ``weight`` (or each weight of a list) from ``grad`` with the optimizer's rule."""
        if isinstance(index, list | tuple):
            indices, grads, weights = list(index), list(grad), list(weight)
            if not len(indices) == len(grads) == len(weights):
                raise OptimizerError(
                    f"Updater: got {len(indices)} indices, {len(grads)} gradients and {len(weights)} weights"
                )
        else:
            indices, grads, weights = [index], [grad], [weight]
        for i, w in enumerate(weights):
            if not isinstance(w, NDArray):
                raise OptimizerError(f"Updater: weight for index {indices[i]!r} must be an NDArray, got {w!r}")
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        states, synced = self.states, self.states_synced
        indices = [idx.decode() if isinstance(idx, bytes) else idx for idx in indices]
        for i, idx in enumerate(indices):  # one pass per step: a state is made or moved only the first time
            if idx in states and synced.get(idx):
                continue
            if idx not in states:
                states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
            else:
                states[idx] = self.sync_state_context(states[idx], weights[i].context)
            synced[idx] = True
        if self.aggregate_updates and len(indices) > 1:  # one call for the list: the rule may fuse it
            self.optimizer.update_multi_precision(indices, weights, grads, [states[i] for i in indices])
            return
        for idx, w, g in zip(indices, weights, grads, strict=True):
            self.optimizer.update_multi_precision(idx, w, g, self.states[idx])

    def sync_state_context(self, state: Any, context: Context) -> Any:
        """``state`` (NDArray, or nested tuples/lists of them) moved to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, tuple | list):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes) -> None:
        """Restore states saved by :meth:`get_states` (and the optimizer, if it was saved)."""
        if not isinstance(states, bytes | bytearray):
            raise OptimizerError(f"Updater.set_states expects the bytes from get_states(), got {type(states).__name__}")
        loaded = _StateUnpickler(io.BytesIO(states)).load()
        if isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[1], Optimizer):
            self.states, self.optimizer = loaded
        elif isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[1], _PickledByMXNet):
            self.states = _from_mxnet(loaded[0])
            self._adopt_mxnet_optimizer(loaded[1])
        elif isinstance(loaded, dict):
            self.states = _from_mxnet(loaded)
        else:
            raise OptimizerError(f"Updater.set_states: not optimizer states (unpickled a {type(loaded).__name__})")
        self.states_synced = dict.fromkeys(self.states, False)

    def _adopt_mxnet_optimizer(self, saved: _PickledByMXNet) -> None:
        """Take over what an optimizer pickled by MXNet 1.x says (its rates, counts and hyper-parameters),
        keeping this updater's optimizer object: the update counts decide Adam's bias correction."""
        expected = type(self.optimizer).__name__
        if not saved.mxnet_name.endswith(f".{expected}") or not isinstance(saved.state, dict):
            raise OptimizerError(
                f"Updater.set_states: the states were saved with MXNet's {saved.mxnet_name}, "
                f"this updater's optimizer is {expected}"
            )
        for key, value in saved.state.items():
            if key not in _NOT_ADOPTED and not isinstance(value, _PickledByMXNet) and hasattr(self.optimizer, key):
                setattr(self.optimizer, key, value)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states (and optionally the optimizer, with its schedule and counts) as bytes."""
        return _dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer: Optimizer) -> Updater:
    """The updater a KVStore or Module calls for every weight after every batch."""
    return Updater(optimizer)
