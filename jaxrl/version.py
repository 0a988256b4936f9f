"""The installed jaxrl's version, in a module of its own that imports nothing of jaxrl: the
CLI prints it, runs record it and resume checks it, none of them through another."""

from __future__ import annotations


def version() -> str:
    """The version of the installed distribution (pyproject.toml's), or a note that this
    checkout is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("jaxrl")
    except PackageNotFoundError:
        return "unknown (not installed)"
