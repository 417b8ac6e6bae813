"""The ResourceManager (seed 000, "Resource Manager"): random generators and temporary space.

Some operators need more than their inputs and outputs: dropout needs random numbers, a
convolution may need scratch memory. Instead of creating these per call, an operator
*requests* them from the resource manager, which keeps a few per device and hands them out.

Every resource carries an engine variable (``var``). An operation that uses a resource
lists that variable in ``mutable_vars``; the engine then runs all users of one resource
one after the other, in push order. That is the whole trick:

* **Random numbers** (:class:`RandomResource`): one generator per device. Because every
  draw mutates the generator's variable, draws happen in push order on every engine type,
  so a seeded program gives the same numbers on NaiveEngine, ThreadedEngine and
  ThreadedEnginePerDevice. Each device's generator is seeded from (seed, device type,
  device id), so ``cpu(0)`` and ``cpu(1)`` draw different but reproducible streams.
* **Temporary space** (:class:`TempSpace`): a few scratch blocks per device (4 per CPU, 1
  per GPU), handed out round-robin so that independent operators can run in parallel on
  different copies. A block grows to the largest request and is then reused; it is never
  freed per call, which is what makes scratch memory cheap.

Seeds are process-wide: ``mx.random.seed(n)`` sets the seed every device (and every
engine's manager created later) starts from; ``mx.random.seed(n, ctx)`` sets one device's.
Before any call the seed is ``MXLAB_SEED`` if set, else 0, MXNet's fixed default
(``ResourceManagerImpl`` starts with ``global_seed_ = 0``), so unseeded runs repeat too.

Settings: ``MXLAB_SEED`` (default 0), ``MXLAB_CPU_TEMP_COPY`` (default 4),
``MXLAB_GPU_TEMP_COPY`` (default 1).
"""

from __future__ import annotations

import enum
import math
import threading
import weakref
from typing import Any, ClassVar

import numpy as np

from . import backend, config, storage
from .base import MXLabError
from .context import Context
from .engine import Engine, RunContext
from .engine.var import Var

#: The seed used when neither ``mx.random.seed`` nor ``MXLAB_SEED`` set one (MXNet's: 0).
DEFAULT_SEED = config.setting("MXLAB_SEED").default


class ResourceError(MXLabError, ValueError):
    """A resource was requested or used wrongly (bad request kind, seed, shape or dtype)."""


class ResourceRequest(enum.Enum):
    """What an operator may ask the manager for (MXNet's ``ResourceRequest::Type``)."""

    RANDOM = "random"
    TEMP_SPACE = "temp_space"


def check_seed(seed_state: Any, api: str) -> int:
    """Return ``seed_state`` as an int if it is a non-negative integer (bool refused), else raise."""
    if isinstance(seed_state, bool) or not isinstance(seed_state, int | np.integer):
        raise ResourceError(f"{api}: seed_state must be an int, got {type(seed_state).__name__} {seed_state!r}")
    if seed_state < 0:
        raise ResourceError(f"{api}: seed_state must be >= 0, got {seed_state}")
    return int(seed_state)


# --------------------------------------------------------------------------- process-wide seeds
class _Seeds:
    """The seed each device starts from: one for all devices, optionally one per device."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.all_devices: int | None = None  # None: MXLAB_SEED, else DEFAULT_SEED
        self.per_device: dict[Context, int] = {}

    def for_device(self, ctx: Context) -> int:
        with self.lock:
            seed = self.per_device.get(ctx, self.all_devices)
        return config.get("MXLAB_SEED") if seed is None else seed

    def set(self, seed: int, ctx: Context | None) -> None:
        with self.lock:
            if ctx is None:
                self.all_devices = seed
                self.per_device.clear()
            else:
                self.per_device[ctx] = seed


_seeds = _Seeds()


def _make_generator(ctx: Context, seed: int) -> Any:
    """A generator for ``ctx`` whose stream depends on the seed *and* on the device."""
    return backend.random_generator(ctx, np.random.SeedSequence([seed, ctx.device_typeid, ctx.device_id]))


def _engine_of(ref: weakref.ref[Engine], what: str) -> Engine:
    engine = ref()
    if engine is None:
        raise ResourceError(f"{what}: the engine this resource belongs to no longer exists")
    return engine


# --------------------------------------------------------------------------- resources
class RandomResource:
    """The random generator of one device, guarded by the engine variable ``var``.

    Use it only inside a function pushed to the engine with ``mutable_vars=[res.var]``,
    and read ``res.generator`` *inside* that function (reseeding replaces the generator)::

        def draw(run_ctx):
            out[:] = res.generator.normal(size=out.shape)
        engine.push_sync(draw, res.ctx, mutable_vars=[res.var])

    ``generator`` is a ``numpy.random.Generator`` on a CPU and a ``cupy.random.Generator``
    on a GPU.
    """

    req = ResourceRequest.RANDOM

    def __init__(self, engine: Engine, ctx: Context, seed: int) -> None:
        self.ctx = ctx
        self.var: Var = engine.new_variable(f"random({ctx})")
        #: The seed the generator was last (re)seeded with, as of the latest completed reseed.
        self.seed_state = seed
        self.generator = _make_generator(ctx, seed)
        self._engine = weakref.ref(engine)

    def seed(self, seed_state: int) -> None:
        """Reseed, in engine order: draws pushed earlier use the old stream, later ones the new."""
        seed_state = check_seed(seed_state, "RandomResource.seed")

        def reseed(run_ctx: RunContext) -> None:
            self.generator = _make_generator(self.ctx, seed_state)
            self.seed_state = seed_state

        engine = _engine_of(self._engine, "RandomResource.seed")
        engine.push_sync(reseed, self.ctx, mutable_vars=[self.var], name=f"random.seed({self.ctx})")

    def __repr__(self) -> str:
        return f"<RandomResource {self.ctx} seed={self.seed_state}>"


class TempSpace:
    """One scratch block of a device, guarded by the engine variable ``var``.

    ``get_space(shape, dtype)`` returns an array viewing the block. Call it inside a
    function pushed with ``mutable_vars=[space.var]`` and drop the array when that
    function returns: the next user of this copy gets the same memory.
    """

    req = ResourceRequest.TEMP_SPACE

    def __init__(self, engine: Engine, ctx: Context, index: int) -> None:
        self.ctx = ctx
        self.index = index
        self.var: Var = engine.new_variable(f"temp_space({ctx})#{index}")
        #: The storage block currently backing this copy (None until the first request).
        self.handle: storage.Handle | None = None

    @property
    def capacity(self) -> int:
        """Bytes available without growing: the length of the current block."""
        return 0 if self.handle is None else self.handle.rounded

    def get_space(self, shape: tuple[int, ...] | list[int], dtype: Any = np.float32) -> Any:
        """An uninitialised array of ``shape`` and ``dtype`` viewing this copy's block.

        The block grows (the old one is freed, a larger one allocated) only when a request
        does not fit; otherwise the same memory is reused.
        """
        shape = _check_shape(shape)
        dtype = _check_dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if self.handle is None or nbytes > self.capacity:
            if self.handle is not None:
                storage.free(self.handle)
                self.handle = None
            self.handle = storage.alloc(nbytes, self.ctx)
        return self.handle.buffer[:nbytes].view(dtype).reshape(shape)

    def __repr__(self) -> str:
        return f"<TempSpace {self.ctx}#{self.index} {self.capacity}B>"


def _check_shape(shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, tuple | list):
        raise ResourceError(f"TempSpace.get_space: shape must be a tuple of ints, got {type(shape).__name__} {shape!r}")
    for dim in shape:
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 0:
            raise ResourceError(f"TempSpace.get_space: shape must hold ints >= 0, got {tuple(shape)!r}")
    return tuple(int(dim) for dim in shape)


def _check_dtype(dtype: Any) -> np.dtype:
    try:
        result = np.dtype(dtype)
    except TypeError:
        raise ResourceError(f"TempSpace.get_space: dtype must be a numeric dtype, got {dtype!r}") from None
    if result.kind not in "biufc":
        raise ResourceError(f"TempSpace.get_space: dtype must be a numeric dtype, got {result}")
    return result


# --------------------------------------------------------------------------- the manager
class ResourceManager:
    """Hands out the resources of every device, for one engine.

    Engine variables belong to one engine instance, so each engine has its own manager:
    :meth:`get` returns the one of the current default engine (``Engine.get()``).
    """

    _instances: ClassVar[weakref.WeakKeyDictionary[Engine, ResourceManager]] = weakref.WeakKeyDictionary()
    _instances_lock: ClassVar[threading.Lock] = threading.Lock()

    @staticmethod
    def get() -> ResourceManager:
        """The manager of the current default engine, created on first use."""
        engine = Engine.get()
        with ResourceManager._instances_lock:
            found = ResourceManager._instances.get(engine)
            if found is None:
                found = ResourceManager._instances[engine] = ResourceManager(engine)
        return found

    def __init__(self, engine: Engine) -> None:
        if not isinstance(engine, Engine):
            raise ResourceError(f"ResourceManager: expected an Engine, got {type(engine).__name__}")
        self._engine = weakref.ref(engine)  # weak: a manager must not keep its engine alive
        self._lock = threading.Lock()
        self._random: dict[Context, RandomResource] = {}
        self._temp: dict[Context, list[TempSpace]] = {}
        self._temp_next: dict[Context, int] = {}

    def request(self, ctx: Context, req: ResourceRequest) -> RandomResource | TempSpace:
        """The resource of kind ``req`` on ``ctx``; temp space copies come round-robin."""
        if not isinstance(req, ResourceRequest):
            raise ResourceError(f"ResourceManager.request: req must be a ResourceRequest, got {req!r}")
        backend.check_context(ctx)
        engine = _engine_of(self._engine, "ResourceManager.request")
        with self._lock:
            if req is ResourceRequest.RANDOM:
                resource = self._random.get(ctx)
                if resource is None:
                    resource = self._random[ctx] = RandomResource(engine, ctx, _seeds.for_device(ctx))
                return resource
            copies = self._temp.get(ctx)
            if copies is None:
                count = config.get(f"MXLAB_{ctx.device_type.upper()}_TEMP_COPY")
                copies = self._temp[ctx] = [TempSpace(engine, ctx, i) for i in range(count)]
                self._temp_next[ctx] = 0
            index = self._temp_next[ctx]
            self._temp_next[ctx] = (index + 1) % len(copies)
            return copies[index]

    def seed(self, seed_state: int, ctx: Context | None = None) -> None:
        """Reseed every device's generator, or only ``ctx``'s, in engine order."""
        seed_state = check_seed(seed_state, "ResourceManager.seed")
        if ctx is not None:
            backend.check_context(ctx)
        with self._lock:
            _seeds.set(seed_state, ctx)
            targets = list(self._random.values()) if ctx is None else [self._random[ctx]] if ctx in self._random else []
        for resource in targets:
            resource.seed(seed_state)

    def __repr__(self) -> str:
        return f"<ResourceManager of {self._engine()!r}>"
