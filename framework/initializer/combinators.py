"""Initializers made of other sources: saved parameters (:class:`Load`) and a choice by
name pattern among several initializers (:class:`Mixed`).

Neither is an :class:`~.base.Initializer` (as in MXNet): both are plain callables
``init(name, arr)`` that hand each name to another initializer or fill it from a file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from ..ndarray import NDArray, load
from .base import InitializerError


class Load:
    """Initialise from saved parameters (a ``.params`` file or a dict), else from ``default_init``.

    ``arg:`` / ``aux:`` prefixes of saved names are dropped, so a checkpoint loads directly.
    """

    def __init__(self, param: str | dict[str, NDArray], default_init: Any = None, verbose: bool = False) -> None:
        if isinstance(param, str):
            param = load(param)
        if not isinstance(param, dict):
            raise InitializerError(f"Load: param must be a file name or a dict of name -> NDArray, got {param!r}")
        self.param: dict[str, NDArray] = {}
        for name, arr in param.items():
            key = name[4:] if name.startswith(("arg:", "aux:")) else name
            self.param[key] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: str, arr: NDArray) -> None:
        if name in self.param:
            saved = self.param[name]
            if arr.shape != saved.shape:
                raise InitializerError(
                    f"Parameter {name} cannot be initialized from loading. "
                    f"Shape mismatch, target {arr.shape} vs loaded {saved.shape}"
                )
            arr[:] = saved
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise InitializerError(
                    f"Cannot initialize {name}: not found in the loaded parameters and no default initializer given"
                )
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer by the first regular expression (``re.match``) that matches the name.

    ``Mixed(["bias", ".*"], [mx.init.Zero(), mx.init.Uniform(0.1)])``: end with ``".*"`` to
    catch every remaining name.
    """

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]) -> None:
        if len(patterns) != len(initializers):
            raise InitializerError(
                f"Mixed: got {len(patterns)} patterns but {len(initializers)} initializers; they pair up one to one"
            )
        self.map = list(zip([re.compile(p) for p in patterns], initializers, strict=True))

    def __call__(self, name: str, arr: NDArray) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise InitializerError(
            f"Parameter name {name} did not match any pattern. Consider adding a '.*' pattern at the end "
            "with a default Initializer."
        )
