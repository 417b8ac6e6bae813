"""Seeded mutations of a valid file, for the loader fuzz tests.

Each loader must answer a damaged file with its own error class (or load it, when the damage
happens to be harmless): never another exception, never a hang, never an allocation sized by
a corrupt length field. The mutations are the ones real damage produces: truncation (a killed
writer, a partial download), bit flips (bad media), length fields overwritten with extreme
values, and arbitrary byte runs.
"""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

#: Values written over 4- or 8-byte fields: the edges a corrupt length or count takes.
EXTREMES = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**62, 2**63 - 1, 2**64 - 1]


def mutants(data: bytes, seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    """(description, damaged bytes): truncations, bit flips, extreme fields, random runs."""
    rng = random.Random(seed)
    n = len(data)
    cuts = range(n) if n <= count else sorted({0, n - 1, *rng.sample(range(n), count)})
    for cut in cuts:
        yield f"truncated to {cut} bytes", data[:cut]
    for _ in range(count):
        damaged = bytearray(data)
        pos = rng.randrange(n)
        damaged[pos] ^= 1 << rng.randrange(8)
        yield f"bit flip at byte {pos}", bytes(damaged)
    for _ in range(count):
        damaged = bytearray(data)
        width = rng.choice((4, 8))
        pos = rng.randrange(0, max(n - width, 1)) & ~3
        damaged[pos : pos + width] = (rng.choice(EXTREMES) % 2 ** (8 * width)).to_bytes(width, "little")
        yield f"{width}-byte field at {pos} set to an extreme", bytes(damaged)
    for _ in range(count // 4):
        damaged = bytearray(data)
        pos = rng.randrange(n)
        damaged[pos : pos + 16] = rng.randbytes(16)
        yield f"16 random bytes at {pos}", bytes(damaged)


def only_raises(error_cls: type[BaseException], load: Callable[[], object], what: str) -> BaseException | None:
    """Run ``load``; return the ``error_cls`` it raised (None on success); fail on anything else."""
    try:
        load()
    except error_cls as err:
        return err
    except Exception as err:
        pytest.fail(f"{what}: leaked {type(err).__name__}: {err}")
    return None


def peak_allocation(fn: Callable[[], object]) -> int:
    """Peak bytes Python and NumPy allocated while ``fn`` ran (errors are swallowed)."""
    tracemalloc.start()
    try:
        fn()
    except Exception:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak
