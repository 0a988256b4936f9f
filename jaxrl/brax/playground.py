"""Playground's own training configs as jaxrl's: `jaxrl train --algo ppo --env
playground/TASK --preset playground` (and `--algo sac`) starts from MuJoCo Playground's
`brax_ppo_config(TASK)` / `brax_sac_config(TASK)`, translated by the Brax door
(`jaxrl.brax.ppo` / `jaxrl.brax.sac`) exactly as `ppo.train(**brax_ppo_config(TASK))` would
run, so no table of Playground's numbers is kept here. Flags then change any field (on a CPU:
`--num-envs`, `--steps`)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

from jaxrl.errors import ConfigError

ALGORITHMS = ("ppo", "sac")
# Playground's config modules, by the registry's families, and the algorithms each has.
_FAMILIES = {
    "dm_control_suite": ("dm_control_suite_params", ("ppo", "sac")),
    "locomotion": ("locomotion_params", ("ppo",)),
    "manipulation": ("manipulation_params", ("ppo",)),
}


def playground_config(algo: str, task: str) -> dict:
    """Playground's `brax_{algo}_config(task)` as `train`'s keyword arguments: a plain dict,
    its `network_factory` entry made Brax's factory with those options."""
    from mujoco_playground import registry

    if algo not in ALGORITHMS:
        raise ConfigError(
            f"--preset playground starts from Playground's brax_ppo_config or brax_sac_config: "
            f"pass --algo ppo or --algo sac, not {algo}"
        )
    family = next((f for f in _FAMILIES if task in getattr(registry, f).ALL_ENVS), None)
    if family is None:
        raise ConfigError(f"--preset playground: Playground has no training config for {task}")
    module_name, algos = _FAMILIES[family]
    if algo not in algos:
        raise ConfigError(
            f"--preset playground: Playground has no brax_{algo}_config for its {family} tasks "
            f"({task}); it has {', '.join(f'brax_{a}_config' for a in algos)}"
        )
    module = __import__(f"mujoco_playground.config.{module_name}", fromlist=["x"])
    values = module.__dict__[f"brax_{algo}_config"](task).to_dict()
    factory = values.pop("network_factory", None)
    if factory is not None:
        if algo == "ppo":
            from brax.training.agents.ppo.networks import make_ppo_networks as make
        else:
            from brax.training.agents.sac.networks import make_sac_networks as make
        values["network_factory"] = functools.partial(make, **factory)
    return values


def configs(algo: str, env_name: str | None, env_options: dict | None = None) -> tuple[Any, Any]:
    """(TrainConfig, agent config) of Playground's config for `env_name` (playground/TASK), as
    the Brax door plans it; before anything compiles."""
    from jaxrl import envs
    from jaxrl.brax import ppo, sac

    if not env_name or not env_name.startswith("playground/"):
        raise ConfigError(
            f"--preset playground needs --env playground/TASK (got {env_name or 'no --env'})"
        )
    task = env_name.split("/", 1)[1]
    values = playground_config(algo, task)
    door = {"ppo": ppo, "sac": sac}[algo]
    parameters = inspect.signature(door.train).parameters
    settings = {name: parameter.default for name, parameter in parameters.items()}
    unknown = sorted(set(values) - set(parameters))
    if unknown:  # a newer Playground's key the door does not know
        raise ConfigError(
            f"--preset playground: Playground's brax_{algo}_config({task}) passes "
            f"{', '.join(unknown)}, which jaxrl.brax.{algo}.train does not take"
        )
    if algo == "sac":  # the door warns that it ignores it: jaxrl's SAC has no hard resets
        values.pop("num_resets_per_eval", None)
    settings.update(values, environment=envs.make(env_name, **(env_options or {})))
    plan = door.make_plan(settings)
    config = dataclasses.replace(plan.config, env=env_name)
    if algo == "sac":
        # Brax's prefill (the untrained policy filling min_replay_size rows, its own program in
        # the door) is, on the command line, warm-up steps acting with the policy.
        rows = plan.prefill * config.num_envs
        config = dataclasses.replace(
            config,
            learning_starts=rows,
            warmup_actions="policy",
            total_steps=config.total_steps + rows,
        )
    return config, plan.agent_config
