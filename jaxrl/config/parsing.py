"""Command-line values parsed into Python ones: integers with underscores or exponents
(`1_000_000`, `1e6`), layer widths (`256,256`), `--env-option KEY=VALUE` literals, and tyro's
registry that applies these to every flag of their types (the commands' parsers share it)."""

from __future__ import annotations

import ast
import math
import typing
from typing import Any

import tyro

from jaxrl.errors import ConfigError


def parse_int(text: str) -> int:
    """An integer, also written as 2e6 or 1_000_000 (step counts and sizes)."""
    try:
        return int(text.replace("_", ""))
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None
    if not math.isfinite(value) or value != int(value):
        raise ValueError(f"expected an integer, got {text!r}")
    return int(value)


def parse_widths(text: str) -> tuple[int, ...]:
    """Layer widths: 256,256 (or 256x256)."""
    # Every entry must be a width: an empty one ("64,,64", a trailing comma) is a slip to
    # refuse, not to repair, since the network it would give is not the one written.
    try:
        widths = tuple(int(part) for part in text.replace("x", ",").split(","))
    except ValueError:
        raise ValueError(f"expected widths like 256,256, got {text!r}") from None
    return widths


def parser_registry() -> tyro.constructors.ConstructorRegistry:
    """tyro's parsing, with integers written as 2e6 and widths written as 256,256."""
    registry = tyro.constructors.ConstructorRegistry()
    spec = tyro.constructors.PrimitiveConstructorSpec

    @registry.primitive_rule
    def integers(info):
        if info.type is not int:
            return None
        return spec(
            nargs=1,
            metavar="INT",
            instance_from_str=lambda args: parse_int(args[0]),
            is_instance=lambda x: isinstance(x, int) and not isinstance(x, bool),
            str_from_instance=lambda x: [str(x)],
        )

    @registry.primitive_rule
    def widths(info):
        if typing.get_origin(info.type) is not tuple or typing.get_args(info.type) != (int, ...):
            return None
        return spec(
            nargs=1,
            metavar="W1,W2,...",
            instance_from_str=lambda args: parse_widths(args[0]),
            is_instance=lambda x: isinstance(x, tuple),
            str_from_instance=lambda x: [",".join(map(str, x))],
        )

    return registry


def _literal(text: str) -> Any:
    """A Python literal (2, 0.5, True, "name"), with true/false as booleans too; else the
    text itself."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_env_options(items: typing.Iterable[str]) -> dict[str, Any]:
    options = {}
    for text in items:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env-option takes KEY=VALUE, got {text!r}")
        options[key] = _literal(value)
    return options
