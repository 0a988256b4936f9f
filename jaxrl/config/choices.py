"""`Choices`: the allowed values of a config's `str` field, marked on its type
(`Annotated[str, Choices(TRUNCATIONS)]`) so that `jaxrl train --help` and docs/FLAGS.md name
them. The config's own check (its __post_init__) validates against the same constant, so a bad
value still gets the config's message."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable


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
