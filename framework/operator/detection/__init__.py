"""Object detection operators (MXNet's ``_contrib_`` detection family, ``mx.nd.contrib.<name>``).

Everything here reasons about boxes: overlaps (IoU), encodings of a box relative to an anchor,
and greedy non-maximum suppression, written once in ``geometry.py``. ``boxes.py`` holds the
general tools (``box_nms``, ``box_iou``, ``bipartite_matching``, ``box_encode``, ``box_decode``),
``multibox.py`` SSD's anchors, targets and detections, ``proposal.py`` Faster R-CNN's region
proposals. Importing the package registers them all.
"""

from . import boxes, multibox, proposal  # noqa: F401
