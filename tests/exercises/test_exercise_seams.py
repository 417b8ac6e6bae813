"""The two framework seams the exercises plug into: an engine's variable class, the planner's free list."""

from __future__ import annotations

import pytest

import framework as mx
from framework.base import EngineError
from framework.engine import Var, create
from framework.executor import IndexedGraph, infer_shapes, infer_types
from framework.executor.plan_memory import plan_memory


class CountingVar(Var):
    """A Var that counts its grants, to see that the engine really used the given class."""

    __slots__ = ("grants",)

    def __init__(self, engine_id, name=None):
        super().__init__(engine_id, name)
        self.grants = 0

    def append_read(self, op):
        self.grants += 1
        return super().append_read(op)


def test_an_engine_creates_its_variables_from_var_class():
    engine = create("ThreadedEngine", 2, var_class=CountingVar)
    try:
        x = engine.new_variable("x")
        assert type(x) is CountingVar
        seen = []
        engine.push_sync(lambda rc: seen.append(1), mx.cpu(), const_vars=[x])
        engine.wait_for_all()
        assert seen == [1] and x.grants == 1
        other = create("ThreadedEngine", 2)  # the default class is untouched
        try:
            plain = other.new_variable("y")
            assert type(plain) is Var
            with pytest.raises(EngineError, match="expected engine variables"):
                engine.push_sync(lambda rc: None, mx.cpu(), const_vars=[plain])
        finally:
            other.stop()
    finally:
        engine.stop()


def test_var_class_must_be_a_class():
    with pytest.raises(EngineError, match="var_class must be a class"):
        create("NaiveEngine", var_class="Var")


def test_plan_memory_builds_its_free_list_from_the_given_factory():
    x = mx.sym.Variable("x")
    net = mx.sym.FullyConnected(
        mx.sym.FullyConnected(mx.sym.FullyConnected(x, num_hidden=8), num_hidden=8), num_hidden=8
    )
    heads = net.outputs
    graph = IndexedGraph(heads)
    shapes, types = infer_shapes(heads, {"x": (2, 4)}), infer_types(heads, {"x": "float32"})
    keys = [(graph.entry(e).node.id, graph.entry(e).index) for e in range(graph.num_entries)]
    entry_shapes, entry_types = [shapes[k] for k in keys], [types[k] for k in keys]

    made = []

    class NeverShares:
        def __init__(self, match_range):
            made.append(match_range)

        def add(self, nbytes, sid):
            pass

        def take(self, nbytes, usable):
            return None

    shared = plan_memory(graph, entry_shapes, entry_types)
    alone = plan_memory(graph, entry_shapes, entry_types, free_list=NeverShares)
    assert made == [16]
    assert alone.num_blocks == 3 and shared.num_blocks == 2
