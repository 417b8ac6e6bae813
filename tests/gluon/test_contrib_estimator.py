"""gluon.contrib.estimator: the fit/evaluate loops, the default and given handlers, and their errors."""

from __future__ import annotations

import logging
import os
import warnings

import numpy as np
import pytest

import framework as mx
from framework.gluon import BlockError
from framework.gluon.contrib import estimator as est
from framework.gluon.contrib.data import IntervalSampler
from framework.gluon.data import ArrayDataset, DataError, DataLoader


def _data(n: int = 64, batch_size: int = 16, seed: int = 0) -> DataLoader:
    """Two linearly separable classes in 3-d."""
    x = np.random.RandomState(seed).randn(n, 3).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32)
    return DataLoader(ArrayDataset(x, y), batch_size=batch_size)


def _estimator(lr: float = 0.5, hybridize: bool = False, **kwargs) -> est.Estimator:
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    estimator = est.Estimator(net, mx.gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)
    estimator.logger.setLevel(logging.WARNING)  # keep test output quiet; LoggingHandler is tested apart
    return estimator


class _Recorder(est.TrainBegin, est.EpochBegin, est.BatchEnd, est.EpochEnd, est.TrainEnd):
    """Counts the events it sees; stops at batch ``stop_at`` when given."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.events: list[str] = []
        self.stop_at = stop_at
        self.batches = 0

    def train_begin(self, estimator, *args, **kwargs):
        self.events.append("train_begin")

    def epoch_begin(self, estimator, *args, **kwargs):
        self.events.append("epoch_begin")

    def batch_end(self, estimator, *args, **kwargs):
        self.batches += 1
        assert set(kwargs) == {"batch", "pred", "label", "loss"}
        return self.batches == self.stop_at

    def epoch_end(self, estimator, *args, **kwargs):
        self.events.append("epoch_end")
        return False

    def train_end(self, estimator, *args, **kwargs):
        self.events.append("train_end")


def test_fit_trains_and_validation_metrics_reach_a_wide_margin() -> None:
    estimator = _estimator()
    estimator.fit(_data(), val_data=_data(seed=1), epochs=5)
    names = [m.name for m in estimator.train_metrics + estimator.val_metrics]
    assert names == [
        "training accuracy",
        "training softmaxcrossentropyloss",
        "validation accuracy",
        "validation softmaxcrossentropyloss",
    ]
    accuracy = dict(m.get() for m in estimator.val_metrics)["validation accuracy"]
    assert accuracy > 0.8


def test_evaluate_matches_accuracy_counted_by_hand() -> None:
    estimator = _estimator()
    val = _data(seed=2)
    estimator.evaluate(val)
    correct = total = 0
    for x, y in val:
        predicted = estimator.net(x).asnumpy().argmax(axis=1)
        correct += int((predicted == y.asnumpy()).sum())
        total += len(predicted)
    assert dict(m.get() for m in estimator.val_metrics)["validation accuracy"] == pytest.approx(correct / total)


def test_epochs_and_batches_bound_the_loop_and_a_handler_can_stop_it() -> None:
    recorder = _Recorder()
    _estimator().fit(_data(), epochs=2, event_handlers=[recorder])
    assert recorder.events == ["train_begin", "epoch_begin", "epoch_end", "epoch_begin", "epoch_end", "train_end"]
    assert recorder.batches == 8
    recorder = _Recorder()
    _estimator().fit(_data(), batches=6, event_handlers=recorder)
    assert recorder.batches == 6  # 4 batches per epoch: the second epoch stops after 2
    assert recorder.events.count("epoch_end") == 2
    # as in MXNet, True from batch_end ends the epoch; training ends when an epoch_end says so
    recorder = _Recorder(stop_at=3)
    _estimator().fit(_data(), epochs=2, event_handlers=[recorder])
    assert recorder.batches == 3 + 4


def test_default_handlers_run_in_priority_order(tmp_path) -> None:
    estimator = _estimator()
    estimator.max_epoch = 1
    handlers = estimator._prepare_default_handlers(_data(), [est.CheckpointHandler(str(tmp_path))])
    kinds = [type(h).__name__ for h in handlers]
    assert kinds == [
        "GradientUpdateHandler",
        "MetricHandler",
        "ValidationHandler",
        "CheckpointHandler",
        "StoppingHandler",
        "LoggingHandler",
    ]


def test_gradient_update_changes_parameters_and_default_metrics_follow_the_loss() -> None:
    estimator = _estimator()
    before = estimator.net.weight.data().asnumpy().copy()
    estimator.fit(_data(), batches=1)
    assert not np.allclose(before, estimator.net.weight.data().asnumpy())
    net = mx.gluon.nn.Dense(1)
    net.initialize()
    with pytest.warns(UserWarning, match="no trainer given"):
        regression = est.Estimator(net, mx.gluon.loss.L2Loss())
    assert [m.name for m in regression.train_metrics] == ["training mse", "training l2loss"]
    assert regression.trainer.learning_rate == pytest.approx(0.001)


def test_fit_and_constructor_errors_name_the_problem() -> None:
    estimator = _estimator()
    with pytest.raises(BlockError, match="exactly one of epochs and batches"):
        estimator.fit(_data(), epochs=1, batches=2)
    with pytest.raises(BlockError, match="exactly one of epochs and batches"):
        estimator.fit(_data())
    with pytest.raises(BlockError, match="train_data must be a mx.gluon.data.DataLoader, got list"):
        estimator.fit([(mx.nd.ones((2, 3)), mx.nd.ones((2,)))], epochs=1)
    with pytest.raises(BlockError, match="event handlers must subclass"):
        estimator.fit(_data(), epochs=1, event_handlers=[object()])
    with pytest.raises(BlockError, match="epochs must be a positive int"):
        estimator.fit(_data(), epochs=0)
    net = mx.gluon.nn.Dense(2)
    with pytest.raises(BlockError, match="loss must be a mx.gluon.loss.Loss, got function"):
        est.Estimator(net, lambda a, b: a)
    with pytest.raises(BlockError, match="metrics must be mx.metric.EvalMetric"):
        est.Estimator(net, mx.gluon.loss.L1Loss(), train_metrics=["acc"])
    with pytest.raises(BlockError, match="trainer must be a mx.gluon.Trainer"):
        est.Estimator(net, mx.gluon.loss.L1Loss(), trainer="sgd")


def test_validation_handler_batch_period() -> None:
    calls = []
    handler = est.ValidationHandler(
        _data(), lambda val_data, event_handlers: calls.append(1), epoch_period=None, batch_period=3
    )
    _estimator().fit(_data(), batches=7, event_handlers=[handler])
    assert len(calls) == 2


def test_logging_handler_logs_batches_and_rejects_bad_interval(caplog) -> None:
    estimator = _estimator()
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    estimator.logger.setLevel(logging.INFO)
    estimator.logger.handlers = [Collect()]
    estimator.fit(
        _data(), epochs=1, event_handlers=[est.LoggingHandler(log_interval=2, metrics=estimator.train_metrics)]
    )
    batch_lines = [r for r in records if "[Batch" in r]
    assert len(batch_lines) == 2 and "training accuracy" in batch_lines[0]
    assert any(r.startswith("Training begin") for r in records) and any("Train finished" in r for r in records)
    with pytest.raises(BlockError, match="log_interval must be 'epoch' or a positive int"):
        est.LoggingHandler(log_interval=0)


def test_checkpoint_handler_keeps_the_last_checkpoints_the_best_and_resumes(tmp_path) -> None:
    estimator = _estimator(hybridize=True)
    loss_metric = estimator.train_metrics[1]
    handler = est.CheckpointHandler(str(tmp_path), "m", monitor=loss_metric, save_best=True, max_checkpoints=2)
    estimator.fit(_data(), epochs=3, event_handlers=[handler])
    files = sorted(os.listdir(tmp_path))
    assert "m-epoch3batch12.params" in files and "m-epoch3batch12.states" in files
    assert "m-epoch2batch8.params" in files and "m-epoch1batch4.params" not in files  # only the last two
    assert "m-best.params" in files and "m-epoch3batch12-symbol.json" in files  # hybridized: the graph too

    resumed = _estimator()
    recorder = _Recorder()
    handler = est.CheckpointHandler(str(tmp_path), "m", resume_from_checkpoint=True)
    resumed.fit(_data(), epochs=5, event_handlers=[handler, recorder])
    assert recorder.events.count("epoch_end") == 2  # 3 of the 5 epochs were in the checkpoint
    np.testing.assert_allclose(
        mx.nd.load(str(tmp_path / "m-epoch5batch20.params"))["weight"].asnumpy(), resumed.net.weight.data().asnumpy()
    )
    with pytest.raises(BlockError, match="already trained 5 epochs, fit asked for 4"):
        _estimator().fit(
            _data(), epochs=4, event_handlers=[est.CheckpointHandler(str(tmp_path), "m", resume_from_checkpoint=True)]
        )
    with pytest.raises(BlockError, match="save_best=True needs a monitor"):
        est.CheckpointHandler(str(tmp_path), save_best=True)


def test_early_stopping_stops_when_the_monitor_stalls() -> None:
    estimator = _estimator(lr=0.0)  # nothing learns: the loss never improves after the first epoch
    recorder = _Recorder()
    stopper = est.EarlyStoppingHandler(monitor=estimator.train_metrics[1], patience=2)
    estimator.fit(_data(), epochs=20, event_handlers=[stopper, recorder])
    assert recorder.events.count("epoch_end") == 3 and stopper.stopped_epoch == 2
    assert stopper.monitor_op is np.less  # 'auto' on a loss: lower is better
    accuracy = est.EarlyStoppingHandler(monitor=estimator.train_metrics[0])
    assert accuracy.monitor_op is np.greater
    with pytest.raises(BlockError, match="monitor must be an EvalMetric"):
        est.EarlyStoppingHandler(monitor="loss")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="mode 'sideways' is unknown"):
            est.EarlyStoppingHandler(monitor=estimator.train_metrics[0], mode="sideways")


# ----------------------------------------------------------------------------- IntervalSampler
def test_interval_sampler_orders_and_errors() -> None:
    assert list(IntervalSampler(10, 4)) == [0, 4, 8, 1, 5, 9, 2, 6, 3, 7]
    assert list(IntervalSampler(10, 4, rollover=False)) == [0, 4, 8]
    assert len(IntervalSampler(10, 4, rollover=False)) == 10  # MXNet's length: the sequence's
    batches = list(DataLoader(ArrayDataset(np.arange(6)), sampler=IntervalSampler(6, 2), batch_size=3))
    assert [b.asnumpy().tolist() for b in batches] == [[0, 2, 4], [1, 3, 5]]
    with pytest.raises(DataError, match="interval 5 must be smaller than or equal to length 3"):
        IntervalSampler(3, 5)
    with pytest.raises(DataError, match="interval must be a positive int"):
        IntervalSampler(3, 0)
