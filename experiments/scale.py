"""`jaxrl scale`: fit how an off-policy method scales with its updates-to-data ratio, and predict
the settings and cost of a larger run (issue 40; the method: docs/SCALE.md). This module holds
the command (`main`, its flags and printing) and the Python API (`run`, `fit`) over the modules
of each step: `scale_plan` (the grid checked), `scale_train` (trained), `scale_folder` (read
back), `scale_report` (fitted, over `scale_fit`) and `scale_figures` (scale.json, scale.png).

    jaxrl scale [TRAIN FLAGS] --target J --utd 0.25,0.5,1 --batch-sizes 128,256 \\
        --lrs 1e-4,3e-4,1e-3 --seeds 4 --out FOLDER [--predict-data D ...]
    jaxrl scale --from FOLDER [--target J] [--predict-delta DELTA ...]   # refit, no training

Training: one `jaxrl train` program per (UTD ratio sigma, batch size), whose learning rates and
seeds train together under vmap (`--vmap LR_FIELD=... --seeds S`, jaxrl's own settings grid):
FOLDER/utd=SIGMA-batch=B is that run's folder. The learning-rate axis is one learning rate
shared by actor and critic, as the papers tune it: LR_FIELD defaults to the tied axis
actor_lr+critic_lr (`scale_plan.default_lr_field`); the temperature's alpha_lr stays at its base
value unless named (--lr-field actor_lr+critic_lr+alpha_lr); one field alone is --lr-field
critic_lr. sigma is updates_per_step / num_envs (one loop iteration steps every env once), so
each sigma must be a whole number of updates per iteration.
A folder that already holds part of the grid goes on from it: a run with its summary.json is
done and skipped; one without is resumed from its newest checkpoint (`jaxrl train --resume`:
started over where it has none); one that stopped on a NaN (scale_failed.json) is not retried.

Fitting and reporting (`scale_report`, over `scale_fit`; the files: `scale_figures`): the
crossings of the target return J, the laws with bootstrap intervals over seeds, the predictions,
FOLDER/scale.json and FOLDER/scale.png.

Python: `run(config, agent_config, out, target=..., utds=..., batch_sizes=..., lrs=...)` trains
and fits; `fit(folder, target=...)` refits a folder; both return the report (scale.json's
content); `scale_plan.plan` checks a grid. `jaxrl.scale` is this module.
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
from collections.abc import Sequence
from typing import Any

from jaxrl.config import ConfigError, TrainConfig
from jaxrl.experiments.scale_figures import write_report
from jaxrl.experiments.scale_folder import ScaleError, read_scale_folder
from jaxrl.experiments.scale_plan import DEFAULT_SEEDS, MIN_UTDS, Plan, numbers, plan
from jaxrl.experiments.scale_report import Budget, fit_report
from jaxrl.experiments.scale_train import train_grid

__all__ = ["Budget", "ScaleError", "fit", "main", "plan", "run"]

DEFAULT_BOOTSTRAP = 200
# Flags the grid sets itself (or that do not apply to it).
REFUSED = {
    "--seed": "the grid's seeds are --seeds",
    "--vmap": "the grid vmaps the learning rates itself (--lrs, --lr-field)",
    "--resume": "a scale folder resumes by running the same command again",
    "--updates-per-step": "the grid sets it from --utd (updates_per_step = UTD x num_envs)",
    "--batch-size": "the grid sets it from --batch-sizes",
}


# ---------------------------------------------------------------- the API


def fit(
    folder: str | os.PathLike,
    *,
    target: float | None = None,
    utds: Sequence[float] | None = None,
    batch_sizes: Sequence[int] | None = None,
    lrs: Sequence[float] | None = None,
    budgets: Sequence[Budget] = (),
    bootstrap: int = DEFAULT_BOOTSTRAP,
    model_size: float | None = None,
    name: str = "scale",
    write: bool = True,
    widths: Sequence[int] | None = None,
) -> dict:
    """Reads a scale folder's runs (all of them, or those of the given UTD ratios, batch sizes,
    learning rates and critic widths), fits and predicts, writes FOLDER/NAME.json and NAME.png
    (and NAME-width=W.png per width, of a grid with a width axis); returns the report.
    `target` defaults to the grid's own J."""
    folder = pathlib.Path(folder)
    spec, members = read_scale_folder(folder, utds, batch_sizes, lrs, widths)
    if spec.get("widths") and model_size is not None:
        raise ConfigError(
            "--model-size: a grid with a width axis counts each width's critic parameters "
            "itself (scale_grid.json's critic_params); leave --model-size out"
        )
    target = spec["target"] if target is None else float(target)
    if not members:
        raise ScaleError(f"{folder}: no run of the grid has logged an evaluation yet")
    report = fit_report(
        members,
        target,
        bootstrap=bootstrap,
        model_size=model_size,
        budgets=budgets,
        num_envs=spec["train"]["num_envs"],
    )
    head = {
        "algo": spec["algo"],
        "env": spec["env"],
        "lr_field": spec["lr_field"],
        "seeds": spec["seeds"],
        "smoothing": "seed mean, then isotonic (non-decreasing) regression; D_J interpolated "
        "linearly between the two evaluations around the first one at or above J",
        "title": f"{spec['algo']} on {spec['env']}: data and compute to J = {target:g}",
    }
    report = {**head, **report}
    if write:
        report["files"] = [str(p) for p in write_report(report, folder, name)]
    return report


def run(
    config: TrainConfig,
    agent_config: Any,
    out: str | os.PathLike,
    *,
    target: float,
    utds: Sequence[float] | None = None,
    batch_sizes: Sequence[int] | None = None,
    lrs: Sequence[float] | None = None,
    seeds: Any = DEFAULT_SEEDS,
    lr_field: str | None = None,
    budget: float | None = None,
    budgets: Sequence[Budget] = (),
    bootstrap: int = DEFAULT_BOOTSTRAP,
    model_size: float | None = None,
    progress: Any = "auto",
    options: Any = None,
    compile_cache: bool = True,
    widths: Sequence[int] | None = None,
    name: str = "scale",
) -> dict:
    """Plans (every check first), trains what the folder does not have yet, then fits the
    grid's runs: `jaxrl scale` from Python. Returns the report (NAME.json's content)."""
    the_plan = plan(
        config,
        agent_config,
        out,
        target=target,
        utds=utds,
        batch_sizes=batch_sizes,
        lrs=lrs,
        seeds=seeds,
        lr_field=lr_field,
        budget=budget,
        widths=widths,
    )
    say = print if progress is not None else (lambda line: None)
    for note in the_plan.notes:
        say(f"note: {note}")
    return _train_and_fit(
        the_plan,
        budgets=budgets,
        bootstrap=bootstrap,
        model_size=model_size,
        name=name,
        progress=progress,
        options=options,
        compile_cache=compile_cache,
        say=say,
    )


def _train_and_fit(the_plan: Plan, *, budgets, bootstrap, model_size, name, say=print,
                   **training) -> dict:  # fmt: skip
    """Trains what `the_plan`'s folder lacks (`training`: train_grid's progress, options and
    compile_cache), then fits the plan's grid: `run`'s and `main`'s end."""
    train_grid(the_plan, say=say, **training)
    return fit(
        the_plan.out,
        target=the_plan.target,
        utds=the_plan.utds,
        batch_sizes=the_plan.batch_sizes,
        budgets=budgets,
        bootstrap=bootstrap,
        model_size=model_size,
        name=name,
        widths=the_plan.widths,
    )


# ---------------------------------------------------------------- the command


USAGE = """usage: jaxrl scale [TRAIN FLAGS] --target J [--utd S1,S2,S3,...] [--batch-sizes B1,...]
           [--lrs LR1,...] [--lr-field actor_lr+critic_lr] [--widths W1,...] [--seeds 4]
           [--budget UPDATES]
           [--out FOLDER] [--predict-data D] [--predict-compute C] [--predict-delta DELTA]
           [--bootstrap 200] [--model-size N] [--dry-run]
       jaxrl scale --from FOLDER [--target J] [--utd ...] [--batch-sizes ...] [--lrs ...]
           [--widths ...]
           [--predict-...] [--name scale]

Fits the data an off-policy method needs to reach return J as a function of its UTD ratio sigma
(D_J = D_min + (beta/sigma)^alpha), the best batch size and learning rate as power laws in
sigma, with 95% bootstrap intervals over seeds, and predicts the settings and the data and
compute of a run for a budget. It trains one program per (UTD, batch size), the learning rates
and seeds vmapped inside it (FOLDER/utd=S-batch=B); a folder that holds part of the grid goes on
from it. The learning rate is one value for actor and critic (--lr-field actor_lr+critic_lr, a
tied --vmap axis; alpha_lr stays fixed unless named: actor_lr+critic_lr+alpha_lr; one field
alone: --lr-field critic_lr); a folder made with another axis goes on with its own. Writes
FOLDER/scale.json and FOLDER/scale.png. TRAIN FLAGS are jaxrl train's (--preset,
--algo, --env, --steps, --num-envs, ...) but --seed(s), --vmap, --batch-size, --updates-per-step
and --resume. UTD = updates_per_step / num_envs. An axis not given is proposed around the base
config (UTD x 1/4..4, batch x 1/2,1,2, lr x 1/3,1,3); --budget U sets --steps so that the whole
grid takes U gradient updates after its warm-up (--steps = --learning-starts + U / the grid's
updates per env step). --widths W1,W2,... adds the critic's width as an axis (one program
per (UTD, batch size, width), the critic's hidden sizes scaled so its first layer is W wide):
each width is fitted on its own, compute in FLOPs from its parameter count, and the report gives
each width's best batch size per UTD and whether large batches hurt small critics more (TD
overfitting). --from FOLDER refits a folder (another --target, a part of the
grid) without training. Method and papers: docs/SCALE.md."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxrl scale", add_help=False, allow_abbrev=False)
    add = parser.add_argument
    add("--target", type=float, default=None)
    add("--utd", default=None)
    add("--batch-sizes", default=None)
    add("--lrs", default=None)
    add("--lr-field", default=None)
    add("--widths", default=None)
    add("--seeds", default=str(DEFAULT_SEEDS))
    add("--budget", type=float, default=None)
    add("--out", default=None)
    add("--from", dest="source", default=None)
    add("--name", default="scale")
    add("--predict-data", type=float, action="append", default=[])
    add("--predict-compute", type=float, action="append", default=[])
    add("--predict-delta", type=float, action="append", default=[])
    add("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP)
    add("--model-size", type=float, default=None)
    add("--dry-run", action="store_true")
    add("-h", "--help", action="store_true")
    return parser


NUMERIC = ("--target", "--predict-data", "--predict-compute", "--predict-delta", "--budget")


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = _parser()
    parser.error = _argparse_error  # type: ignore[method-assign]
    # argparse takes "-1e6" for a flag: a number after a numeric flag is joined to it.
    joined, i = [], 0
    while i < len(argv):
        if argv[i] in NUMERIC and i + 1 < len(argv) and _is_number(argv[i + 1]):
            joined.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            joined.append(argv[i])
            i += 1
    return parser.parse_known_args(joined)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _argparse_error(message: str):
    raise ConfigError(message)


def _budgets(args) -> list[Budget]:
    out = [Budget(data=v) for v in args.predict_data]
    out += [Budget(compute=v) for v in args.predict_compute]
    out += [Budget(delta=v) for v in args.predict_delta]
    return out


def _check_common(args) -> None:
    if args.bootstrap < 0:
        raise ConfigError(f"--bootstrap must be >= 0 resamples, got {args.bootstrap}")
    if args.model_size is not None and not args.model_size > 0:
        raise ConfigError(f"--model-size must be > 0 parameters, got {args.model_size:g}")
    if args.target is not None and not math.isfinite(args.target):
        raise ConfigError(f"--target must be a finite return, got {args.target}")


def main(argv: list[str]) -> int:
    """jaxrl scale ...: 0 when fitted, 1 when the runs trained but could not be fitted (the
    crossings are in scale.json), 2 on bad input (raised as ConfigError to the CLI)."""
    args, rest = _parse(argv)
    if args.help:
        print(USAGE)
        return 0
    _check_common(args)
    budgets = _budgets(args)
    utds = numbers(args.utd, "--utd")
    batch_sizes = numbers(args.batch_sizes, "--batch-sizes", int)
    lrs = numbers(args.lrs, "--lrs")
    widths = numbers(args.widths, "--widths", int)
    if widths and args.model_size is not None:
        raise ConfigError(
            "--model-size: a grid with a width axis counts each width's critic parameters "
            "itself; leave --model-size out"
        )
    if args.source is not None:
        if rest:
            raise ConfigError(
                f"--from refits a folder without training; {' '.join(rest)} do not apply"
            )
        report = fit(
            args.source,
            target=args.target,
            utds=utds,
            batch_sizes=batch_sizes,
            lrs=lrs,
            budgets=budgets,
            bootstrap=args.bootstrap,
            model_size=args.model_size,
            name=args.name,
            widths=widths,
        )
        return _print_report(report)
    if args.target is None:
        raise ConfigError("jaxrl scale needs the target return J: --target J")
    if utds is not None and len(utds) < MIN_UTDS:
        raise ConfigError(
            f"--utd {args.utd}: fitting D_J(sigma) = D_min + (beta/sigma)^alpha needs at least "
            f"{MIN_UTDS} UTD ratios, got {len(utds)}"
        )
    for word in rest:
        flag = word.split("=", 1)[0]
        if flag in REFUSED:
            raise ConfigError(f"jaxrl scale does not take {flag}: {REFUSED[flag]}")
    if args.budget is not None and any(
        w.split("=")[0] in ("--steps", "--total-steps") for w in rest
    ):
        raise ConfigError("give --budget or --steps, not both (--budget sets the steps)")
    from jaxrl.config.resolve import build_configs, default_out

    train, agent, options = build_configs(rest)
    out = args.out or default_out(train).replace("runs/", "scales/", 1)
    the_plan = plan(
        train,
        agent,
        out,
        target=args.target,
        utds=utds,
        batch_sizes=batch_sizes,
        lrs=lrs,
        seeds=args.seeds,
        lr_field=args.lr_field,
        budget=args.budget,
        widths=widths,
    )
    _print_plan(the_plan)
    if args.dry_run:
        return 0
    report = _train_and_fit(
        the_plan,
        budgets=budgets,
        bootstrap=args.bootstrap,
        model_size=args.model_size,
        name=args.name,
        progress=None if options.quiet else "auto",
        options=options.kept(),
        compile_cache=options.compile_cache,
    )
    return _print_report(report)


def _print_plan(the_plan: Plan) -> None:
    for note in the_plan.notes:
        print(f"note: {note}")
    counts = {
        s: sum(p.status == s for p in the_plan.programs)
        for s in ("new", "resume", "done", "failed")
    }
    print(
        f"scale grid {the_plan.out}: {the_plan.config.algo} on {the_plan.config.env}, J = "
        f"{the_plan.target:g}, {the_plan.config.total_steps:,} env steps per run\n"
        f"  UTD {', '.join(f'{u:g}' for u in the_plan.utds)} ({the_plan.config.num_envs} envs) x "
        f"batch {', '.join(map(str, the_plan.batch_sizes))}"
        + (f" x critic width {', '.join(map(str, the_plan.widths))}" if the_plan.widths else "")
        + f": {len(the_plan.programs)} programs, "
        f"each {the_plan.lr_field} {', '.join(f'{lr:g}' for lr in the_plan.lrs)} x seeds "
        f"{', '.join(map(str, the_plan.seeds))} ({the_plan.members} members)\n"
        f"  {the_plan.cost():,.0f} gradient updates in all; programs: "
        + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    )


def _print_report(report: dict) -> int:
    if "by_width" in report:
        return _print_widths(report)
    print(f"J = {report['target']:g}: env steps to J (seed-mean isotonic crossing) per run")
    for r in report["runs"]:
        where = (
            f"{r['env_steps']:,.0f} env steps, {r['updates']:,.0f} updates"
            if r["env_steps"] is not None
            else f"not reached in {r['last_env_steps']:,.0f} env steps"
        )
        mark = " (stopped: NaN)" if r["failed"] else ""
        print(f"  UTD {r['utd']:<6g} batch {r['batch_size']:<5} lr {r['lr']:<9.3g} {where}{mark}")
    if report["fit"] is None:
        print(f"jaxrl scale: no fit: {report['fit_error']}", file=sys.stderr)
        _print_files(report)
        return 1
    for warning in report.get("warnings", []):
        print(f"warning: {warning}")
    fit_ = report["fit"]
    print("fit (95% bootstrap interval over seeds):")
    for name, entry in fit_.items():
        if name == "bootstrap":
            continue
        interval = entry["interval"]
        span = f" [{interval[0]:.4g}, {interval[1]:.4g}]" if interval else ""
        print(f"  {name:<10} {entry['value']:.4g}{span}")
    for p in report["predictions"]:
        ((kind, value),) = p["budget"].items()
        if "error" in p:
            print(f"predict {kind} {value:g}: {p['error']}")
            continue
        use = p.get("train_with", {})
        interval = (p.get("interval") or {}).get("env_steps")
        span = f" [{interval[0]:,.0f}, {interval[1]:,.0f}]" if interval else ""
        beyond = " (extrapolated beyond the grid's UTD ratios)" if p.get("extrapolated") else ""
        print(
            f"predict {kind} {value:g}: UTD {p['utd']:.3g} (--updates-per-step "
            f"{use.get('updates_per_step')} with {use.get('num_envs')} envs), batch "
            f"{p['batch_size']:.0f}, lr {p['lr']:.3g}: {p['env_steps']:,.0f}{span} env steps, "
            f"{p['compute']:.4g} {report['compute_unit']}{beyond}"
        )
    _print_files(report)
    return 0


def _print_widths(report: dict) -> int:
    """A grid with a width axis: each width's own report, then the best batch size per width
    and the TD-overfitting check; 0 where at least one width was fitted."""
    fitted = 0
    for width, sub in report["by_width"].items():
        size = next(r["critic_params"] for r in report["runs"] if r["width"] == int(width))
        print(f"== critic width {width} ({size:,} critic parameters)")
        fitted += _print_report({**sub, "files": None}) == 0
    print("best batch size per critic width (D_J at the best learning rate):")
    for w in report["batch_by_width"]:
        cells = ", ".join(f"UTD {s['utd']:g}: {s['best_batch'] or '-'}" for s in w["utd"])
        print(f"  width {w['width']:<6} {cells}")
    check = report["td_overfitting"]
    if check["seen"] is None:
        print(f"TD overfitting: not checked ({check['why']})")
    else:
        penalties = ", ".join(
            f"width {k}: {'-' if v is None else f'{v:.2f}x'}" for k, v in check["penalty"].items()
        )
        verdict = "seen" if check["seen"] else "not seen"
        print(
            f"TD overfitting (large batches hurting small critics): {verdict}; D_J of batch "
            f"{check['largest_batch']} over the best batch's, median over UTD: {penalties}"
        )
    _print_files(report)
    return 0 if fitted else 1


def _print_files(report: dict) -> None:
    if report.get("files"):
        print("wrote " + ", ".join(report["files"]))
