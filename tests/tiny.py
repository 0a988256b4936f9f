"""Tiny configs shared by the tests: runs of a few hundred env steps on classic/pendulum and
agents of one small hidden layer, so that a test compiles and trains in seconds.

    tiny.off_policy(total_steps=512)     # a TrainConfig for SAC and the other replay agents
    tiny.on_policy()                     # a TrainConfig for PPO
    tiny.run("td3")                      # whichever of the two the algorithm takes
    tiny.agent("td3", hidden=(8,))       # an agent config, its networks tiny
    tiny.SAC, tiny.PPO                   # the tiny agent configs most tests use
    tiny.cli_flags(tiny.OFF_POLICY)      # the same settings as `jaxrl train` flags

Where a test's numbers matter (a learning threshold, a reference value, a hand-computed
count), the test passes them as keyword overrides: every builder takes any field."""

from __future__ import annotations

from typing import Any

from jaxrl import agents
from jaxrl.agents.ppo import PPOConfig
from jaxrl.agents.sac import SACConfig
from jaxrl.config import TrainConfig

# 4 envs of the classic pendulum, evaluated on 2 (at the end of each chunk).
PENDULUM: dict[str, Any] = dict(env="classic/pendulum", num_envs=4, eval_envs=2)
# 64 env steps of warm-up, then 2 updates of 16 rows per step; chunks of 128 env steps.
OFF_POLICY: dict[str, Any] = dict(
    PENDULUM,
    total_steps=256,
    batch_size=16,
    updates_per_step=2,
    buffer_size=512,
    learning_starts=64,
    eval_every=128,
)
# Rollouts of 16 steps; chunks of 256 env steps.
ON_POLICY: dict[str, Any] = dict(
    PENDULUM, algo="ppo", total_steps=512, unroll_length=16, eval_every=256
)
# An on-policy agent's update in the tiny agents: 2 epochs of 4 minibatches.
ON_POLICY_AGENT: dict[str, Any] = dict(num_epochs=2, num_minibatches=4)


def off_policy(**overrides: Any) -> TrainConfig:
    """A tiny replay run (SAC unless `algo` says otherwise): `OFF_POLICY` with `overrides`."""
    return TrainConfig(**{**OFF_POLICY, **overrides})


def on_policy(**overrides: Any) -> TrainConfig:
    """A tiny PPO run: `ON_POLICY` with `overrides`."""
    return TrainConfig(**{**ON_POLICY, **overrides})


def run(algo: str, **overrides: Any) -> TrainConfig:
    """A tiny run of `algo`: `on_policy` or `off_policy`, as the algorithm learns."""
    build = on_policy if agents.get(algo).on_policy else off_policy
    return build(**{"algo": algo, **overrides})


def agent(algo: str = "sac", hidden: tuple[int, ...] = (16,), **overrides: Any) -> Any:
    """`algo`'s agent config with `hidden` actor and critic layers (an on-policy agent's
    update `ON_POLICY_AGENT` too), and `overrides`."""
    spec = agents.get(algo)
    base: dict[str, Any] = dict(actor_hidden=hidden, critic_hidden=hidden)
    if spec.on_policy:
        base.update(ON_POLICY_AGENT)
    return spec.config_cls(**{**base, **overrides})


SAC = SACConfig(actor_hidden=(16,), critic_hidden=(16,))
PPO = PPOConfig(actor_hidden=(8,), critic_hidden=(8,), **ON_POLICY_AGENT)


def cli_flags(settings: dict[str, Any]) -> list[str]:
    """`settings` (TrainConfig or agent fields) as `jaxrl train` flags: `--num-envs 4`, a
    tuple as its items (`--actor-hidden 16 16`)."""
    flags: list[str] = []
    for name, value in settings.items():
        items = value if isinstance(value, tuple) else (value,)
        flags += [f"--{name.replace('_', '-')}", *map(str, items)]
    return flags
