"""``model_zoo.model_store``: where MXNet keeps downloaded zoo weights; MXLab downloads none.

MXNet's ``get_model_file`` fetches ``<name>-<hash>.params`` into ``root`` and checks its
SHA-1 against a table of published hashes. MXLab never uses the network and keeps no such
table, so ``get_model_file`` raises; ``purge`` (deleting the ``.params`` files of ``root``) works.
"""

from __future__ import annotations

import os

from ..utils import DownloadError
from .vision.common import DEFAULT_ROOT


def get_model_file(name: str, root: str = DEFAULT_ROOT) -> str:
    """MXNet's path of downloaded weights for zoo model ``name``; always raises in MXLab."""
    raise DownloadError(
        f"get_model_file({name!r}): MXLab does not download pretrained weights (MXNet would fetch them into "
        f"{os.path.expanduser(root)!r}); load a .params file you have with net.load_parameters(path)"
    )


def purge(root: str = DEFAULT_ROOT) -> None:
    """Delete every ``.params`` file in ``root`` (the weights MXNet downloaded there)."""
    root = os.path.expanduser(root)
    if not os.path.isdir(root):
        return
    for name in os.listdir(root):
        if name.endswith(".params"):
            os.remove(os.path.join(root, name))
