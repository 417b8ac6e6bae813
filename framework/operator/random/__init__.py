"""Random operators beyond ``tensor/random_ops.py``'s ``_random_<dist>``/``_sample_<dist>`` samplers.

``sampling`` draws indices (``_sample_multinomial``, ``_shuffle``, ``_sample_unique_zipfian``)
from the device's random resource; ``pdf`` scores given samples (``_random_pdf_<dist>``), which
needs no randomness at all but belongs with the distributions it describes.
"""

from __future__ import annotations

from . import pdf, sampling

__all__ = ["pdf", "sampling"]
