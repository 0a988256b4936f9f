"""The on-policy loop: rollouts, chunk accounting, truncation bootstrapping, vmap over seeds."""

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import make_train
from jaxrl.agents import ppo
from tests import tiny


def test_chunk_counts_rollouts_gradient_steps_and_episodes():
    # 800 / (4 x 16): 13 rollouts per chunk.
    config = tiny.on_policy(total_steps=1600, eval_every=800)
    # An iteration is one rollout (and its update): 13 per chunk, 16 steps of each env each.
    assert config.iterations_per_chunk == 13 and config.steps_per_iteration == 16
    assert config.env_steps_per_chunk == 13 * 16 * 4
    trainer = make_train(config, ppo.make(tiny.PPO))
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
    config = tiny.on_policy(episode_length=10, total_steps=64, eval_every=64)
    trainer = make_train(config, ppo.make(tiny.PPO))
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
    trainer = make_train(tiny.on_policy(), ppo.make(tiny.PPO))
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    _, together = jax.jit(jax.vmap(trainer.train))(keys)
    train = jax.jit(trainer.train)
    for i in range(2):
        _, alone = train(keys[i])
        chex.assert_trees_all_close(
            jax.tree.map(lambda x, i=i: x[i], together), alone, rtol=1e-4, atol=1e-4
        )


def _rollouts(config, chunks=1):
    """The rollouts the update receives over `chunks` chunks, recorded on the host."""
    captured = []

    def update(state, rollout, key):  # records the rollout, learns nothing
        jax.debug.callback(lambda r: captured.append(jax.device_get(r)), rollout)
        return state, {}

    trainer = make_train(config, ppo.make(tiny.PPO))
    trainer = make_train(config, trainer.agent._replace(update=update))
    state = trainer.init(jax.random.PRNGKey(0))
    chunk = jax.jit(trainer.chunk)
    for _ in range(chunks):
        state, _ = chunk(state)
    jax.block_until_ready(state)
    return captured, state


def test_reset_every_restarts_every_env_mid_episode():
    """reset_every=2 (Brax's num_resets_per_eval): after every second rollout all envs start
    afresh, mid-episode (pendulum's episodes are 200 steps), so the next rollout's first
    observation is not where the last one ended; after the other rollouts it is."""
    config = tiny.on_policy(
        total_steps=256, eval_every=256, reset_every=2
    )  # 4 rollouts of 16 steps
    rollouts, _ = _rollouts(config)
    assert len(rollouts) == 4
    for i in range(3):
        carried = np.allclose(rollouts[i + 1].obs[0], rollouts[i].next_obs[-1], atol=1e-6)
        assert carried == (i % 2 == 0), i
    # Fresh random states: not the run's first ones either.
    assert not np.allclose(rollouts[2].obs[0], rollouts[0].obs[0])


def test_renormalize_rollout_takes_in_the_observations_acted_on():
    """Brax's order: the statistics after a rollout are those of the observations it acted on
    (obs), not of those it reached (next_obs), and the update reads the rollout normalised
    with them; the default takes in next_obs."""
    base = dict(total_steps=64, eval_every=64, normalize_observations=True, obs_clip=0.0)
    for renormalize in (True, False):
        config = tiny.on_policy(**base, renormalize_rollout=renormalize)
        (rollout,), state = _rollouts(config)
        stats = state.obs_stats
        assert int(stats.count) == 64
        if renormalize:  # the stored obs, normalised with the final statistics, are centred
            np.testing.assert_allclose(rollout.obs.reshape(-1, 3).mean(0), 0.0, atol=1e-5)
            np.testing.assert_allclose(rollout.obs.reshape(-1, 3).var(0), 1.0, rtol=1e-4)
        else:  # stored as acted on: with the identity statistics of the start
            raw_next = rollout.next_obs.reshape(-1, 3)
            np.testing.assert_allclose(stats.mean, raw_next.mean(0), rtol=1e-5, atol=1e-6)


def test_autoreset_first_in_the_loop():
    """autoreset="first": after the time limit every training env is back at its first state."""
    config = tiny.on_policy(episode_length=10, total_steps=64, eval_every=64, autoreset="first")
    (rollout,), _ = _rollouts(config)
    np.testing.assert_array_equal(rollout.done[9], 1.0)
    np.testing.assert_allclose(rollout.obs[10], rollout.obs[0], atol=0)
