"""MXNet's fluent methods: ``x.sum(axis=1)`` is ``mx.nd.sum(x, axis=1)``, for NDArray and Symbol alike.

MXNet 1.x writes one method per operator on both NDArray and Symbol, each passing ``self``
as the operator's first input. MXLab keeps the list once, here, and each class generates
its methods from it (:func:`framework.ndarray.methods.install`, :func:`framework.symbol.methods.install`):
one source of truth, so the two classes cannot drift apart.

A class writes some of them by hand where MXNet's signature is not ``(self, *args, **kwargs)``
(``expand_dims(axis, inplace)``, NDArray's ``reshape`` view) or no operator backs them
(``split_v2``): the generators skip those names.
"""

from __future__ import annotations

from . import registry

#: (method name, operator name): ``x.<method>(*args, **kwargs)`` calls ``<operator>(x, *args, **kwargs)``.
#: MXNet 1.9.1's list (the same for NDArray and Symbol); ``flip`` is MXNet's alias of ``reverse``,
#: ``pad`` of ``Pad``.
FLUENT_METHODS: tuple[tuple[str, str], ...] = tuple(
    (name, name)
    for name in """
    reshape reshape_like expand_dims flatten squeeze broadcast_to broadcast_like diag zeros_like ones_like
    broadcast_axes repeat swapaxes split split_v2 slice slice_axis slice_like
    take one_hot pick sort topk argsort argmax argmax_channel argmin clip abs sign shape_array size_array tile
    transpose depth_to_space space_to_depth sum nansum prod nanprod mean max min norm round rint fix floor ceil
    trunc sin cos tan arcsin arccos arctan degrees radians sinh cosh tanh arcsinh arccosh arctanh exp expm1 log
    log10 log2 log1p sqrt rsqrt cbrt rcbrt square reciprocal relu sigmoid softmax log_softmax softmin
    """.split()
) + (("flip", "reverse"), ("pad", "Pad"))


def available_fluent_methods() -> list[tuple[str, str]]:
    """The (method, operator) pairs whose operator MXLab registers: the methods a class gets.

    The others are listed in docs/differences.md as absent, with the operator they need.
    """
    return [(method, op_name) for method, op_name in FLUENT_METHODS if registry.exists(op_name)]


def fluent_doc(method: str, op_name: str, namespace: str) -> str:
    """The docstring of a generated fluent method."""
    return f"``{namespace}.{op_name}(self, *args, **kwargs)``: the ``{op_name}`` operator with this as its first input."
