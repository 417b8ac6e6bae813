"""``mx.model``: checkpoint files, the way MXNet 1.x writes them.

A checkpoint is two files next to each other:

* ``prefix-symbol.json``: the network (``Symbol.tojson()``), written once per prefix;
* ``prefix-0001.params``: the parameter values after epoch 1, an ``mx.nd.save`` file of a
  dict whose keys say what each array is: ``arg:fc1_weight`` for a learned argument,
  ``aux:bn0_moving_mean`` for an auxiliary state.

Files written here load in MXNet 1.9.1 and MXNet's files load here (the formats are byte
compatible: see ``framework/ndarray/io.py`` and ``framework/symbol/json_format.py``).
Importing this module also registers :func:`save_checkpoint` as the function behind
``mx.callback.do_checkpoint``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from . import callback
from . import ndarray as nd
from . import symbol as sym
from .base import MXLabError
from .callback import BatchEndParam
from .context import cpu
from .ndarray import NDArray


class CheckpointError(MXLabError, ValueError):
    """A checkpoint file is missing or holds something other than ``arg:`` / ``aux:`` arrays."""


def params_file(prefix: str, epoch: int) -> str:
    """``prefix-%04d.params``: the file name of epoch ``epoch``'s parameters."""
    return f"{prefix}-{int(epoch):04d}.params"


def symbol_file(prefix: str) -> str:
    """``prefix-symbol.json``: the file name of the network."""
    return f"{prefix}-symbol.json"


def params_dict(arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray]) -> dict[str, NDArray]:
    """The ``arg:`` / ``aux:``-keyed dict a ``.params`` file stores (arrays moved to the CPU)."""
    saved = {f"arg:{name}": value.as_in_context(cpu()) for name, value in arg_params.items()}
    saved.update({f"aux:{name}": value.as_in_context(cpu()) for name, value in aux_params.items()})
    return saved


def split_params(saved: Mapping[str, NDArray] | list, source: str) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """Split an ``arg:``/``aux:``-keyed dict into ``(arg_params, aux_params)``."""
    if isinstance(saved, list):
        if not saved:
            return {}, {}
        raise CheckpointError(f"{source}: holds a list of {len(saved)} unnamed arrays, not arg:/aux: parameters")
    arg_params: dict[str, NDArray] = {}
    aux_params: dict[str, NDArray] = {}
    for key, value in saved.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in ("arg", "aux") or not name:
            raise CheckpointError(f"{source}: invalid parameter name {key!r}; expected 'arg:<name>' or 'aux:<name>'")
        (arg_params if kind == "arg" else aux_params)[name] = value
    return arg_params, aux_params


def save_checkpoint(
    prefix: str,
    epoch: int,
    symbol: Any,
    arg_params: Mapping[str, NDArray],
    aux_params: Mapping[str, NDArray],
    remove_amp_cast: bool = True,
) -> None:
    """Write ``prefix-symbol.json`` (when ``symbol`` is given) and ``prefix-%04d.params``."""
    if not isinstance(prefix, str) or not prefix:
        raise CheckpointError(f"save_checkpoint: prefix must be a non-empty string, got {prefix!r}")
    if symbol is not None:
        symbol.save(symbol_file(prefix))
    name = params_file(prefix, epoch)
    nd.save(name, params_dict(arg_params, aux_params))
    logging.info('Saved checkpoint to "%s"', name)


def load_params(prefix: str, epoch: int) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """``(arg_params, aux_params)`` from ``prefix-%04d.params``."""
    name = params_file(prefix, epoch)
    if not os.path.exists(name):
        raise CheckpointError(f"load_params: no parameter file {name!r} (prefix {prefix!r}, epoch {epoch})")
    saved = nd.load(name)
    if not saved:
        logging.warning("Params file '%s' is empty", name)
    return split_params(saved, name)


def load_checkpoint(prefix: str, epoch: int) -> tuple[Any, dict[str, NDArray], dict[str, NDArray]]:
    """``(symbol, arg_params, aux_params)`` from ``prefix-symbol.json`` and ``prefix-%04d.params``."""
    name = symbol_file(prefix)
    if not os.path.exists(name):
        raise CheckpointError(f"load_checkpoint: no symbol file {name!r} (prefix {prefix!r})")
    symbol = sym.load(name)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


callback.set_save_checkpoint(save_checkpoint)

__all__ = [
    "BatchEndParam",
    "CheckpointError",
    "load_checkpoint",
    "load_params",
    "params_file",
    "save_checkpoint",
    "symbol_file",
]
