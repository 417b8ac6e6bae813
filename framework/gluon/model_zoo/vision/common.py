"""What every zoo constructor shares: the refusal to download pretrained weights."""

from __future__ import annotations

import os
from typing import Any

from ....context import cpu
from ...block import BlockError


class PretrainedError(BlockError):
    """``pretrained=True`` was asked for; MXLab does not download weights."""


#: Where MXNet keeps downloaded weights (the getters' ``root``): MXLab never writes there.
DEFAULT_ROOT = os.path.join("~", ".mxnet", "models")
#: The getters' default ``ctx``, as in MXNet (a network without weights is placed by ``initialize``).
CPU = cpu()


def build(name: str, make: Any, pretrained: bool, kwargs: dict[str, Any]) -> Any:
    """``make(**kwargs)``, after refusing ``pretrained=True``.

    The getters take MXNet's ``ctx`` and ``root``, which only place and find downloaded weights:
    without weights there is nothing to place (initialize the network on the context you want).
    """
    if pretrained:
        raise PretrainedError(
            f"{name}: pretrained=True: MXLab does not download model weights; build the network with "
            f"pretrained=False and load a .params file saved from MXNet's model zoo with net.load_parameters(path)"
        )
    return make(**kwargs)
