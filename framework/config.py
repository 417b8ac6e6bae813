"""Every environment variable MXLab reads: one table, one parser.

A setting read in six places, each with its own idea of what "true" or "empty" means, drifts:
one module accepts ``off``, the next treats it as on. So every variable is a row of
:data:`SETTINGS` (name, kind, default, meaning, and the MXNet 1.x name where MXNet has the same
setting), and the code reads it only through :func:`get`, at the moment it needs the value
(tests and scripts may change the environment between two reads). The README's Configuration
table is printed from the same rows (``python -m framework.tools.config_table``), and a test
keeps the two equal.

The parsing rules, one for each kind of value:

* an empty or blank value is the same as an unset variable (the default applies);
* integers and numbers are written in decimal and checked against their range;
* a choice is one of the listed words, case-sensitive as in MXNet (``Round``, ``NaiveEngine``);
* a boolean is one of ``1 true yes on`` or ``0 false no off``, in any letter case;
* anything else is a :class:`ConfigError` naming the variable, what it accepts and what it got.
  A malformed value is never replaced by the default.

MXNet aliases: a script written for MXNet 1.x may set ``MXNET_ENGINE_TYPE`` and friends. Where
MXLab has the same setting, the MXNet name is read when the MXLab name is not set (the MXLab
name wins when both are), parsed with MXNet's meaning (``MXNET_BACKWARD_DO_MIRROR`` is only 0
or 1). MXNet names that MXLab has no setting for are ignored, as MXNet ignores unknown ones.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import MXLabError


class ConfigError(MXLabError, ValueError):
    """An environment variable holds a value its setting does not accept."""


# ----------------------------------------------------------------------------- kinds of value
class Kind(Protocol):
    """How one kind of setting turns the variable's text into a value."""

    def parse(self, text: str) -> Any:
        """The value of ``text`` (already stripped, never empty); ValueError if malformed."""

    def describe(self) -> str:
        """What the kind accepts, as the error message and the README say it."""


@dataclass(frozen=True)
class Integer:
    """A decimal integer within ``[minimum, maximum]`` (either bound may be absent)."""

    minimum: int | None = None
    maximum: int | None = None

    def parse(self, text: str) -> int:
        value = int(text, 10)
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise ValueError(text)
        return value

    def describe(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f"an integer from {self.minimum} to {self.maximum}"
        if self.minimum is not None:
            return f"an integer >= {self.minimum}"
        return "an integer"


@dataclass(frozen=True)
class Number:
    """A finite decimal number greater than ``above``."""

    above: float = 0.0

    def parse(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value <= self.above:
            raise ValueError(text)
        return value

    def describe(self) -> str:
        return f"a number > {self.above:g}"


@dataclass(frozen=True)
class Choice:
    """One of ``values``, spelled exactly (MXNet's names are case-sensitive)."""

    values: tuple[str, ...]

    def parse(self, text: str) -> str:
        if text not in self.values:
            raise ValueError(text)
        return text

    def describe(self) -> str:
        return "one of " + ", ".join(self.values)


#: The words a boolean setting accepts (compared in lower case).
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Boolean:
    """On or off: ``1 true yes on`` / ``0 false no off``, any letter case."""

    def parse(self, text: str) -> bool:
        word = text.lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise ValueError(text)

    def describe(self) -> str:
        return "a boolean (1/0, true/false, yes/no, on/off)"


@dataclass(frozen=True)
class Text:
    """Any non-empty text (surrounding blanks removed)."""

    def parse(self, text: str) -> str:
        return text

    def describe(self) -> str:
        return "text"


# ----------------------------------------------------------------------------- the table
#: The engine types ``MXLAB_ENGINE_TYPE`` accepts; :mod:`framework.engine` maps each to its class.
ENGINE_TYPE_NAMES = ("NaiveEngine", "ThreadedEngine", "ThreadedEnginePerDevice")
#: The pool strategies of :mod:`framework.storage`, by the names MXNet's ``MXNET_GPU_MEM_POOL_TYPE`` uses.
POOL_TYPES = ("Round", "Naive", "Unpooled")
#: The largest accepted ``MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF``: 2**48 bytes; more is certainly a typo.
MAX_ROUND_CUTOFF = 48


@dataclass(frozen=True)
class Setting:
    """One environment variable: what it accepts, its default, what it does, MXNet's name for it."""

    name: str
    kind: Kind
    default: Any
    meaning: str
    #: The MXNet 1.x variable with the same effect, read when ``name`` is unset.
    mxnet: str | None = None
    #: What the MXNet variable accepts, when MXNet's setting takes fewer values than MXLab's.
    mxnet_kind: Kind | None = None
    #: How the README shows a default that is not a plain value (None: from ``default``).
    shown_default: str | None = None

    def sources(self) -> list[tuple[str, Kind]]:
        """The variables to look at, in order of precedence, each with the kind it is parsed as."""
        names = [(self.name, self.kind)]
        if self.mxnet is not None:
            names.append((self.mxnet, self.mxnet_kind or self.kind))
        return names

    def default_text(self) -> str:
        """The default as the README shows it."""
        if self.shown_default is not None:
            return self.shown_default
        if isinstance(self.default, bool):
            return "1" if self.default else "0"
        if isinstance(self.default, str):
            return f"`{self.default}`"
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)


_THREADS = Integer(minimum=1)

SETTINGS: dict[str, Setting] = {
    row.name: row
    for row in (
        # ------------------------------------------------------------------ the engine
        Setting(
            "MXLAB_ENGINE_TYPE",
            Choice(ENGINE_TYPE_NAMES),
            "ThreadedEnginePerDevice",
            "`NaiveEngine` (synchronous, for debugging), `ThreadedEngine` (one shared pool) or "
            "`ThreadedEnginePerDevice` (pools per device)",
            mxnet="MXNET_ENGINE_TYPE",
        ),
        Setting(
            "MXLAB_ENGINE_WAIT_TIMEOUT",
            Integer(minimum=0),
            0,
            "seconds a wait (and a `NaiveEngine` asynchronous push) may take before `EngineTimeoutError` "
            "names the pending operations; 0 waits forever",
        ),
        Setting(
            "MXLAB_ENGINE_INLINE_MAX_ELEMENTS",
            Integer(minimum=0),
            4096,
            "a CPU imperative operation whose arrays hold at most this many elements in all runs in the "
            "calling thread when nothing it touches is pending (worker `inline`); 0 always uses the workers",
        ),
        Setting(
            "MXLAB_CPU_WORKER_NTHREADS",
            _THREADS,
            2,
            "workers per CPU device (the shared pool's size for `ThreadedEngine`)",
            mxnet="MXNET_CPU_WORKER_NTHREADS",
        ),
        Setting("MXLAB_CPU_COPY_NTHREADS", _THREADS, 1, "copy workers per CPU device"),
        Setting(
            "MXLAB_BLAS_THREADS",
            Integer(minimum=0),
            0,
            "threads of the BLAS NumPy calls into, set when the process-wide engine starts; 0 leaves the BLAS "
            "as found (OpenBLAS: one per core). 1 avoids oversubscription on a busy machine",
        ),
        Setting(
            "MXLAB_CPU_PRIORITY_NTHREADS",
            _THREADS,
            2,
            "workers of the shared CPU-prioritized pool",
            mxnet="MXNET_CPU_PRIORITY_NTHREADS",
        ),
        Setting(
            "MXLAB_GPU_WORKER_NTHREADS",
            _THREADS,
            2,
            "compute workers per GPU, each with its own stream",
            mxnet="MXNET_GPU_WORKER_NTHREADS",
        ),
        Setting("MXLAB_GPU_COPY_NTHREADS", _THREADS, 2, "copy workers per GPU", mxnet="MXNET_GPU_COPY_NTHREADS"),
        Setting("MXLAB_GPU_PRIORITY_NTHREADS", _THREADS, 2, "GPU-prioritized workers per GPU"),
        # ------------------------------------------------------------------ storage
        Setting(
            "MXLAB_MEM_POOL_TYPE",
            Choice(POOL_TYPES),
            "Round",
            "pool strategy for every device: `Round`, `Naive` or `Unpooled`",
        ),
        Setting(
            "MXLAB_CPU_MEM_POOL_TYPE",
            Choice(POOL_TYPES),
            None,
            "pool strategy for CPU contexts, overriding `MXLAB_MEM_POOL_TYPE`",
            mxnet="MXNET_CPU_MEM_POOL_TYPE",
            shown_default="(unset)",
        ),
        Setting(
            "MXLAB_GPU_MEM_POOL_TYPE",
            Choice(POOL_TYPES),
            None,
            "pool strategy for GPU contexts, overriding `MXLAB_MEM_POOL_TYPE`",
            mxnet="MXNET_GPU_MEM_POOL_TYPE",
            shown_default="(unset)",
        ),
        Setting(
            "MXLAB_MEM_POOL_ROUND_LINEAR_CUTOFF",
            Integer(minimum=0, maximum=MAX_ROUND_CUTOFF),
            24,
            "`Round`: powers of two up to 2^cutoff bytes, multiples of the large round size above",
            mxnet="MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF",
        ),
        Setting(
            "MXLAB_MEM_POOL_PAGE_SIZE",
            Integer(minimum=1),
            4096,
            "`Naive`: small requests round to this many bytes",
            mxnet="MXNET_GPU_MEM_POOL_PAGE_SIZE",
        ),
        Setting(
            "MXLAB_MEM_LARGE_ALLOC_ROUND_SIZE",
            Integer(minimum=1),
            2 << 20,
            "large requests round to a multiple of this many bytes",
            mxnet="MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE",
        ),
        # ------------------------------------------------------------------ resources
        Setting(
            "MXLAB_CPU_TEMP_COPY",
            Integer(minimum=1),
            4,
            "temporary-space copies per CPU device, handed out round-robin",
            mxnet="MXNET_CPU_TEMP_COPY",
        ),
        Setting(
            "MXLAB_GPU_TEMP_COPY",
            Integer(minimum=1),
            1,
            "temporary-space copies per GPU, handed out round-robin",
            mxnet="MXNET_GPU_TEMP_COPY",
        ),
        Setting(
            "MXLAB_SEED", Integer(minimum=0), 0, "default seed of the random generators before any `mx.random.seed`"
        ),
        # ------------------------------------------------------------------ the executor
        Setting(
            "MXLAB_BACKWARD_DO_MIRROR",
            Choice(("0", "1", "segment")),
            "0",
            "recompute cheap activations in backward (`1`), or checkpoint sqrt(N) segments (`segment`)",
            mxnet="MXNET_BACKWARD_DO_MIRROR",
            mxnet_kind=Choice(("0", "1")),
        ),
        Setting(
            "MXLAB_EXEC_BULK_EXEC_TRAIN",
            Boolean(),
            True,
            "an executor that computes gradients pushes chains of nodes as bulk segments (0: one engine "
            "operation per node)",
            mxnet="MXNET_EXEC_BULK_EXEC_TRAIN",
        ),
        Setting(
            "MXLAB_EXEC_BULK_EXEC_INFERENCE",
            Boolean(),
            True,
            "an executor without gradients bulks its whole graph, one segment per independent branch "
            "(0: one engine operation per node)",
            mxnet="MXNET_EXEC_BULK_EXEC_INFERENCE",
        ),
        Setting(
            "MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN",
            Integer(minimum=0),
            15,
            "nodes per bulk segment of an executor that computes gradients (0 or 1 turns bulking off)",
            mxnet="MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN",
        ),
        Setting(
            "MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD",
            Integer(minimum=0),
            None,
            "the same for the forward pass alone",
            mxnet="MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD",
            shown_default="(`..._MAX_NODE_TRAIN`)",
        ),
        Setting(
            "MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD",
            Integer(minimum=0),
            None,
            "the same for the backward pass alone",
            mxnet="MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD",
            shown_default="(`..._MAX_NODE_TRAIN`)",
        ),
        Setting(
            "MXLAB_EXEC_INPLACE_GRAD_SUM_CAP",
            Integer(minimum=0),
            8,
            "a gradient with at least this many contributions is summed by a chain of in-place `_grad_add` "
            "(one running sum alive), fewer by one `ElementWiseSum`",
            mxnet="MXNET_EXEC_INPLACE_GRAD_SUM_CAP",
        ),
        Setting(
            "MXLAB_EXEC_ENABLE_INPLACE",
            Boolean(),
            True,
            "the memory planner lets an output reuse its input's memory",
            mxnet="MXNET_EXEC_ENABLE_INPLACE",
        ),
        Setting(
            "MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS",
            Choice(("auto", "0", "1")),
            "auto",
            "a training executor computes the weight gradients of large Convolution/FullyConnected layers in "
            "nodes of their own, which the engine runs beside the rest of the backward pass (`1`); `auto`: on a "
            "CPU with 2 engine workers and BLAS on at most half the cores, when it plans no more memory",
        ),
        Setting(
            "MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS",
            Choice(("auto", "0", "1")),
            "auto",
            "an executor shares a large FullyConnected forward product, cut into blocks of its output, with a "
            "helper operation on the second CPU worker (`1`); `auto`: on a CPU with 2 engine workers and BLAS on at "
            "most half the cores",
        ),
        Setting(
            "MXLAB_EXEC_MATCH_RANGE",
            Integer(minimum=1),
            16,
            "the memory planner reuses a free block for sizes within this factor",
            mxnet="NNVM_EXEC_MATCH_RANGE",
        ),
        Setting(
            "MXLAB_MEMORY_PLANNER",
            Choice(("mxnet", "greedy_by_size")),
            "mxnet",
            "the executor's memory planner: MXNet's free-list walk (`mxnet`) or greedy by size over lifetimes",
        ),
        # ------------------------------------------------------------------ custom operators
        Setting(
            "MXLAB_CUSTOM_OP_NUM_THREADS",
            Integer(minimum=1),
            16,
            "most threads running Python custom operators at once",
            mxnet="MXNET_CUSTOM_OP_NUM_THREADS",
        ),
        # ------------------------------------------------------------------ the profiler
        Setting(
            "MXLAB_PROFILER_AUTOSTART",
            Boolean(),
            False,
            "the profiler runs from import on and writes `profile.json` (or `set_config`'s file) at exit",
            mxnet="MXNET_PROFILER_AUTOSTART",
        ),
        # ------------------------------------------------------------------ Module
        Setting(
            "MXLAB_PROGRESS",
            Boolean(),
            None,
            "turns `Module.fit`'s progress bar on or off (unset: shown on a terminal only)",
            shown_default="(terminal only)",
        ),
        Setting(
            "MXLAB_UPDATE_ON_KVSTORE",
            Boolean(),
            True,
            "`Module` and Gluon's `Trainer` run the optimizer inside the KVStore when the store can "
            "(0: on each device)",
            mxnet="MXNET_UPDATE_ON_KVSTORE",
        ),
        Setting(
            "MXLAB_OPTIMIZER_AGGREGATION_SIZE",
            Integer(minimum=0),
            64,
            "at most this many weights per fused SGD update (`multi_sgd[_mom]_update`), read when an "
            "`SGD` is made (its `aggregate_num`); 0: one `sgd[_mom]_update` per weight",
            mxnet="MXNET_OPTIMIZER_AGGREGATION_SIZE",
        ),
        # ------------------------------------------------------------------ KVStore
        Setting(
            "MXLAB_KVSTORE_BIGARRAY_BOUND",
            Integer(minimum=1),
            1_000_000,
            "a distributed store splits arrays of at least this many elements over its servers",
            mxnet="MXNET_KVSTORE_BIGARRAY_BOUND",
        ),
        Setting(
            "MXLAB_KV_TIMEOUT",
            Number(above=0.0),
            60.0,
            "seconds a distributed store waits for another worker or a server",
        ),
        Setting(
            "MXLAB_KV_TRANSPORT",
            Choice(("auto", "ray")),
            "auto",
            "how dist_sync workers move arrays: auto = shared memory with servers on their host, ray = in the messages",
        ),
        Setting(
            "MXLAB_KV_RANK",
            Integer(minimum=0),
            None,
            "set by the launcher: this worker's index, 0 to workers - 1",
            shown_default="(launcher)",
        ),
        Setting(
            "MXLAB_KV_NUM_WORKERS",
            Integer(minimum=1),
            None,
            "set by the launcher: how many workers push to the store",
            shown_default="(launcher)",
        ),
        Setting(
            "MXLAB_KV_NUM_SERVERS",
            Integer(minimum=1),
            None,
            "set by the launcher: how many server actors hold the keys",
            shown_default="(launcher)",
        ),
        Setting(
            "MXLAB_KV_NAMESPACE",
            Text(),
            None,
            "set by the launcher: the job's Ray namespace, where the servers are found by name",
            shown_default="(launcher)",
        ),
        Setting(
            "MXLAB_KV_RAY_ADDRESS",
            Text(),
            None,
            "set by the launcher: the Ray cluster to connect to (unset: start or find a local one)",
            shown_default="(launcher)",
        ),
        # ------------------------------------------------------------------ data
        Setting(
            "MXLAB_DATA_DIR",
            Text(),
            None,
            "where `mx.base.data_dir()` points: local data sets and model files (nothing is downloaded)",
            mxnet="MXNET_HOME",
            shown_default="`~/.mxnet`",
        ),
        # ------------------------------------------------------------------ exercises
        Setting(
            "MXLAB_HOME",
            Text(),
            None,
            "where the exercises keep the learner's hint levels and check status",
            shown_default="`~/.mxlab`",
        ),
        # ------------------------------------------------------------------ the server
        Setting(
            "MXLAB_TOKEN",
            Text(),
            None,
            "the secret of `mxlab serve`/`mxlab attach` when `--token` is not given (kept out of `ps`)",
            shown_default="(unset)",
        ),
    )
}


# ----------------------------------------------------------------------------- reading
def setting(name: str) -> Setting:
    """The row of ``name``; reading a variable that is not in the table is a bug in the caller."""
    row = SETTINGS.get(name)
    if row is None:
        raise ConfigError(f"{name} is not an MXLab setting; add it to framework.config.SETTINGS before reading it")
    return row


def parse(variable: str, kind: Kind, raw: str) -> Any:
    """``raw`` read as ``kind``, or a ConfigError naming ``variable``."""
    try:
        return kind.parse(raw.strip())
    except ValueError:
        raise ConfigError(f"environment variable {variable} must be {kind.describe()}, got {raw!r}") from None


def get(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The current value of setting ``name``: the MXLab variable, else MXNet's, else the default.

    ``environ`` reads another environment than this process's (a child's, before it starts).
    """
    row = setting(name)
    environ = os.environ if environ is None else environ
    for variable, kind in row.sources():
        raw = environ.get(variable)
        if raw is not None and raw.strip():
            label = variable if variable == row.name else f"{variable} (MXNet's name for {row.name})"
            return parse(label, kind, raw)
    return row.default


def is_set(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether setting ``name`` has a non-blank value (under its own or MXNet's name) in ``environ``."""
    environ = os.environ if environ is None else environ
    return any((environ.get(variable) or "").strip() for variable, _ in setting(name).sources())


def markdown_table() -> str:
    """The README's Configuration table, one row per setting, in the table's order."""
    lines = ["| variable | default | accepts | MXNet 1.x name | meaning |", "| --- | --- | --- | --- | --- |"]
    for row in SETTINGS.values():
        mxnet = f"`{row.mxnet}`" if row.mxnet else ""
        lines.append(f"| `{row.name}` | {row.default_text()} | {row.kind.describe()} | {mxnet} | {row.meaning} |")
    return "\n".join(lines)


__all__ = [
    "ENGINE_TYPE_NAMES",
    "MAX_ROUND_CUTOFF",
    "POOL_TYPES",
    "SETTINGS",
    "Boolean",
    "Choice",
    "ConfigError",
    "Integer",
    "Number",
    "Setting",
    "Text",
    "get",
    "is_set",
    "markdown_table",
    "parse",
    "setting",
]
