"""`jaxrl bench --suite door`: the Brax door's cost (issue 71, item 10). At the identical
suite's settings, three systems side by side in one run, each in its own process with no
persistent compilation cache: Brax's own trainer, the same call through `jaxrl.brax.ppo` /
`jaxrl.brax.sac` (system "door"), and `jaxrl train` with the flags that give Brax's settings
(`brax_parity.ppo_parity_flags` / `sac_parity_flags`). The report sets the door's wall-clock,
compile included, against the other two: at most `jaxrl train`'s (the door adds nothing) and
below Brax's.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# The identical suite's cheaper tasks (each case about a minute here), seed 0.
TASKS = {
    "ppo": ("brax/inverted_pendulum", "brax/inverted_double_pendulum"),
    "sac": ("playground/CartpoleBalance",),
}
SYSTEMS = ("brax", "door", "jaxrl")
# The door's wall-clock against `jaxrl train`'s: the same programs (both evaluate at step 0),
# so at most this much more (the door's argument translation, SAC's replay prefill, Brax's
# networks where injected; run-to-run noise here is ~5%).
DOOR_OVER_JAXRL = 1.05


def cases(identical: list) -> list:
    """The door suite from the identical suite's cases (`identical`): for TASKS, seed 0, its
    jaxrl and Brax cases and a door case of the Brax case's own arguments."""
    out = []
    for case in identical:
        if case.seed != 0 or case.env not in TASKS.get(case.algo, ()):
            continue
        out.append(case)
        if case.system == "brax":
            out.append(dataclasses.replace(case, system="door"))
    return out


def gpu_cases(gpu_parity: list) -> list:
    """Issue 74's item 4 on a GPU: the gpu-parity suite's PPO cases (Playground's
    brax_ppo_config for CartpoleBalance and CheetahRun, jaxrl with every Brax choice and Brax's
    `ppo.train`, its seeds) with, beside each Brax case, the same call through the door."""
    out = []
    for case in gpu_parity:
        if case.algo != "ppo" or case.label:
            continue
        out.append(case)
        if case.system == "brax":
            out.append(dataclasses.replace(case, system="door"))
    return out


def _mean(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return float(np.mean(values)) if values else None


def section(name: str, records: list[dict]) -> list[str]:
    """Per algorithm and task, each system's wall-clock (start to the last evaluation, compile
    included), compile and steady env-steps/s, and the door's wall-clock against the others."""
    from jaxrl.benchmarks.tables import failures, fmt

    lines = [
        f"## {name}: the Brax door's cost (`jaxrl.brax.ppo` / `.sac` against Brax and jaxrl)",
        "",
        "One call of Brax's arguments through Brax's own trainer (brax), through jaxrl's door"
        " (door), and `jaxrl train` with the flags of the same settings (jaxrl), each its own"
        " process, no persistent compilation cache; the identical suite's settings"
        " (`benchmarks/door_speed.py`). Wall: start of training to the last evaluation, compile"
        " included. Targets: the door's wall at most"
        f" {DOOR_OVER_JAXRL:g}x jaxrl train's, and below Brax's.",
        "",
        "| algo | task | system | env steps | wall (s) | compile (s) | train env-steps/s "
        "| final return | door / system (wall) | target |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    ok = [r for r in records if "error" not in r and r.get("evals")]
    for algo in sorted({r["algo"] for r in ok}):
        for env in sorted({r["env"] for r in ok if r["algo"] == algo}):
            runs = {
                s: [r for r in ok if (r["algo"], r["env"], r["system"]) == (algo, env, s)]
                for s in SYSTEMS
            }
            door = _mean(runs["door"], "total_seconds")
            for system in SYSTEMS:
                if not runs[system]:
                    continue
                wall = _mean(runs[system], "total_seconds")
                ratio, target = "", ""
                if system != "door" and door and wall:
                    ratio = f"{door / wall:.2f}x"
                    limit = DOOR_OVER_JAXRL if system == "jaxrl" else 1.0
                    met = door / wall <= limit if system == "jaxrl" else door < wall
                    target = f"{'met' if met else 'missed'} (<{'=' if system == 'jaxrl' else ''}"
                    target += f" {limit:g}x)"
                lines.append(
                    f"| {algo} | {env} | {system} | {runs[system][0]['env_steps']:,} "
                    f"| {fmt(wall, ',.1f')} "
                    f"| {fmt(_mean(runs[system], 'compile_total_seconds'), ',.1f')} "
                    f"| {fmt(_mean(runs[system], 'env_steps_per_second'), ',.0f')} "
                    f"| {fmt(_mean(runs[system], 'final_return'), ',.1f')} | {ratio} | {target} |"
                )
    lines += failures(records)
    return [*lines, ""]
