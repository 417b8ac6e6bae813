"""How the processes of a distributed job find each other: environment variables and Ray.

A distributed job has ``num_servers`` **servers** (Ray actors holding the keys, see
:mod:`.server`) and ``num_workers`` **workers** (the training processes). The launcher
(:mod:`.launch`) starts the servers as *named* Ray actors in a job-specific Ray *namespace*,
then starts every worker with the job's environment variables: ``MXLAB_KV_RANK``,
``MXLAB_KV_NUM_WORKERS``, ``MXLAB_KV_NUM_SERVERS``, ``MXLAB_KV_NAMESPACE``, ``MXLAB_KV_RAY_ADDRESS``,
``MXLAB_KV_TIMEOUT``, ``MXLAB_KV_TRANSPORT`` and ``MXLAB_KVSTORE_BIGARRAY_BOUND`` (rows of
:mod:`framework.config`, which says what each means and accepts), so that
``mx.kv.create('dist_sync')`` inside the worker reads them (:meth:`DistConfig.from_env`),
connects to Ray and looks the servers up by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .. import config
from .base import KVStoreError
from .server import KVServer
from .sharding import DEFAULT_BIGARRAY_BOUND, bigarray_bound_from_env

ENV_RANK = "MXLAB_KV_RANK"
ENV_NUM_WORKERS = "MXLAB_KV_NUM_WORKERS"
ENV_NUM_SERVERS = "MXLAB_KV_NUM_SERVERS"
ENV_ADDRESS = "MXLAB_KV_RAY_ADDRESS"
ENV_NAMESPACE = "MXLAB_KV_NAMESPACE"
ENV_TIMEOUT = "MXLAB_KV_TIMEOUT"
ENV_BIGARRAY_BOUND = "MXLAB_KVSTORE_BIGARRAY_BOUND"
ENV_TRANSPORT = "MXLAB_KV_TRANSPORT"
DEFAULT_TIMEOUT = config.setting(ENV_TIMEOUT).default
SERVER_NAME = "mxlab-kv-server-{index}"
#: How workers move arrays to and from the servers (see :mod:`.shared_blocks`).
TRANSPORTS = ("auto", "ray")
#: Where a Ray cluster started by MXLab keeps its sockets and logs (never inside the repository).
RAY_TEMP_DIR = "/tmp/mxlab-ray"


def import_ray() -> ModuleType:
    """The ``ray`` module, or a clear error saying how to get it."""
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    try:
        import ray  # noqa: PLC0415 - optional (the [dist] extra), imported by distributed stores only
    except ImportError as err:
        raise KVStoreError(
            "the distributed KVStore runs on Ray, which is not installed: pip install 'mxlab[dist]' (or 'ray')"
        ) from err
    return ray


def timeout_from_env() -> float:
    """``MXLAB_KV_TIMEOUT`` in seconds (default 60)."""
    return config.get(ENV_TIMEOUT)


def transport_from_env() -> str:
    """``MXLAB_KV_TRANSPORT``: ``'auto'`` (shared memory on one host, the default) or ``'ray'``."""
    return config.get(ENV_TRANSPORT)


def server_name(index: int) -> str:
    """The Ray actor name of server ``index`` (unique within the job's namespace)."""
    return SERVER_NAME.format(index=index)


@dataclass(frozen=True)
class DistConfig:
    """Everything a worker needs to join a job (normally read from the launcher's variables)."""

    rank: int
    num_workers: int
    num_servers: int
    namespace: str
    address: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    bigarray_bound: int = DEFAULT_BIGARRAY_BOUND
    transport: str = "auto"  # 'auto': shared memory with servers on this host (dist_sync); 'ray': always Ray

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise KVStoreError(f"transport must be one of {TRANSPORTS}, got {self.transport!r}")
        if self.num_workers < 1 or self.num_servers < 1:
            raise KVStoreError(
                f"a distributed job needs at least one worker and one server, got num_workers={self.num_workers}, "
                f"num_servers={self.num_servers}"
            )
        if not 0 <= self.rank < self.num_workers:
            raise KVStoreError(f"rank {self.rank} is out of range for {self.num_workers} workers")
        if not self.namespace:
            raise KVStoreError("the job namespace must be a non-empty string")

    @classmethod
    def from_env(cls) -> DistConfig:
        """Read the launcher's variables; name the missing ones and how to set them."""
        required = (ENV_RANK, ENV_NUM_WORKERS, ENV_NUM_SERVERS, ENV_NAMESPACE)
        missing = [name for name in required if not config.is_set(name)]
        if missing:
            raise KVStoreError(
                f"a distributed KVStore needs the job's environment variables {missing}; start the workers with "
                "`python -m framework.kvstore.launch -n WORKERS -s SERVERS python train.py ...`"
            )
        return cls(
            rank=config.get(ENV_RANK),
            num_workers=config.get(ENV_NUM_WORKERS),
            num_servers=config.get(ENV_NUM_SERVERS),
            namespace=config.get(ENV_NAMESPACE),
            address=config.get(ENV_ADDRESS),
            timeout=timeout_from_env(),
            bigarray_bound=bigarray_bound_from_env(),
            transport=transport_from_env(),
        )

    def to_env(self) -> dict[str, str]:
        """The variables that make :meth:`from_env` return this configuration in another process."""
        env = {
            ENV_RANK: str(self.rank),
            ENV_NUM_WORKERS: str(self.num_workers),
            ENV_NUM_SERVERS: str(self.num_servers),
            ENV_NAMESPACE: self.namespace,
            ENV_TIMEOUT: repr(self.timeout),
            ENV_BIGARRAY_BOUND: str(self.bigarray_bound),
            ENV_TRANSPORT: self.transport,
        }
        if self.address:
            env[ENV_ADDRESS] = self.address
        return env


def local_ray_options(num_cpus: int | None = None, object_store_mb: int = 200) -> dict[str, Any]:
    """``ray.init`` arguments for a small local cluster: no dashboard, temp files under /tmp."""
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "object_store_memory": object_store_mb * 1024 * 1024,
        "runtime_env": None,
        "_temp_dir": RAY_TEMP_DIR,
        "logging_level": "WARNING",
    }
    if num_cpus is not None:
        options["num_cpus"] = num_cpus
    return options


def connect(config: DistConfig) -> ModuleType:
    """Join the job's Ray cluster (unless this process is already connected, e.g. a Ray actor)."""
    ray = import_ray()
    if not ray.is_initialized():
        if not config.address:
            raise KVStoreError(
                f"this process is not connected to Ray and {ENV_ADDRESS} is not set; start the workers with "
                "`python -m framework.kvstore.launch` (it sets the address)"
            )
        ray.init(
            address=config.address,
            namespace=config.namespace,
            log_to_driver=False,
            logging_level="WARNING",
            runtime_env=None,
        )
    return ray


def start_servers(num_servers: int, num_workers: int, namespace: str, timeout: float = DEFAULT_TIMEOUT) -> list[Any]:
    """Create the job's server actors (named, in ``namespace``) and wait until they answer.

    The actors are owned by the calling process: they die with it, so a crashed launcher
    leaves no servers behind. ``SPREAD`` places them on different nodes of a real cluster.
    """
    ray = import_ray()
    actor_class = ray.remote(KVServer)
    servers = [
        actor_class.options(
            name=server_name(index),
            namespace=namespace,
            num_cpus=0,
            max_restarts=0,
            scheduling_strategy="SPREAD",
        ).remote(index, num_servers, num_workers, timeout)
        for index in range(num_servers)
    ]
    try:
        ray.get([s.ping.remote() for s in servers], timeout=max(timeout, 30.0))
    except Exception as err:
        for s in servers:
            ray.kill(s)
        raise KVStoreError(f"could not start {num_servers} KVStore servers in namespace {namespace!r}: {err}") from err
    return servers


def stop_servers(servers: list[Any]) -> None:
    """Kill the server actors (their keys are gone afterwards)."""
    ray = import_ray()
    for s in servers:
        try:
            ray.kill(s)
        except Exception:
            continue


def find_servers(config: DistConfig) -> list[Any]:
    """The job's server actors, looked up by name in the job's namespace."""
    ray = connect(config)
    servers = []
    for index in range(config.num_servers):
        name = server_name(index)
        try:
            servers.append(ray.get_actor(name, namespace=config.namespace))
        except ValueError:
            raise KVStoreError(
                f"KVStore server {name!r} was not found in Ray namespace {config.namespace!r} "
                f"(expected {config.num_servers} servers; is the launcher running?)"
            ) from None
    return servers


__all__ = [
    "DEFAULT_TIMEOUT",
    "ENV_ADDRESS",
    "ENV_BIGARRAY_BOUND",
    "ENV_NAMESPACE",
    "ENV_NUM_SERVERS",
    "ENV_NUM_WORKERS",
    "ENV_RANK",
    "ENV_TIMEOUT",
    "ENV_TRANSPORT",
    "RAY_TEMP_DIR",
    "TRANSPORTS",
    "DistConfig",
    "connect",
    "find_servers",
    "import_ray",
    "local_ray_options",
    "server_name",
    "start_servers",
    "stop_servers",
    "timeout_from_env",
    "transport_from_env",
]
