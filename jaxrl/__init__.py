"""jaxrl: JAX-accelerated, massively parallel reinforcement learning.

Functional API:
    config = jaxrl.TrainConfig(env="classic/pendulum", total_steps=16_000, ...)
    trainer = jaxrl.make_train(config, jaxrl.sac.make(jaxrl.SACConfig()))
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
Host driver with logging and whole-run checkpoints: `jaxrl.train(config, agent_config,
out_dir)`, `jaxrl.resume(out_dir)`; a trained policy: `jaxrl.load_policy(out_dir)`.
"""

import pathlib as _pathlib


def _source_checkout_path() -> None:
    """Installed, `envs/`, `experiments/` and `benchmarks/` are the subpackages `jaxrl.envs`,
    `jaxrl.experiments` and `jaxrl.benchmarks` (pyproject.toml's package-dir), so nothing named
    `envs` lands in site-packages. When this `jaxrl` is imported straight from a source checkout
    (its tests, a copy made by the mutation script, a clone run with another checkout's
    environment), those folders sit beside it instead: its own are searched first, so the code
    that runs is always the checkout's own, never that of whichever checkout was installed."""
    root = _pathlib.Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "envs" / "registry.py").is_file():
        __path__.append(str(root))


_source_checkout_path()

from jaxrl import agents, envs, replay  # noqa: E402
from jaxrl.agents import ALGORITHMS, Agent, ppo, sac  # noqa: E402
from jaxrl.agents.ppo import PPOConfig  # noqa: E402
from jaxrl.agents.sac import SACConfig  # noqa: E402
from jaxrl.config import ConfigError, TrainConfig  # noqa: E402
from jaxrl.driver import RunOptions, RunResult, resume, train  # noqa: E402
from jaxrl.loops import OffPolicyState, OnPolicyState, Trainer, make_train  # noqa: E402
from jaxrl.runs import Policy, evaluate_run, load_policy  # noqa: E402
from jaxrl.types import Batch, Rollout, Transition  # noqa: E402
from jaxrl.version import version  # noqa: E402

__version__ = version()

make_env = envs.make
make_vec_env = envs.make_vec
list_envs = envs.list_envs

__all__ = [
    "__version__",
    "ALGORITHMS",
    "Agent",
    "Batch",
    "ConfigError",
    "OffPolicyState",
    "OnPolicyState",
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
