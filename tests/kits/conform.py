"""Strict conformance of a raw JSON value to an official SDK's pydantic model (no tests here).

The SDKs are lenient judges: they accept a reply with a required field missing (``object`` on a
chat completion, ``type`` or ``role`` on an Anthropic message) and ignore unknown fields. This walks
the SDK's own model classes instead, independently of the gateway's renderers, and refuses what the
provider's API never sends: a key the model does not declare, a field the model requires left out,
a value of the wrong JSON type, a word outside its ``Literal`` or ``Enum``. Only the extension
points the wire contract documents (``bench``, at the places the caller names) may add keys.

``problems(value, Model)`` lists every mismatch as ``path: what``; an empty list is a conforming
value. Aliases are honoured (google-genai's models are camelCase on the wire).
"""

from __future__ import annotations

import datetime
import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

_NONE = type(None)


def problems(value: Any, model: Any, *, extensions: Mapping[type, set[str]] | None = None,
             required: Mapping[type, set[str]] | None = None) -> list[str]:
    """Every way ``value`` (decoded JSON) departs from ``model`` (a pydantic class or a typing form).

    ``extensions`` names, per model class, extra keys the wire contract adds there (their values are
    not checked here); ``required`` names, per model class, fields the provider's reference always
    sends though the SDK gives them a default.
    """
    found: list[str] = []
    _check(value, model, "$", found, extensions or {}, required or {})
    return found


def _check(value: Any, form: Any, path: str, found: list[str], ext: Mapping[type, set[str]],
           req: Mapping[type, set[str]]) -> None:
    origin = typing.get_origin(form)
    if form is Any or form is object:
        return
    if origin is typing.Annotated:
        _check(value, typing.get_args(form)[0], path, found, ext, req)
        return
    if type(form).__name__ == "TypeAliasType":  # typing's (3.12) or typing_extensions'
        _check(value, form.__value__, path, found, ext, req)
        return
    if origin is typing.Union or origin is types.UnionType:
        _union(value, typing.get_args(form), path, found, ext, req)
        return
    if origin is typing.Literal:
        if not any(value == choice and type(value) is type(choice) for choice in typing.get_args(form)):
            found.append(f"{path}: {value!r} is not one of {list(typing.get_args(form))}")
        return
    if origin in (list, typing.List, tuple, set, Sequence, typing.Sequence):  # noqa: UP006
        if not isinstance(value, list):
            found.append(f"{path}: expected an array, got {_kind(value)}")
            return
        (item,) = typing.get_args(form)[:1] or (Any,)
        for index, each in enumerate(value):
            _check(each, item, f"{path}[{index}]", found, ext, req)
        return
    if origin in (dict, typing.Dict, Mapping):  # noqa: UP006
        if not isinstance(value, dict):
            found.append(f"{path}: expected an object, got {_kind(value)}")
            return
        args = typing.get_args(form)
        for key, each in value.items():
            _check(each, args[1] if len(args) == 2 else Any, f"{path}.{key}", found, ext, req)
        return
    if isinstance(form, type):
        _scalar_or_model(value, form, path, found, ext, req)
        return
    found.append(f"{path}: no rule for the type {form!r}")


def _union(value: Any, options: tuple[Any, ...], path: str, found: list[str], ext: Mapping[type, set[str]],
           req: Mapping[type, set[str]]) -> None:
    if value is None and _NONE in options:
        return
    attempts: list[list[str]] = []
    for option in options:
        if option is _NONE:
            continue
        mine: list[str] = []
        _check(value, option, path, mine, ext, req)
        if not mine:
            return
        attempts.append(mine)
    if not attempts:
        found.append(f"{path}: expected null, got {_kind(value)}")
        return
    # The alternative whose discriminator matched fails on its own fields: report that one.
    found.extend(min(attempts, key=lambda mine: (any("is not one of" in m and m.startswith(f"{path}.type:")
                                                     for m in mine), len(mine))))


def _scalar_or_model(value: Any, form: type, path: str, found: list[str], ext: Mapping[type, set[str]],
                     req: Mapping[type, set[str]]) -> None:
    if issubclass(form, BaseModel):
        _model(value, form, path, found, ext, req)
    elif form is bool:
        if not isinstance(value, bool):
            found.append(f"{path}: expected a boolean, got {_kind(value)}")
    elif form is int:
        if not isinstance(value, int) or isinstance(value, bool):
            found.append(f"{path}: expected an integer, got {_kind(value)}")
    elif form is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            found.append(f"{path}: expected a number, got {_kind(value)}")
    elif form in (str, datetime.datetime, bytes):
        if not isinstance(value, str):
            found.append(f"{path}: expected a string, got {_kind(value)}")
    elif issubclass(form, enum.Enum):
        if value not in {member.value for member in form}:
            found.append(f"{path}: {value!r} is not a {form.__name__}")
    elif form is _NONE:
        if value is not None:
            found.append(f"{path}: expected null, got {_kind(value)}")
    elif typing.is_typeddict(form):
        _typed_dict(value, form, path, found, ext, req)
    else:
        found.append(f"{path}: no rule for the class {form.__name__}")


def _model(value: Any, model: type[BaseModel], path: str, found: list[str], ext: Mapping[type, set[str]],
           req: Mapping[type, set[str]]) -> None:
    if not isinstance(value, dict):
        found.append(f"{path}: expected an object ({model.__name__}), got {_kind(value)}")
        return
    model.model_rebuild()
    alias_of = model.model_config.get("alias_generator")
    wire: dict[str, tuple[str, Any, bool]] = {}
    for name, field in model.model_fields.items():
        key = field.alias or (alias_of(name) if callable(alias_of) else name)
        wire[key] = (name, field.annotation, field.is_required() or name in req.get(model, set()))
    allowed = ext.get(model, set())
    for key, each in value.items():
        if key in wire:
            _check(each, wire[key][1], f"{path}.{key}", found, ext, req)
        elif key not in allowed:
            found.append(f"{path}.{key}: {model.__name__} has no such field")
    for key, (_name, _form, needed) in wire.items():
        if needed and key not in value:
            found.append(f"{path}.{key}: missing ({model.__name__} requires it)")


def _typed_dict(value: Any, form: type, path: str, found: list[str], ext: Mapping[type, set[str]],
                req: Mapping[type, set[str]]) -> None:
    if not isinstance(value, dict):
        found.append(f"{path}: expected an object ({form.__name__}), got {_kind(value)}")
        return
    hints = typing.get_type_hints(form, include_extras=True)
    for key, each in value.items():
        if key not in hints:
            found.append(f"{path}.{key}: {form.__name__} has no such field")
        else:
            _check(each, hints[key], f"{path}.{key}", found, ext, req)
    for key in getattr(form, "__required_keys__", ()):
        if key not in value:
            found.append(f"{path}.{key}: missing ({form.__name__} requires it)")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", _NONE: "null"}.get(type(value), type(value).__name__)
