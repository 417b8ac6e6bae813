"""``mx.gluon.contrib``: the parts of MXNet's contrib Gluon that MXLab has (``contrib.nn``)."""

from __future__ import annotations

from . import nn

__all__ = ["nn"]
