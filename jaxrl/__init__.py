"""jaxrl: JAX-accelerated, massively parallel reinforcement learning.

Functional API:
    config = jaxrl.TrainConfig(env="classic/pendulum", total_steps=16_000, ...)
    trainer = jaxrl.make_train(config, jaxrl.sac.make(jaxrl.SACConfig()))
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
Host driver with logging and whole-run checkpoints: `jaxrl.train(config, agent_config,
out_dir)`, `jaxrl.resume(out_dir)`; a trained policy: `jaxrl.load_policy(out_dir)`.
"""

import envs
from jaxrl import agents, replay
from jaxrl.agents import ALGORITHMS, Agent, ppo, sac
from jaxrl.agents.ppo import PPOConfig
from jaxrl.agents.sac import SACConfig
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.driver import RunOptions, RunResult, resume, train
from jaxrl.loop import LoopState, Trainer, make_train
from jaxrl.runs import Policy, evaluate_run, load_policy
from jaxrl.types import Batch, Rollout, Transition

make_env = envs.make
make_vec_env = envs.make_vec
list_envs = envs.list_envs

__all__ = [
    "ALGORITHMS",
    "Agent",
    "Batch",
    "ConfigError",
    "LoopState",
    "PPOConfig",
    "Policy",
    "Rollout",
    "RunOptions",
    "RunResult",
    "SACConfig",
    "TrainConfig",
    "Trainer",
    "Transition",
    "agents",
    "envs",
    "list_envs",
    "evaluate_run",
    "load_policy",
    "make_env",
    "make_train",
    "make_vec_env",
    "ppo",
    "replay",
    "resume",
    "sac",
    "train",
]
