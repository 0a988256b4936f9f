"""The on-policy loop: rollouts, chunk accounting, truncation bootstrapping, vmap over seeds."""

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import make_train
from jaxrl.agents import ppo
from jaxrl.config import TrainConfig

TINY_PPO = ppo.PPOConfig(actor_hidden=(8,), critic_hidden=(8,), num_epochs=2, num_minibatches=4)


def _tiny(**overrides):
    base = dict(
        env="classic/pendulum",
        algo="ppo",
        total_steps=512,
        num_envs=4,
        unroll_length=16,
        eval_every=256,
        eval_envs=2,
    )
    return TrainConfig(**{**base, **overrides})


def test_chunk_counts_rollouts_gradient_steps_and_episodes():
    config = _tiny(total_steps=1600, eval_every=800)  # 800 / (4 x 16): 13 rollouts per chunk
    # An iteration is one rollout (and its update): 13 per chunk, 16 steps of each env each.
    assert config.iterations_per_chunk == 13 and config.steps_per_iteration == 16
    assert config.env_steps_per_chunk == 13 * 16 * 4
    trainer = make_train(config, ppo.make(TINY_PPO))
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0))
    chunk = jax.jit(trainer.chunk)
    state, first = chunk(state)
    state, second = chunk(state)
    assert int(second["iteration"]) == 2 * 13  # rollouts
    assert int(second["iteration"]) * config.env_steps_per_iteration == 1664  # env steps
    assert int(first["updates"]) == 13 * 2 * 4  # rollouts x epochs x minibatches
    assert int(state.agent.step) == 26
    # Pendulum episodes are 200 steps: by step 208 each env finished one, by 416 two.
    assert int(first["episodes"]) == 4 and int(second["episodes"]) == 4
    chex.assert_tree_all_finite(second)


def test_rollout_stores_true_final_observations_and_time_limits():
    # Episodes of 10 steps: the rollout of 16 steps holds one truncation per env at step 9,
    # where next_obs is the observation reached (not the reset one) and nothing terminated.
    config = _tiny(episode_length=10, total_steps=64, eval_every=64)
    trainer = make_train(config, ppo.make(TINY_PPO))
    captured = []

    def update(state, rollout, key):  # records the rollout on the host, learns nothing
        jax.debug.callback(lambda r: captured.append(jax.device_get(r)), rollout)
        return state, {}

    trainer = make_train(config, trainer.agent._replace(update=update))
    state = trainer.init(jax.random.PRNGKey(0))
    jax.block_until_ready(trainer.chunk(state))
    rollout = captured[0]
    chex.assert_shape(rollout.obs, (16, 4, 3))
    np.testing.assert_array_equal(rollout.done[9], 1.0)
    np.testing.assert_array_equal(rollout.terminated, 0.0)
    # Within an episode obs[t + 1] == next_obs[t]; across the time limit it is a fresh reset.
    np.testing.assert_allclose(rollout.obs[1:9], rollout.next_obs[:8], atol=1e-6)
    assert not np.allclose(rollout.obs[10], rollout.next_obs[9])
    # Pendulum's observation is (cos, sin, velocity): the stored final one is a real state.
    np.testing.assert_allclose(np.hypot(*np.moveaxis(rollout.next_obs[9, :, :2], -1, 0)), 1.0)


def test_vmap_over_seeds_matches_runs_one_by_one():
    trainer = make_train(_tiny(), ppo.make(TINY_PPO))
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    _, together = jax.jit(jax.vmap(trainer.train))(keys)
    train = jax.jit(trainer.train)
    for i in range(2):
        _, alone = train(keys[i])
        chex.assert_trees_all_close(
            jax.tree.map(lambda x, i=i: x[i], together), alone, rtol=1e-4, atol=1e-4
        )
