"""Write public_names.json and operator_names.json: MXNet 1.9.1's Python API as data.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/mxvenv/bin/python tests/data/mxnet_1_9_1/api/list_public_names.py

(on the lead's machine the interpreter is ``/work/main/.peers/mxvenv/bin/python``).

It writes, next to this script:

* ``public_names.json``: for every module of MXNet that MXLab mirrors (``MODULES`` below, keyed
  by the attribute path from ``mx``: ``""`` is ``mx`` itself, ``"ndarray.contrib"`` is
  ``mx.nd.contrib``), its sorted public names: ``dir()`` without leading underscore, keeping
  only what MXNet defines (submodules, classes and functions whose ``__module__`` is in
  ``mxnet``, values assigned in MXNet's own source) and dropping what a module merely
  imported (``numpy``, ``OrderedDict``, ``ctypes``...). Each name records its kind, where
  MXNet defines it, the MXNet module it came from when the module star-imported it
  (``star_import``), its signature when it has one, and, for the functions MXNet generates
  from its operator registry, the registered operator behind it. Every public class found
  that way records its constructor signature and its members (methods, properties,
  class- and static methods, class attributes; special methods the class defines itself),
  each with its signature.
* ``operator_names.json``: every operator name MXNet 1.9.1 registers, with the command that wrote it
  (``MXListAllOpNames``, aliases included), sorted.

Signatures are ``inspect.signature`` as data: per parameter its name, kind and, when it has
one, the ``repr`` of its default. tests/api_coverage.py compares MXLab with this file; the
tests read the JSON and never import this script.
"""

from __future__ import annotations

import ast
import ctypes
import functools
import inspect
import json
import os
import re
import sys
import types
import warnings

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))

# Attribute path from ``mx`` -> the MXNet module it names.
MODULES = [
    "",
    "base",
    "util",
    "runtime",
    "context",
    "attribute",
    "name",
    "engine",
    "libinfo",
    "ndarray",
    "ndarray.contrib",
    "ndarray.linalg",
    "ndarray.random",
    "ndarray.image",
    "symbol",
    "symbol.contrib",
    "symbol.linalg",
    "symbol.random",
    "symbol.image",
    "module",
    "kvstore",
    "io",
    "recordio",
    "test_utils",
    "profiler",
    "metric",
    "initializer",
    "optimizer",
    "lr_scheduler",
    "callback",
    "model",
    "autograd",
    "random",
    "monitor",
    "visualization",
    "operator",
    "library",
    "executor",
    "contrib",
    "contrib.autograd",
    "contrib.ndarray",
    "contrib.symbol",
    "contrib.io",
    "rnn",
    "image",
    "gluon",
    "gluon.block",
    "gluon.parameter",
    "gluon.trainer",
    "gluon.nn",
    "gluon.rnn",
    "gluon.loss",
    "gluon.utils",
    "gluon.data",
    "gluon.data.vision",
    "gluon.data.vision.transforms",
    "gluon.model_zoo",
    "gluon.model_zoo.vision",
    "gluon.contrib",
    "gluon.contrib.nn",
    "gluon.contrib.rnn",
]

# Short names MXNet gives some of those modules (``mx.nd`` is ``mx.ndarray``).
ALIASES = {
    "nd": "ndarray",
    "sym": "symbol",
    "mod": "module",
    "kv": "kvstore",
    "init": "initializer",
    "mon": "monitor",
    "viz": "visualization",
    "img": "image",
}

# Prefixes the generated operator functions of a namespace drop from the registered name
# (``mx.nd.contrib.ROIAlign`` is operator ``_contrib_ROIAlign``).
OPERATOR_PREFIXES = {
    "ndarray": [""],
    "symbol": [""],
    "ndarray.contrib": ["_contrib_"],
    "symbol.contrib": ["_contrib_"],
    "ndarray.linalg": ["_linalg_"],
    "symbol.linalg": ["_linalg_"],
    "ndarray.random": ["_random_", "_sample_"],
    "symbol.random": ["_random_", "_sample_"],
    "ndarray.image": ["_image_"],
    "symbol.image": ["_image_"],
    "contrib.ndarray": ["_contrib_"],
    "contrib.symbol": ["_contrib_"],
}

# Special methods worth recording when an MXNet class defines them itself.
SKIPPED_DUNDERS = {
    "__init__",
    "__module__",
    "__dict__",
    "__weakref__",
    "__doc__",
    "__slots__",
    "__qualname__",
    "__annotations__",
    "__abstractmethods__",
    "__orig_bases__",
    "__parameters__",
    "__init_subclass__",
    "__subclasshook__",
    "__class_getitem__",
}


def operator_names() -> list[str]:
    """Every registered operator name, read through the C API as MXNet's own helpers do."""
    size = ctypes.c_uint()
    names = ctypes.POINTER(ctypes.c_char_p)()
    if mx.base._LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(names)) != 0:
        raise RuntimeError("MXListAllOpNames failed")
    return sorted(names[i].decode() for i in range(size.value))


def is_mxnet(module_name: str | None) -> bool:
    return bool(module_name) and (module_name == "mxnet" or module_name.startswith("mxnet."))


def generated(obj) -> bool:
    """Functions MXNet builds from its operator registry are compiled from a string."""
    code = getattr(obj, "__code__", None)
    return code is not None and code.co_filename == "<string>"


def describe_signature(obj) -> dict | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = []
    for param in sig.parameters.values():
        entry = [param.name, param.kind.name]
        if param.default is not inspect.Parameter.empty:
            entry.append(without_addresses(repr(param.default)))
        params.append(entry)
    return {"text": without_addresses(str(sig)), "params": params}


def without_addresses(text: str) -> str:
    """Object reprs without their memory address, so that the file is the same on every run."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def source_definitions(module: types.ModuleType) -> tuple[dict[str, str], list[str]]:
    """Names the module's source binds itself -> where from; and the mxnet modules it star-imports.

    Assignments and definitions bind to the module itself; ``from .x import y`` binds to
    the MXNet module it came from. Imports from outside MXNet are not recorded.
    """
    path = getattr(module, "__file__", None)
    bound: dict[str, str] = {}
    stars: list[str] = []
    if not path or not path.endswith(".py"):
        return bound, stars
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    package = module.__name__ if path.endswith("__init__.py") else module.__name__.rpartition(".")[0]
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = [t for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target]
        for target in targets:
            bound[target.id] = module.__name__
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if not is_mxnet(source):
                continue
            for alias in node.names:
                if alias.name == "*":
                    stars.append(source)
                else:
                    bound[alias.asname or alias.name] = source
    return bound, stars


def classify(module: types.ModuleType, name: str, obj, bound: dict[str, str], stars: list[str]) -> dict | None:
    """One public name as data, or None when the module only imported it from elsewhere."""
    if isinstance(obj, types.ModuleType):
        return {"kind": "module", "defined_in": obj.__name__} if is_mxnet(obj.__name__) else None
    if inspect.isclass(obj):
        if not is_mxnet(obj.__module__):
            return None
        return {"kind": "class", "defined_in": obj.__module__, "signature": describe_signature(obj)}
    if inspect.isfunction(obj) or inspect.isbuiltin(obj) or isinstance(obj, functools.partial):
        owner = getattr(obj, "__module__", None)
        if not (is_mxnet(owner) or generated(obj) or name in bound):
            return None
        entry = {"kind": "function", "defined_in": owner or module.__name__, "signature": describe_signature(obj)}
        if generated(obj):
            entry["generated"] = True
        return entry
    if obj is None:
        return None  # a placeholder for an optional import that failed (``cv2 = None``), not API
    if name in bound:
        return {"kind": "value", "defined_in": bound[name], "type": type(obj).__name__}
    for source in stars:
        star_module = sys.modules.get(source)
        if star_module is not None and getattr(star_module, name, None) is obj:
            # Where the star-imported module itself got the name from.
            origin = source_definitions(star_module)[0].get(name, source)
            return {"kind": "value", "defined_in": origin, "type": type(obj).__name__}
    if is_mxnet(type(obj).__module__):
        return {"kind": "value", "defined_in": module.__name__, "type": type(obj).__name__}
    return None


def describe_class(cls: type) -> dict:
    """Constructor signature and every member an MXNet class (or its MXNet bases) defines."""
    members = {}
    for name in sorted(dir(cls)):
        is_dunder = name.startswith("__") and name.endswith("__")
        if name.startswith("_") and not is_dunder:
            continue
        if name in SKIPPED_DUNDERS:
            continue
        owner = next((klass for klass in cls.__mro__ if name in vars(klass)), None)
        if owner is None or not is_mxnet(owner.__module__):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, property):
            entry = {"kind": "property", "settable": raw.fset is not None}
        elif isinstance(raw, staticmethod):
            entry = {"kind": "staticmethod", "signature": describe_signature(raw.__func__)}
        elif isinstance(raw, classmethod):
            entry = {"kind": "classmethod", "signature": describe_signature(getattr(cls, name))}
        elif inspect.isfunction(raw):
            entry = {"kind": "method", "signature": describe_signature(raw)}
        elif callable(raw):
            entry = {"kind": "method", "signature": describe_signature(raw)}
        else:
            entry = {"kind": "attribute", "type": type(raw).__name__}
        entry["defined_in"] = f"{owner.__module__}.{owner.__qualname__}"
        members[name] = entry
    return {
        "module": cls.__module__,
        "qualname": cls.__qualname__,
        "bases": [f"{base.__module__}.{base.__qualname__}" for base in cls.__bases__],
        "signature": describe_signature(cls),
        "members": members,
    }


def one_entry_per_line(data: dict) -> str:
    """JSON with each module name and each class member on its own line, so diffs stay readable."""

    def compact(value) -> str:
        return json.dumps(value, separators=(",", ":"))

    def block(entries: dict, indent: str) -> str:
        rows = [f"{indent} {compact(key)}: {compact(value)}" for key, value in entries.items()]
        return "{\n" + ",\n".join(rows) + f"\n{indent}}}" if rows else "{}"

    modules = []
    for path, module in data["modules"].items():
        modules.append(
            f'  {compact(path)}: {{"module": {compact(module["module"])}, "names": {block(module["names"], "  ")}}}'
        )
    classes = []
    for key, cls in data["classes"].items():
        head = {k: v for k, v in cls.items() if k != "members"}
        head_text = compact(head)[:-1]
        classes.append(f'  {compact(key)}: {head_text}, "members": {block(cls["members"], "  ")}}}')
    header = {k: v for k, v in data.items() if k not in ("modules", "classes")}
    lines = [f" {compact(k)}: {compact(v)}," for k, v in header.items()]
    return (
        "{\n"
        + "\n".join(lines)
        + '\n "modules": {\n'
        + ",\n".join(modules)
        + '\n },\n "classes": {\n'
        + ",\n".join(classes)
        + "\n }\n}\n"
    )


def resolve(path: str) -> types.ModuleType:
    obj = mx
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part)
    if not isinstance(obj, types.ModuleType):
        raise TypeError(f"mx.{path} is not a module")
    return obj


def main() -> None:
    ops = operator_names()
    op_set = set(ops)
    modules = {}
    classes = {}
    for path in MODULES:
        module = resolve(path)
        bound, stars = source_definitions(module)
        names = {}
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name)
            entry = classify(module, name, obj, bound, stars)
            if entry is None:
                continue
            if name not in bound:
                # Re-exported wholesale (``from .ndarray.random import *`` in mx.random): deliberate API.
                for source in stars:
                    if getattr(sys.modules.get(source), name, None) is obj:
                        entry["star_import"] = source
                        break
            if entry.get("generated"):
                # The function's own __name__ is the operator's name when a module imported it
                # under another name (optimizer's ``abs as NDabs``).
                candidates = [
                    prefix + stem for stem in (name, obj.__name__) for prefix in OPERATOR_PREFIXES.get(path, [""])
                ]
                found = [candidate for candidate in candidates if candidate in op_set]
                if found:
                    entry["operator"] = found[0]
            names[name] = entry
            if entry["kind"] == "class":
                key = f"{entry['defined_in']}.{obj.__qualname__}"
                if key not in classes:
                    classes[key] = dict(describe_class(obj), path=f"{path}.{name}".lstrip("."))
        modules[path] = {"module": module.__name__, "names": names}
    data = {
        "mxnet_version": mx.__version__,
        "command": "python tests/data/mxnet_1_9_1/api/list_public_names.py  # with mxnet==1.9.1, numpy<1.24",
        "aliases": ALIASES,
        "modules": modules,
        "classes": dict(sorted(classes.items())),
    }
    with open(os.path.join(HERE, "public_names.json"), "w", encoding="utf-8") as handle:
        handle.write(one_entry_per_line(data))
    with open(os.path.join(HERE, "operator_names.json"), "w", encoding="utf-8") as handle:
        json.dump(
            {
                "mxnet_version": mx.__version__,
                "source": "MXListAllOpNames",
                "command": data["command"],
                "operators": ops,
            },
            handle,
            indent=1,
        )
        handle.write("\n")
    print(f"{len(modules)} modules, {len(classes)} classes, {len(ops)} operators")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
