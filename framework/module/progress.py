"""The training progress bar: one tqdm bar per epoch of ``fit`` (batches, samples/second, the metric).

The bar shows only on an interactive terminal (or a notebook) by default; ``MXLAB_PROGRESS=0``
hides it and ``MXLAB_PROGRESS=1`` forces it, and ``fit(progress_bar=...)`` overrides both.
It is display, not training, so it lives apart from the loop in :mod:`.base_module`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tqdm.auto import tqdm

from .. import config


def progress_enabled(progress_bar: bool | None) -> bool | None:
    """True (show), False (hide) or None (show on a terminal only), from the argument or ``MXLAB_PROGRESS``."""
    if progress_bar is not None:
        return bool(progress_bar)
    return config.get("MXLAB_PROGRESS")


def _num_batches(data_iter: Any) -> int | None:
    """How many batches an epoch of ``data_iter`` has, when it can tell."""
    try:
        return len(data_iter)
    except TypeError:
        pass
    num_data, batch_size = getattr(data_iter, "num_data", None), getattr(data_iter, "batch_size", None)
    if isinstance(num_data, int) and isinstance(batch_size, int) and batch_size > 0:
        handle = getattr(data_iter, "last_batch_handle", "pad")
        if handle == "discard":
            return num_data // batch_size
        if handle == "pad":
            return -(-num_data // batch_size)
    return None


class _EpochProgress:
    """One epoch's tqdm bar; every method is a no-op when the bar is hidden."""

    def __init__(self, enabled: bool | None, total: int | None, epoch: int) -> None:
        self._bar = None
        if enabled is False:
            return
        if enabled is None and "ipykernel" in sys.modules:
            enabled = True  # a notebook: stderr is not a terminal, but the bar renders
        # disable=None lets tqdm hide itself when stderr is not a terminal (tests, CI logs).
        self._bar = tqdm(
            total=total,
            desc=f"Epoch[{epoch}]",
            unit="batch",
            leave=True,
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.25,
            disable=None if enabled is None else False,
        )
        if self._bar.disable:
            self._bar = None

    def step(self, samples_per_sec: float, name_values: Callable[[], list[tuple[str, float]]]) -> None:
        bar = self._bar
        if bar is None:
            return
        shown = [f"{samples_per_sec:.0f} samples/s"] + [f"{n}={v:.4f}" for n, v in name_values()]
        bar.set_postfix_str(", ".join(shown), refresh=False)
        bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
