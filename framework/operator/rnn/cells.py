"""The recurrence of one layer in one direction: forward through time, and back (BPTT).

Each mode is a :class:`Cell` with two methods that walk the time steps in order (the
recurrence forbids anything else) and compute everything *within* a step at once, over the
whole batch and every hidden unit. The input's contribution to every gate at every step does
not depend on the recurrence, so the caller computes it beforehand for all steps in one
matrix product (:func:`input_projection`); a step then adds one ``h_prev @ W_h2h^T``.

Gate pre-activations are summed as MXNet (and cuDNN) do, with both biases::

    rnn_tanh/rnn_relu: h = act(x W_i2h^T + b_i2h + h_prev W_h2h^T + b_h2h)
    lstm: [i, f, g, o] = [s, s, tanh, s](x W_i2h^T + b_i2h + h_prev W_h2h^T + b_h2h)   (s: sigmoid)
          c = f c_prev + i g,  h = o tanh(c),  and with a projection P: output r = h W_h2r^T
    gru:  [r, z] = s(x W_ir,iz^T + b_ir,iz + h_prev W_hr,hz^T + b_hr,hz)
          n = tanh(x W_in^T + b_in + r * (h_prev W_hn^T + b_hn)),  h = (1 - z) n + z h_prev

What backward needs is written into the forward pass's *cache* (views into the operator's
reserve output, :attr:`Cell.cache_fields`): the activated gates, the LSTM's cells, the GRU's
``h_prev W_hn^T + b_hn``. The hidden states themselves are the layer's output.

Variable-length sequences (``valid``: a ``(T, N, 1)`` 0/1 mask) hold the state of a finished
sample unchanged and give it zero outputs; the backward pass lets the state's gradient pass
through those steps untouched.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .layout import RNNShape

Array = Any


@dataclass
class Clip:
    """LSTM cell clipping: every cell state is clipped to ``[low, high]`` after each step."""

    low: float
    high: float
    nan: bool  # also replace NaN by ``low`` (NaN otherwise propagates, as ``clip`` does)


def sigmoid(xp: ModuleType, x: Array, out: Array) -> None:
    """Logistic function into ``out`` as ``1/2 + tanh(x/2)/2``: the same function, stable for
    any ``x``, and four vectorised passes (``tanh`` has SIMD loops; SciPy's ``expit`` is slower)."""
    xp.multiply(x, 0.5, out=out)
    xp.tanh(out, out=out)
    out *= 0.5
    out += 0.5


def input_projection(xp: ModuleType, cell: Cell, x: Array, weights: dict[str, Array]) -> Array:
    """Every step's input contribution ``x W_i2h^T + biases`` in one product: (T, N, gates * H).

    Both biases are folded in, except the GRU's ``b_hn``, which sits inside ``r * (...)``.
    """
    steps, batch, features = x.shape
    xw = xp.matmul(x.reshape(steps * batch, features), weights["i2h_weight"].T)
    xw += weights["i2h_bias"]
    h2h_bias = weights["h2h_bias"]
    if cell.mode == "gru":
        split = 2 * (h2h_bias.shape[0] // 3)
        xw[:, :split] += h2h_bias[:split]
    else:
        xw += h2h_bias
    return xw.reshape(steps, batch, -1)


def previous_states(xp: ModuleType, seq: Array, first: Array, reverse: bool, valid: Array | None) -> Array:
    """The state each step starts from: ``first`` for the first step, else the previous step's.

    ``seq`` holds the state after each step (T, N, W). Only steps inside a sample's length
    matter (the others get zero gradients); in the right-to-left direction the first valid
    step of a shorter sample is ``length - 1``, which starts from ``first`` too.
    """
    first = first[None]
    if not reverse:
        return xp.concatenate([first, seq[:-1]], axis=0)
    before = xp.concatenate([seq[1:], first], axis=0)
    if valid is not None:
        after_valid = xp.concatenate([valid[1:], xp.zeros_like(valid[:1])], axis=0)
        before = xp.where(after_valid > 0, before, first)
    return before


def _steps(count: int, reverse: bool) -> range:
    return range(count - 1, -1, -1) if reverse else range(count)


@dataclass
class Direction:
    """One layer-direction's arrays: what a cell's forward and backward work on.

    ``out`` is the direction's slice of the layer output (T, N, H or P), ``weights`` the
    views of :func:`layout.unpack`, ``cache`` the named views of the reserve.
    """

    weights: dict[str, Array]
    cache: dict[str, Array]
    out: Array
    reverse: bool
    valid: Array | None


class Cell(ABC):
    """The recurrence of one mode. Subclasses implement ``forward`` and ``backward``."""

    mode = ""
    gates = 1

    def cache_fields(self, spec: RNNShape) -> list[tuple[str, int]]:
        """(name, width) of each per-step array the backward pass needs besides the output."""
        return []

    @abstractmethod
    def forward(
        self, xp: ModuleType, xw: Array, d: Direction, h0: Array, c0: Array | None, clip: Clip | None
    ) -> tuple[Array, Array | None]:
        """Run the steps, writing outputs and cache; return the final (h, c)."""

    @abstractmethod
    def backward(
        self,
        xp: ModuleType,
        d: Direction,
        dy: Array,
        dh: Array,
        dc: Array | None,
        h0: Array,
        c0: Array | None,
        clip: Clip | None,
        grads: dict[str, Array],
    ) -> tuple[Array, Array, Array | None]:
        """BPTT: return the gradients of the gate pre-activations (T, N, gates * H) for the
        input-side weights, and of ``h0`` and ``c0``; accumulate the hidden-side weights'
        gradients into ``grads`` (``h2h_weight``, ``h2h_bias``, ``h2r_weight``)."""


def _hold(xp: ModuleType, valid_t: Array | None, new: Array, old: Array) -> Array:
    """The state after a step: ``new`` for samples still running, ``old`` for finished ones."""
    return new if valid_t is None else xp.where(valid_t > 0, new, old)


def _hidden_weight_grads(xp: ModuleType, dgates: Array, h_prev: Array, grads: dict[str, Array]) -> None:
    """``h2h`` weight and bias gradients for all steps at once: one (gates*H, T*N) x (T*N, H) product."""
    rows = dgates.shape[-1]
    flat = dgates.reshape(-1, rows)
    grads["h2h_weight"] += xp.matmul(flat.T, h_prev.reshape(-1, h_prev.shape[-1]))
    grads["h2h_bias"] += flat.sum(axis=0)


class VanillaCell(Cell):
    """``rnn_tanh`` and ``rnn_relu``: one gate, whose activation is the new state."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def _activate(self, xp: ModuleType, a: Array, out: Array) -> None:
        if self.mode == "rnn_tanh":
            xp.tanh(a, out=out)
        else:
            xp.maximum(a, 0, out=out)

    def forward(self, xp, xw, d, h0, c0, clip):
        w_h2h_t = xp.ascontiguousarray(d.weights["h2h_weight"].T)  # BLAS-friendly layout for every step
        h = h0
        for t in _steps(xw.shape[0], d.reverse):
            a = xp.matmul(h, w_h2h_t)
            a += xw[t]
            self._activate(xp, a, a)
            valid_t = None if d.valid is None else d.valid[t]
            d.out[t] = a if valid_t is None else a * valid_t
            h = _hold(xp, valid_t, a, h)
        return h, None

    def backward(self, xp, d, dy, dh, dc, h0, c0, clip, grads):
        w_h2h = d.weights["h2h_weight"]
        steps = dy.shape[0]
        dgates = xp.empty(dy.shape[:2] + (w_h2h.shape[0],), dtype=dy.dtype)
        for t in _steps(steps, not d.reverse):
            h = d.out[t]
            valid_t = None if d.valid is None else d.valid[t]
            dh_new = dy[t] + dh if valid_t is None else (dy[t] + dh) * valid_t
            da = dgates[t]
            if self.mode == "rnn_tanh":
                xp.multiply(dh_new, 1 - h * h, out=da)
            else:
                xp.multiply(dh_new, h > 0, out=da)
            dh_prev = xp.matmul(da, w_h2h)
            dh = dh_prev if valid_t is None else dh_prev + dh * (1 - valid_t)
        _hidden_weight_grads(xp, dgates, previous_states(xp, d.out, h0, d.reverse, d.valid), grads)
        return dgates, dh, None


class LSTMCell(Cell):
    """Long short-term memory, optionally with a projection of the output (LSTMP)."""

    mode = "lstm"
    gates = 4

    def cache_fields(self, spec: RNNShape) -> list[tuple[str, int]]:
        fields = [("gates", 4 * spec.state_size), ("c", spec.state_size)]
        if spec.projection_size:
            fields.append(("h", spec.state_size))  # before the projection, for dW_h2r
        return fields

    def forward(self, xp, xw, d, h0, c0, clip):
        w_h2h_t = xp.ascontiguousarray(d.weights["h2h_weight"].T)  # BLAS-friendly layout for every step
        w_h2r = d.weights.get("h2r_weight")
        w_h2r_t = None if w_h2r is None else xp.ascontiguousarray(w_h2r.T)
        hidden = c0.shape[-1]
        h, c = h0, c0
        for t in _steps(xw.shape[0], d.reverse):
            gates = d.cache["gates"][t]
            xp.matmul(h, w_h2h_t, out=gates)
            gates += xw[t]
            i_f = gates[:, : 2 * hidden]
            g = gates[:, 2 * hidden : 3 * hidden]
            o = gates[:, 3 * hidden :]
            sigmoid(xp, i_f, i_f)
            xp.tanh(g, out=g)
            sigmoid(xp, o, o)
            c_new = d.cache["c"][t]
            xp.multiply(gates[:, hidden : 2 * hidden], c, out=c_new)
            c_new += gates[:, :hidden] * g
            if clip is not None:
                _clip(xp, c_new, clip)
            h_new = o * xp.tanh(c_new)
            if w_h2r is not None:
                d.cache["h"][t] = h_new
                h_new = xp.matmul(h_new, w_h2r_t)
            valid_t = None if d.valid is None else d.valid[t]
            d.out[t] = h_new if valid_t is None else h_new * valid_t
            h = _hold(xp, valid_t, h_new, h)
            c = _hold(xp, valid_t, c_new, c)
        return h, c

    def backward(self, xp, d, dy, dh, dc, h0, c0, clip, grads):
        w_h2h = d.weights["h2h_weight"]
        w_h2r = d.weights.get("h2r_weight")
        cache_gates, cells = d.cache["gates"], d.cache["c"]
        hidden = cells.shape[-1]
        c_prev_all = previous_states(xp, cells, c0, d.reverse, d.valid)
        dgates = xp.empty_like(cache_gates)
        for t in _steps(dy.shape[0], not d.reverse):
            valid_t = None if d.valid is None else d.valid[t]
            dh_new = dy[t] + dh if valid_t is None else (dy[t] + dh) * valid_t
            if w_h2r is not None:
                grads["h2r_weight"] += xp.matmul(dh_new.T, d.cache["h"][t])
                dh_new = xp.matmul(dh_new, w_h2r)
            gates, c = cache_gates[t], cells[t]
            i, f = gates[:, :hidden], gates[:, hidden : 2 * hidden]
            g, o = gates[:, 2 * hidden : 3 * hidden], gates[:, 3 * hidden :]
            tanh_c = xp.tanh(c)
            dc_t = dh_new * o * (1 - tanh_c * tanh_c)
            dc_t += dc if valid_t is None else dc * valid_t
            if clip is not None:
                dc_t *= (c > clip.low) & (c < clip.high)  # a clipped cell passes no gradient
            da = dgates[t]
            xp.multiply(dc_t * g, i * (1 - i), out=da[:, :hidden])
            xp.multiply(dc_t * c_prev_all[t], f * (1 - f), out=da[:, hidden : 2 * hidden])
            xp.multiply(dc_t * i, 1 - g * g, out=da[:, 2 * hidden : 3 * hidden])
            xp.multiply(dh_new * tanh_c, o * (1 - o), out=da[:, 3 * hidden :])
            dh_prev = xp.matmul(da, w_h2h)
            dc_prev = dc_t * f
            if valid_t is not None:
                dh_prev += dh * (1 - valid_t)
                dc_prev += dc * (1 - valid_t)
            dh, dc = dh_prev, dc_prev
        _hidden_weight_grads(xp, dgates, previous_states(xp, d.out, h0, d.reverse, d.valid), grads)
        return dgates, dh, dc


def _clip(xp: ModuleType, c: Array, clip: Clip) -> None:
    if clip.nan:  # fmax/fmin prefer the number to NaN
        xp.fmax(c, clip.low, out=c)
        xp.fmin(c, clip.high, out=c)
    else:
        xp.clip(c, clip.low, clip.high, out=c)


class GRUCell(Cell):
    """Gated recurrent unit, with the reset gate applied after the hidden product (cuDNN's form)."""

    mode = "gru"
    gates = 3

    def cache_fields(self, spec: RNNShape) -> list[tuple[str, int]]:
        return [("gates", 3 * spec.state_size), ("hn", spec.state_size)]

    def forward(self, xp, xw, d, h0, c0, clip):
        w_h2h_t = xp.ascontiguousarray(d.weights["h2h_weight"].T)  # BLAS-friendly layout for every step
        b_hn = d.weights["h2h_bias"][2 * h0.shape[-1] :]
        hidden = h0.shape[-1]
        h = h0
        for t in _steps(xw.shape[0], d.reverse):
            gh = xp.matmul(h, w_h2h_t)
            gates = d.cache["gates"][t]
            r_z = gates[:, : 2 * hidden]
            xp.add(xw[t][:, : 2 * hidden], gh[:, : 2 * hidden], out=r_z)
            sigmoid(xp, r_z, r_z)
            hn = d.cache["hn"][t]
            xp.add(gh[:, 2 * hidden :], b_hn, out=hn)
            n = gates[:, 2 * hidden :]
            xp.multiply(gates[:, :hidden], hn, out=n)
            n += xw[t][:, 2 * hidden :]
            xp.tanh(n, out=n)
            h_new = h - n
            h_new *= gates[:, hidden : 2 * hidden]
            h_new += n
            valid_t = None if d.valid is None else d.valid[t]
            d.out[t] = h_new if valid_t is None else h_new * valid_t
            h = _hold(xp, valid_t, h_new, h)
        return h, None

    def backward(self, xp, d, dy, dh, dc, h0, c0, clip, grads):
        w_h2h = d.weights["h2h_weight"]
        cache_gates, hns = d.cache["gates"], d.cache["hn"]
        hidden = hns.shape[-1]
        h_prev_all = previous_states(xp, d.out, h0, d.reverse, d.valid)
        dgx = xp.empty_like(cache_gates)  # input side: d(pre-activation) of r, z, n
        dgh = xp.empty_like(cache_gates)  # hidden side: the same for r, z; for n, d(h W_hn^T + b_hn)
        for t in _steps(dy.shape[0], not d.reverse):
            valid_t = None if d.valid is None else d.valid[t]
            dh_new = dy[t] + dh if valid_t is None else (dy[t] + dh) * valid_t
            gates = cache_gates[t]
            r, z, n = gates[:, :hidden], gates[:, hidden : 2 * hidden], gates[:, 2 * hidden :]
            dan = dh_new * (1 - z) * (1 - n * n)
            dgx[t][:, 2 * hidden :] = dan
            xp.multiply(dan, r, out=dgh[t][:, 2 * hidden :])
            xp.multiply(dan * hns[t], r * (1 - r), out=dgx[t][:, :hidden])
            xp.multiply(dh_new * (h_prev_all[t] - n), z * (1 - z), out=dgx[t][:, hidden : 2 * hidden])
            dgh[t][:, : 2 * hidden] = dgx[t][:, : 2 * hidden]
            dh_prev = xp.matmul(dgh[t], w_h2h)
            dh_prev += dh_new * z
            if valid_t is not None:
                dh_prev += dh * (1 - valid_t)
            dh = dh_prev
        _hidden_weight_grads(xp, dgh, h_prev_all, grads)
        return dgx, dh, None


def make_cell(mode: str) -> Cell:
    """The cell computing ``mode``."""
    if mode == "lstm":
        return LSTMCell()
    if mode == "gru":
        return GRUCell()
    return VanillaCell(mode)
