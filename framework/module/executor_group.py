"""Data parallelism: one executor per device, each running a slice of the batch.

A :class:`DataParallelExecutorGroup` binds the same symbol once per context. A batch of
``B`` samples is cut along its batch axis into one slice per device, sized by
``work_load_list`` (``[1, 1]`` splits 128 samples into 64 + 64, ``[3, 1]`` into 96 + 32).
Each slice is copied into its device's executor, every executor runs forward and backward
on its own device (the engine runs them at the same time), and the outputs are glued back
together along the batch axis so that the group looks like one executor.

Every device holds a full copy of the parameters and computes gradients for its slice
only; summing those gradients across devices (and giving every device the updated
weights) is the job of the KVStore-shaped aggregation (:mod:`.aggregation`), not of the
group. The group only exposes the arrays, as lists with one entry per device:
``param_arrays[i][k]`` is parameter ``i`` on device ``k``, ``grad_arrays[i][k]`` its
gradient.

Which axis is the batch axis comes from a data descriptor's ``layout`` (the position of
``N``; ``"NCHW"`` -> 0, ``"TNC"`` -> 1, no layout -> 0, a layout without ``N`` -> -1, meaning
"not split: every device gets the whole array").
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from .. import ndarray as nd
from ..base import FLAG_TO_DTYPE, MXLabError
from ..context import Context, cpu
from ..io import DataDesc
from ..ndarray import NDArray


class ModuleError(MXLabError, ValueError):
    """A module or executor group was used wrongly (the message names what and how)."""


# ----------------------------------------------------------------------------- data descriptors
def as_desc(item: Any, what: str = "data_shapes") -> DataDesc:
    """A :class:`~framework.io.DataDesc` from a DataDesc or a ``(name, shape[, dtype, layout])`` tuple.

    ``("data", (128, 784))`` is accepted as in MXNet's ``bind(data_shapes=[...])``.
    """
    if isinstance(item, DataDesc):
        return item
    if not isinstance(item, tuple | list) or not 2 <= len(item) <= 4 or not isinstance(item[0], str):
        raise ModuleError(
            f"{what}: each entry must be a DataDesc or a (name, shape) pair such as ('data', (32, 784)), got {item!r}"
        )
    name, shape = item[0], item[1]
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise ModuleError(f"{what}: the shape of {name!r} must be a tuple of ints, got {shape!r}") from None
    return DataDesc(name, shape, *item[2:])


get_batch_axis = DataDesc.get_batch_axis


def _dtype_of(desc: Any) -> Any:
    dtype = getattr(desc, "dtype", None)
    return "float32" if dtype is None else dtype


# ----------------------------------------------------------------------------- slicing
def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> list[slice]:
    """Cut ``batch_size`` samples into one slice per device, proportional to ``work_load_list``.

    Rounding leftovers go to the last device. Every device must get at least one sample.
    """
    if not work_load_list:
        raise ModuleError("split_input_slice: work_load_list is empty (no devices)")
    if any(w <= 0 for w in work_load_list):
        raise ModuleError(f"work_load_list must hold positive numbers, got {list(work_load_list)}")
    total = sum(work_load_list)
    sizes = [round(w * batch_size / total) for w in work_load_list]
    if sum(sizes) < batch_size:
        sizes[-1] += batch_size - sum(sizes)
    slices, end = [], 0
    for size in sizes:
        begin = int(min(end, batch_size))
        end = int(min(begin + size, batch_size))
        if begin >= end:
            raise ModuleError(
                f"cannot split a batch of {batch_size} samples over {len(work_load_list)} devices with work loads "
                f"{list(work_load_list)}: some devices would get no samples; use a larger batch or fewer devices"
            )
        slices.append(slice(begin, end))
    return slices


def _load_general(
    sources: Sequence[Any], targets: Sequence[Any], batch_axes: Sequence[int], names: Sequence[str]
) -> None:
    """Copy each source array into its per-device targets, cutting it along the batch axis.

    ``targets[j]`` is a list of ``(slice, array)`` per device (or, for pre-sliced input, a
    list of arrays matching a list of sources); ``names[j]`` names the input in errors.
    """
    for src, dsts, axis, name in zip(sources, targets, batch_axes, names, strict=False):
        if isinstance(src, list | tuple):  # already one array per device
            for part, dst in zip(src, dsts, strict=True):
                _copy_into(part, dst, name)
            continue
        array = src if isinstance(src, NDArray) else nd.array(src)
        batch_size = dsts[-1][0].stop
        if axis >= 0 and (array.ndim <= axis or array.shape[axis] != batch_size):
            raise ModuleError(
                f"input {name!r}: the batch gives shape {tuple(array.shape)}, but the module is bound for a batch "
                f"of {batch_size} along axis {axis}"
            )
        for islice, dst in dsts:
            if axis < 0 or len(dsts) == 1:
                _copy_into(array, dst, name)
            elif axis == 0:
                _copy_into(array[islice.start : islice.stop], dst, name)
            else:
                part = nd.slice_axis(array, axis=axis, begin=islice.start, end=islice.stop)
                _copy_into(part, dst, name)


def _copy_into(src: NDArray, dst: NDArray, name: str) -> None:
    if tuple(src.shape) != tuple(dst.shape):
        raise ModuleError(
            f"input {name!r}: the batch gives shape {tuple(src.shape)}, the bound array expects {tuple(dst.shape)}"
        )
    if src.dtype != dst.dtype:
        src = src.astype(dst.dtype)
    src.copyto(dst)


def _merge_multi_context(outputs: Sequence[Sequence[NDArray]], batch_axes: Sequence[int]) -> list[NDArray]:
    """Glue per-device arrays back along their batch axis (on the first device's context)."""
    merged = []
    for tensors, axis in zip(outputs, batch_axes, strict=True):
        if axis >= 0 and len(tensors) > 1:
            first = tensors[0].context
            merged.append(nd.concat(*[t.as_in_context(first) for t in tensors], dim=axis))
        else:
            merged.append(tensors[0])
    return merged


# ----------------------------------------------------------------------------- the group
class DataParallelExecutorGroup:
    """The executors of one symbol on several devices, fed slices of each batch.

    Args:
        symbol: the network.
        contexts: one device per executor.
        workload: relative batch share per device (``[1] * len(contexts)`` is even).
        data_shapes / label_shapes: descriptors of the full (unsplit) batch.
        param_names: the arguments that are parameters (not data, labels or states).
        for_training: allocate gradients and allow ``backward``.
        inputs_need_grad: also compute gradients with respect to the data.
        shared_group: reuse parameters and memory of another group (bucketing).
        fixed_param_names: parameters that get no gradient (frozen).
        grad_req: ``'write'``, ``'add'`` or ``'null'``, per argument as a list or dict, or one
            string for all parameters.
        state_names: extra inputs kept on the devices (not given by the data iterator).
    """

    def __init__(
        self,
        symbol: Any,
        contexts: Sequence[Context],
        workload: Sequence[float],
        data_shapes: Sequence[Any],
        label_shapes: Sequence[Any] | None,
        param_names: Sequence[str],
        for_training: bool,
        inputs_need_grad: bool,
        shared_group: DataParallelExecutorGroup | None = None,
        logger: Any = logging,
        fixed_param_names: Sequence[str] | None = None,
        grad_req: str | Sequence[str] | Mapping[str, str] = "write",
        state_names: Sequence[str] | None = None,
        group2ctxs: Any = None,
    ) -> None:
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.group2ctxs = self._prepare_group2ctxs(group2ctxs)
        self._total_exec_bytes = 0

        data_shapes = [as_desc(x, "data_shapes") for x in data_shapes]
        if label_shapes is not None:
            label_shapes = [as_desc(x, "label_shapes") for x in label_shapes]
        self.grad_req = self._grad_req_per_argument(grad_req, [d.name for d in data_shapes])

        self.shared_data_arrays = (
            shared_group.shared_data_arrays if shared_group is not None else [{} for _ in self.contexts]
        )
        self.batch_size: int | None = None
        self.slices: list[slice] | None = None
        self.execs: list[Any] = []
        self._default_execs: list[Any] | None = None
        self.data_arrays: list[list[tuple[slice, NDArray]]] | None = None
        self.label_arrays: list[list[tuple[slice, NDArray]]] | None = None
        self.param_arrays: list[list[NDArray]] = []
        self.state_arrays: list[list[NDArray]] = []
        self.grad_arrays: list[list[NDArray | None]] | None = None
        self.grad_segments: list[int | None] = []
        self.aux_arrays: list[list[NDArray]] = []
        self.input_grad_arrays: list[list[NDArray]] | None = None
        self.data_shapes: list[Any] = []
        self.label_shapes: list[Any] | None = None
        self.data_names: list[str] = []
        self.label_names: list[str] = []
        self.data_layouts: list[int] = []
        self.label_layouts: list[int] = []
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [get_batch_axis(symbol[i].attr("__layout__")) for i in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # ------------------------------------------------------------------ configuration
    def _prepare_group2ctxs(self, group2ctxs: Any) -> list[Any]:
        """One ``ctx_group -> context`` mapping per device (MXNet's model-parallel placement)."""
        n = len(self.contexts)
        if group2ctxs is None:
            return [None] * n
        if isinstance(group2ctxs, list):
            if len(group2ctxs) != n:
                raise ModuleError(f"group2ctxs has {len(group2ctxs)} entries for {n} contexts")
            return group2ctxs
        if isinstance(group2ctxs, Mapping):
            result: list[dict[str, Context]] = [{} for _ in range(n)]
            for group, value in group2ctxs.items():
                ctxs = [value] * n if isinstance(value, Context) else list(value)
                if len(ctxs) == 1:
                    ctxs = ctxs * n
                if len(ctxs) != n:
                    raise ModuleError(f"group2ctxs[{group!r}] has {len(ctxs)} contexts; expected 1 or {n}")
                for i in range(n):
                    result[i][group] = ctxs[i]
            return result
        raise ModuleError(f"group2ctxs must be a dict or a list of dicts, got {type(group2ctxs).__name__}")

    def _grad_req_per_argument(self, grad_req: Any, data_names: list[str]) -> dict[str, str]:
        """Parameters get ``grad_req`` (null when fixed), data only with ``inputs_need_grad``, labels never."""
        if not self.for_training:
            grad_req = "null"

        def default(name: str, req: str) -> str:
            if name in self.param_names:
                return "null" if name in self.fixed_param_names else req
            if name in data_names:
                return req if self.inputs_need_grad else "null"
            return "null"

        if isinstance(grad_req, str):
            return {name: default(name, grad_req) for name in self.arg_names}
        if isinstance(grad_req, list | tuple):
            if len(grad_req) != len(self.arg_names):
                raise ModuleError(
                    f"grad_req has {len(grad_req)} entries, but the symbol has {len(self.arg_names)} arguments "
                    f"{self.arg_names}"
                )
            return dict(zip(self.arg_names, grad_req, strict=True))
        if isinstance(grad_req, Mapping):
            unknown = sorted(set(grad_req) - set(self.arg_names))
            if unknown:
                raise ModuleError(f"grad_req names {unknown}, which are not arguments of the symbol {self.arg_names}")
            reqs = {name: default(name, "write") for name in self.arg_names}
            reqs.update(grad_req)
            return reqs
        raise ModuleError(f"grad_req must be a str, list, tuple or dict, got {type(grad_req).__name__}")

    def decide_slices(self, data_shapes: Sequence[Any]) -> list[int]:
        """Batch axis of each input; fixes ``batch_size`` and the per-device slices."""
        if not data_shapes:
            raise ModuleError("bind: data_shapes is empty; a module needs at least one data input")
        axes = [get_batch_axis(d.layout) for d in data_shapes]
        for desc, axis in zip(data_shapes, axes, strict=True):
            if axis == -1:
                continue
            if axis >= len(desc.shape):
                raise ModuleError(
                    f"{desc.name!r}: layout {desc.layout!r} puts the batch axis beyond shape {desc.shape}"
                )
            size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise ModuleError(
                    f"all inputs must have the same batch size: batch_size = {self.batch_size}, but {desc.name!r} "
                    f"has shape {tuple(desc.shape)}"
                )
        return axes

    # ------------------------------------------------------------------ binding
    def bind_exec(
        self, data_shapes: list[Any], label_shapes: list[Any] | None, shared_group: Any = None, reshape: bool = False
    ) -> None:
        """Bind (or, with ``reshape``, re-shape) one executor per device.

        Nothing changes unless every executor binds: a failed reshape leaves the group as it was.
        """
        if self.execs and not reshape:
            raise ModuleError("bind_exec: the executors are already bound; use reshape")
        previous = (self.batch_size, self.slices)
        self.batch_size = None
        try:
            data_layouts = self.decide_slices(data_shapes)
            label_layouts = self.decide_slices(label_shapes) if label_shapes is not None else []
            execs = []
            for i in range(len(self.contexts)):
                data_i = self._sliced_shape(data_shapes, i, data_layouts)
                label_i = self._sliced_shape(label_shapes, i, label_layouts) if label_shapes is not None else []
                if reshape:
                    shapes = {d.name: tuple(d.shape) for d in data_i + label_i}
                    execs.append(self._default_execs[i].reshape(allow_up_sizing=True, **shapes))
                else:
                    execs.append(self._bind_ith_exec(i, data_i, label_i, shared_group))
        except BaseException:
            self.batch_size, self.slices = previous
            raise
        self.execs = execs
        self.data_layouts, self.label_layouts = data_layouts, label_layouts
        self.data_shapes = list(data_shapes)
        self.label_shapes = list(label_shapes) if label_shapes is not None else None
        self.data_names = [d.name for d in self.data_shapes]
        self.label_names = [d.name for d in self.label_shapes] if self.label_shapes is not None else []
        self._collect_arrays()

    def reshape(self, data_shapes: list[Any], label_shapes: list[Any] | None) -> None:
        """Re-bind for new input shapes, sharing parameters and memory with the first binding."""
        same_data = [tuple(d.shape) for d in data_shapes] == [tuple(d.shape) for d in self.data_shapes]
        same_label = (label_shapes is None and self.label_shapes is None) or (
            label_shapes is not None
            and self.label_shapes is not None
            and [tuple(d.shape) for d in label_shapes] == [tuple(d.shape) for d in self.label_shapes]
        )
        if same_data and same_label:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _bind_ith_exec(self, i: int, data_shapes: list[Any], label_shapes: list[Any], shared_group: Any) -> Any:
        """``simple_bind`` on device ``i`` (parameters shared with ``shared_group`` if given)."""
        shared_exec = None if shared_group is None else shared_group.execs[i]
        input_shapes = {d.name: tuple(d.shape) for d in data_shapes + label_shapes}
        input_types = {d.name: _dtype_of(d) for d in data_shapes + label_shapes}
        attrs = self.symbol.attr_dict()
        for desc in data_shapes:  # a data variable declared with a dtype keeps it
            declared = attrs.get(desc.name, {}).get("__dtype__", "-1")
            if declared != "-1":
                input_types[desc.name] = FLAG_TO_DTYPE[int(declared)].name
        executor = self.symbol.simple_bind(
            ctx=self.contexts[i],
            grad_req=self.grad_req,
            type_dict=input_types,
            group2ctx=self.group2ctxs[i],
            shared_arg_names=self.param_names,
            shared_exec=shared_exec,
            shared_buffer=self.shared_data_arrays[i],
            **input_shapes,
        )
        self._total_exec_bytes += executor.plan.bytes_planned
        return executor

    def _sliced_shape(self, shapes: Sequence[Any], i: int, axes: Sequence[int]) -> list[Any]:
        """The descriptors of device ``i``'s share of the batch."""
        sliced = []
        for desc, axis in zip(shapes, axes, strict=True):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            sliced.append(DataDesc(desc.name, tuple(shape), _dtype_of(desc), desc.layout))
        return sliced

    def _collect_arrays(self) -> None:
        """Per input / parameter, the list of its arrays on every device."""
        execs = self.execs
        self.data_arrays = [
            [(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)] for name in self.data_names
        ]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        if self.label_shapes is not None:
            self.label_arrays = [
                [(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)] for name in self.label_names
            ]
        else:
            self.label_arrays = None
        param_index = [i for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in param_index]
        self.grad_arrays = [[e.grad_arrays[i] for e in execs] for i in param_index] if self.for_training else None
        # which backward segment finishes each parameter's gradient (the first device's plan; every
        # device runs the same one): what the Module batches a distributed step's messages by
        finished_by = execs[0].gradient_segments() if self.for_training and execs else {}
        self.grad_segments = [finished_by.get(self.arg_names[i]) for i in param_index]
        if self.inputs_need_grad:
            self.input_grad_arrays = [
                [e.grad_arrays[self.arg_names.index(name)] for e in execs]
                for name in self.data_names
                if name in self.arg_names
            ]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]

    # ------------------------------------------------------------------ parameters
    def set_params(
        self, arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray] | None, allow_extra: bool = False
    ) -> None:
        """Copy the given values into every device's executor."""
        for executor in self.execs:
            executor.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray]) -> None:
        """Write the devices' values (averaged over devices) into ``arg_params`` / ``aux_params`` in place."""
        for names, blocks, target in (
            (self.param_names, self.param_arrays, arg_params),
            (self.aux_names, self.aux_arrays, aux_params),
        ):
            for name, block in zip(names, blocks, strict=True):
                dst = target[name]
                if len(block) == 1:
                    value = block[0]
                else:
                    value = block[0].copyto(cpu())
                    for other in block[1:]:
                        value += other.copyto(cpu())
                    value /= len(block)
                if value.dtype != dst.dtype:
                    value = value.astype(dst.dtype)
                if value is not dst:
                    value.copyto(dst)

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Copy each device's slice of the batch in, then run forward on every device."""
        if isinstance(data_batch, list):  # one DataBatch per device, already sliced
            data = [[b.data[j] for b in data_batch] for j in range(len(self.data_arrays))]
            targets = [[dst for _, dst in t] for t in self.data_arrays]
            _load_general(data, targets, self.data_layouts, self.data_names)
            if self.label_arrays is not None and data_batch[0].label:
                labels = [[b.label[j] for b in data_batch] for j in range(len(self.label_arrays))]
                label_targets = [[dst for _, dst in t] for t in self.label_arrays]
                _load_general(labels, label_targets, self.label_layouts, self.label_names)
        else:
            data = list(data_batch.data)
            if len(data) != len(self.data_arrays):
                raise ModuleError(
                    f"forward: the batch has {len(data)} data arrays, the module expects {len(self.data_arrays)} "
                    f"({self.data_names})"
                )
            _load_general(data, self.data_arrays, self.data_layouts, self.data_names)
            label = getattr(data_batch, "label", None)
            if self.label_arrays is not None and label:
                if len(label) != len(self.label_arrays):
                    raise ModuleError(
                        f"forward: the batch has {len(label)} label arrays, the module expects "
                        f"{len(self.label_arrays)} ({self.label_names})"
                    )
                _load_general(list(label), self.label_arrays, self.label_layouts, self.label_names)
        if is_train is None:
            is_train = self.for_training
        for executor in self.execs:
            executor.forward(is_train=is_train)

    def backward(self, out_grads: NDArray | Sequence[NDArray] | None = None) -> None:
        """Run backward on every device (head gradients, if given, are sliced like the batch)."""
        if not self.for_training:
            raise ModuleError("backward: the module is bound with for_training=False; re-bind with for_training=True")
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        for i, (executor, islice) in enumerate(zip(self.execs, self.slices, strict=True)):
            sliced = []
            for grad, axis in zip(out_grads, self.output_layouts, strict=False):
                if axis >= 0:
                    part = nd.slice_axis(grad, axis=axis, begin=islice.start, end=islice.stop)
                    sliced.append(part.as_in_context(self.contexts[i]))
                else:
                    sliced.append(grad.as_in_context(self.contexts[i]))
            executor.backward(out_grads=sliced or None)

    def get_output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(name, shape)`` of each output as seen for the whole batch."""
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs, self.output_layouts, strict=True):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0, end: int | None = None) -> list[Any]:
        """Outputs ``[begin, end)``: merged across devices, or per device (``[[out1_dev1, out1_dev2], ...]``)."""
        end = self.num_outputs if end is None else end
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_input_grads(self, merge_multi_context: bool = True) -> list[Any]:
        """Gradients with respect to the data inputs (needs ``inputs_need_grad``)."""
        if not self.inputs_need_grad:
            raise ModuleError("get_input_grads: bind the module with inputs_need_grad=True to get input gradients")
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def get_states(self, merge_multi_context: bool = True) -> list[list[NDArray]]:
        """The state inputs per device (merging is not supported, as in MXNet)."""
        if merge_multi_context:
            raise ModuleError("get_states: merge_multi_context=True is not supported; pass merge_multi_context=False")
        return self.state_arrays

    def set_states(self, states: Sequence[Sequence[NDArray]] | None = None, value: float | None = None) -> None:
        """Set the state inputs from per-device arrays or to one scalar ``value``."""
        if (states is None) == (value is None):
            raise ModuleError("set_states: give exactly one of states and value")
        if states is not None:
            _load_general(list(states), self.state_arrays, (0,) * len(states), self.state_names)
        else:
            for per_device in self.state_arrays:
                for dst in per_device:
                    dst[:] = value

    def update_metric(self, eval_metric: Any, labels: Sequence[Any], pre_sliced: bool = False) -> None:
        """Feed each device's outputs and its slice of the labels to ``eval_metric``."""
        for k, (executor, islice) in enumerate(zip(self.execs, self.slices, strict=True)):
            if pre_sliced:
                labels_slice = list(labels[k])
            else:
                labels_slice = []
                for label, axis in zip(labels, self.label_layouts or [0] * len(labels), strict=False):
                    if axis == 0 and len(self.execs) > 1:
                        labels_slice.append(label[islice])
                    elif axis > 0 and len(self.execs) > 1:
                        labels_slice.append(nd.slice_axis(label, axis=axis, begin=islice.start, end=islice.stop))
                    else:
                        labels_slice.append(label)
            label_names = self.label_names or [f"label{j}" for j in range(len(labels_slice))]
            eval_metric.update_dict(
                OrderedDict(zip(label_names, labels_slice, strict=False)),
                OrderedDict(zip(self.output_names, executor.outputs, strict=True)),
            )

    def install_monitor(self, mon: Any) -> None:
        """Let a monitor (``mon.install(executor)``) watch every executor."""
        for executor in self.execs:
            mon.install(executor)
