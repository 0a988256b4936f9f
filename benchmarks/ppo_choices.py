"""`jaxrl bench --suite ppo_choices` (and `ppo_choices_16`): which of Brax's PPO choices costs
the learning (issue 71, item 12). jaxrl's PPO at Playground's own settings for a DM Control task
(`brax_ppo_config`), 5 seeds in one program per variant, at one of two scales (`SCALES`):
the issue's, 256 envs and one update (983,040 env steps: 128 unrolls of 30 steps per env, 16
epochs of 32 minibatches), where the policy that is evaluated has learnt from one batch of the
untrained policy's; and parity_dmc's, 64 envs, 32-unroll minibatches and 16 updates (491,520 env
steps), where jaxrl with every Brax choice ends inside Brax's own seed interval. The variants:
- "brax": every Brax choice (`brax_parity.ppo_parity_flags`), the run that ends where Brax's
  own `ppo.train` does;
- "own": the same flags without the six choices of `CHOICES` (jaxrl's own in their place);
- "own+<choice>": "own" with that one Brax choice put back.
So each choice's cost is "own+<choice>" against "own", at the same seeds. The report gives each
variant's final return over the seeds (mean, IQM, 95% bootstrap interval) and its difference
from "own".
"""

from __future__ import annotations

import dataclasses
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
SEEDS = 5


@dataclasses.dataclass(frozen=True)
class Scale:
    """What a suite changes of Playground's settings, its updates, its evaluations after the
    start, and the envs each evaluation runs."""

    settings: dict
    updates: int
    evals: int
    eval_envs: int


SCALES = {
    "ppo_choices": Scale({"num_envs": 256}, 1, 1, 128),
    # parity_dmc's PPO (benchmarks/suites.py's PARITY_DMC_*): kept here as numbers so that this
    # module does not import the suites that import it.
    "ppo_choices_16": Scale({"num_envs": 64, "batch_size": 32}, 16, 4, 32),
}


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


def variants(settings: dict, steps: int, scale: Scale) -> dict[str, tuple[str, ...]]:
    """{label: `jaxrl train` flags} of every variant at `settings`, `steps` long."""
    from jaxrl.benchmarks.brax_parity import ppo_parity_flags

    brax = ppo_parity_flags(settings, steps, scale.evals, True, scale.eval_envs)
    own = without_choices(brax, settings)
    out = {"brax": brax, "own": own}
    for name, make in CHOICES.items():
        out[f"own+{name}"] = own + make(settings)
    return out


def cases(case: Callable, suite: str = "ppo_choices") -> list:
    """Per task, every variant (`variants`) at `suite`'s scale (`SCALES`), seeds 0 to SEEDS - 1
    in one program each, as `case` (the suites' `Case`) makes them."""
    from jaxrl.benchmarks.brax_parity import playground_ppo, ppo_update_steps

    scale, out = SCALES[suite], []
    for env in TASKS:
        settings = {**playground_ppo(env.split("/")[1]), **scale.settings}
        steps = scale.updates * ppo_update_steps(settings)
        for label, flags in variants(settings, steps, scale).items():
            out.append(
                case("jaxrl", "ppo", env, settings["num_envs"], total_steps=steps, options=flags,
                     label=label.replace("+", "-"), seeds=SEEDS)
            )  # fmt: skip
    return out


def _change(returns: list, own: list) -> str:
    """The mean of `returns` less `own`, seed by seed, and its 95% bootstrap interval; the
    difference of the means alone where the seeds are not the same in number."""
    from jaxrl.run.rows import seed_summary

    if len(returns) != len(own):
        return f"{np.mean(returns) - np.mean(own):+,.0f}"
    summary = seed_summary(np.subtract(returns, own))
    return (
        f"{summary['eval_return_mean']:+,.0f} "
        f"[{summary['eval_return_ci_low']:+,.0f}, {summary['eval_return_ci_high']:+,.0f}]"
    )


def section(name: str, records: list[dict]) -> list[str]:
    """Per task, each variant's final return over its seeds against "own"'s."""
    from jaxrl.benchmarks.tables import failures
    from jaxrl.run.rows import seed_summary

    ok = [r for r in records if "error" not in r and r.get("final_returns")]
    at = sorted({(r.get("num_envs"), r.get("total_steps")) for r in ok if r.get("total_steps")})
    where = "; ".join(f"{envs} envs, {steps:,} env steps" for envs, steps in at) or "no runs yet"
    lines = [
        f"## {name}: which of Brax's PPO choices costs the learning (`benchmarks/ppo_choices.py`)",
        "",
        f"jaxrl's PPO at Playground's settings ({where}), seeds 0-4 in one program per variant:"
        " every Brax choice (brax), none of the six (own), and own with one of them put back."
        " Final return: mean [95% bootstrap interval] (IQM); the change from own: the mean of"
        " the seeds' differences, with its 95% bootstrap interval (a seed starts every variant"
        " from the same parameters, but those with lecun_uniform weights: brax and"
        " own-lecun-uniform).",
        "",
        "| task | variant | final return | IQM | per seed | change from own |",
        "| --- | --- | ---: | ---: | --- | ---: |",
    ]
    for env in sorted({r["env"] for r in ok}):
        rows = {r["label"] or "brax": r for r in ok if r["env"] == env}
        own = rows.get("own")
        for label in sorted(rows, key=lambda x: (x != "brax", x != "own", x)):
            returns = rows[label]["final_returns"]
            summary = seed_summary(returns)
            change = "" if own is None or label == "own" else _change(returns, own["final_returns"])
            lines.append(
                f"| {env} | {label} | {summary['eval_return_mean']:,.0f} "
                f"[{summary['eval_return_ci_low']:,.0f}, {summary['eval_return_ci_high']:,.0f}] "
                f"| {summary['eval_return_iqm']:,.0f} | {', '.join(f'{x:,.0f}' for x in returns)} "
                f"| {change} |"
            )
    lines += failures(records)
    return [*lines, ""]
