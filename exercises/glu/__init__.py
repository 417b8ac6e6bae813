"""Checks of the ``glu`` exercise: a gated linear unit HybridBlock, imperative and hybridized.

1. ``parameters``: the four parameters, their names, shapes and deferred input size.
2. ``forward``: imperative outputs against NumPy on several shapes.
3. ``hybridized``: after ``hybridize()``, the same outputs (the code must trace).
4. ``gradients``: gradients of the input and every parameter against NumPy, imperatively
   and hybridized.
"""
