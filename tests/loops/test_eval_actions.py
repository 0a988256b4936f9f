"""`TrainConfig.eval_actions`: "sampled" evaluation (Brax's `deterministic_eval=False`) draws
a fresh action every step, each env its own, from the agent's acting distribution; "greedy"
takes its mode. The env pays the action itself, so an episode's return is the sum of its
actions: T fresh draws give a spread sqrt(T) times one action's, one draw repeated T times T
times (the independent reference is numpy's spread of tanh(std x N(0, 1)))."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import normalization
from jaxrl.agents import ppo
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.loops import make_train
from jaxrl.loops.base import make_evaluate

T, ENVS = 16, 512


class PaysTheAction:
    """Observation 0 always (so an untrained policy's mean is its bias, 0), reward a_0."""

    observation_size, action_size, backend, episode_length = 1, 1, "jax", T
    unwrapped = property(lambda self: self)

    def reset(self, rng):
        from brax.envs.base import State

        zero = jnp.zeros(())
        return State(pipeline_state=zero, obs=jnp.zeros(1), reward=zero, done=zero, metrics={},
                     info={})  # fmt: skip

    def step(self, state, action):
        return state.replace(reward=action[0], done=jnp.zeros(()))


def _returns(eval_actions: str) -> np.ndarray:
    config = TrainConfig(algo="ppo", env="brax/PaysTheAction", num_envs=4, eval_envs=ENVS,
                         unroll_length=4, eval_actions=eval_actions)  # fmt: skip
    agent = ppo.make(ppo.PPOConfig(num_minibatches=1))
    trainer = make_train(config, agent, PaysTheAction())
    state = agent.init(jax.random.PRNGKey(0), 1, 1)
    evaluate = make_evaluate(trainer.config, agent, trainer.eval_env, per_episode=True)
    stats = normalization.init(1)
    return np.asarray(jax.jit(evaluate)(state, stats, jax.random.PRNGKey(1))["eval_returns"])


def test_greedy_evaluation_takes_the_mode():
    np.testing.assert_array_equal(_returns("greedy"), 0.0)


def test_sampled_evaluation_draws_a_fresh_action_every_step_in_every_env():
    std = np.log1p(np.exp(0.0)) + 0.001  # Brax's softplus std of a raw output 0
    one = np.tanh(std * np.random.default_rng(0).standard_normal(200_000)).std()
    returns = _returns("sampled")
    assert len(set(np.round(returns, 5))) == ENVS  # every env its own draws
    np.testing.assert_allclose(returns.std(), np.sqrt(T) * one, rtol=0.1)
    assert abs(returns.mean()) < 4 * np.sqrt(T) * one / np.sqrt(ENVS)


def test_sampled_evaluation_cannot_share_the_training_simulator():
    config = TrainConfig(algo="ppo", env="brax/PaysTheAction", num_envs=4, eval_envs=4,
                         unroll_length=4, eval_actions="sampled",
                         eval_simulator="shared")  # fmt: skip
    with pytest.raises(ConfigError, match="sampled"):
        make_train(config, ppo.make(ppo.PPOConfig(num_minibatches=1)), PaysTheAction())
