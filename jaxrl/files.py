"""Files written whole or not at all.

A reader (a `jaxrl plot` of a run in progress, a second process sharing the program store or a
scale grid's folder) sees a file's old content or its new one, never part of it: the bytes go to
a temporary file of a name no other writer uses, in the same folder, which then replaces the
file (`os.replace`, atomic within one file system). Ten lines of our own rather than a
dependency: the standard library has every piece but the combination.

It also names the files of folders that hold more than one run, which the run layer (refusing
such a folder as a run's `--out`) and the experiments that write them both read; here, because
this module imports neither JAX nor the experiments."""

from __future__ import annotations

import os
import pathlib
import tempfile

SWEEP_PLAN = "sweep.json"  # a sweep's command line (experiments/sweep.py), for --resume
SCALE_GRID = "scale_grid.json"  # a scale grid's plan (experiments/scale_plan.py)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# A temporary file is made readable by its owner alone; the file it becomes gets the mode a
# plain write would have given it (0644 under the usual umask), so that others who share a
# run's folder can read its config and summaries.
_MODE = 0o666 & ~_umask()


def write_atomically(path: str | os.PathLike, data: str | bytes) -> None:
    """`path` holds `data` (text as UTF-8), or, where writing fails (OSError raised), what it held
    before; no temporary file is left behind either way."""
    path = pathlib.Path(path)
    blob = data.encode() if isinstance(data, str) else data
    with tempfile.NamedTemporaryFile(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    ) as file:
        temporary = pathlib.Path(file.name)
    try:
        temporary.write_bytes(blob)
        os.chmod(temporary, _MODE)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
