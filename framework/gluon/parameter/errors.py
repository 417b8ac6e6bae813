"""What can go wrong with a Gluon parameter: two error classes shared by the whole package.

They live apart so that :mod:`.parameter`, :mod:`.constant` and :mod:`.parameter_dict` raise
the same classes without importing one another only for them.
"""

from __future__ import annotations

from ...base import MXLabError


class DeferredInitializationError(MXLabError, RuntimeError):
    """The parameter's shape is not known yet: run one forward pass first."""


class ParameterError(MXLabError, ValueError):
    """A parameter was used in a way its state does not allow (the message names it)."""
