"""Seeded wrong solutions: each is a reference solution with one classic mistake.

A mutation names the exercise, the mistake, the exact text of the solution it replaces
(so a change to the solution that makes the mutation miss fails loudly instead of
silently testing nothing), the check that must catch it, and words its message must hold.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    exercise: str
    mistake: str
    old: str
    new: str
    caught_by: str
    message_has: tuple[str, ...]


MUTATIONS = [
    Mutation(
        "quadratic",
        "forgets req add (writes the output directly)",
        "    assign(outputs[0], req[0], value)",
        "    outputs[0][...] = value",
        "forward_req",
        ("previous contents lost", "req 'add'", "kernel.py"),
    ),
    Mutation(
        "quadratic",
        "wrong gradient sign",
        "assign(outputs[0], req[0], out_grad * (2 * p.a * x + p.b))",
        "assign(outputs[0], req[0], -out_grad * (2 * p.a * x + p.b))",
        "backward",
        ("wrong sign", "2*a*x + b"),
    ),
    Mutation(
        "quadratic",
        "shape inference only forwards (not mutual)",
        '    shape_assign(in_shapes, 0, out_shapes[0], attrs.name, "input")\n',
        "",
        "infer_shape",
        ("mutual inference", "both ways"),
    ),
    Mutation(
        "smooth_l1",
        "forgets sigma^2 in the quadratic piece of the gradient",
        "sigma2 * in_data0, xp.sign(in_data0)",
        "in_data0, xp.sign(in_data0)",
        "backward",
        ("grad of x", "first mismatch at index"),
    ),
    Mutation(
        "smooth_l1",
        "divides by sigma^2 = 0",
        "    bound = math.inf if sigma2 == 0 else 1.0 / sigma2\n    magnitude",
        "    bound = 1.0 / sigma2\n    magnitude",
        "edge_cases",
        ("ZeroDivisionError", "smooth_l1.py"),
    ),
    Mutation(
        "softmax_ce",
        "wrong gradient sign (onehot - out)",
        "assign(outputs[0], req[0], (out - onehot) * scale)",
        "assign(outputs[0], req[0], (onehot - out) * scale)",
        "backward",
        ("wrong sign", "softmax - onehot"),
    ),
    Mutation(
        "softmax_ce",
        "softmax without subtracting the row maximum",
        "    shifted = x - x.max(axis=1, keepdims=True)",
        "    shifted = x",
        "edge_cases",
        ("huge logits", "maximum"),
    ),
    Mutation(
        "softmax_ce",
        "forgets req add",
        "    assign(outputs[0], req[0], (out - onehot) * scale)",
        "    outputs[0][...] = (out - onehot) * scale",
        "backward_req",
        ("previous contents lost", "grad_req='add'"),
    ),
    Mutation(
        "leaky_relu",
        "gamma gradient from the positive side",
        "(out_grad * xp.where(positive, 0, x)).sum(axis=axes)",
        "(out_grad * xp.where(positive, x, 0)).sum(axis=axes)",
        "backward",
        ("grad of gamma", "x <= 0"),
    ),
    Mutation(
        "leaky_relu",
        "prelu gamma not inferred",
        '        shape_assign(in_shapes, 1, (data[1],), name, "gamma")\n',
        "",
        "infer_shape",
        ("gamma is (data.shape[1],)",),
    ),
    Mutation(
        "conv2d",
        "off-by-one in the padding (pad on one side only)",
        "    return (size + 2 * pad - kernel) // stride + 1",
        "    return (size + pad - kernel) // stride + 1",
        "infer_shape",
        ("padding is added on both sides",),
    ),
    Mutation(
        "conv2d",
        "wrong sign of the weight gradient",
        '    d_weight = xp.einsum("nfl,nkl->fk", d_out, col)',
        '    d_weight = -xp.einsum("nfl,nkl->fk", d_out, col)',
        "backward",
        ("wrong sign", "grad of weight"),
    ),
    Mutation(
        "conv2d",
        "col2im overwrites instead of adding overlapping windows",
        "            padded[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += windows[:, :, i, j]",
        "            padded[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] = windows[:, :, i, j]",
        "im2col",
        ("im2col's transpose", "+="),
    ),
    Mutation(
        "max_pool",
        "pads with zeros, so the padding wins over negative inputs",
        "    padded = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)\n    best",
        "    padded = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))\n    best",
        "edge_cases",
        ("padding must never win", "-inf"),
    ),
    Mutation(
        "max_pool",
        "gives the gradient to every tied position",
        "            winner = (padded[:, :, rows, cols] == out) & ~routed",
        "            winner = padded[:, :, rows, cols] == out",
        "edge_cases",
        ("ties go to the first position",),
    ),
    Mutation(
        "engine_var",
        "lets a read overlap a running write",
        "        if not self._queue and not self._write_granted:\n            self._running_reads += 1",
        "        if not self._queue:\n            self._running_reads += 1",
        "engine_programs",
        ("no read overlapping a write", "while"),
    ),
    Mutation(
        "engine_var",
        "lets a read overtake a waiting write",
        "        if not self._queue and not self._write_granted:\n            self._running_reads += 1",
        "        if not self._write_granted:\n            self._running_reads += 1",
        "queue_rules",
        ("never overtakes a waiting write",),
    ),
    Mutation(
        "memory_planner",
        "hands out a block without removing it (shares a live block)",
        "            if usable(sid):\n                del self._keys[i]\n                return sid\n"
        "        for i in range(mid - 1",
        "            if usable(sid):\n                return sid\n        for i in range(mid - 1",
        "plans",
        ("at the same time", "take must remove the block"),
    ),
    Mutation(
        "memory_planner",
        "ignores the upper end of the match range",
        "            if size > high:\n                break\n",
        "",
        "free_list_rules",
        ("too large a block is not taken",),
    ),
    Mutation(
        "glu",
        "gates with tanh instead of sigmoid",
        "gate = F.sigmoid(F.FullyConnected(x, gate_weight, gate_bias, num_hidden=self.units))",
        "gate = F.tanh(F.FullyConnected(x, gate_weight, gate_bias, num_hidden=self.units))",
        "forward",
        ("sigmoid(x V^T + c)", "imperative"),
    ),
    Mutation(
        "glu",
        "computes the gate with NumPy (cannot be traced)",
        "gate = F.sigmoid(F.FullyConnected(x, gate_weight, gate_bias, num_hidden=self.units))",
        "gate = F.array(1 / (1 + __import__('numpy').exp(-F.FullyConnected(x, gate_weight, gate_bias, "
        "num_hidden=self.units).asnumpy())))",
        "hybridized",
        ("F.<operator>", "no NumPy", "hybridized"),
    ),
    Mutation(
        "glu",
        "stops the gradient through the gate",
        "        return linear * gate\n",
        "        return linear * F.BlockGrad(gate)\n",
        "gradients",
        ("the gradient of data", "stops the gradient"),
    ),
    Mutation(
        "glu",
        "forgets allow_deferred_init on the gate weight",
        'self.gate_weight = self.params.get("gate_weight", shape=(units, in_units), allow_deferred_init=True)',
        'self.gate_weight = self.params.get("gate_weight", shape=(units, in_units))',
        "parameters",
        ("GLU(5)", "allow_deferred_init=True", "glu0_gate_weight"),
    ),
]
