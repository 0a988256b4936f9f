"""Validate `jaxrl scale`'s prediction on a held-back UTD ratio (issue 40: "validated, not just
fitted"): fit the laws on the cheaper part of a scale folder's grid (its smaller UTD ratios),
predict the data to reach J at a larger, held-back UTD ratio with its bootstrap interval, and
compare with what the runs measure there.

    python -m jaxrl.experiments.scale_validate FOLDER --fit-utd 0.25,0.5,1 --holdout-utd 2 \\
        [--target J] [--seeds 3] [--no-train] [--bootstrap 200]

Two measurements of the held-back UTD ratio, whichever are there:
- "grid": the folder's own runs at that UTD ratio, if the grid has it (trained by `jaxrl scale`
  but left out of the fit): the least D_J over its batch sizes and learning rates, as the fit
  would have taken it;
- "predicted settings" (unless --no-train): one new run at the held-back UTD ratio with the
  batch size and learning rate the laws predict for it (rounded: a whole batch size, the
  learning rate to 3 digits), --seeds seeds in one program, in FOLDER/validate/utd=S-batch=B
  (a rerun resumes or reuses it, as `jaxrl scale` does its runs).
It prints and writes FOLDER/validate-utd=S.json: the prediction (D_J, batch size, learning rate,
each with its 95% bootstrap interval), each measurement (the seed-mean crossing and each seed's),
whether it falls inside the interval and the ratio measured / predicted.

The other validation of the issue, a held-back higher J, needs the laws' dependence on J, which
the fit does not model (one J at a time); it is not done here.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from jaxrl.config import ConfigError
from jaxrl.errors import Interrupted
from jaxrl.experiments import scale_fit as sf
from jaxrl.experiments.scale_folder import (
    FAILED_FILE,
    ScaleError,
    read_run,
    read_scale_folder,
    run_name,
)
from jaxrl.experiments.scale_report import crossings, fit_report, interval


def _prediction(report: dict, sigma: float) -> dict:
    laws: sf.ScalingLaws = report["_laws"]
    boot: sf.Bootstrap = report["_bootstrap"]
    out = {
        "utd": sigma,
        "env_steps": float(sf.predict_data(laws.data, sigma)),
        "batch_size": float(laws.batch(sigma)),
        "lr": float(laws.lr(sigma)),
    }
    samples = boot.samples
    draws = {
        "env_steps": [
            float(sf.predict_data(sf.DataLaw(d, b, a), sigma))
            for d, b, a in zip(samples["d_min"], samples["beta"], samples["alpha"], strict=True)
        ],
        "batch_size": [
            float(sf.PowerLaw(c, e)(sigma))
            for c, e in zip(samples["batch_coef"], samples["batch_exp"], strict=True)
        ],
        "lr": [
            float(sf.PowerLaw(c, e)(sigma))
            for c, e in zip(samples["lr_coef"], samples["lr_exp"], strict=True)
        ],
    }
    out["interval"] = {name: interval(values) for name, values in draws.items()}
    return out


def _measured(rows: list[dict], predicted: dict) -> dict | None:
    """The least D_J among `rows` (one UTD ratio's runs) and how it compares to the
    prediction; None where none reached J."""
    reached = [r for r in rows if r["env_steps"] is not None]
    if not reached:
        return {"reached": False, "runs": len(rows), "last_env_steps": max(
            (r["last_env_steps"] for r in rows), default=0.0
        )}  # fmt: skip
    best = min(reached, key=lambda r: r["env_steps"])
    low, high = predicted["interval"]["env_steps"] or (None, None)
    return {
        "reached": True,
        "env_steps": best["env_steps"],
        "batch_size": best["batch_size"],
        "lr": best["lr"],
        "seed_env_steps": best["seed_env_steps"],
        "ratio_to_predicted": best["env_steps"] / predicted["env_steps"],
        # With a relative tolerance: exact laws give an interval of one value, up to rounding.
        "inside_interval": low is not None
        and low * (1 - 1e-9) <= best["env_steps"] <= high * (1 + 1e-9),
    }


def validate(
    folder: str | pathlib.Path,
    fit_utds: list[float],
    holdout_utd: float,
    *,
    target: float | None = None,
    seeds: int = 3,
    train: bool = True,
    bootstrap: int = 200,
    progress="auto",
) -> dict:
    """Fit on `fit_utds`, predict at `holdout_utd`, measure it (the grid's runs there, and a new
    run at the predicted settings unless `train` is False); writes FOLDER/validate-utd=S.json."""
    folder = pathlib.Path(folder)
    if holdout_utd <= max(fit_utds):
        raise ConfigError(
            f"--holdout-utd {holdout_utd:g} must be larger than the UTD ratios fitted "
            f"({', '.join(f'{u:g}' for u in fit_utds)}): the point is to extrapolate"
        )
    spec, members = read_scale_folder(folder, utds=fit_utds)
    if spec.get("widths"):
        raise ConfigError(
            f"{folder} has a width axis (--widths): validation takes a grid of one critic "
            "size, made without --widths"
        )
    target = spec["target"] if target is None else float(target)
    report = fit_report(members, target, bootstrap=bootstrap)
    if report["fit"] is None:
        raise ScaleError(f"no fit on UTD {fit_utds}: {report['fit_error']}")
    predicted = _prediction(report, holdout_utd)
    result = {
        "folder": str(folder),
        "target": target,
        "fit_utds": list(fit_utds),
        "holdout_utd": holdout_utd,
        "fit": report["fit"],
        "predicted": predicted,
        "measured": {},
    }
    held = [
        name
        for name, run in spec["runs"].items()
        if np.isclose(run["utd"], holdout_utd) and (folder / name / "config.json").is_file()
    ]
    if held:
        grid_members = [m for name in held for m in read_run(folder, name, spec["lr_field"])]
        result["measured"]["grid"] = _measured(crossings(grid_members, target, None), predicted)
    if train:
        name = _train_predicted(folder, spec, holdout_utd, predicted, seeds, progress)
        new = read_run(folder / "validate", name, spec["lr_field"])
        result["measured"]["predicted settings"] = _measured(
            crossings(new, target, None), predicted
        )
        result["measured"]["predicted settings"]["folder"] = str(folder / "validate" / name)
    out = folder / f"validate-utd={holdout_utd:g}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    result["file"] = str(out)
    return result


def _train_predicted(folder, spec, sigma, predicted, seeds, progress) -> str:
    """Trains (or resumes, or reuses) the run at the predicted settings; its folder's name."""
    import dataclasses

    from jaxrl.experiments.scale_plan import updates_per_step
    from jaxrl.run import driver, runs

    first = next(name for name in spec["runs"] if (folder / name / "config.json").is_file())
    config, agent = runs.configs_from_json(runs.read_config_json(folder / first))
    batch = max(1, round(predicted["batch_size"]))
    lr = float(f"{predicted['lr']:.3g}")
    config = dataclasses.replace(
        config, updates_per_step=updates_per_step(sigma, config.num_envs), batch_size=batch
    )
    name = run_name(config.updates_per_step / config.num_envs, batch)
    run = folder / "validate" / name
    if (run / "summary.json").is_file() or (run / FAILED_FILE).is_file():
        return name
    if (run / "config.json").is_file():
        result = driver.resume(run, progress=progress)
    else:
        result = driver.train(
            config,
            agent,
            run,
            progress=progress,
            seeds=seeds,
            vmap={spec["lr_field"]: [lr]},
        )
    if result.interrupted:  # Ctrl-C in its last chunk: it finished; the rest waits for a re-run
        raise Interrupted(f"{run} finished as Ctrl-C came; run the same command again to go on")
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxrl.experiments.scale_validate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("folder")
    parser.add_argument("--fit-utd", required=True, help="UTD ratios to fit on, e.g. 0.25,0.5,1")
    parser.add_argument("--holdout-utd", type=float, required=True)
    parser.add_argument("--target", type=float, default=None)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-train", action="store_true")
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        fit_utds = [float(u) for u in args.fit_utd.split(",") if u]
        result = validate(
            args.folder,
            fit_utds,
            args.holdout_utd,
            target=args.target,
            seeds=args.seeds,
            train=not args.no_train,
            bootstrap=args.bootstrap,
            progress=None if args.quiet else "auto",
        )
    except (ConfigError, ScaleError, ValueError) as error:
        print(f"scale_validate: error: {error}", file=sys.stderr)
        return 2
    p = result["predicted"]
    interval = p["interval"]["env_steps"]
    span = f" [{interval[0]:,.0f}, {interval[1]:,.0f}]" if interval else ""
    print(
        f"fit on UTD {', '.join(f'{u:g}' for u in result['fit_utds'])}, J = {result['target']:g}: "
        f"predicted at UTD {p['utd']:g}: {p['env_steps']:,.0f}{span} env steps, batch "
        f"{p['batch_size']:.0f}, lr {p['lr']:.3g}"
    )
    for what, m in result["measured"].items():
        if not m["reached"]:
            print(f"  measured ({what}): J not reached in {m['last_env_steps']:,.0f} env steps")
            continue
        verdict = "inside" if m["inside_interval"] else "OUTSIDE"
        print(
            f"  measured ({what}): {m['env_steps']:,.0f} env steps (batch {m['batch_size']}, lr "
            f"{m['lr']:.3g}), {m['ratio_to_predicted']:.2f}x the prediction, {verdict} the "
            "interval"
        )
    print(f"wrote {result['file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
