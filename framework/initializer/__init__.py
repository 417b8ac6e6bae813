"""``mx.init``: how parameters get their first values (MXNet 1.x's ``initializer.py``).

An initializer is called once per parameter as ``init(desc, arr)``: ``desc`` is an
:class:`InitDesc`, the parameter's *name* (a ``str``) carrying the variable's attributes,
and ``arr`` the NDArray to fill in place. The initializer dispatches on the name, because
in MXNet a name says what a parameter is for:

====================  =========================================
name ends with        value
====================  =========================================
``weight``            the initializer's own rule (``_init_weight``: random for Uniform/Xavier...)
``bias``              0
``gamma``             1 (BatchNorm scale)
``beta``              0 (BatchNorm shift)
``min`` / ``max``     0 / 1 (quantisation ranges)
``moving_mean``       0 (BatchNorm running mean; also ``moving_inv_var``, ``moving_avg``)
``moving_var``        1 (BatchNorm running variance)
====================  =========================================

A variable can override this with its own initializer: ``mx.sym.var("w", init=mx.init.Normal(0.5))``
stores ``init.dumps()``, the JSON ``'["normal", {"sigma": 0.5}]'``, in its ``__init__``
attribute; when that attribute is present, ``create`` turns it back into an initializer and its
``_init_weight`` fills the array whatever the name. That is why initializers are registered by
name (:func:`register`, :func:`alias`) and know how to ``dumps`` themselves.

Random initializers draw through ``mx.nd.random`` (one engine operation writing ``arr``), so
``mx.random.seed(n)`` makes them reproducible. The numbers are not MXNet's (a different
generator), the distributions are.

One deliberate difference: MXNet 1.x relies on BatchNorm having set ``__init__`` on its
moving statistics and raises for an unknown name; MXLab also recognises the ``moving_*``
names directly (as MXNet's legacy string path does), so auxiliary states initialise either way.

The package, one idea per module: :mod:`.base` (the base class, its dispatch on names, the
registry and :func:`create`), :mod:`.constant` (given values), :mod:`.random_weights` (random
draws, scaled by a bound or by the weight's shape), :mod:`.layer_inits` (initializers that know
one layer's weight layout) and :mod:`.combinators` (:class:`Load` and :class:`Mixed`).
"""

from __future__ import annotations

from .base import InitDesc, Initializer, InitializerError, alias, create, register
from .combinators import Load, Mixed
from .constant import Constant, One, Zero
from .layer_inits import Bilinear, FusedRNN, LSTMBias
from .random_weights import MSRAPrelu, Normal, Orthogonal, Uniform, Xavier

__all__ = [
    "Bilinear",
    "Constant",
    "FusedRNN",
    "InitDesc",
    "Initializer",
    "InitializerError",
    "LSTMBias",
    "Load",
    "MSRAPrelu",
    "Mixed",
    "Normal",
    "One",
    "Orthogonal",
    "Uniform",
    "Xavier",
    "Zero",
    "alias",
    "create",
    "register",
]
