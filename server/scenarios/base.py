"""What a scenario is: a named program with typed parameters that puts one mechanism on show.

The server runs every scenario in a worker process (a crash or a hang there never takes the
server down). The worker validates the parameters with the scenario's pydantic model,
subscribes to the framework's event bus, calls ``scenario.run(params, ctx)`` and streams the
events back; ``run`` returns a small JSON-safe summary (the "result" of the run). Nothing in
a scenario knows about HTTP: the same ``run`` can be called directly in a test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict


class ScenarioParams(BaseModel):
    """Base of every scenario's parameter model.

    ``strict`` refuses ``"3"`` for an integer and ``1`` for a boolean (a form that sends the
    wrong type gets a 422 naming the field, instead of a silent coercion); ``extra="forbid"``
    refuses parameters the scenario does not have (a typo is an error, not a default).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RunContext(Protocol):
    """What a running scenario may tell the server besides its events."""

    def set_graph(self, dot: str) -> None:
        """Attach the symbol graph of this run (Graphviz DOT source) for the graph panel."""

    def log(self, message: str) -> None:
        """A line of progress text shown beside the run."""


class DirectContext:
    """A :class:`RunContext` for calling a scenario outside the server (tests, tutorials)."""

    def __init__(self) -> None:
        self.graph: str | None = None
        self.lines: list[str] = []

    def set_graph(self, dot: str) -> None:
        if not isinstance(dot, str) or not dot.lstrip().startswith(("digraph", "graph", "strict")):
            raise ValueError("set_graph: expected Graphviz DOT source starting with 'digraph'")
        self.graph = dot

    def log(self, message: str) -> None:
        self.lines.append(str(message))


RunFunction = Callable[[Any, RunContext], dict[str, Any]]
TimeLimit = Callable[[Any], float | None]

#: The web UI's panels a scenario can be made to show (``Scenario.panels``); the UI suggests
#: scenarios for an empty panel from these, so no scenario name is written into the UI.
PANELS = ("timeline", "dag", "memory", "plan", "graph", "training", "kvstore")


@dataclass(frozen=True)
class Scenario:
    """A registered scenario: how the server lists it, validates its input and runs it."""

    name: str
    title: str
    description: str
    params: type[ScenarioParams]
    run: RunFunction
    #: The tutorial that explains what this scenario shows (a path under ``tutorials/``).
    tutorial: str | None = None
    #: The panels of the web UI this scenario is made to show (names from :data:`PANELS`).
    panels: tuple[str, ...] = ()
    #: Parameters of the run ``mxlab`` starts at launch when this is the default scenario
    #: (``None``: the defaults). The default run should keep the live view busy.
    launch_params: dict[str, Any] | None = None
    #: Seconds a run with the given (validated) parameters may take, when that is not the
    #: server's usual limit (``None``: the server's ``run_timeout_s``). A run that loops until
    #: it is stopped says so here, with the generous maximum it enforces itself. A module-level
    #: function, not a lambda: the scenario is pickled to its worker process.
    time_limit: TimeLimit | None = None

    def __post_init__(self) -> None:
        unknown = [panel for panel in self.panels if panel not in PANELS]
        if unknown:
            raise ValueError(f"scenario {self.name!r}: unknown panels {unknown}; panels are {list(PANELS)}")

    def time_limit_s(self, params: ScenarioParams) -> float | None:
        """The wall-clock limit of a run with ``params`` (None: the server's default)."""
        return None if self.time_limit is None else self.time_limit(params)

    def validate(self, raw: dict[str, Any] | None) -> ScenarioParams:
        """Parse raw JSON parameters (missing ones take their defaults); raises pydantic's ValidationError."""
        return self.params.model_validate(raw or {})

    def describe(self) -> dict[str, Any]:
        """The JSON the scenario list endpoint returns: metadata plus the parameters' JSON schema."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "tutorial": self.tutorial,
            "panels": list(self.panels),
            "schema": self.params.model_json_schema(),
            "defaults": self.params().model_dump(),
        }


REGISTRY: dict[str, Scenario] = {}


def register(scenario: Scenario) -> Scenario:
    """Add ``scenario`` to the registry; a second scenario with the same name is a mistake."""
    if scenario.name in REGISTRY:
        raise ValueError(f"scenario {scenario.name!r} is already registered")
    if not issubclass(scenario.params, ScenarioParams):
        raise TypeError(f"scenario {scenario.name!r}: params must subclass ScenarioParams")
    REGISTRY[scenario.name] = scenario
    return scenario


def get(name: str) -> Scenario:
    """The scenario called ``name``; an unknown name raises KeyError listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r}; known scenarios: {sorted(REGISTRY)}") from None
