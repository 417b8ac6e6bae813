"""Why an MXNet module path that MXLab lacks is absent, for the AttributeError a user meets.

``mx.nd.sparse.csr_matrix(...)`` in an MXNet script should not stop at a bare "no attribute
'sparse'": the modules that already resolve attributes dynamically (``mx.nd``, ``mx.sym``) ask
:func:`absent_attribute` for their error, which names the reason in one line. The full list
of absent names, with the same reasons, is docs/differences.md ("MXNet 1.9.1 names MXLab does
not have"); tests/test_api_names.py checks that every name here is listed there.
"""

from __future__ import annotations

_SPARSE = "sparse storage (CSR, row-sparse) is not part of MXLab, which stores every array densely"
_NUMPY = "MXNet's NumPy-compatible front end (mx.np, mx.npx) is not part of MXLab; mx.nd and mx.sym are"

#: ``mx.<module>.<name>`` (canonical module path) -> why MXLab does not have it.
ABSENT: dict[str, str] = {
    **{f"mx.{module}.{name}": _SPARSE for module in ("ndarray", "symbol") for name in ("sparse", "gen_sparse")},
    **{
        f"mx.{module}.{name}": _NUMPY
        for module in ("ndarray", "symbol")
        for name in ("np", "npx", "numpy", "numpy_extension")
    },
}


def absent_attribute(module_path: str, name: str, shown: str | None = None) -> AttributeError:
    """The AttributeError for ``<module_path>.<name>``, naming the reason when MXLab lacks it on purpose.

    ``shown`` is how the module is written in the message (``mx.nd`` for ``mx.ndarray``).
    """
    reason = ABSENT.get(f"{module_path}.{name}")
    where = shown or module_path
    if reason is None:
        return AttributeError(f"module {where!r} has no attribute {name!r}")
    return AttributeError(f"{where}.{name} is not available in MXLab: {reason} (docs/differences.md)")


__all__ = ["ABSENT", "absent_attribute"]
