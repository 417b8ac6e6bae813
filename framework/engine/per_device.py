"""ThreadedEnginePerDevice: a pool per device and kind of work (MXNet's default engine).

Routing, by context and FnProperty:

==================  ==========================  ==========================================
context             property                    pool (workers)
==================  ==========================  ==========================================
cpu(i)              normal, no_skip             ``cpu(i)/normal`` (MXLAB_CPU_WORKER_NTHREADS, 2)
cpu(i)              copy_to/from_gpu            ``cpu(i)/copy`` (MXLAB_CPU_COPY_NTHREADS, 1)
any                 cpu_prioritized             ``cpu/priority`` (MXLAB_CPU_PRIORITY_NTHREADS, 2)
gpu(i)              normal, no_skip             ``gpu(i)/normal`` (MXLAB_GPU_WORKER_NTHREADS, 2)
gpu(i)              copy_to/from_gpu            ``gpu(i)/copy`` (MXLAB_GPU_COPY_NTHREADS, 2)
gpu(i)              gpu_prioritized             ``gpu(i)/priority`` (MXLAB_GPU_PRIORITY_NTHREADS, 2)
==================  ==========================  ==========================================

Every GPU worker owns its own stream, so copies overlap with computation on one device.
"""

from __future__ import annotations

from .. import config
from ..context import Context
from .operation import FnProperty, Operation
from .threaded import ThreadedEngineBase, worker_count
from .workers import WorkerPool

_COPY = (FnProperty.COPY_FROM_GPU, FnProperty.COPY_TO_GPU)


class ThreadedEnginePerDevice(ThreadedEngineBase):
    """Per-device pools, created the first time a device receives work."""

    type_name = "ThreadedEnginePerDevice"

    def __init__(self, num_workers: int | None = None) -> None:
        workers = worker_count(self.type_name, num_workers)  # checked before the engine exists
        super().__init__()
        self.cpu_workers = workers
        self.cpu_copy_workers = config.get("MXLAB_CPU_COPY_NTHREADS")
        self.cpu_priority_workers = config.get("MXLAB_CPU_PRIORITY_NTHREADS")
        self.gpu_workers = config.get("MXLAB_GPU_WORKER_NTHREADS")
        self.gpu_copy_workers = config.get("MXLAB_GPU_COPY_NTHREADS")
        self.gpu_priority_workers = config.get("MXLAB_GPU_PRIORITY_NTHREADS")

    def _pool_for(self, op: Operation) -> WorkerPool:
        key = (op.ctx, op.prop)
        pool = self._pools.get(key)
        if pool is None:
            name, workers = self._route(op.ctx, op.prop)
            # Several (ctx, prop) keys share one pool: look the pool up by name first.
            pool = self._pools.get(name) or self._make_pool(name, name, workers)
            with self._pools_lock:
                self._pools.setdefault(key, pool)
        return pool

    def _route(self, ctx: Context, prop: FnProperty) -> tuple[str, int]:
        """The pool name and size for work of kind ``prop`` on ``ctx``."""
        if prop is FnProperty.CPU_PRIORITIZED:
            return "cpu/priority", self.cpu_priority_workers
        if ctx.device_type == "cpu":
            if prop in _COPY:
                return f"{ctx}/copy", self.cpu_copy_workers
            return f"{ctx}/normal", self.cpu_workers
        if prop in _COPY:
            return f"{ctx}/copy", self.gpu_copy_workers
        if prop is FnProperty.GPU_PRIORITIZED:
            return f"{ctx}/priority", self.gpu_priority_workers
        return f"{ctx}/normal", self.gpu_workers

    def workers(self) -> list[str]:
        seen: dict[int, WorkerPool] = {id(p): p for p in list(self._pools.values())}
        return [w for pool in seen.values() for w in pool.workers]
