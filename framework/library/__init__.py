"""Loading operators, graph passes and partitioners written in C++/CUDA at run time: ``mx.library.load``.

An extension library is a shared object built against one of two APIs, told apart by the
``_opVersion()`` it exports:

* the older single header ``framework/include/lib_api.h`` (seed 003: operators only);
* MXNet 1.9.1's API, ``framework/include/mxnet/lib_api.h`` compiled together with
  ``framework/include/lib_api.cc`` (namespace ``mxnet::ext``; operators with the five-argument
  ``createOpState`` and seeded random generators, plus graph passes and partitioners).

Both define a small C ABI (functions named ``_opXxx``, and for 1.9.1 ``_passXxx``,
``_partXxx``, ``_selXxx``); this module talks to it through :mod:`ctypes` and turns every
operator it finds into **one ordinary record of the operator registry**, so ``mx.nd.my_gemm``,
``mx.sym.my_gemm``, autograd, the executor's memory planning and the engine's scheduling treat
it like a built-in operator. Graph passes and partitioners become *backends* of
``Symbol.optimize_for`` (:mod:`framework.symbol.backends`): they receive the symbol's JSON
(:mod:`.graph_json`), and a pass returns the rewritten graph (:mod:`.passes`) while a
partitioner's choices are grouped into subgraph nodes here in Python (:mod:`.partitioner`).

What each registry attribute of a library operator does:

=================== ==================================================================
attribute           implementation
=================== ==================================================================
parameters          every keyword argument, converted to a string (the C side sees a
                    ``std::unordered_map<std::string, std::string>``); ``parseAttrs``
                    runs when the attributes are parsed, so a bad keyword fails at the
                    call, naming the library, operator and step
inputs / outputs    the counts ``parseAttrs`` returned
infer_shape/type    the library's ``inferShape`` / ``inferType`` once every input is
                    known; ``inferSType`` (optional) must keep everything dense
mutate_inputs       the library's ``mutateInputs`` (auxiliary states)
compute             ``forward`` for the array's device ("cpu" or "gpu"), or the
                    ``Forward`` of the node's stateful instance
gradient            a ``_backward_<name>`` node fed (output gradients, forward inputs,
                    forward outputs), computing one gradient per input
=================== ==================================================================

**Write requests.** The C functions always overwrite their outputs. When the graph asks
to *add* (gradient accumulation) or not to write at all, this module passes a temporary
instead and adds it (or drops it) afterwards; non-contiguous arrays are copied the same
way. Library authors therefore never see ``req``.

**Stateful operators.** The instance made by ``createOpState`` is stored on the parsed
attributes of the node, which a node shares with its backward node (and autograd's tape
node with the imperative call): one instance per executor node and device, or, for
imperative calls, per distinct set of keyword arguments (MXLab caches parsed attributes
by keywords, so repeated calls from one call site share the instance). It is deleted
(``_opDestroyOpState``) when the graph holding it is garbage collected.

**Errors.** A library function returning ``MX_FAIL`` (message from ``MX_ERROR_MSG``) or
throwing a C++ exception becomes a :class:`LibraryError` naming the library file, the
operator, the node and the step; nothing crosses the C boundary as an exception, so the
interpreter never crashes because of a *reported* error (a segfault in library code
still kills the process, as in MXNet).

Modules: :mod:`.abi` (the C signatures, allocators, errors and the :class:`Library` handle),
:mod:`.adapter` (one operator as a registry record), :mod:`.graph_json` (what passes and
partitioners receive), :mod:`.passes`, :mod:`.partitioner`, :mod:`.loader` (``load``) and
:mod:`.build` (the g++ one-liner that compiles a 1.9.1-API library).
"""

from __future__ import annotations

from .abi import (
    LIBRARY_VERSION,
    LIBRARY_VERSION_1_9,
    Library,
    LibraryError,
    LibraryInferenceError,
    LibraryMetadataError,
    LibraryParamError,
)
from .adapter import LibraryOp, OpenFields
from .loader import load, loaded_libraries

__all__ = [
    "LIBRARY_VERSION",
    "LIBRARY_VERSION_1_9",
    "Library",
    "LibraryError",
    "LibraryInferenceError",
    "LibraryMetadataError",
    "LibraryOp",
    "LibraryParamError",
    "OpenFields",
    "load",
    "loaded_libraries",
]
