"""`jaxrl bench --suite dmc_algos`: every algorithm with its DM Control preset on three
MuJoCo Playground tasks at budgets a 2-core CPU affords, 5 seeds in one program each, and the
report that sets each against SAC's `sac_dmc` at the same env steps and the same wall-clock.

A CPU case changes the preset's env count and budget and keeps its update-to-data ratio. Where
the preset's update costs too much here, `CPU_DEPARTURES` changes more and says why; those rows
are evidence of the algorithm at that setting, not of its preset.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Env steps per task: SAC is still near 0 on CartpoleSwingup at 100k (results/parity-cpu.jsonl).
BUDGETS = {
    "playground/CartpoleSwingup": 200_704,
    "playground/ReacherEasy": 100_352,
    "playground/CheetahRun": 100_352,
}
# PPO learns from many more env steps and far fewer updates: the parity suite's CPU scale
# (64 envs, 16 updates of 30,720 env steps), set against the others at the same wall-clock.
PPO_STEPS = 491_520
SEEDS, EVALS, EVAL_ENVS = 5, 8, 16
CPU_ENVS = 16  # the single-env algorithms' presets already run 16; the parallel ones scale down
ALGORITHMS = (
    "sac",
    "td3",
    "crossq",
    "droq",
    "redq",
    "dsac_t",
    "fast_td3",
    "fast_sac",
    "pql",
    "ppo",
)
PRESET = {algo: f"{algo}_dmc" for algo in ALGORITHMS} | {"fast_td3": "fast_td3_playground"}

# What a CPU case changes besides env count and budget, and why.
CPU_DEPARTURES: dict[str, tuple[str, ...]] = {
    # 2048-wide critics cost about 60x the 256-wide ones per update (4 GFLOP a joint pass of
    # 512 rows): 256 wide, as the CrossQ paper's own narrow ablation and SBX's comment allow.
    "crossq": ("--critic-hidden", "256,256"),
    # UTD 20 is 20 updates per env step: 4M updates for CartpoleSwingup's budget, hours a seed
    # here (REDQ with 10 critics more). UTD 1 here, as SAC-family baselines at equal cost.
    "droq": ("--updates-per-step", "16", "--policy-delay", "1"),
    "redq": ("--updates-per-step", "16", "--policy-delay", "1"),
    # The massively parallel recipes (1,024 envs, batch 8192-32,768, wide nets) at 64 envs:
    # the samples drawn per env step kept (FastTD3 2 x 32,768 / 1,024 = 64, FastSAC and PQL
    # 8 x 8192 / 1,024 = 64) as 8 updates of batch 512 per step of 64 envs.
    # FastTD3's C51 critics (1024-512-256) at batch 4,096 cost hours a case here: 256 x 256
    # critics and actor, with PQL's 8 updates of 512 (the same samples per env step),
    # evidence of its recipe (C51, per-env noise, AdamW) at a CPU's width
    # (notes/2026-12-03-dmc-algos-pql.md).
    "fast_td3": (
        "--batch-size",
        "512",
        "--updates-per-step",
        "8",
        "--critic-hidden",
        "256,256",
        "--actor-hidden",
        "256,256",
    ),  # fmt: skip
    # FastSAC's critics (768-384-192, LayerNorm, C51) have FastTD3's cost problem: the same
    # CPU width and 8 x 512 (its LayerNorm, SiLU, C51 and normalisation kept).
    "fast_sac": (
        "--batch-size",
        "512",
        "--updates-per-step",
        "8",
        "--critic-hidden",
        "256,256",
        "--actor-hidden",
        "256,256",
    ),  # fmt: skip
    # PQL's critics are TD3's (256 x 256), cheap enough for more updates: the same samples per
    # env step as 8 updates of batch 512; one of 4,096 per step did not learn ReacherEasy
    # (notes/2026-12-03-dmc-algos-pql.md).
    "pql": ("--batch-size", "512", "--updates-per-step", "8"),
}
PARALLEL_ENVS = {"fast_td3": 64, "fast_sac": 64, "pql": 64, "sac": 128, "ppo": 64}


def cases(make_case: Callable, tasks: tuple[str, ...] = tuple(BUDGETS), algorithms=ALGORITHMS):
    """One case per (task, algorithm): its preset at CPU scale, SEEDS seeds in one program.
    `make_case` is `suites.jaxrl_case`, handed in: suites.py lists this suite, so importing it
    here would close an import circle."""
    out = []
    for env in tasks:
        for algo in algorithms:
            steps = PPO_STEPS if algo == "ppo" else BUDGETS[env]
            envs = PARALLEL_ENVS.get(algo, CPU_ENVS)
            options = [
                "--eval-every",
                str(steps // EVALS),
                "--eval-envs",
                str(EVAL_ENVS),
                *CPU_DEPARTURES.get(algo, ()),
            ]
            buffer = _buffer(algo, envs)
            if buffer:
                options += ["--buffer-size", str(buffer)]
            out.append(
                make_case(
                    algo,
                    env,
                    PRESET[algo],
                    0.0,
                    num_envs=envs,
                    total_steps=steps,
                    seeds=SEEDS,
                    options=tuple(options),
                )
            )
    return out


def _buffer(algo: str, envs: int) -> int | None:
    """The parallel recipes keep replay per env (steps per env x envs): at 64 envs that
    number of steps per env, so the replay holds as many of each env's steps as the preset's."""
    from jaxrl.experiments.presets import PRESETS

    if algo not in ("fast_td3", "fast_sac", "pql"):
        return None
    train = PRESETS[PRESET[algo]]["train"]
    return max(train["buffer_size"] // train["num_envs"] * envs, 1)


# --- The report ----------------------------------------------------------------------------


def curves(record: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(env steps [T], wall seconds [T], returns [seeds, T]) of a record's evaluations."""
    evals = record["evals"]
    steps = np.array([e["env_steps"] for e in evals], float)
    seconds = np.array([e["wall_seconds"] for e in evals], float)
    returns = np.array([e.get("eval_returns") or [e["eval_return"]] for e in evals], float).T
    return steps, seconds, returns


def area(steps: np.ndarray, returns: np.ndarray, upto: float) -> np.ndarray:
    """Each seed's area under its return curve over [0, upto] env steps, divided by upto (a
    mean return), the curve linear between evaluations and held at its first one before it."""
    x = np.concatenate([[0.0], steps])
    y = np.concatenate([returns[:, :1], returns], axis=1)
    grid = np.linspace(0.0, upto, 513)
    values = np.array([np.interp(grid, x, seed) for seed in y])
    return np.trapezoid(values, grid, axis=1) / upto


def at(xs: np.ndarray, returns: np.ndarray, x: float) -> np.ndarray:
    """Each seed's return at x (env steps or seconds): linear between evaluations, the first
    evaluation's before it and the last one's after it."""
    return np.array([np.interp(x, xs, seed) for seed in returns])


def interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the mean and a 95% bootstrap interval of the mean over seeds."""
    from jaxrl.run.rows import seed_summary

    summary = seed_summary([float(v) for v in values])
    return (
        summary["eval_return_mean"],
        summary["eval_return_ci_low"],
        summary["eval_return_ci_high"],
    )


def _cell(values) -> str:
    mean, low, high = interval(values)
    return f"{mean:,.0f} [{low:,.0f}, {high:,.0f}]"


def section(name: str, records: list[dict]) -> list[str]:
    """Per task, each algorithm's final return and area under the curve beside SAC's, at SAC's
    env steps and at SAC's wall-clock, means with 95% bootstrap intervals over seeds."""
    lines = [f"## {name}: every algorithm's DM Control preset on this CPU", ""]
    lines.append(
        "Each algorithm with its preset at CPU scale (`benchmarks/dmc_algos.py`: env count, "
        "budget, and the departures it names), 5 seeds in one program, greedy evaluation on "
        f"{EVAL_ENVS} envs. Final: the last evaluation. AUC: the mean return over the run's env "
        "steps. `at SAC's steps` / `at SAC's time`: the return where SAC's run ended, by env "
        "steps and by wall-clock (compile included); `>= SAC`: that mean at or above the low end "
        "of SAC's 95% interval. Mean [95% bootstrap interval]."
    )
    lines += [
        "",
        "| task | algorithm | env steps | final | AUC | at SAC's steps | >= SAC | at SAC's time "
        "| >= SAC | wall-clock (s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: |",
    ]
    ok = [r for r in records if "error" not in r and r.get("evals")]
    from jaxrl.benchmarks.tables import stopped as stopped_runs

    stopped = stopped_runs(records)  # cases a timeout ended, for what they reached
    reached: dict[str, list[str]] = {}  # per algorithm, the tasks where it reached SAC's
    for env in sorted({r["env"] for r in ok + stopped}):
        runs = {r["algo"]: r for r in ok if r["env"] == env}  # the last record of each wins
        partial = {r["algo"]: r for r in stopped if r["env"] == env and r["algo"] not in runs}
        sac = runs.get("sac")
        if sac:
            s_steps, s_seconds, s_returns = curves(sac)
            s_final = interval(s_returns[:, -1])
        named = set(runs) | set(partial)
        for algo in [a for a in ALGORITHMS if a in named] + sorted(named - set(ALGORITHMS)):
            if algo in partial:
                row, met = _stopped_row(partial[algo], sac and (s_steps, s_seconds, s_final))
            else:
                steps, seconds, returns = curves(runs[algo])
                row = [env, algo, f"{int(steps[-1]):,}", _cell(returns[:, -1])]
                row.append(_cell(area(steps, returns, steps[-1])))
                met = False
                if sac:
                    same_steps = at(steps, returns, s_steps[-1])
                    same_time = at(seconds, returns, s_seconds[-1])
                    for values in (same_steps, same_time):
                        reach = interval(values)[0] >= s_final[1]
                        row += [_cell(values), "yes" if reach else "**no**"]
                        met = met or (values is same_steps and reach)  # tallied by env steps
                else:
                    row += ["-", "-", "-", "-"]
                row.append(f"{seconds[-1]:,.0f}")
            lines.append("| " + " | ".join(row) + " |")
            if met and algo != "sac":
                reached.setdefault(algo, []).append(
                    env.split("/")[-1] + ("*" if algo in partial else "")
                )
    for r in records:
        if "error" in r and not r.get("partial_evals"):
            lines.append(f"| {r['case']} | failed: {r['error'].strip().splitlines()[-1]} |")
    if stopped:
        lines += [
            "",
            "Rows marked `stopped` are runs their timeout ended: env steps is where they stood, "
            "`of` the budget; final is their last evaluation (mean [95% interval] over seeds, "
            "or mean ± std over seeds where the run printed only that); `yes, by` says the "
            "return at or above SAC's interval was reached in fewer env steps than SAC's whole "
            "run; at SAC's time, the mean over seeds.",
        ]
    if reached:
        lines += [
            "",
            "At or above the low end of SAC's interval at SAC's env steps (`*`: by a stopped "
            "run, in fewer env steps): "
            + "; ".join(
                f"{a} {len(reached[a])} ({', '.join(reached[a])})"
                for a in [a for a in ALGORITHMS if a in reached]
                + sorted(set(reached) - set(ALGORITHMS))
            )
            + ".",
        ]
    return lines + [""]


section.shows_failed = True  # report.write hands this writer the failed cases too


def _point_cell(point: dict) -> str:
    """One evaluation of a stopped run: mean [95% interval], or mean ± std over seeds."""
    mean = point["eval_return"]
    if "eval_return_ci_low" in point:
        return (
            f"{mean:,.0f} [{point['eval_return_ci_low']:,.0f}, {point['eval_return_ci_high']:,.0f}]"
        )
    return f"{mean:,.0f} ± {point.get('eval_return_std', 0.0):,.0f}"


def _stopped_row(record: dict, sac) -> tuple[list[str], bool]:
    """A stopped run's row (the table's columns) and whether it reached SAC's interval by SAC's
    env steps. `sac`: (SAC's env steps, seconds, final (mean, low, high)), or None."""
    points = record["partial_evals"]
    steps = np.array([p["env_steps"] for p in points], float)
    seconds = np.array([p["wall_seconds"] for p in points], float)
    means = np.array([[p["eval_return"] for p in points]])
    last = points[-1]
    row = [record["env"], record["algo"]]
    row.append(f"{int(steps[-1]):,} of {record.get('total_steps', 0):,} (stopped)")
    row += [_point_cell(last), "-"]
    met = False
    if sac:
        s_steps, s_seconds, s_final = sac
        if steps[-1] >= s_steps[-1]:
            value = float(at(steps, means, s_steps[-1])[0])
            met = value >= s_final[1]
            row += [f"{value:,.0f}", "yes" if met else "**no**"]
        else:
            met = last["eval_return"] >= s_final[1]
            verdict = f"yes, by {int(steps[-1]):,}" if met else f"not by {int(steps[-1]):,}"
            row += ["-", verdict]
        if seconds[-1] >= s_seconds[-1]:
            value = float(at(seconds, means, s_seconds[-1])[0])
            row += [f"{value:,.0f}", "yes" if value >= s_final[1] else "**no**"]
        else:
            row += ["-", "-"]
    else:
        row += ["-", "-", "-", "-"]
    row.append(f"{seconds[-1]:,.0f} (stopped)")
    return row, met
