"""The distributed store's pure parts, without Ray: key layout, the job's variables, launcher arguments."""

from __future__ import annotations

import itertools

import pytest

from framework.config import ConfigError
from framework.kvstore import KVStoreError, create
from framework.kvstore.cluster import ENV_NAMESPACE, ENV_NUM_SERVERS, ENV_NUM_WORKERS, ENV_RANK, DistConfig
from framework.kvstore.launch import parse_args, share_cores
from framework.kvstore.sharding import DEFAULT_BIGARRAY_BOUND, bigarray_bound_from_env, layout, server_of

JOB_VARS = (ENV_RANK, ENV_NUM_WORKERS, ENV_NUM_SERVERS, ENV_NAMESPACE, "MXLAB_KV_TIMEOUT", "MXLAB_KV_RAY_ADDRESS")


@pytest.fixture
def no_job(monkeypatch):
    for name in (*JOB_VARS, "MXLAB_KVSTORE_BIGARRAY_BOUND", "MXNET_KVSTORE_BIGARRAY_BOUND", "MXLAB_KV_TRANSPORT"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_small_keys_go_whole_to_mxnets_server():
    # MXNet: server (key * 9973) % num_servers
    for key in (0, 1, 2, 7, 123):
        assert server_of(key, 3) == (key * 9973) % 3
        assert layout(key, 10, 3) == layout(key, 10, 3)
        [shard] = layout(key, 10, 3)
        assert (shard.server, shard.start, shard.stop, shard.part) == ((key * 9973) % 3, 0, 10, 0)
    # string keys: a hash that every process agrees on (not Python's salted hash())
    assert server_of("fc1_weight", 4) == server_of("fc1_weight", 4)
    assert {server_of(f"layer{i}_weight", 2) for i in range(20)} == {0, 1}
    with pytest.raises(ValueError, match="num_servers must be at least 1"):
        server_of(3, 0)


def test_big_arrays_are_split_evenly_over_every_server():
    assert DEFAULT_BIGARRAY_BOUND == 1_000_000
    shards = layout("w", 1_000_003, 3)
    assert [(s.server, s.part) for s in shards] == [(0, 0), (1, 1), (2, 2)]
    assert [s.size for s in shards] == [333_335, 333_334, 333_334]
    assert shards[0].start == 0 and shards[-1].stop == 1_000_003
    assert all(a.stop == b.start for a, b in itertools.pairwise(shards))
    assert len(layout("w", 999_999, 3)) == 1  # one element below the bound: whole
    assert len(layout("w", 12, 2, bigarray_bound=10)) == 2
    assert len(layout("w", 12, 1, bigarray_bound=10)) == 1
    with pytest.raises(ValueError, match="size must be non-negative"):
        layout("w", -1, 2)


def test_bigarray_bound_variables(no_job):
    assert bigarray_bound_from_env() == DEFAULT_BIGARRAY_BOUND
    no_job.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "500")
    assert bigarray_bound_from_env() == 500
    no_job.setenv("MXLAB_KVSTORE_BIGARRAY_BOUND", "20")  # MXLab's name wins
    assert bigarray_bound_from_env() == 20
    no_job.setenv("MXLAB_KVSTORE_BIGARRAY_BOUND", "lots")
    with pytest.raises(ConfigError, match="MXLAB_KVSTORE_BIGARRAY_BOUND must be an integer >= 1, got 'lots'"):
        bigarray_bound_from_env()


def test_job_variables_round_trip_and_errors(no_job):
    config = DistConfig(1, 2, 3, "job-x", "10.0.0.1:6379", 7.5, 1000)
    for name, value in config.to_env().items():
        no_job.setenv(name, value)
    assert DistConfig.from_env() == config
    no_job.setenv(ENV_RANK, "two")
    with pytest.raises(ConfigError, match="MXLAB_KV_RANK must be an integer >= 0, got 'two'"):
        DistConfig.from_env()
    no_job.setenv(ENV_RANK, "2")
    with pytest.raises(KVStoreError, match="rank 2 is out of range for 2 workers"):
        DistConfig.from_env()
    no_job.setenv(ENV_RANK, "0")
    no_job.setenv("MXLAB_KV_TIMEOUT", "-1")
    with pytest.raises(ConfigError, match="MXLAB_KV_TIMEOUT must be a number > 0, got '-1'"):
        DistConfig.from_env()
    with pytest.raises(KVStoreError, match="at least one worker and one server"):
        DistConfig(0, 1, 0, "job")


def test_the_transport_travels_with_the_job_and_is_checked(no_job):
    config = DistConfig(0, 2, 1, "job-x", None, 7.5, 1000, "ray")
    for name, value in config.to_env().items():
        no_job.setenv(name, value)
    assert DistConfig.from_env().transport == "ray"
    assert DistConfig(0, 2, 1, "job-x").transport == "auto"  # shared memory on the servers' host
    no_job.setenv("MXLAB_KV_TRANSPORT", "pigeon")
    with pytest.raises(ConfigError, match="MXLAB_KV_TRANSPORT must be one of"):
        DistConfig.from_env()
    with pytest.raises(KVStoreError, match=r"transport must be one of \('auto', 'ray'\), got 'pigeon'"):
        DistConfig(0, 2, 1, "job-x", transport="pigeon")


def test_create_outside_a_job_names_the_missing_variables(no_job):
    for name in ("dist_sync", "dist_async", "dist_device_sync", "dist"):
        with pytest.raises(KVStoreError, match=r"environment variables \['MXLAB_KV_RANK'.*framework.kvstore.launch"):
            create(name)
    with pytest.raises(KVStoreError, match="unknown store type 'dist_magic'"):
        create("dist_magic")


def test_launcher_arguments_are_checked(capsys):
    args = parse_args(["-n", "2", "-s", "1", "--timeout", "5", "python", "train.py", "--lr", "0.1"])
    assert (args.num_workers, args.num_servers, args.timeout, args.address) == (2, 1, 5.0, None)
    assert args.command == ["python", "train.py", "--lr", "0.1"]  # the worker's own flags pass through
    for argv, message in (
        (["-n", "0", "-s", "1", "python", "t.py"], "-n and -s must be at least 1"),
        (["-n", "1", "-s", "1"], "no worker command given"),
        (["-n", "1", "-s", "1", "--timeout", "0", "python"], "--timeout must be positive"),
    ):
        with pytest.raises(SystemExit):
            parse_args(argv)
        assert message in capsys.readouterr().err


def test_the_launcher_shares_the_cores_among_its_workers():
    # one core each: one engine worker and one BLAS thread (the executor's auto splits then stay off)
    assert share_cores({}, 2, 2) == {"MXLAB_CPU_WORKER_NTHREADS": "1", "MXLAB_BLAS_THREADS": "1"}
    assert share_cores({}, 3, 2) == {"MXLAB_CPU_WORKER_NTHREADS": "1", "MXLAB_BLAS_THREADS": "1"}
    # more cores than workers: the default engine workers, and BLAS threads for the rest of the share
    assert share_cores({}, 2, 8) == {"MXLAB_CPU_WORKER_NTHREADS": "2", "MXLAB_BLAS_THREADS": "2"}
    # one worker has the host to itself: nothing changes from a plain process
    assert share_cores({}, 1, 16) == {}
    assert share_cores({}, 1, 1) == {}
    assert share_cores({}, 4, 12) == {"MXLAB_CPU_WORKER_NTHREADS": "2", "MXLAB_BLAS_THREADS": "1"}
    # what the user set stays: MXLab's or MXNet's name for the engine workers, any BLAS thread variable
    assert share_cores({"MXNET_CPU_WORKER_NTHREADS": "4"}, 2, 8) == {"MXLAB_BLAS_THREADS": "1"}
    assert share_cores({"MXLAB_CPU_WORKER_NTHREADS": "1"}, 2, 8) == {"MXLAB_BLAS_THREADS": "4"}
    for blas in ("MXLAB_BLAS_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        assert share_cores({blas: "3"}, 2, 2) == {"MXLAB_CPU_WORKER_NTHREADS": "1"}
    assert share_cores({"MXLAB_CPU_WORKER_NTHREADS": "1", "OMP_NUM_THREADS": "1"}, 2, 2) == {}
    # a blank value is no value
    assert share_cores({"OMP_NUM_THREADS": " "}, 2, 2) == {"MXLAB_CPU_WORKER_NTHREADS": "1", "MXLAB_BLAS_THREADS": "1"}
    # a value that cannot be read is refused with the variable's name
    with pytest.raises(ConfigError, match="MXLAB_CPU_WORKER_NTHREADS must be"):
        share_cores({"MXLAB_CPU_WORKER_NTHREADS": "many"}, 2, 2)
