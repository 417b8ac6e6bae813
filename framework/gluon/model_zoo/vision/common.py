"""What every zoo constructor shares: the refusal to download pretrained weights."""

from __future__ import annotations

from typing import Any

from ...block import BlockError


class PretrainedError(BlockError):
    """``pretrained=True`` was asked for; MXLab does not download weights."""


def build(name: str, make: Any, pretrained: bool, kwargs: dict[str, Any]) -> Any:
    """``make(**kwargs)``, after refusing ``pretrained=True`` (``ctx`` and ``root`` are dropped: no download)."""
    if pretrained:
        raise PretrainedError(
            f"{name}: pretrained=True: MXLab does not download model weights; build the network with "
            f"pretrained=False and load a .params file saved from MXNet's model zoo with net.load_parameters(path)"
        )
    kwargs.pop("ctx", None)
    kwargs.pop("root", None)
    return make(**kwargs)
