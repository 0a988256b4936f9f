"""`jaxrl plot`: learning curves of run folders, one curve per setting.

    jaxrl plot RUN|SWEEP... [--out PNG] [--title TITLE]

Writes one PNG (default: curves.png in the run or sweep folder plotted, `default_out`) with
two panels: eval return against env steps, and eval return against wall-clock seconds (the
rows' `wall_seconds`: training plus compile time since the start).
Runs whose config.json agree on everything but seed, length and devices (`IGNORED_KEYS`) are one
setting, drawn as the mean over its seeds with a 95% percentile-bootstrap confidence band of
that mean; a setting of one run is a plain line. Settings are labelled by what differs between
them (`algo=sac actor_lr=0.0003`), a single setting by its run folder's name (several seeds:
their common parent folder or common name prefix).

A run of several seeds (`jaxrl train --seeds N`, `--vmap`) is read from its members' folders
(RUN/seed_N, RUN/SETTING/seed_N: each seed's own metrics.jsonl; the run's own rows hold only
their mean), which can also be given one by one (`jaxrl plot RUN/seed_*`); a sweep folder
(`jaxrl sweep`) stands for every run below it (`collect`).

Functions: `bootstrap_band` (the band, pure numpy in and out), `group_runs` (run folders by
setting), `collect` (the folders given, as the members of curves), `main` (the command;
`jaxrl.cli` passes it the arguments after `plot`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxrl.errors import JaxrlError

# Keys of a config.json's "train" entry that do not describe the setting: runs differing only
# in these are seeds of one curve. A run's length is not part of its setting (`--resume
# --steps` extends one): runs of different lengths are drawn over the env steps they share.
# Nor are the devices it ran on (`--resume --devices` changes them; the numbers do not
# depend on them), nor eval_every as asked: `--resume --steps` writes the chunk's env steps
# there (5000 becomes 5008 where a chunk is 313 iterations of 16 envs). The evaluation
# cadence the run has is its env_info's env_steps_per_chunk, which stays in the setting.
IGNORED_KEYS = ("seed", "total_steps", "devices", "eval_every", "num_evals")
CADENCE = ("env_info", "env_steps_per_chunk")

# The parts of config.json that describe a setting. "run" (checkpoint cadence, loggers),
# "env_info" (derived from the env; num_chunks grows on a resume) and "versions" (library
# versions and the machine's devices) do not, so seeds run on different machines still group.
SETTING_SECTIONS = ("train", "agent")

# Columns of metrics.jsonl the plot reads.
REQUIRED_COLUMNS = ("env_steps", "wall_seconds", "eval_return")


class PlotError(JaxrlError, ValueError):
    """A run folder that cannot be plotted, or an output that cannot be written."""


class NotLoggedYet(PlotError):
    """A run folder without a metrics row yet: begun (compiling, say) or killed before its first
    evaluation."""


# -- The confidence band --------------------------------------------------------------------


def bootstrap_band(
    values: np.ndarray, confidence: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) over axis 0 of `values` ([seeds, points]): the mean over seeds and
    the `confidence` percentile-bootstrap interval of that mean, resampling seeds with
    replacement `resamples` times from a numpy RNG seeded with `seed` (so it is deterministic).

    With one seed there is nothing to resample: low and high are the mean. Where all seeds
    agree the band is exactly the mean, and the band always contains the mean."""
    # scipy's bootstrap (a dependency) rather than a hand-written one. It raises on one
    # observation, hence the early return.
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if values.ndim == 0 or values.shape[0] == 0:
        raise ValueError(f"bootstrap_band needs values of shape [seeds, ...], got {values.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = values.mean(axis=0)
    if values.shape[0] == 1:
        return mean, mean.copy(), mean.copy()
    # scipy 1.15 renamed random_state to rng (both take a numpy Generator).
    rng_name = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
    result = stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=resamples,
        vectorized=True,
        axis=0,
        confidence_level=confidence,
        method="percentile",
        **{rng_name: np.random.default_rng(seed)},
    )
    low = np.minimum(np.asarray(result.confidence_interval.low, dtype=float), mean)
    high = np.maximum(np.asarray(result.confidence_interval.high, dtype=float), mean)
    same = np.all(values == values[:1], axis=0)  # the mean of equal values can round off them
    return mean, np.where(same, mean, low), np.where(same, mean, high)


# -- Reading run folders --------------------------------------------------------------------


def _folder(run_dir: str | os.PathLike) -> pathlib.Path:
    path = pathlib.Path(run_dir)
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise PlotError(f"{path} is not a run folder: it {what}")
    return path


def read_config(run_dir: str | os.PathLike) -> dict:
    """A run folder's config.json."""
    path = _folder(run_dir)
    config_file = path / "config.json"
    if not config_file.is_file():
        raise PlotError(f"{path} is not a run folder: it has no config.json")
    try:
        saved = json.loads(config_file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PlotError(f"{config_file} cannot be read: {error}") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("train", {}), dict):
        raise PlotError(f'{config_file} is not a run config (no "train" entry)')
    return saved


def read_metrics(run_dir: str | os.PathLike) -> list[dict]:
    """A run folder's metrics.jsonl rows. A last line cut short (a killed run) is skipped."""
    path = _folder(run_dir)
    metrics_file = path / "metrics.jsonl"
    if not metrics_file.is_file():
        raise NotLoggedYet(f"{path} has no metrics.jsonl (a run that has not logged yet?)")
    try:
        text = metrics_file.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise PlotError(f"{metrics_file} cannot be read: {error}") from None
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):  # no newline after it: the write was cut off
                continue
            raise PlotError(f"{metrics_file}:{number} is not a JSON row") from None
        if not isinstance(row, dict):
            raise PlotError(f"{metrics_file}:{number} is not a JSON object")
        missing = [name for name in REQUIRED_COLUMNS if name not in row]
        if missing:
            raise PlotError(f"{metrics_file}:{number} has no {', '.join(missing)}")
        bad = [
            name
            for name in REQUIRED_COLUMNS
            if not (row[name] is None or isinstance(row[name], int | float))
            or isinstance(row[name], bool)
            or (name == "env_steps" and row[name] is None)
        ]
        if bad:
            raise PlotError(f"{metrics_file}:{number}: {', '.join(bad)} is not a number")
        rows.append(row)
    if not rows:
        raise NotLoggedYet(f"{path} has no rows in metrics.jsonl (no evaluation yet)")
    return rows


# -- Grouping runs by setting ---------------------------------------------------------------


def _freeze(value: Any) -> Any:
    """A hashable value that compares as the JSON value does (lists as tuples)."""
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _flatten(entry: Any, prefix: tuple[str, ...]) -> dict[tuple[str, ...], Any]:
    if not isinstance(entry, dict) or not entry:
        return {prefix: _freeze(entry)}
    flat = {}
    for key, value in entry.items():
        flat.update(_flatten(value, (*prefix, str(key))))
    return flat


def setting(saved: dict) -> dict[tuple[str, ...], Any]:
    """What describes a run's setting: its "train" and "agent" entries flattened to
    {(section, key, ...): value}, without the train keys of `IGNORED_KEYS`, and its evaluation
    cadence (`CADENCE`, where config.json has it)."""
    flat: dict[tuple[str, ...], Any] = {}
    for section in SETTING_SECTIONS:
        entry = dict(saved.get(section) or {})
        if section == "train":
            for key in IGNORED_KEYS:
                entry.pop(key, None)
        for key, value in entry.items():
            flat.update(_flatten(value, (section, str(key))))
    cadence = (saved.get(CADENCE[0]) or {}).get(CADENCE[1])
    if cadence is not None:
        flat[CADENCE] = cadence
    return flat


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(_text(v) for v in value)  # widths as on the command line: 256,256
    return str(value)


def _folder_label(paths: list[pathlib.Path]) -> str:
    """One setting's name from its folders: the run's name; for several runs, their common
    parent's name (a sweep's SETTING/sSEED) or else the common start of their names."""
    names = [p.resolve().name or str(p) for p in paths]
    if len(paths) == 1:
        return names[0]
    parents = {p.resolve().parent for p in paths}
    if len(parents) == 1 and next(iter(parents)).name:
        return next(iter(parents)).name
    prefix = os.path.commonprefix(names).rstrip("-_. ")
    return prefix or names[0]


def _labels(settings: list[dict], folders: list[list[pathlib.Path]]) -> list[str]:
    """Each setting's label: the keys whose values differ between settings, in config order.
    Keys only some settings have (another algorithm's) count where those settings differ, and
    when the algorithm differs, keys that follow from it (its loop defaults) are left out."""
    if len(settings) == 1:
        return [_folder_label(folders[0])]
    keys: dict[tuple[str, ...], None] = {}
    for flat in settings:
        keys.update(dict.fromkeys(flat))
    algo = ("train", "algo")
    algos_differ = len({flat.get(algo) for flat in settings}) > 1
    shown = []
    for key in keys:
        having = [flat for flat in settings if key in flat]
        if len({flat[key] for flat in having}) < 2:
            continue
        if algos_differ and key not in (algo, ("train", "env")):
            by_algo: dict[Any, set] = {}
            for flat in having:
                by_algo.setdefault(flat.get(algo), set()).add(flat[key])
            if all(len(values) == 1 for values in by_algo.values()):
                continue
        shown.append(key)
    # A key by its name, or with its section where that name is in both sections.
    names = {key: ".".join(key[1:]) for key in shown}
    clashes = {name for name in names.values() if list(names.values()).count(name) > 1}
    names = {key: ".".join(key) if name in clashes else name for key, name in names.items()}
    labels = [
        " ".join(f"{names[key]}={_text(flat[key])}" for key in shown if key in flat)
        for flat in settings
    ]
    # Settings that differ only in keys some of them lack: tell them apart by their folders.
    return [
        f"{label} [{_folder_label(paths)}]".lstrip()
        if not label or labels.count(label) > 1
        else label
        for label, paths in zip(labels, folders, strict=True)
    ]


def _group(configs: dict[pathlib.Path, dict]) -> dict[str, list[pathlib.Path]]:
    groups: dict[Any, list[pathlib.Path]] = {}
    flats: dict[Any, dict] = {}
    for path, saved in configs.items():
        flat = setting(saved)
        key = tuple(sorted(flat.items(), key=lambda item: item[0]))
        groups.setdefault(key, []).append(path)
        flats.setdefault(key, flat)
    labels = _labels([flats[key] for key in groups], list(groups.values()))
    return dict(zip(labels, groups.values(), strict=True))


def _member_config(saved: dict, setting: dict, seed: int) -> dict:
    """The config of one member of a run of several seeds or settings (`--seeds`, `--vmap`):
    the run's own, with the member's seed and its setting's values."""
    member = json.loads(json.dumps(saved))  # a deep copy
    member.pop("seeds", None)
    member.pop("vmap", None)
    member["train"] = {**(member.get("train") or {}), "seed": seed}
    member["agent"] = dict(member.get("agent") or {})
    for name, value in setting.items():
        member["train" if name in member["train"] else "agent"][name] = value
    return member


def _grid_members(run: pathlib.Path, saved: dict) -> dict[pathlib.Path, dict]:
    """A run of several seeds or settings: its members' folders (RUN/seed_N, or
    RUN/SETTING/seed_N, each with its own metrics.jsonl) and their configs."""
    from jaxrl.grid import Grid

    run_grid = Grid.from_json(saved)
    if run_grid is None:
        return {}
    return {
        run / run_grid.member_dir(setting, seed): _member_config(saved, setting, seed)
        for setting, seed in run_grid.members
    }


def _sweep_runs(path: pathlib.Path) -> list[pathlib.Path]:
    """The run folders a sweep folder (`jaxrl sweep`: SWEEP/SETTING/sSEED) holds."""
    found = {config.parent for config in path.glob("*/config.json")}
    found |= {config.parent for config in path.glob("*/*/config.json")}
    return sorted(found)


def _expand(run_dir) -> tuple[dict[pathlib.Path, dict], pathlib.Path]:
    """The curves' members a folder given to `jaxrl plot` stands for, {folder holding
    metrics.jsonl: its config}, and the folder the figure goes to by default (its home):
    - a run folder: itself; of a run of several seeds or settings, its seed_* members;
    - a member folder of such a run (RUN/seed_N, RUN/SETTING/seed_N): that member (home RUN);
    - a sweep folder (of `jaxrl sweep`): every run below it (home: the sweep folder)."""
    path = _folder(run_dir)
    if (path / "config.json").is_file():
        saved = read_config(path)
        return (_grid_members(path, saved) or {path: saved}), path
    for run in (path.parent, path.parent.parent):
        if (run / "config.json").is_file():
            members = _grid_members(run, read_config(run))
            for member, config in members.items():
                if member.resolve() == path.resolve():
                    return {path: config}, run
    runs = _sweep_runs(path)
    if runs:
        members: dict[pathlib.Path, dict] = {}
        for run in runs:
            members.update(_expand(run)[0])
        return members, path
    raise PlotError(
        f"{path} is not a run folder: it has no config.json (nor is it a sweep folder, or the "
        "seed_* folder of a run of several seeds)"
    )


def collect(run_dirs) -> tuple[dict[pathlib.Path, dict], list[pathlib.Path]]:
    """Every member of the folders given ({folder with metrics.jsonl: its config}, each once)
    and each given folder's home (where its figure goes by default)."""
    members: dict[pathlib.Path, tuple[pathlib.Path, dict]] = {}
    homes = []
    for run_dir in run_dirs:
        found, home = _expand(run_dir)
        homes.append(home)
        for path, saved in found.items():
            members.setdefault(path.resolve(), (path, saved))
    return dict(members.values()), homes


def default_out(homes: list[pathlib.Path]) -> pathlib.Path:
    """Where the figure goes without --out: curves.png in the run or sweep folder plotted; of
    several, in the folder that holds them all (the current folder where that is the root)."""
    resolved = list(dict.fromkeys(home.resolve() for home in homes))
    if len(resolved) == 1:
        return homes[0] / "curves.png"
    common = pathlib.Path(os.path.commonpath(resolved))
    if common == pathlib.Path(common.anchor):
        return pathlib.Path("curves.png")
    try:
        return common.relative_to(pathlib.Path.cwd()) / "curves.png"
    except ValueError:
        return common / "curves.png"


def group_runs(run_dirs) -> dict[str, list[pathlib.Path]]:
    """Run folders by setting, {label: [run folder, ...]} in the order the settings first
    appear: runs whose config.json "train" (less `IGNORED_KEYS`) and "agent" entries are equal
    are one setting. A run of several seeds (`--seeds`) stands for its seed_* folders, a sweep
    folder for its runs. Raises PlotError for a folder without a config.json."""
    run_dirs = list(run_dirs)
    if not run_dirs:
        raise PlotError("no run folders given")
    return _group(collect(run_dirs)[0])


# -- Curves and the figure ------------------------------------------------------------------


def _number(value: Any) -> float:
    return np.nan if value is None else float(value)


def _curve(label: str, paths: list[pathlib.Path], metrics: dict[pathlib.Path, list[dict]]):
    """(env steps, mean wall seconds, eval returns [runs, points]) at the env steps that all
    runs of a setting evaluated at (one stopped early: up to where it stopped)."""
    by_steps = [{int(row["env_steps"]): row for row in metrics[path]} for path in paths]
    common = sorted(set.intersection(*(set(rows) for rows in by_steps)))
    if not common:
        names = ", ".join(str(p) for p in paths)
        raise PlotError(f"the runs of setting {label!r} share no env_steps: {names}")
    wall = np.array(
        [[_number(rows[s]["wall_seconds"]) for s in common] for rows in by_steps], dtype=float
    )
    # A null value (none written) is a gap in the curve, as NaN is.
    returns = np.array(
        [[_number(rows[s]["eval_return"]) for s in common] for rows in by_steps], dtype=float
    )
    return np.array(common, dtype=float), wall.mean(axis=0), returns


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def plot_runs(
    run_dirs,
    out: str | os.PathLike | None = None,
    title: str | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[dict[str, list[pathlib.Path]], pathlib.Path]:
    """Reads and checks every run, then writes the figure to `out` (a .png; its folder is made
    if missing; None: curves.png in the run or sweep folder, `default_out`). Returns the groups
    and the path written. A run found inside a folder given (a sweep's, under way) that has not
    logged yet is left out, and `say` told; one given itself is an error."""
    run_dirs = list(run_dirs)
    if not run_dirs:
        raise PlotError("no run folders given")
    if out is not None:
        out = pathlib.Path(out)
        if out.suffix.lower() != ".png":
            raise PlotError(f"--out must be a .png file, got {str(out)!r}")
    configs, homes = collect(run_dirs)
    if out is None:
        out = default_out(homes)
    given = {pathlib.Path(run_dir).resolve() for run_dir in run_dirs}
    metrics, waiting = {}, []
    for path in configs:
        try:
            metrics[path] = read_metrics(path)
        except NotLoggedYet:
            if path.resolve() in given:
                raise
            waiting.append(path)
    if not metrics:
        raise NotLoggedYet(f"no run under {', '.join(map(str, run_dirs))} has logged yet")
    if waiting and say is not None:
        names = ", ".join(map(str, waiting))
        say(f"left out {_plural(len(waiting), 'run')} not logged yet: {names}")
    configs = {path: configs[path] for path in metrics}
    groups = _group(configs)
    curves = {label: _curve(label, group, metrics) for label, group in groups.items()}

    import matplotlib

    matplotlib.use("Agg")  # no screen: render to the file only
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    banded = False
    for index, (label, (steps, wall, returns)) in enumerate(curves.items()):
        group = groups[label]
        seeds = {configs[p].get("train", {}).get("seed") for p in group}
        count = _plural(len(group), "seed" if len(seeds) == len(group) else "run")
        mean, low, high = bootstrap_band(returns)
        color = f"C{index % 10}"
        marker = "o" if len(steps) == 1 else None
        for ax, x in zip(axes, (steps, wall), strict=True):
            ax.plot(x, mean, color=color, marker=marker, label=f"{label} ({count})")
            if len(group) > 1:
                ax.fill_between(x, low, high, color=color, alpha=0.2, linewidth=0)
                banded = True
    for ax, xlabel in zip(
        axes, ("env steps", "wall-clock seconds (compile included)"), strict=True
    ):
        ax.set_xlabel(xlabel)
        ax.set_ylabel("eval return")
        ax.grid(alpha=0.3)
    axes[0].legend(
        fontsize=8,
        title="mean, 95% bootstrap CI over seeds" if banded else None,
        title_fontsize=8,
    )
    if title is None:
        envs = dict.fromkeys(str(c.get("train", {}).get("env", "")) for c in configs.values())
        title = ", ".join(env for env in envs if env)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100, format="png")
    except OSError as error:
        raise PlotError(f"cannot write {out}: {error.strerror or error}") from None
    finally:
        plt.close(fig)
    return groups, out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxrl plot",
        description=(
            "Learning curves of run folders: eval return against env steps and against "
            "wall-clock seconds. Runs that differ only in their seed are one curve: the mean "
            "over seeds with a 95% bootstrap confidence band."
        ),
        allow_abbrev=False,
    )
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help=(
            "run folders (of jaxrl train; a run of several seeds draws its seed_* folders, "
            "which can be given too), or sweep folders (of jaxrl sweep)"
        ),
    )
    parser.add_argument(
        "--out",
        default=None,
        help="PNG file to write (default: curves.png in the run or sweep folder)",
    )
    parser.add_argument("--title", default=None, help="figure title (default: the env)")
    return parser


def main(argv: list[str]) -> int:
    """`jaxrl plot RUN|SWEEP... [--out PNG] [--title TITLE]`; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, or a usage error argparse has printed
        return stop.code if isinstance(stop.code, int) else 2
    try:
        groups, out = plot_runs(args.runs, args.out, args.title, say=print)
    except PlotError as error:
        print(f"jaxrl plot: error: {error}", file=sys.stderr)
        return 2
    runs = sum(len(group) for group in groups.values())
    print(f"wrote {out} ({_plural(len(groups), 'setting')}, {_plural(runs, 'run')})")
    return 0
