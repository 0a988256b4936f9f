"""What the loops feed the agents, end to end, on a pure-JAX env whose every transition is known.

`Counter` counts up from 0, 1 or 2 and terminates on reaching 5; the time limit (4 steps)
truncates the episodes that start at 0. So one run holds terminated, truncated and
terminated-at-the-time-limit episodes. Each episode carries a random id in its observation, so
a test can find where every row an update received came from. Recording agents return what
the loop gave them (the last replay batch, the last rollout, the noise scales they acted
with), and the tests compare those with numpy computations from the raw transitions.
"""

import dataclasses
import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.envs.base import State

from jaxrl import ppo, sac
from jaxrl.agents import fast_td3, pql
from jaxrl.agents.base import Agent
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.loops import make_train, resolve_config
from jaxrl.types import Batch, Rollout
from tests import reference as ref

GOAL, LIMIT, NUM_ENVS = 5.0, 4, 4


class Counter:
    """obs = [position, step in episode, episode id]; the position starts at 0, 1 or 2 and
    rises by 1 per step whatever the action; terminated on reaching GOAL. Reward: the new
    position plus 0.1 * action[0], so the stored reward also tells which action was applied."""

    episode_length = LIMIT
    action_repeat = 1
    observation_size = 3
    action_size = 2

    def reset(self, key):
        start_key, id_key = jax.random.split(key)
        start = jax.random.randint(start_key, (), 0, 3).astype(jnp.float32)
        obs = jnp.stack([start, 0.0, jax.random.uniform(id_key)])
        zero = jnp.zeros(())
        return State(obs, obs, zero, zero, {}, {})

    def step(self, state, action):
        obs = state.obs + jnp.array([1.0, 1.0, 0.0])
        reward = obs[0] + 0.1 * action[0]
        return state.replace(
            pipeline_state=obs, obs=obs, reward=reward, done=(obs[0] >= GOAL).astype(jnp.float32)
        )


class DictCounter(Counter):
    """Counter observed as Playground's robot tasks observe: a dict. "state" is Counter's
    observation (the actor's), "privileged_state" = [10 position, step, id, 1] (the critic's:
    another size, and its first entry tells the two apart), and "pixels" no network reads."""

    observation_size = {"state": (3,), "privileged_state": (4,), "pixels": (2, 2)}

    @staticmethod
    def observe(counter):
        ones = jnp.ones(counter.shape[:-1] + (1,))
        privileged = jnp.concatenate([counter * jnp.array([10.0, 1.0, 1.0]), ones], -1)
        return {"state": counter, "privileged_state": privileged, "pixels": jnp.zeros((2, 2))}

    def reset(self, key):
        state = super().reset(key)
        return state.replace(obs=self.observe(state.pipeline_state))

    def step(self, state, action):
        state = super().step(state.replace(obs=state.pipeline_state), action)
        return state.replace(obs=self.observe(state.pipeline_state))


def privileged(counter):
    """DictCounter's critic entry of Counter observations [..., 3], in numpy."""
    return np.concatenate(
        [counter * np.array([10.0, 1.0, 1.0]), np.ones(counter.shape[:-1] + (1,))], -1
    )


ASYMMETRIC = dict(actor_obs="state", critic_obs="privileged_state")


def _config(**overrides):
    base = dict(
        env="custom/counter",
        total_steps=NUM_ENVS * 30,
        num_envs=NUM_ENVS,
        batch_size=16,
        updates_per_step=1,
        buffer_size=1024,
        learning_starts=NUM_ENVS * 10,
        eval_every=NUM_ENVS * 30,
        eval_envs=3,
        gamma=0.9,
    )
    return TrainConfig(**{**base, **overrides})


def recording_agent(batch_size: int) -> Agent:
    """Acts [0.5 * noise_scale, tanh(0.1 * obs[:, 0])]; its state is the last batch it got."""

    def init(key, obs_size, action_size, critic_obs_size=None):
        zeros = lambda *shape: jnp.zeros((batch_size,) + shape)
        batch = Batch(
            zeros(obs_size), zeros(action_size), zeros(), zeros(obs_size), zeros(), zeros()
        )._replace(truncated=zeros())
        if critic_obs_size is not None:
            batch = batch._replace(
                critic_obs=zeros(critic_obs_size), next_critic_obs=zeros(critic_obs_size)
            )
        return {"batch": batch, "updates": jnp.zeros((), jnp.int32)}

    def act(state, obs, key, noise_scale=1.0):
        scale = jnp.broadcast_to(jnp.asarray(noise_scale, jnp.float32), obs.shape[:1])
        return jnp.stack([0.5 * scale, jnp.tanh(0.1 * obs[:, 0])], -1)

    def update(state, batch, key):
        return {"batch": batch, "updates": state["updates"] + 1}, {"reward": batch.reward.mean()}

    return Agent(init, act, update)


def normalize(stats, x):
    """The normalisation the loop must apply, written independently: clip((x - mean) / std)."""
    mean, var = np.asarray(stats.mean, np.float64), np.asarray(stats.var, np.float64)
    return np.clip((x - mean) / np.sqrt(var + 1e-8), -10, 10)


def _run(config, agent, env=None):
    trainer = make_train(config, agent, env=env or Counter())
    state, metrics = jax.jit(trainer.chunk)(jax.jit(trainer.init)(jax.random.PRNGKey(0)))
    return trainer, state, metrics


def _rows(buffer):
    """The written rows in the order they were written: [slots, envs, ...] flattened."""
    data = jax.device_get(buffer.data)
    size = int(buffer.rows)
    return jax.tree.map(
        lambda x: np.asarray(x.reshape((-1,) + x.shape[2:])[:size], np.float64), data
    )


def test_stored_transitions_keep_truncation_apart_from_termination():
    _, state, _ = _run(_config(), recording_agent(16))
    rows = _rows(state.buffer)
    obs, nxt = rows.obs, rows.next_obs
    # next_obs is the observation the step reached, even where the env was reset after it.
    np.testing.assert_array_equal(nxt, obs + np.array([1.0, 1.0, 0.0]))
    np.testing.assert_allclose(rows.reward, nxt[:, 0] + 0.1 * rows.action[:, 0], rtol=1e-6)
    terminated = nxt[:, 0] >= GOAL
    truncated = ~terminated & (nxt[:, 1] >= LIMIT)
    np.testing.assert_array_equal(rows.terminated, terminated)
    np.testing.assert_array_equal(rows.done, terminated | truncated)
    assert truncated.sum() > 3 and terminated.sum() > 3
    assert (terminated & (nxt[:, 1] >= LIMIT)).any()  # terminated at the time limit: terminated
    # Rows chain per env (row i + NUM_ENVS is the same env's next step): the next row starts
    # where this one arrived unless the episode ended, and then starts a fresh episode.
    later = obs[NUM_ENVS:]
    ended = rows.done[:-NUM_ENVS] > 0
    np.testing.assert_array_equal(later[~ended], nxt[:-NUM_ENVS][~ended])
    assert (later[ended, 1] == 0).all() and (later[ended, 2] != obs[:-NUM_ENVS][ended, 2]).all()
    # After the warm-up, the policy acted on the observation the env was in.
    acted = np.arange(len(obs)) >= 10 * NUM_ENVS
    np.testing.assert_allclose(rows.action[acted, 1], np.tanh(0.1 * obs[acted, 0]), rtol=1e-6)


def test_warm_up_actions_are_uniform_or_the_policy_s_own():
    warmup = np.arange(NUM_ENVS * 30) < 10 * NUM_ENVS
    rows = _rows(_run(_config(), recording_agent(16))[1].buffer)
    # Uniform warm-up: actions in [-1, 1] that are not the policy's.
    assert np.abs(rows.action[warmup]).max() <= 1
    assert not np.isclose(rows.action[warmup, 0], 0.5).any()
    # "policy" (Brax's prefill): the policy acts from the first step; updates still wait.
    _, state, metrics = _run(_config(warmup_actions="policy"), recording_agent(16))
    rows = _rows(state.buffer)
    np.testing.assert_allclose(rows.action[:, 0], 0.5)
    np.testing.assert_allclose(rows.action[:, 1], np.tanh(0.1 * rows.obs[:, 0]), rtol=1e-6)
    assert int(state.agent["updates"]) == 21 and float(metrics["updates"]) == 21


@pytest.mark.parametrize("obs_clip", [10.0, 0.0])
def test_the_loop_normalises_with_the_configured_clip(obs_clip):
    from jaxrl import normalization
    from jaxrl.loops.base import make_observe

    stats = normalization.update(normalization.init(2), jnp.array([[0.0, 0.0], [2.0, 2.0]]))
    x = jnp.array([[1.0, 101.0]])  # normalised: 0 and 100
    observed = make_observe(_config(normalize_observations=True, obs_clip=obs_clip))(stats, x)
    np.testing.assert_allclose(observed, [[0.0, 100.0 if obs_clip == 0 else 10.0]], rtol=1e-5)
    np.testing.assert_array_equal(make_observe(_config(normalize_observations=False))(stats, x), x)


@pytest.mark.parametrize("renormalize", [False, True])
def test_running_statistics_and_the_batch_the_update_reads(renormalize):
    config = _config(normalize_observations=True, renormalize_rollout=renormalize)
    _, state, metrics = _run(config, recording_agent(16))
    rows = _rows(state.buffer)
    # The statistics saw every observation a step reached (not the reset ones before); with
    # Brax's order (renormalize_rollout), every observation a step acted on instead.
    seen = rows.obs if renormalize else rows.next_obs
    stats = state.obs_stats
    np.testing.assert_allclose(stats.mean, seen.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.var, seen.var(0), rtol=1e-4, atol=1e-6)
    assert float(stats.count) == len(seen)
    # The last update's batch: rows of the buffer, both observations normalised with the
    # statistics of that iteration (the final ones), its own done-free termination flag.
    batch = jax.device_get(state.agent["batch"])
    stored = normalize(stats, rows.obs)
    for r in range(16):
        (match,) = np.nonzero(np.isclose(stored, batch.obs[r], atol=1e-5).all(-1))
        i = match[0]
        np.testing.assert_allclose(batch.action[r], rows.action[i], atol=1e-6)
        np.testing.assert_allclose(batch.reward[r], rows.reward[i], atol=1e-5)
        np.testing.assert_allclose(batch.next_obs[r], normalize(stats, rows.next_obs[i]), atol=1e-5)
        assert batch.terminated[r] == rows.terminated[i]
        assert batch.truncated[r] == rows.done[i] - rows.terminated[i]
        assert batch.discount[r] == pytest.approx(0.9)
    # Updates start in the iteration that stores the 40th row (learning_starts): 30 - 9.
    assert int(state.agent["updates"]) == 21 and float(metrics["updates"]) == 21


def test_replayed_rows_flag_truncation_apart_from_termination():
    """Each replayed row's `truncated` (what Brax's SAC masks) is 1 only where its episode
    ended at the time limit: 0 at terminations and at plain steps."""
    config = _config(total_steps=NUM_ENVS * 60, eval_every=NUM_ENVS * 60, batch_size=64)
    _, state, _ = _run(config, recording_agent(64))
    rows = _rows(state.buffer)
    batch = jax.device_get(state.agent["batch"])
    kinds = set()
    for r in range(64):
        (i,) = np.nonzero(
            (rows.obs == batch.obs[r]).all(-1) & (rows.action == batch.action[r]).all(-1)
        )
        i = i[0]
        kind = "terminated" if rows.terminated[i] else "truncated" if rows.done[i] else "open"
        assert batch.truncated[r] == (kind == "truncated"), kind
        kinds.add(kind)
    assert kinds == {"terminated", "truncated", "open"}


def test_n_step_batches_stop_at_episode_ends_and_bootstrap_through_truncation():
    config = _config(n_step=3, total_steps=NUM_ENVS * 60, eval_every=NUM_ENVS * 60, batch_size=64)
    _, state, _ = _run(config, recording_agent(64))
    rows = _rows(state.buffer)
    batch = jax.device_get(state.agent["batch"])
    gamma, kinds = 0.9, set()
    for r in range(64):
        # Follow the episode by its id and step counter, not by the buffer's layout.
        (i,) = np.nonzero(
            (rows.obs == batch.obs[r]).all(-1) & (rows.action == batch.action[r]).all(-1)
        )
        i = i[0]
        total, steps = 0.0, 0
        while True:
            total += gamma**steps * rows.reward[i]
            steps += 1
            if rows.done[i] or steps == 3:
                break
            (i,) = np.nonzero((rows.obs == rows.next_obs[i]).all(-1))
            i = i[0]
        np.testing.assert_allclose(batch.reward[r], total, rtol=1e-5)
        np.testing.assert_allclose(batch.discount[r], gamma**steps, rtol=1e-6)
        np.testing.assert_array_equal(batch.next_obs[r], rows.next_obs[i])
        assert batch.terminated[r] == rows.terminated[i]
        # Truncated where the window's last step ended its episode at the time limit.
        assert batch.truncated[r] == rows.done[i] - rows.terminated[i]
        kinds.add(
            ("terminated" if rows.terminated[i] else "truncated" if rows.done[i] else "open", steps)
        )
    # The batch held windows cut by a termination and by a truncation before their third step.
    assert {k for k, s in kinds if s < 3} >= {"terminated", "truncated"}


def test_per_env_noise_scales_reach_act():
    config = _config(exploration="linspace", noise_scale_min=0.2, noise_scale_max=0.8)
    _, state, _ = _run(config, recording_agent(16))
    rows = _rows(state.buffer)
    acted = rows.action[10 * NUM_ENVS :, 0].reshape(-1, NUM_ENVS)
    np.testing.assert_allclose(
        acted, np.broadcast_to(0.5 * np.linspace(0.2, 0.8, 4), acted.shape), rtol=1e-6
    )
    # Uniform scales: one per episode, redrawn when it ends.
    config = _config(exploration="uniform", noise_scale_min=0.1, noise_scale_max=0.9)
    _, state, _ = _run(config, recording_agent(16))
    rows = _rows(state.buffer)
    policy = np.arange(len(rows.obs)) >= 10 * NUM_ENVS
    scale = 2 * rows.action[:, 0]
    for episode in np.unique(rows.obs[policy, 2]):
        in_episode = policy & (rows.obs[:, 2] == episode)
        assert np.unique(scale[in_episode]).size == 1
    assert np.unique(scale[policy]).size > NUM_ENVS
    assert ((scale[policy] >= 0.1) & (scale[policy] <= 0.9)).all()


def recording_on_policy_agent(unroll: int) -> Agent:
    """Explores [tanh(0.1 obs[:, 0]), 0]; its state is the last rollout it got."""

    def init(key, obs_size, action_size, critic_obs_size=None):
        zeros = lambda *shape: jnp.zeros((unroll, NUM_ENVS) + shape)
        rollout = Rollout(
            zeros(obs_size), zeros(), zeros(obs_size), zeros(), zeros(), zeros(), {}, jnp.zeros(())
        )
        if critic_obs_size is None:
            return rollout
        critic = zeros(critic_obs_size)
        return rollout._replace(critic_obs=critic, next_critic_obs=critic)

    def act(state, obs, key, noise_scale=1.0):
        return jnp.stack([jnp.tanh(0.1 * obs[:, 0]), jnp.zeros(obs.shape[0])], -1)

    def explore(state, obs, key):
        return act(state, obs, key), {}

    return Agent(init, act, lambda state, rollout, key: (rollout, {}), explore, name="ppo")


@pytest.mark.parametrize("normalization", ["off", "collected", "renormalized"])
def test_rollouts_keep_truncation_apart_from_termination(normalization):
    config = _config(
        algo="ppo",
        unroll_length=12,
        total_steps=NUM_ENVS * 48,  # two chunks of two rollouts; `_run` runs the first
        eval_every=NUM_ENVS * 24,
        normalize_observations=normalization != "off",
        renormalize_rollout=normalization == "renormalized",
    )
    _, state, _ = _run(config, recording_on_policy_agent(12))
    rollout = jax.device_get(state.agent)
    # The second rollout of the run's four: a quarter of the run done when it started (the
    # fraction PPO's linear schedule decays by).
    assert int(state.iteration) == 2 and float(rollout.progress) == 0.25
    obs, nxt = np.asarray(rollout.obs, np.float64), np.asarray(rollout.next_obs, np.float64)
    done = rollout.done > 0
    # Within a rollout, observations and next observations share one normalisation, so the
    # chain holds in normalised space; where the episode ended, next_obs is its final obs.
    np.testing.assert_allclose(obs[1:][~done[:-1]], nxt[:-1][~done[:-1]], atol=1e-5)
    if normalization == "renormalized":
        # Brax's order: the last rollout is normalised with the statistics that include it,
        # the state's final ones; undone with them, it is the raw counter again.
        stats = state.obs_stats
        assert float(stats.count) == 2 * 12 * NUM_ENVS  # the reached observations only
        scale = np.sqrt(np.asarray(stats.var, np.float64) + 1e-8)
        raw = obs * scale + np.asarray(stats.mean, np.float64)
        raw_next = nxt * scale + np.asarray(stats.mean, np.float64)
        np.testing.assert_allclose(raw_next, raw + np.array([1.0, 1.0, 0.0]), atol=1e-4)
        np.testing.assert_allclose(raw[..., :2], np.round(raw[..., :2]), atol=1e-4)
        return
    if normalization == "collected":
        # The statistics before this rollout (the state's minus this rollout's final obs)
        # are not at hand; undo the normalisation through two known raw quantities instead.
        raw_step = (nxt - obs)[~done][:, 1]  # step counter rises by exactly 1 everywhere
        assert np.allclose(raw_step, raw_step[0]) and raw_step[0] != 1.0
        return
    np.testing.assert_array_equal(nxt, obs + np.array([1.0, 1.0, 0.0]))
    terminated = nxt[..., 0] >= GOAL
    truncated = ~terminated & (nxt[..., 1] >= LIMIT)
    np.testing.assert_array_equal(rollout.terminated, terminated)
    np.testing.assert_array_equal(rollout.done, terminated | truncated)
    assert truncated.any() and terminated.any()
    np.testing.assert_allclose(
        rollout.reward, nxt[..., 0] + 0.1 * np.tanh(0.1 * obs[..., 0]), rtol=1e-6
    )
    np.testing.assert_allclose(rollout.discount, 0.9)
    # GAE on this rollout with V(s) = position - step against a numpy loop.
    value = lambda o: o[..., 0] - o[..., 1]
    advantage, target = ppo.gae(
        jnp.asarray(rollout.reward),
        jnp.asarray(value(obs)),
        jnp.asarray(value(nxt)),
        jnp.asarray(rollout.terminated),
        jnp.asarray(rollout.done),
        jnp.asarray(rollout.discount),
        0.8,
    )
    expected = np.zeros_like(obs[..., 0])
    following = np.zeros(NUM_ENVS)
    for t in reversed(range(12)):
        delta = rollout.reward[t] + 0.9 * (1 - terminated[t]) * value(nxt[t]) - value(obs[t])
        following = delta + 0.9 * 0.8 * (1 - done[t]) * following
        expected[t] = following
    np.testing.assert_allclose(advantage, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(target, expected + value(obs), rtol=1e-5, atol=1e-5)


def test_evaluation_is_greedy_deterministic_and_equals_a_hand_rolled_rollout():
    config = _config(normalize_observations=True)
    agent = sac.make(sac.SACConfig(actor_hidden=(8,), critic_hidden=(8,)))
    trainer, state, _ = _run(config, agent)
    key = jax.random.PRNGKey(5)
    evaluate = jax.jit(trainer.evaluate)
    first, second = (
        evaluate(state.agent, state.obs_stats, key),
        evaluate(state.agent, state.obs_stats, key),
    )
    chex.assert_trees_all_equal(first, second)
    # By hand: the eval envs reset with the first half of the key, act with tanh(mean) of the
    # normalised observation, and sum rewards until each episode ends.
    env_state = trainer.eval_env.reset(jax.random.split(key)[0])
    params = ref.to64(state.agent.actor.params)
    returns, alive = np.zeros(3), np.ones(3, bool)
    for _ in range(LIMIT):
        mean, _ = ref.gaussian_actor(params, normalize(state.obs_stats, np.asarray(env_state.obs)))
        env_state = trainer.eval_env.step(env_state, jnp.asarray(np.tanh(mean), jnp.float32))
        returns += np.where(alive, np.asarray(env_state.reward), 0.0)
        alive &= np.asarray(env_state.done) == 0
    np.testing.assert_allclose(first["eval_return"], returns.mean(), rtol=1e-5)
    np.testing.assert_allclose(first["eval_return_std"], returns.std(), rtol=1e-4, atol=1e-5)


def test_algorithms_bring_their_own_loop_defaults():
    fast = resolve_config(TrainConfig(algo="fast_td3"), fast_td3.make())
    assert (fast.exploration, fast.noise_scale_min, fast.noise_scale_max) == ("uniform", 0.001, 0.4)
    assert fast.normalize_observations and fast.n_step == 1
    parallel = resolve_config(TrainConfig(algo="pql"), pql.make())
    assert (
        parallel.exploration,
        parallel.noise_scale_min,
        parallel.noise_scale_max,
        parallel.n_step,
    ) == ("linspace", 0.05, 0.8, 3)
    plain = resolve_config(TrainConfig(), sac.make())
    assert (
        plain.exploration,
        plain.noise_scale_max,
        plain.n_step,
        plain.normalize_observations,
    ) == ("fixed", 1.0, 1, False)
    # An explicit value beats the algorithm's own.
    mine = resolve_config(TrainConfig(algo="pql", n_step=1, exploration="fixed"), pql.make())
    assert (mine.n_step, mine.exploration, mine.noise_scale_min) == (1, "fixed", 0.05)


def test_a_config_for_another_algorithm_is_refused():
    with pytest.raises(ConfigError, match="algo is 'sac' but the agent is 'ppo'"):
        make_train(
            _config(algo="sac"),
            ppo.make(ppo.PPOConfig(actor_hidden=(4,), critic_hidden=(4,))),
            env=Counter(),
        )
    unnamed = recording_on_policy_agent(12)._replace(name="")
    with pytest.raises(ConfigError, match="does not match an on-policy agent"):
        make_train(_config(algo="sac"), unnamed, env=Counter())


# --- Dict observations and the asymmetric actor-critic. ---------------------------------------


def test_asymmetric_critic_reads_its_own_entry_with_its_own_statistics():
    config = _config(normalize_observations=True, **ASYMMETRIC)
    trainer, state, _ = _run(config, recording_agent(16), DictCounter())
    assert trainer.observation.sizes == {"actor": 3, "critic": 4}
    rows = _rows(state.buffer)
    obs, nxt = rows.obs["actor"], rows.next_obs["actor"]
    # Stored: both entries of the same step (the critic's is the privileged one).
    np.testing.assert_array_equal(rows.obs["critic"], privileged(obs))
    np.testing.assert_array_equal(rows.next_obs["critic"], privileged(nxt))
    np.testing.assert_array_equal(nxt, obs + np.array([1.0, 1.0, 0.0]))  # as Counter's
    # Statistics per entry, each over the observations the steps reached.
    stats = state.obs_stats
    assert set(stats) == {"actor", "critic"}
    for part in ("actor", "critic"):
        seen = rows.next_obs[part]
        np.testing.assert_allclose(stats[part].mean, seen.mean(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(stats[part].var, seen.var(0), rtol=1e-4, atol=1e-6)
    # The last update's batch: the actor's entry in obs, the critic's in critic_obs, both of
    # one stored row and each normalised with its own statistics.
    batch = jax.device_get(state.agent["batch"])
    stored = normalize(stats["actor"], obs)
    for r in range(16):
        (match,) = np.nonzero(np.isclose(stored, batch.obs[r], atol=1e-5).all(-1))
        i = match[0]
        np.testing.assert_allclose(batch.next_obs[r], normalize(stats["actor"], nxt[i]), atol=1e-5)
        critic = normalize(stats["critic"], rows.obs["critic"][i])
        np.testing.assert_allclose(batch.critic_obs[r], critic, atol=1e-5)
        next_critic = normalize(stats["critic"], rows.next_obs["critic"][i])
        np.testing.assert_allclose(batch.next_critic_obs[r], next_critic, atol=1e-5)
        assert batch.terminated[r] == rows.terminated[i]


def test_the_actor_acts_and_is_evaluated_on_its_own_entry():
    # No normalisation: the recorded action tells the actor's input apart (10 x position in
    # the critic's entry would give another tanh).
    config = _config(**ASYMMETRIC)
    trainer, state, metrics = _run(config, recording_agent(16), DictCounter())
    rows = _rows(state.buffer)
    acted = np.arange(len(rows.action)) >= 10 * NUM_ENVS
    expected = np.tanh(0.1 * rows.obs["actor"][acted, 0])
    np.testing.assert_allclose(rows.action[acted, 1], expected, rtol=1e-6)
    # The greedy policy takes the env's whole dict observation (or its actor entry alone).
    env_obs = DictCounter.observe(jnp.array([[2.0, 1.0, 0.5]]))
    action = trainer.policy(state.agent, state.obs_stats, env_obs)
    same = trainer.policy(state.agent, state.obs_stats, env_obs["state"])
    np.testing.assert_allclose(action, same)
    np.testing.assert_allclose(action[0, 1], np.tanh(0.2), rtol=1e-6)
    # Evaluation: Counter's rewards (position + 0.1 action) under the actor's action, which
    # is the same as with symmetric Counter observations.
    _, plain, plain_metrics = _run(_config(), recording_agent(16))
    np.testing.assert_allclose(metrics["eval_return"], plain_metrics["eval_return"], rtol=1e-6)


def test_asymmetric_rollouts_carry_the_critic_entry():
    config = _config(
        algo="ppo",
        unroll_length=12,
        total_steps=NUM_ENVS * 24,
        eval_every=NUM_ENVS * 24,
        normalize_observations=True,
        renormalize_rollout=True,  # the last rollout normalised with the state's statistics
        **ASYMMETRIC,
    )
    _, state, _ = _run(config, recording_on_policy_agent(12), DictCounter())
    rollout = jax.device_get(state.agent)
    stats = state.obs_stats
    assert float(stats["actor"].count) == float(stats["critic"].count) == 2 * 12 * NUM_ENVS

    def raw(part, x):  # each entry undone with its own statistics
        s = stats[part]
        scale = np.sqrt(np.asarray(s.var, np.float64) + 1e-8)
        return np.asarray(x, np.float64) * scale + np.asarray(s.mean, np.float64)

    actor, critic = raw("actor", rollout.obs), raw("critic", rollout.critic_obs)
    np.testing.assert_allclose(critic, privileged(actor), atol=1e-4)
    next_actor, next_critic = raw("actor", rollout.next_obs), raw("critic", rollout.next_critic_obs)
    np.testing.assert_allclose(next_critic, privileged(next_actor), atol=1e-4)
    np.testing.assert_allclose(next_actor, actor + np.array([1.0, 1.0, 0.0]), atol=1e-4)


def test_observation_entries_are_checked_before_compiling():
    agent = recording_agent(16)
    with pytest.raises(ConfigError, match="'privileged'.*entries are 'state', 'privileged_state'"):
        make_train(_config(critic_obs="privileged"), agent, env=DictCounter())
    with pytest.raises(ConfigError, match="--actor-obs 'pixels'.*shape \\(2, 2\\)"):
        make_train(_config(actor_obs="pixels"), agent, env=DictCounter())
    with pytest.raises(ConfigError, match="--critic-obs privileged_state: .* one array"):
        make_train(_config(critic_obs="privileged_state"), agent, env=Counter())
    # Without --actor-obs, a dict observation is read at "state" by actor and critic alike.
    trainer = make_train(_config(), agent, env=DictCounter())
    assert not trainer.observation.asymmetric and trainer.observation.sizes == 3


def test_the_algorithm_is_named_once_by_the_agent_s_config(tmp_path):
    """TrainConfig.algo left at None: the agent (make_train) or the agent's config
    (jaxrl.train) names it, and the sizes that depend on it are checked then (a PPO run is
    not refused for an off-policy learning_starts); named twice and differently is refused."""
    from jaxrl.agents import td3
    from jaxrl.run import driver

    short = TrainConfig(total_steps=512, num_envs=4, unroll_length=16, eval_every=256)
    assert short.algo is None  # learning_starts 5000 > 512 is no error for a run not yet named
    trainer = make_train(short, ppo.make(ppo.PPOConfig(num_minibatches=4)))
    assert trainer.config.algo == "ppo" and trainer.config.num_chunks == 2
    assert make_train(dataclasses.replace(short, learning_starts=64), sac.make()).config.algo == (
        "sac"
    )
    with pytest.raises(ConfigError, match="learning_starts 5000 >= total_steps 512"):
        make_train(short, sac.make())
    tiny = td3.TD3Config(actor_hidden=(8,), critic_hidden=(8,))
    run = driver.train(
        dataclasses.replace(short, learning_starts=64, batch_size=16),
        tiny,
        tmp_path / "run",
        progress=None,
    )
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["algo"] == "td3" and run.history[-1]["env_steps"] == 512
    with pytest.raises(ConfigError, match="algo 'sac' takes a SACConfig, got TD3Config"):
        driver.train(dataclasses.replace(short, algo="sac", learning_starts=64), tiny)
