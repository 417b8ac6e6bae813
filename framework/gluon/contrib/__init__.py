"""``mx.gluon.contrib``: MXNet 1.9.1's contributed Gluon layers, cells and training loop.

* :mod:`.nn`: concurrent containers, pixel shuffles, SyncBatchNorm;
* :mod:`.rnn`: convolutional recurrent cells, ``LSTMPCell``, ``VariationalDropoutCell``;
* :mod:`.cnn`: deformable convolutions;
* :mod:`.data`: ``IntervalSampler``;
* :mod:`.estimator`: the ``Estimator`` training loop and its event handlers.

See docs/gluon-contrib.md, which also says what is absent and why.
"""

from __future__ import annotations

from . import cnn, data, estimator, nn, rnn

__all__ = ["cnn", "data", "estimator", "nn", "rnn"]
