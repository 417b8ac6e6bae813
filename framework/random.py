"""``mx.random``: seeding the per-device random generators of the ResourceManager.

The samplers (``mx.nd.random.normal`` and friends) come with NDArray; they draw from the
generators seeded here, through the engine, so seeded results are reproducible on every
engine type (see framework/resource.py).
"""

from __future__ import annotations

from .context import Context
from .resource import ResourceError, ResourceManager, check_seed


def seed(seed_state: int, ctx: Context | str = "all") -> None:
    """Seed the random generators (MXNet's ``mx.random.seed``).

    Args:
        seed_state: a non-negative int. Each device derives its own stream from it and its
            device id, so devices do not draw the same numbers.
        ctx: ``"all"`` (default) to seed every device, or one Context to seed only it.

    Draws pushed before this call keep using the old stream; draws pushed after use the
    new one, whatever engine runs them.
    """
    seed_state = check_seed(seed_state, "mx.random.seed")
    if isinstance(ctx, str) and ctx == "all":
        target = None
    elif isinstance(ctx, Context):
        target = ctx
    else:
        raise ResourceError(f"mx.random.seed: ctx must be 'all' or a Context such as mx.cpu(0), got {ctx!r}")
    ResourceManager.get().seed(seed_state, target)


__all__ = ["seed"]
