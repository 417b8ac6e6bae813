"""Which tutorial links to which scenarios: the one table the web UI and the tutorials' index follow.

Every tutorial ends with "Watch it live" links (``?scenario=<name>``) to the scenarios that
show its mechanism, and ``tutorials/README.md`` lists them in its index. The server serves
this table at ``GET /api/tutorials`` and the web UI names tutorials from it; the tests check
the tutorials' links and the index against it, and its scenarios against the registry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tutorial:
    """One numbered tutorial: where it is, what it is called, which scenarios it links to."""

    number: str
    title: str
    path: str
    scenarios: tuple[str, ...]

    def describe(self) -> dict[str, object]:
        """The JSON ``GET /api/tutorials`` returns for this tutorial."""
        return {"number": self.number, "title": self.title, "path": self.path, "scenarios": list(self.scenarios)}


TUTORIALS: tuple[Tutorial, ...] = (
    Tutorial("01", "NDArray and asynchronous execution", "tutorials/01-ndarray-and-async.md", ("engine_basics",)),
    Tutorial("02", "The dependency engine", "tutorials/02-dependency-engine.md", ("engine_basics", "rw_hazards")),
    Tutorial("03", "Storage pooling and resources", "tutorials/03-storage-and-resources.md", ("memory_planning",)),
    Tutorial("04", "Symbols and shape/type inference", "tutorials/04-symbols-and-inference.md", ("memory_planning",)),
    Tutorial(
        "05", "The executor: gradients and memory planning", "tutorials/05-executor-memory.md", ("memory_planning",)
    ),
    Tutorial("06", "Writing an operator", "tutorials/06-writing-an-operator.md", ("memory_planning",)),
    Tutorial(
        "07", "OperatorProperty and SimpleOp", "tutorials/07-operator-property-and-simpleop.md", ("memory_planning",)
    ),
    Tutorial(
        "08",
        "Custom operators: a C++ library and a Python CustomOp",
        "tutorials/08-cpp-operator-library.md",
        ("engine_basics", "extension_library"),
    ),
    Tutorial("09", "KVStore and data-parallel training", "tutorials/09-kvstore.md", ("kvstore_parallel",)),
    Tutorial("10", "Data loading and RecordIO", "tutorials/10-data-loading-and-recordio.md", ("train_mlp",)),
    Tutorial("11", "Train a network end to end", "tutorials/11-train-end-to-end.md", ("train_mlp",)),
    Tutorial("12", "Running on a GPU with CuPy", "tutorials/12-gpu-with-cupy.md", ("engine_basics",)),
    Tutorial("13", "Profiling", "tutorials/13-profiling.md", ("engine_basics",)),
    Tutorial("14", "The fused RNN operator", "tutorials/14-fused-rnn.md", ("memory_planning",)),
    Tutorial("15", "Gluon and hybridize", "tutorials/15-gluon-and-hybridize.md", ("hybridize",)),
)


def by_path(path: str) -> Tutorial:
    """The tutorial at ``path`` (``tutorials/NN-....md``); an unknown path raises KeyError naming the known ones."""
    for tutorial in TUTORIALS:
        if tutorial.path == path:
            return tutorial
    raise KeyError(f"no tutorial at {path!r}; tutorials are {[t.path for t in TUTORIALS]}")
