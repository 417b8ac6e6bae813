"""Start a distributed training job: ``python -m framework.kvstore.launch -n 2 -s 2 python train.py``.

The launcher plays the part of MXNet's ``tools/launch.py`` plus ps-lite's scheduler:

1. it joins a Ray cluster (``--address`` of ``ray start --head``) or starts a local one;
2. it starts ``-s`` KVStore **servers** as named Ray actors in a fresh namespace (it owns
   them, so they disappear when the launcher exits);
3. it starts ``-n`` **workers**, each a subprocess running the given command with
   ``MXLAB_KV_RANK``, ``MXLAB_KV_NUM_WORKERS``, ``MXLAB_KV_NUM_SERVERS``,
   ``MXLAB_KV_RAY_ADDRESS``, ``MXLAB_KV_NAMESPACE``, ``MXLAB_KV_TIMEOUT``, ``MXLAB_KV_TRANSPORT`` (see
   :mod:`.cluster`) and ``PYTHONPATH`` pointing at this checkout, so that
   ``mx.kv.create('dist_sync')`` in the script joins the job; their output is prefixed
   with ``[worker R]``. The workers share this host's cores: unless the environment says
   otherwise, each gets its share of engine workers and BLAS threads (:func:`share_cores`);
4. it watches: when a worker exits with an error, or a server dies, it tells the servers to
   abort (every worker waiting on the store then fails at once with that reason), gives the
   other workers ``--timeout`` seconds to exit, stops the rest, and exits non-zero naming
   the dead process. When every worker exits 0, it exits 0.

Workers are plain subprocesses rather than Ray tasks so that a script runs unchanged under the
launcher, prints to the terminal, and its exit code is the launcher's evidence of failure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from .. import config as settings
from ..executor.split_backward import available_cores
from .cluster import (
    DEFAULT_TIMEOUT,
    ENV_TIMEOUT,
    DistConfig,
    import_ray,
    local_ray_options,
    start_servers,
    timeout_from_env,
    transport_from_env,
)
from .sharding import bigarray_bound_from_env

#: The checkout that holds ``framework/``: workers and servers import MXLab from here.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: How often the launcher checks its workers and servers (seconds).
POLL_SECONDS = 0.2


class LaunchError(RuntimeError):
    """The job could not be started (a worker command that cannot run)."""


@dataclass
class Worker:
    """A worker subprocess and its rank."""

    rank: int
    process: subprocess.Popen
    pumps: list[threading.Thread]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m framework.kvstore.launch",
        description="Run a command as N workers of a distributed KVStore job with S Ray server actors.",
    )
    parser.add_argument("-n", "--num-workers", type=int, required=True, help="number of worker processes")
    parser.add_argument("-s", "--num-servers", type=int, required=True, help="number of KVStore server actors")
    parser.add_argument(
        "--address", default=None, help="Ray cluster address (from `ray start --head`); default: start a local one"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds to wait for a missing worker or server before failing ({ENV_TIMEOUT}, default "
        f"{DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray cluster (default: all)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the worker command, e.g. python train.py")
    args = parser.parse_args(argv)
    if args.num_workers < 1 or args.num_servers < 1:
        parser.error(f"-n and -s must be at least 1, got -n {args.num_workers} -s {args.num_servers}")
    if args.timeout is not None and not args.timeout > 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")
    if not args.command:
        parser.error("no worker command given (e.g. `python train.py`)")
    return args


def _log(message: str) -> None:
    print(f"launch: {message}", file=sys.stderr, flush=True)


def _pump(stream: IO[bytes], prefix: str, sink: IO[str]) -> None:
    """Copy a worker's output line by line, prefixed with its rank."""
    for raw in iter(stream.readline, b""):
        sink.write(prefix + raw.decode("utf-8", "replace"))
        sink.flush()
    stream.close()


#: The variables that set how many threads a BLAS starts (OpenMP builds, OpenBLAS, MKL): when one is
#: set, the launcher leaves a worker's BLAS alone.
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def share_cores(env: Mapping[str, str], num_workers: int, cores: int) -> dict[str, str]:
    """The thread settings that give each of ``num_workers`` workers its share of ``cores``.

    A worker on its own would use every core: two engine CPU workers, and a BLAS with one
    thread per core, plus, when the engine has two workers, the executor's splits that run
    one product on both (docs/executor.md). N such workers on one host put N times the busy
    threads on its cores, and the operating system's time slices then decide who waits: the
    synchronous job runs at the pace of the worker that was descheduled last. So each worker
    gets ``cores // num_workers`` cores (at least one): that many engine CPU workers, at most
    the default, and the BLAS threads that fill the rest. One core each means one engine
    worker and one BLAS thread, which also turns the ``auto`` splits off. (PyTorch's
    ``torchrun`` gives each of several processes one OpenMP thread for the same reason.)

    A variable the user set, under MXLab's or MXNet's name, is left as it is, and a single
    worker has the host to itself: it keeps what a plain process would have. Returns only the
    variables to add to ``env``.
    """
    if num_workers < 2:
        return {}
    share = max(1, cores // num_workers)
    added: dict[str, str] = {}
    if not settings.is_set("MXLAB_CPU_WORKER_NTHREADS", env):
        added["MXLAB_CPU_WORKER_NTHREADS"] = str(min(share, settings.setting("MXLAB_CPU_WORKER_NTHREADS").default))
    engine_workers = settings.get("MXLAB_CPU_WORKER_NTHREADS", {**env, **added})
    blas_fixed = settings.is_set("MXLAB_BLAS_THREADS", env) or any((env.get(v) or "").strip() for v in BLAS_VARIABLES)
    if not blas_fixed:
        added["MXLAB_BLAS_THREADS"] = str(max(1, share // engine_workers))
    return added


def _worker_env(config: DistConfig, threads: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(threads)
    env.update(config.to_env())
    paths = [REPO_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != REPO_ROOT]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    return env


def start_worker(rank: int, config: DistConfig, command: list[str], threads: Mapping[str, str] | None = None) -> Worker:
    """Start worker ``rank`` running ``command`` with the job's environment variables (and ``threads``')."""
    process = subprocess.Popen(
        command, env=_worker_env(config, threads or {}), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    pumps = [
        threading.Thread(target=_pump, args=(process.stdout, f"[worker {rank}] ", sys.stdout), daemon=True),
        threading.Thread(target=_pump, args=(process.stderr, f"[worker {rank}] ", sys.stderr), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    return Worker(rank, process, pumps)


def _dead_servers(ray: Any, servers: list[Any]) -> list[int]:
    """Indices of the servers that no longer answer (Ray reports a dead actor at once)."""
    dead = []
    for index, server in enumerate(servers):
        try:
            ray.get(server.ping.remote(), timeout=10.0)
        except ray.exceptions.RayActorError:
            dead.append(index)
        except ray.exceptions.GetTimeoutError:
            dead.append(index)
    return dead


def supervise(ray: Any, workers: list[Worker], servers: list[Any], timeout: float) -> int:
    """Wait for the job; on the first failure abort the servers and stop the workers. The exit code."""
    failure: str | None = None
    code = 0
    last_server_check = 0.0
    while failure is None:
        running = 0
        for worker in workers:
            rc = worker.process.poll()
            if rc is None:
                running += 1
            elif rc != 0:
                failure = f"worker {worker.rank} (pid {worker.process.pid}) exited with code {rc}"
                code = rc if 0 < rc < 256 else 1
                break
        if failure is None and running == 0:
            return 0
        now = time.monotonic()
        if failure is None and now - last_server_check > 1.0:
            last_server_check = now
            dead = _dead_servers(ray, servers)
            if dead:
                failure = f"KVStore server(s) {dead} died"
                code = 1
        if failure is None:
            time.sleep(POLL_SECONDS)
    _log(f"{failure}; aborting the job")
    for server in servers:
        server.abort.remote(failure)
    deadline = time.monotonic() + timeout
    for worker in workers:
        try:
            worker.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _log(f"worker {worker.rank} did not stop within {timeout:g} s; terminating it")
            worker.process.kill()
            worker.process.wait()
    _log(f"job failed: {failure}")
    return code


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    if args.timeout is not None:
        os.environ[ENV_TIMEOUT] = repr(args.timeout)
    timeout = timeout_from_env()
    bound = bigarray_bound_from_env()
    transport = transport_from_env()
    ray = import_ray()
    namespace = f"mxlab-kv-{uuid.uuid4().hex[:12]}"
    if args.address:
        ray.init(address=args.address, namespace=namespace, log_to_driver=False, logging_level="WARNING")
        address = args.address
    else:
        # a local cluster: its server and worker processes inherit PYTHONPATH, so they import this checkout
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, os.environ.get("PYTHONPATH", "")) if p)
        ray.init(namespace=namespace, **local_ray_options(num_cpus=args.num_cpus))
        address = ray.get_runtime_context().gcs_address
    workers: list[Worker] = []
    try:
        servers = start_servers(args.num_servers, args.num_workers, namespace, timeout)
        _log(
            f"{args.num_servers} server(s) up in Ray namespace {namespace!r} at {address}; "
            f"starting {args.num_workers} worker(s): {' '.join(args.command)}"
        )
        cores = available_cores()  # the workers inherit this process's CPU affinity
        threads = share_cores(os.environ, args.num_workers, cores)
        if threads:
            chosen = ", ".join(f"{name}={value}" for name, value in threads.items())
            _log(f"{args.num_workers} worker(s) share {cores} core(s): each gets {chosen} (set them to choose)")
        for rank in range(args.num_workers):
            config = DistConfig(rank, args.num_workers, args.num_servers, namespace, address, timeout, bound, transport)
            try:
                workers.append(start_worker(rank, config, args.command, threads))
            except OSError as err:
                raise LaunchError(f"cannot start worker {rank} with {args.command!r}: {err}") from err
        code = supervise(ray, workers, servers, timeout)
    except (LaunchError, settings.ConfigError) as err:  # a worker command or a thread variable that cannot work
        _log(str(err))
        code = 2
    except KeyboardInterrupt:
        _log("interrupted; stopping the workers")
        code = 130
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait()
            for pump in worker.pumps:
                pump.join(timeout=5)
        ray.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
