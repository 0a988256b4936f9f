"""The door for jaxrl's other off-policy algorithms: `jaxrl.brax.td3.train`, `.crossq`,
`.droq`, `.redq`, `.fast_td3`, `.fast_sac`, `.dsac_t` and `.pql` take Brax 0.14's `sac.train`
arguments (names, order, defaults; Brax's units and schedule, as `jaxrl.brax.sac`) plus that
algorithm's own options as keywords (the fields of its config: `policy_delay=2`,
`num_critics=10`, ...), and return Brax's `(make_policy, params, metrics)`.

    from jaxrl.brax import crossq   # was: from brax.training.agents.sac import train as sac
    make_policy, params, metrics = crossq.train(environment=env, num_timesteps=..., ...)

Each algorithm keeps its own defaults, except what Brax's arguments set: the learning rate of
actor and critics, tau, the reward scaling, and the networks where a `network_factory` (a
`make_sac_networks` partial) is given. Brax has no networks for these algorithms, so
`params` is `(normalizer_params, policy_params)` with Brax's normaliser and, as
`policy_params`, the arrays of the agent that its greedy action reads, by path; `make_policy`
is jaxrl's, with Brax's signature: `make_policy(params, deterministic=False)(obs, key) ->
(action, {})`. Brax's checkpoints hold Brax's networks only: `checkpoint_logdir` and
`restore_checkpoint_path` are refused by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxrl.brax import sac

ALGORITHMS = ("td3", "crossq", "droq", "redq", "fast_td3", "fast_sac", "dsac_t", "pql")


def door(algo: str) -> Callable:
    """`train` of `jaxrl.brax.<algo>`: Brax's sac.train signature, `algo`'s options after it."""

    def train(
        environment: Any,
        num_timesteps: int,
        episode_length: int,
        wrap_env: bool = True,
        wrap_env_fn: Callable[[Any], Any] | None = None,
        action_repeat: int = 1,
        num_envs: int = 1,
        num_eval_envs: int = 128,
        learning_rate: float = 1e-4,
        discounting: float = 0.9,
        seed: int = 0,
        batch_size: int = 256,
        num_evals: int = 1,
        normalize_observations: bool = False,
        max_devices_per_host: int | None = None,
        reward_scaling: float = 1.0,
        tau: float = 0.005,
        min_replay_size: int = 0,
        max_replay_size: int | None = None,
        grad_updates_per_step: int = 1,
        deterministic_eval: bool = False,
        network_factory: Callable | None = None,
        progress_fn: Callable[[int, dict], None] = lambda *args: None,
        eval_env: Any = None,
        randomization_fn: Callable | None = None,
        checkpoint_logdir: str | None = None,
        restore_checkpoint_path: str | None = None,
        *,
        num_resets_per_eval: int = 0,
        **options: Any,
    ):
        settings = dict(locals())
        options = settings.pop("options")
        plan = sac.make_plan(settings, algo, options)  # every check, before anything compiles
        return sac.run_plan(plan, progress_fn)

    train.__name__ = train.__qualname__ = "train"
    train.__module__ = f"jaxrl.brax.{algo}"
    train.__doc__ = (
        f"Brax 0.14's `sac.train` arguments over jaxrl's {algo}, and {algo}'s own options as "
        f"keywords (its config's fields); returns `(make_policy, params, metrics)` "
        "(jaxrl.brax.offpolicy)."
    )
    return train
