"""Brax's own trainers (`brax.training.agents.sac` and `ppo`, the installed version) as peers in
the benchmark suite, on the same env object jaxrl's `brax/*` family builds."""

from __future__ import annotations

import functools
import os
import time

import jax
import jax.numpy as jnp

from jaxrl.benchmarks.suites import Case


def install_jax_shims() -> None:
    """Brax 0.14.2's trainers call `jax.device_put_replicated`, which current jax (0.10 and
    later) removed. Its replacement here stacks one copy per device along a new leading axis
    (what the removed function returned); `jax.pmap` then places one slice on each device."""
    if hasattr(jax, "device_put_replicated"):
        return

    def device_put_replicated(x, devices):
        return jax.tree.map(lambda a: jnp.stack([jnp.asarray(a)] * len(devices)), x)

    jax.device_put_replicated = device_put_replicated


def run(case: Case) -> tuple[list[dict], float, dict]:
    """Trains with Brax's trainer (system "door": jaxrl's door of it, `jaxrl.brax`); returns
    the evaluation points, the gradient updates done and extra fields for the record."""
    install_jax_shims()
    from jaxrl import envs

    settings = dict(case.peer)
    start = time.perf_counter()
    # The unwrapped task: Brax's trainer adds its own wrappers (Playground's, for its tasks).
    env = envs.make(case.env).unwrapped
    if case.env.startswith("playground/"):
        from mujoco_playground import wrapper

        settings["wrap_env_fn"] = wrapper.wrap_for_brax_training
    evals: list[dict] = []

    def progress(step, metrics):
        # Brax's Evaluator times each evaluation (its share of the steady rate); None if not.
        eval_seconds = metrics.get("eval/epoch_eval_time")
        evals.append(
            {
                "env_steps": int(step),
                "wall_seconds": time.perf_counter() - start,
                "eval_return": float(metrics["eval/episode_reward"]),
                "eval_seconds": None if eval_seconds is None else float(eval_seconds),
            }
        )

    if case.algo == "sac":
        from brax.training.agents.sac import networks, train

        # Brax's factory signature takes the sizes; LayerNorm is the one setting we add.
        network_factory = functools.partial(
            networks.make_sac_networks,
            q_network_layer_norm=settings.pop("q_network_layer_norm", False),
        )
    elif case.algo == "ppo":
        from brax.training.agents.ppo import networks, train

        sizes = {
            k: tuple(settings.pop(k))
            for k in ("policy_hidden_layer_sizes", "value_hidden_layer_sizes")
            if k in settings
        }
        network_factory = functools.partial(networks.make_ppo_networks, **sizes)
    else:
        raise ValueError(f"no Brax peer named {case.algo!r}; peers: sac, ppo")
    trainer = train.train
    if case.system == "door":  # the same call through jaxrl's door (benchmarks/door_speed.py)
        os.environ["JAXRL_COMPILE_CACHE"] = "0"  # cold, as Brax's trainer and jaxrl's case
        from jaxrl.brax import ppo, sac

        trainer = {"ppo": ppo, "sac": sac}[case.algo].train
    trainer(
        environment=env,
        num_timesteps=case.total_steps,
        num_envs=case.num_envs,
        seed=case.seed,
        network_factory=network_factory,
        progress_fn=progress,
        **settings,
    )
    if case.algo == "sac":
        prefill = -(-settings.get("min_replay_size", 0) // case.num_envs) * case.num_envs
        trained = max(evals[-1]["env_steps"] - prefill, 0)
        updates = trained / case.num_envs * settings.get("grad_updates_per_step", 1)
    else:
        per_update = settings["batch_size"] * settings["num_minibatches"]
        per_update *= settings["unroll_length"]
        rounds = evals[-1]["env_steps"] / per_update
        updates = rounds * settings["num_minibatches"] * settings["num_updates_per_batch"]
    settings.pop("wrap_env_fn", None)
    return evals, updates, {"peer_settings": settings, "started": start}
