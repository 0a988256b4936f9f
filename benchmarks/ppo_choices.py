"""`jaxrl bench --suite ppo_choices`: which of Brax's PPO choices costs the learning (issue 71,
item 12). jaxrl's PPO at Playground's own settings for a DM Control task (`brax_ppo_config`)
at 256 envs, one update (983,040 env steps: 128 unrolls of 30 steps per env, 16 epochs of 32
minibatches), 5 seeds in one program per variant:
- "brax": every Brax choice (`brax_parity.ppo_parity_flags`), the run that ends where Brax's
  own `ppo.train` does;
- "own": the same flags without the six choices of `CHOICES` (jaxrl's own in their place);
- "own+<choice>": "own" with that one Brax choice put back.
So each choice's cost is "own+<choice>" against "own", at the same seeds. The report gives each
variant's final return over the seeds (mean, IQM, 95% bootstrap interval) and its difference
from "own".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Brax's choices that jaxrl makes otherwise (docs/PARITY.md), as the flags that give each. Brax
# computes the advantages inside its loss per unroll of unroll_length steps (the first: it needs
# the horizon); the second cuts the rollout's GAE at those unrolls' ends alone.
CHOICES = {
    "advantage-in-loss": lambda s: (
        "--advantage-in-loss",
        "--gae-horizon",
        str(s["unroll_length"]),
    ),
    "gae-horizon": lambda s: ("--gae-horizon", str(s["unroll_length"])),
    "vtrace": lambda s: ("--advantage-estimator", "vtrace"),
    "truncation-mask": lambda s: ("--truncation", "mask"),
    "autoreset-first": lambda s: ("--autoreset", "first"),
    "lecun-uniform": lambda s: ("--kernel-init", "lecun_uniform"),
}
TASKS = ("playground/CartpoleSwingup", "playground/ReacherEasy", "playground/CartpoleBalance")
SCALE = {"num_envs": 256}
UPDATES, SEEDS, EVAL_ENVS = 1, 5, 128


def without_choices(flags: tuple[str, ...], settings: dict) -> tuple[str, ...]:
    """`flags` (the parity flags, every Brax choice) less every flag of `CHOICES`."""
    drop = {flag for make in CHOICES.values() for flag in make(settings) if flag.startswith("--")}
    out, skip = [], False
    for i, flag in enumerate(flags):
        if skip:
            skip = False
            continue
        if flag in drop:
            # A flag with a value (the next item, not itself a flag) takes it along.
            skip = i + 1 < len(flags) and not flags[i + 1].startswith("--")
            continue
        out.append(flag)
    return tuple(out)


def variants(settings: dict, steps: int) -> dict[str, tuple[str, ...]]:
    """{label: `jaxrl train` flags} of every variant at `settings`, `steps` long."""
    from jaxrl.benchmarks.brax_parity import ppo_parity_flags

    brax = ppo_parity_flags(settings, steps, UPDATES, True, EVAL_ENVS)
    own = without_choices(brax, settings)
    out = {"brax": brax, "own": own}
    for name, make in CHOICES.items():
        out[f"own+{name}"] = own + make(settings)
    return out


def cases(case: Callable) -> list:
    """Per task, every variant (`variants`), seeds 0 to SEEDS - 1 in one program each, as
    `case` (the suites' `Case`) makes them."""
    from jaxrl.benchmarks.brax_parity import playground_ppo, ppo_update_steps

    out = []
    for env in TASKS:
        settings = {**playground_ppo(env.split("/")[1]), **SCALE}
        steps = UPDATES * ppo_update_steps(settings)
        for label, flags in variants(settings, steps).items():
            out.append(
                case("jaxrl", "ppo", env, settings["num_envs"], total_steps=steps, options=flags,
                     label=label.replace("+", "-"), seeds=SEEDS)
            )  # fmt: skip
    return out


def section(name: str, records: list[dict]) -> list[str]:
    """Per task, each variant's final return over its seeds against "own"'s."""
    from jaxrl.benchmarks.tables import failures
    from jaxrl.run.rows import seed_summary

    lines = [
        f"## {name}: which of Brax's PPO choices costs the learning (`benchmarks/ppo_choices.py`)",
        "",
        "jaxrl's PPO at Playground's settings at 256 envs, one update (983,040 env steps), seeds"
        " 0-4 in one program per variant: every Brax choice (brax), none of the six (own), and own"
        " with one of them put back. Final return: mean [95% bootstrap interval] (IQM); the"
        " change is the mean's from own's.",
        "",
        "| task | variant | final return | IQM | per seed | change from own |",
        "| --- | --- | ---: | ---: | --- | ---: |",
    ]
    ok = [r for r in records if "error" not in r and r.get("final_returns")]
    for env in sorted({r["env"] for r in ok}):
        rows = {r["label"] or "brax": r for r in ok if r["env"] == env}
        own = rows.get("own")
        own_mean = float(np.mean(own["final_returns"])) if own else None
        for label in sorted(rows, key=lambda x: (x != "brax", x != "own", x)):
            returns = rows[label]["final_returns"]
            summary = seed_summary(returns)
            change = (
                ""
                if own_mean is None or label == "own"
                else f"{summary['eval_return_mean'] - own_mean:+,.0f}"
            )
            lines.append(
                f"| {env} | {label} | {summary['eval_return_mean']:,.0f} "
                f"[{summary['eval_return_ci_low']:,.0f}, {summary['eval_return_ci_high']:,.0f}] "
                f"| {summary['eval_return_iqm']:,.0f} | {', '.join(f'{x:,.0f}' for x in returns)} "
                f"| {change} |"
            )
    lines += failures(records)
    return [*lines, ""]
