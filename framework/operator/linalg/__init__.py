"""Linear algebra on batches of matrices: MXNet's ``linalg`` family (``mx.nd.linalg.*``).

Every operator treats the trailing two axes of its inputs as matrices and every leading axis
as a batch (``common``), and works on the whole batch at once. The family splits three ways:

* ``blas``: products and triangular solves (``gemm``, ``gemm2``, ``trmm``, ``trsm``, ``syrk``);
* ``factor``: factorisations and what is built on them (``potrf``, ``potri``, ``gelqf``,
  ``syevd``, ``inverse``, ``det``, ``slogdet``, ``sumlogdiag``);
* ``layout``: moving entries between matrices and vectors (``extractdiag``, ``makediag``,
  ``extracttrian``, ``maketrian``).

Importing this package registers them all, with their gradients.
"""

from __future__ import annotations

from . import blas, factor, layout

__all__ = ["blas", "factor", "layout"]
