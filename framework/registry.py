"""``mx.registry``: make a family of classes creatable by name, as MXNet's own families are.

``mx.optimizer.create("sgd")``, ``mx.metric.create("acc")`` and ``mx.init.create("xavier")``
follow one pattern: a base class, a table from lower-case names to its subclasses, a
``register`` decorator that fills the table and a ``create`` that looks names up. This module
builds that pattern for any base class, for user code and plug-ins::

    class Schedule: ...
    register = mx.registry.get_register_func(Schedule, "schedule")
    create = mx.registry.get_create_func(Schedule, "schedule")

    @register
    class Constant(Schedule): ...

    create("constant")                 # Constant()
    create('["constant", {"value": 2}]')  # Constant(value=2): names and arguments as JSON

One table per base class, shared by every function made for it.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

from .base import MXLabError

_TABLES: dict[type, dict[str, type]] = {}


class RegistryError(MXLabError, ValueError):
    """A class outside the family was registered, or a name nobody registered was asked for."""


def _table(base_class: type) -> dict[str, type]:
    return _TABLES.setdefault(base_class, {})


def get_registry(base_class: type) -> dict[str, type]:
    """A copy of the name -> class table of ``base_class``."""
    return dict(_table(base_class))


def get_register_func(base_class: type, nickname: str) -> Callable[..., type]:
    """``register(klass, name=None)``: file ``klass`` under ``name`` (default its class name), lower-cased."""
    table = _table(base_class)

    def register(klass: type, name: str | None = None) -> type:
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise RegistryError(f"can only register subclasses of {base_class.__name__} as a {nickname}, got {klass!r}")
        key = (name or klass.__name__).lower()
        if key in table and table[key] is not klass:
            warnings.warn(
                f"new {nickname} {klass.__module__}.{klass.__name__} registered as {key!r} replaces "
                f"{table[key].__module__}.{table[key].__name__}",
                UserWarning,
                stacklevel=2,
            )
        table[key] = klass
        return klass

    register.__doc__ = f"Register a {nickname} class under its lower-cased name (or ``name``)."
    return register


def get_alias_func(base_class: type, nickname: str) -> Callable[..., Callable[[type], type]]:
    """``alias(*names)``: a class decorator that files the class under each of ``names`` too."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases: str) -> Callable[[type], type]:
        def decorate(klass: type) -> type:
            for name in aliases:
                register(klass, name)
            return klass

        return decorate

    alias.__doc__ = f"Register a {nickname} class under extra names."
    return alias


def get_create_func(base_class: type, nickname: str) -> Callable[..., Any]:
    """``create(name_or_instance, *args, **kwargs)``: an instance of the class filed under the name.

    The first argument (or keyword ``nickname``) may be an instance (returned as is), a name,
    a dict of keyword arguments holding the name under ``nickname``, or JSON: ``'["name", {kwargs}]'``
    or ``'{"<nickname>": "name", ...}'``.
    """
    table = _table(base_class)

    def create(*args: Any, **kwargs: Any) -> Any:
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise RegistryError(f"create: give the {nickname} name as the first argument or as {nickname}=")
        if isinstance(name, base_class):
            if args or kwargs:
                raise RegistryError(f"create: {nickname} is already an instance; no further arguments allowed")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise RegistryError(f"create: the {nickname} must be a name (str), got {type(name).__name__}")
        if name.startswith("["):
            if args or kwargs:
                raise RegistryError("create: a JSON list carries its own arguments; no further arguments allowed")
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith("{"):
            if args or kwargs:
                raise RegistryError("create: a JSON object carries its own arguments; no further arguments allowed")
            return create(**json.loads(name))
        klass = table.get(name.lower())
        if klass is None:
            raise RegistryError(
                f"{name!r} is not a registered {nickname}; registered: {sorted(table)}. Register it with "
                f"{nickname}'s register function first"
            )
        return klass(*args, **kwargs)

    create.__doc__ = f"Create a {nickname} by name (or return an instance given)."
    return create


__all__ = ["RegistryError", "get_alias_func", "get_create_func", "get_register_func", "get_registry"]
