"""`Choices`: the allowed values of a config's `str` field, marked on its type
(`Annotated[str, Choices(TRUNCATIONS)]`) so that `jaxrl train --help` and docs/FLAGS.md name
them, and so that one check (`check_choices`, called by each config's __post_init__) validates
every such field of every config with one message."""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from collections.abc import Iterable
from typing import Annotated, Any


@dataclasses.dataclass(frozen=True, init=False)
class Choices:
    values: tuple[str, ...]
    several: bool = False
    """Several values joined by commas (e.g. --randomize mass,friction)."""

    def __init__(self, values: Iterable[str], several: bool = False):
        object.__setattr__(self, "values", tuple(values))
        object.__setattr__(self, "several", several)

    @property
    def metavar(self) -> str:
        text = "{" + ",".join(self.values) + "}"
        return text + "[,...]" if self.several else text


@functools.cache
def type_hints(cls: type, include_extras: bool = True) -> dict[str, Any]:
    """`typing.get_type_hints(cls)`, once per class: it evaluates every annotation of the class
    and its bases (strings, under `from __future__ import annotations`) at each call, and the
    help asks for one field's at a time (about a third of `train --help`'s parsing time went to
    it before this cache). Read the dict, never change it."""
    return typing.get_type_hints(cls, include_extras=include_extras)


def field_choices(cls: type, name: str) -> Choices | None:
    """The `Choices` marked on field `name` of `cls` or, where a subclass redeclares the field
    only to change its default, of the nearest base class that marks it."""
    for klass in cls.__mro__:
        if name not in getattr(klass, "__annotations__", {}):
            continue
        hint = type_hints(klass).get(name)
        if typing.get_origin(hint) is Annotated:
            marks = [e for e in typing.get_args(hint)[1:] if isinstance(e, Choices)]
            if marks:
                return marks[0]
    return None


@functools.cache
def _marked_fields(cls: type) -> tuple[tuple[str, Choices], ...]:
    fields = ((f.name, field_choices(cls, f.name)) for f in dataclasses.fields(cls))
    return tuple((name, choices) for name, choices in fields if choices is not None)


def check_choices(config: Any, error: type[Exception] = ValueError) -> None:
    """Raises `error` naming the first field of `config` whose value is not one of the
    `Choices` marked on it (each comma-joined value, for a field of several); None passes."""
    for name, choices in _marked_fields(type(config)):
        value = getattr(config, name)
        if value is None:
            continue
        values = [v.strip() for v in value.split(",")] if choices.several else [value]
        unknown = [v for v in values if v not in choices.values]
        if unknown:
            several = " (or several, joined by commas)" if choices.several else ""
            raise error(
                f"{name} must be one of {', '.join(choices.values)}{several}, got "
                f"{', '.join(map(repr, unknown))}"
            )


def check_finite(config: Any, error: type[Exception] = ValueError) -> None:
    """Every float field of a config is a finite number: an inf or nan learning rate, scale or
    coefficient is refused here, before anything compiles, rather than found as a non-finite
    loss after the first update."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise error(f"{field.name} must be a finite number, got {value}")
