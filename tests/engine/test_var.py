"""The variable queue's rules, checked directly on Var (no threads involved)."""

from framework.engine.var import Var


def make_var() -> Var:
    return Var(engine_id=0, name="x")


def test_reads_run_together_when_no_write_pending():
    var = make_var()
    assert var.append_read("r1") is True
    assert var.append_read("r2") is True
    assert var.idle() is False


def test_write_waits_for_running_reads_then_is_granted_by_the_last_one():
    var = make_var()
    var.append_read("r1")
    var.append_read("r2")
    assert var.append_write("w") is False
    assert var.complete_read() == []
    assert var.complete_read() == ["w"]
    assert var.complete_write() == []
    assert var.idle()


def test_reads_after_a_write_wait_and_are_granted_together():
    var = make_var()
    assert var.append_write("w1") is True
    assert var.append_read("r1") is False
    assert var.append_read("r2") is False
    assert var.append_write("w2") is False
    assert var.append_read("r3") is False
    assert var.complete_write() == ["r1", "r2"]  # up to the next write, not beyond
    assert var.complete_read() == []
    assert var.complete_read() == ["w2"]
    assert var.complete_write() == ["r3"]
    assert var.complete_read() == []
    assert var.idle()


def test_consecutive_writes_are_granted_one_at_a_time_and_count_versions():
    var = make_var()
    assert var.append_write("w1") is True
    assert var.append_write("w2") is False
    assert var.version == 0
    assert var.complete_write() == ["w2"]
    assert var.version == 1
    assert var.complete_write() == []
    assert var.version == 2


def test_read_queued_behind_a_waiting_write_does_not_overtake_it():
    var = make_var()
    var.append_read("r1")
    assert var.append_write("w") is False
    assert var.append_read("r2") is False  # would otherwise starve the write
    assert var.complete_read() == ["w"]
    assert var.complete_write() == ["r2"]
