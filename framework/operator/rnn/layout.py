"""Where each weight and bias lives in the fused RNN operator's one packed parameter vector.

MXNet's ``RNN`` takes all its trainable parameters as one 1-D array, so weights trained in
MXNet 1.9.1 (or by Gluon's ``rnn.LSTM``, which packs its parameters the same way) load here
unchanged only if the order is exactly MXNet's:

1. every *weight* first: for each layer, for each direction (left-to-right ``l``, then
   right-to-left ``r``): the input-to-hidden weight ``i2h`` ``(gates * H, layer input)``, the
   hidden-to-hidden weight ``h2h`` ``(gates * H, H or P)`` and, for an LSTM with a projection
   (LSTMP), the projection ``h2r`` ``(P, H)``;
2. then every *bias*, in the same layer/direction order: ``i2h`` then ``h2h``, ``(gates * H,)``.

Inside a weight the gates are stacked along the rows in MXNet's order: LSTM ``i, f, g, o``,
GRU ``r, z, n``. The layer input is the data's feature size for layer 0 and ``directions *
(P or H)`` (both directions' outputs side by side) above it. :func:`packed_slices` lists every
piece with its offset and shape, named as Gluon names its parameters (``l0_i2h_weight``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The gates of each mode, in stacking order, by the letter MXNet's per-gate names use
#: (``l0_i2h_f_weight``); the plain RNNs have one unnamed gate.
GATE_LETTERS = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("i", "f", "c", "o"), "gru": ("r", "z", "o")}
#: Gates per mode: how many ``H``-row blocks each weight and bias stacks.
GATES = {mode: len(letters) for mode, letters in GATE_LETTERS.items()}


@dataclass(frozen=True)
class RNNShape:
    """The sizes that fix the packed layout (and every state's shape) of one fused RNN."""

    mode: str
    num_layers: int
    state_size: int
    input_size: int
    bidirectional: bool = False
    projection_size: int | None = None

    @property
    def gates(self) -> int:
        return GATES[self.mode]

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def output_size(self) -> int:
        """Width of one direction's output and hidden state: the projection size if any."""
        return self.projection_size or self.state_size

    def layer_input_size(self, layer: int) -> int:
        return self.input_size if layer == 0 else self.directions * self.output_size


@dataclass(frozen=True)
class ParamSlice:
    """One weight or bias inside the packed vector: ``packed[offset:offset + size].reshape(shape)``."""

    name: str
    layer: int
    direction: int
    kind: str  # "i2h_weight", "h2h_weight", "h2r_weight", "i2h_bias", "h2h_bias"
    offset: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        size = 1
        for n in self.shape:
            size *= n
        return size

    @property
    def stop(self) -> int:
        return self.offset + self.size


def _piece_shapes(spec: RNNShape, layer: int) -> tuple[list[tuple[str, tuple[int, ...]]], list[tuple[str, tuple]]]:
    """(weights, biases) of one direction of ``layer``, in packing order."""
    rows = spec.gates * spec.state_size
    weights = [("i2h_weight", (rows, spec.layer_input_size(layer))), ("h2h_weight", (rows, spec.output_size))]
    if spec.projection_size:
        weights.append(("h2r_weight", (spec.projection_size, spec.state_size)))
    biases = [("i2h_bias", (rows,)), ("h2h_bias", (rows,))]
    return weights, biases


def packed_slices(spec: RNNShape) -> list[ParamSlice]:
    """Every weight and bias of the packed vector, in MXNet's order (weights, then biases)."""
    slices: list[ParamSlice] = []
    offset = 0
    for part in (0, 1):  # 0: all weights, 1: all biases
        for layer in range(spec.num_layers):
            for direction in range(spec.directions):
                for kind, shape in _piece_shapes(spec, layer)[part]:
                    name = f"{'lr'[direction]}{layer}_{kind}"
                    piece = ParamSlice(name, layer, direction, kind, offset, shape)
                    slices.append(piece)
                    offset = piece.stop
    return slices


def gate_slices(spec: RNNShape) -> list[ParamSlice]:
    """:func:`packed_slices` cut into one ``H``-row block per gate, named as MXNet's ``FusedRNNCell``
    and ``FusedRNN`` initializer name them (``l0_i2h_f_weight``; the plain RNNs keep ``l0_i2h_weight``).

    The gates are stacked along the rows, so each gate's block is a contiguous run of the vector.
    A projection (``h2r_weight``) has no gates and stays whole.
    """
    cut: list[ParamSlice] = []
    letters = GATE_LETTERS[spec.mode]
    for piece in packed_slices(spec):
        if piece.kind == "h2r_weight":
            cut.append(piece)
            continue
        group, _, kind = piece.name.rpartition("_")  # "l0_i2h", "weight"
        shape = (spec.state_size, *piece.shape[1:])
        block = piece.size // len(letters)
        for gate, letter in enumerate(letters):
            name = f"{group}_{letter}_{kind}" if letter else piece.name
            cut.append(ParamSlice(name, piece.layer, piece.direction, piece.kind, piece.offset + gate * block, shape))
    return cut


def param_size(spec: RNNShape) -> int:
    """Length of the packed parameter vector."""
    return packed_slices(spec)[-1].stop


def unpack(spec: RNNShape, packed: object) -> dict[tuple[int, int], dict[str, object]]:
    """Views of ``packed`` (a NumPy/CuPy vector) per ``(layer, direction)``, keyed by kind."""
    views: dict[tuple[int, int], dict[str, object]] = {}
    for piece in packed_slices(spec):
        view = packed[piece.offset : piece.stop].reshape(piece.shape)  # type: ignore[index]
        views.setdefault((piece.layer, piece.direction), {})[piece.kind] = view
    return views


def input_size_from_param_size(spec: RNNShape, size: int) -> int | None:
    """The data's feature size that makes the packed vector ``size`` long (None if none does).

    Only layer 0's ``i2h`` weights depend on it, linearly: ``size = rest + directions * gates
    * H * input_size``, which is how shape inference fills the data's last axis backwards.
    """
    rest = param_size(
        RNNShape(spec.mode, spec.num_layers, spec.state_size, 0, spec.bidirectional, spec.projection_size)
    )
    per_feature = spec.directions * spec.gates * spec.state_size
    if size <= rest or (size - rest) % per_feature:
        return None
    return (size - rest) // per_feature
