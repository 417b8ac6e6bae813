"""Control flow: ``_foreach``, ``_while_loop`` and ``_cond``, operators whose bodies are graphs.

A control-flow node holds its body (and, for ``_while_loop`` and ``_cond``, its condition and
branches) as :class:`~.subgraph.Subgraph` objects in its parameters, as MXNet keeps them in a
node's ``subgraphs``. The node's inputs are the values the body reads from outside; location
parameters (``in_data_locs``, ``func_input_locs``, ...) say which input feeds which body input.
Running a body needs the graph executor, which lives a layer above the operators: the executor
installs a :class:`~.subgraph.SubgraphRunner` here when it is imported (see
docs/control-flow.md). Gradients re-run the loop forwards to recover each iteration's inputs,
then differentiate the body iteration by iteration in reverse.
"""

from __future__ import annotations

from . import cond, foreach, while_loop
from .subgraph import Subgraph, SubgraphParams, SubgraphRunner, install_runner

__all__ = ["Subgraph", "SubgraphParams", "SubgraphRunner", "cond", "foreach", "install_runner", "while_loop"]
