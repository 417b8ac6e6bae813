"""Neural-network operators, one file per family. Importing the package registers them all."""

from . import activation, batch_norm, dropout, embedding, fully_connected, loss_output, lrn, softmax  # noqa: F401, I001
from . import convolution, deconvolution, pooling  # noqa: F401
from . import batch_norm_variants  # noqa: F401  (issue 17: SyncBatchNorm, BatchNormWithReLU)
