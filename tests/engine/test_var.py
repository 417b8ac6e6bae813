"""The variable queue's rules, checked directly on Var (no threads involved)."""

from framework.engine.var import ExceptionRecord, Var


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


def test_try_grant_grants_an_idle_variable_and_changes_nothing_on_a_busy_one():
    var = make_var()
    assert var.try_grant(False) is True  # a read
    assert var.try_grant(True) is False  # busy now: refused, nothing queued
    assert var.complete_read() == []
    assert var.idle()
    assert var.try_grant(True) is True  # a write
    assert var.append_read("r") is False  # others queue behind a granted write
    assert var.complete_write() == ["r"]
    assert var.version == 1


def test_try_grant_refuses_a_variable_carrying_an_error():
    var = make_var()
    var.exception_record = ExceptionRecord(ValueError("upstream"), "op")
    assert var.try_grant(False) is False and var.idle()
    var.exception_record.error = None  # reported: the variable is usable again
    assert var.try_grant(False) is True


def test_revoke_gives_a_grant_back():
    var = make_var()
    assert var.try_grant(True)
    var.revoke(True)
    assert var.idle() and var.version == 0  # no write happened
    assert var.try_grant(False)
    var.revoke(False)
    assert var.idle()


def test_retire_runs_the_callback_at_once_on_an_idle_variable():
    var = make_var()
    calls = []
    var.retire(lambda: calls.append("freed"))
    assert calls == ["freed"] and var.deleted


def test_retire_waits_for_the_last_pending_operation():
    var = make_var()
    calls = []
    var.append_read("r")
    assert var.append_write("w") is False
    var.retire(lambda: calls.append("freed"))
    assert var.deleted and calls == []
    assert var.complete_read() == ["w"]
    assert calls == []  # the write still holds it
    assert var.complete_write() == []
    assert calls == ["freed"]


def test_retire_if_idle_nowait_retires_only_an_idle_unlocked_variable():
    busy = make_var()
    busy.append_read("r")
    assert busy.retire_if_idle_nowait() is False and not busy.deleted
    locked = make_var()
    with locked._lock:  # as if a finalizer ran inside complete_write on this thread
        assert locked.retire_if_idle_nowait() is False
    assert not locked.deleted
    idle = make_var()
    assert idle.retire_if_idle_nowait() is True and idle.deleted
