"""jaxrl's off-policy LOOP against Brax SAC's own `sac.train`, over several whole training
steps, not its pieces: `jaxrl.loops.offpolicy.make_train`'s real `chunk` (the iteration scan:
collect, normaliser update, replay insert, learning start, replay sampling, the update scan),
with `benchmarks.brax_parity.sac_parity_flags`' loop options (buffer prefilled by the untrained
policy, first update at `brax_sac_first_update_rows`, the normaliser fed the observations
acted on, finished envs back at their first state, normalised observations not clipped).

Brax's run (a tiny env with terminations and time limits: a prefill of 4 steps of 4 envs, then
4 training steps of 2 gradient steps each) is read out as it goes, as in
`tests/agents/test_sac_brax_parity.py`. The two trainers derive their keys differently, so
jaxrl's run is handed Brax's draws where it draws: the i-th acting key of jaxrl's loop is
Brax's i-th env step's, the i-th replay draw returns the rows Brax's buffer sampled at its i-th
training step (jaxrl's own draw range is recorded and must equal Brax's filled rows), and the
i-th update's keys are Brax's i-th gradient step's. Everything else is jaxrl's loop as it runs:
which step acts with which parameters and statistics, what is stored, when learning starts,
how many updates run, which statistics normalise the batch. Compared: every stored transition,
the observation statistics, the batch of every update, and every parameter at the end.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

from jaxrl import replay
from jaxrl.agents import sac, sac_family
from jaxrl.config import TrainConfig
from jaxrl.envs import wrappers
from jaxrl.loops import make_train
from tests.agents import test_sac_brax_parity as step_parity

N, BATCH, UPDATES, PREFILL, TRAIN_STEPS, EPISODE = 4, 8, 2, 4, 4, 5
SEED, EVAL_ENVS = 1, 2
TOTAL = (PREFILL + TRAIN_STEPS) * N
# Brax SAC's settings for this run (sac.train's arguments), as the parity suites give them.
SETTINGS = dict(
    num_envs=N,
    batch_size=BATCH,
    grad_updates_per_step=UPDATES,
    max_replay_size=1024,
    min_replay_size=PREFILL * N,
    discounting=0.9,
    episode_length=EPISODE,
    action_repeat=1,
    learning_rate=1e-3,
    reward_scaling=2.0,
    tau=0.1,
    normalize_observations=True,
    q_network_layer_norm=True,
)


def _configs(**slip) -> tuple[TrainConfig, sac.SACConfig]:
    """jaxrl's configs from `sac_parity_flags(SETTINGS)`, as the parity suites build them
    (`jaxrl.config.resolve.build_configs`), with this test's small networks; `slip` replaces
    loop fields. The env is `Drift` (handed to make_train; the flag only names a family)."""
    from jaxrl.benchmarks.brax_parity import sac_parity_flags
    from jaxrl.config import resolve

    hidden = ",".join(map(str, step_parity.HIDDEN))
    argv = ["--algo", "sac", "--env", "classic/pendulum", "--seed", str(SEED)]
    argv += ["--num-envs", str(N), "--steps", str(TOTAL)]
    argv += [*sac_parity_flags(SETTINGS, TOTAL, evals=1, eval_envs=EVAL_ENVS)]
    argv += ["--actor-hidden", hidden, "--critic-hidden", hidden]
    train_config, agent_config, _ = resolve.build_configs(argv)
    return dataclasses.replace(train_config, **slip), agent_config


@pytest.fixture(scope="module")
def brax_run():
    """Brax's `sac.train` on `Drift`, with what it did read out: each env step's key and
    transitions, each replay sample's key and range, each loss's key (and the critic's batch),
    the training state after every gradient step, and the final normaliser."""
    from brax import envs as brax_envs
    from brax.training import replay_buffers
    from brax.training.agents.sac import networks as brax_networks
    from brax.training.agents.sac import train as brax_train

    from tests import brax_peer

    steps, states, samples = [], [], []
    seen = {"alpha": [], "critic": [], "actor": []}
    record = brax_peer.record
    sample_internal = replay_buffers.UniformSamplingQueue.sample_internal

    def recording_sample(self, buffer_state):
        record(samples, (buffer_state.key, buffer_state.sample_position,
                         buffer_state.insert_position))  # fmt: skip
        return sample_internal(self, buffer_state)

    factory = functools.partial(
        brax_networks.make_sac_networks,
        hidden_layer_sizes=step_parity.HIDDEN,
        q_network_layer_norm=SETTINGS["q_network_layer_norm"],
    )
    brax_peer.install_shims()
    with pytest.MonkeyPatch.context() as patch:
        brax_peer.record_sac_training(patch, steps, seen, states)
        patch.setattr(replay_buffers.UniformSamplingQueue, "sample_internal", recording_sample)
        settings = {k: v for k, v in SETTINGS.items() if k != "q_network_layer_norm"}
        _, (normalizer, policy), _ = brax_train.train(
            environment=brax_peer.Drift(),
            wrap_env_fn=brax_envs.training.wrap,  # Brax's own; Drift is no brax.envs.Env
            num_timesteps=TOTAL,
            num_eval_envs=EVAL_ENVS,
            seed=SEED,
            num_evals=1,
            deterministic_eval=True,
            network_factory=factory,
            **settings,
        )
    steps = [s for s in steps if s[1].observation.shape[0] == N]  # the evaluation's aside
    assert len(steps) == PREFILL + TRAIN_STEPS
    assert len(samples) == TRAIN_STEPS
    assert len(states) == 1 + TRAIN_STEPS * UPDATES  # the initial state, one per gradient step
    assert all(len(keys) == TRAIN_STEPS * UPDATES for keys in seen.values())
    # The rows Brax's buffer drew at each training step (its UniformSamplingQueue).
    draws = []
    for key, start, end in samples:
        sample_key = jax.random.split(jnp.asarray(key))[1]
        rows = jax.random.randint(sample_key, (BATCH * UPDATES,), start, end)
        draws.append((np.asarray(rows), int(start), int(end)))
    # Brax's env keys (brax/training/agents/sac/train.py, 0.14.2): the first states the
    # training envs start from and come back to.
    rng = jax.random.split(jax.random.PRNGKey(SEED))[0]
    local_key = jax.random.fold_in(jax.random.split(rng)[1], 0)
    env_key = jax.random.split(local_key, 4)[2]
    return dict(
        steps=steps, states=states, seen=seen, draws=draws, env_key=env_key,
        normalizer=normalizer, policy=policy,
    )  # fmt: skip


def _run_jaxrl(brax: dict, monkeypatch, **slip) -> dict:
    """jaxrl's loop (one chunk: every iteration of the run) from Brax's initial parameters and
    first env states, handed Brax's draws in the order jaxrl's loop asks for them."""
    from tests import brax_peer

    acts = iter(np.asarray(k, np.uint32) for k, _ in brax["steps"])
    draws = iter(brax["draws"])
    seen = brax["seen"]
    # Brax's keys as the update_keys SAC reads here; the others (zeros) unused.
    unused = sac_family.UpdateKeys(*np.zeros((8, 2), np.uint32))
    as_key = lambda k: np.asarray(k, np.uint32)  # noqa: E731
    update_keys = iter(
        unused._replace(
            next_action=as_key(seen["critic"][u][0]),
            policy_action=as_key(seen["actor"][u]),
            temperature_action=as_key(seen["alpha"][u]),
        )
        for u in range(TRAIN_STEPS * UPDATES)
    )
    ranges, batches = [], []

    def next_act_key():
        return next(acts, np.zeros(2, np.uint32))  # the evaluation's greedy acts: any key

    def next_update_keys():
        return next(update_keys, unused)

    first_end = brax["draws"][0][2]  # the rows Brax had filled at its first training step

    def next_draw(low, high):
        # The loop gathers in every iteration and updates only where the buffer is ready
        # (`offpolicy.make_learn`): a draw from fewer rows than Brax's first feeds no update,
        # unless a slip makes it (then its rows, zeros, are not Brax's).
        if int(high) < first_end:
            return np.zeros((1, BATCH * UPDATES), np.int32)
        ranges.append((int(low), int(high)))
        rows, _, _ = next(draws, (np.zeros(BATCH * UPDATES, np.int32), 0, 0))
        return rows.astype(np.int32).reshape(1, -1)

    def draws_fn(key, shards, batch_shape, low, high):
        assert shards == 1
        shape = jax.ShapeDtypeStruct((1, math.prod(batch_shape)), jnp.int32)
        return io_callback(next_draw, shape, low, high, ordered=True)

    key_shape = lambda *s: jax.ShapeDtypeStruct(s, jnp.uint32)  # noqa: E731
    monkeypatch.setattr(replay, "_draws", draws_fn)
    monkeypatch.setattr(
        sac_family,
        "update_keys",
        lambda key: io_callback(
            next_update_keys, sac_family.UpdateKeys(*[key_shape(2)] * 8), ordered=True
        ),
    )
    train_config, agent_config = _configs(**slip)
    agent = sac.make(agent_config)

    def act(state, obs, key, noise_scale=1.0):
        key = io_callback(next_act_key, key_shape(2), ordered=True)
        return agent.act(state, obs, key, noise_scale)

    def update(state, batch, key):
        jax.debug.callback(lambda b: batches.append(jax.device_get(b)), batch, ordered=True)
        return agent.update(state, batch, key)

    trainer = make_train(train_config, agent._replace(act=act, update=update), brax_peer.Drift())
    state = trainer.init(jax.random.PRNGKey(0))
    start = brax["states"][0]
    agent_state = state.agent.replace(  # Adam's fresh states depend on shapes alone
        actor=state.agent.actor.replace(params=step_parity._policy_as_jaxrl(start.policy_params)),
        critic=state.agent.critic.replace(params=step_parity._q_as_jaxrl(start.q_params)),
        target_critic_params=step_parity._q_as_jaxrl(start.target_q_params),
        log_alpha=state.agent.log_alpha.replace(params=jnp.asarray(start.alpha_params)),
    )
    # Brax's first env states: its per-env keys are split(env_key, N), as jaxrl's batched reset
    # splits its key; finished envs come back to them (autoreset "first").
    first = trainer.env.env.reset(brax["env_key"])
    env_state = wrappers._with_own_keys(first, first, brax["env_key"])
    state = state.replace(agent=agent_state, env_state=env_state)
    state, summary = jax.jit(trainer.chunk)(state)
    jax.effects_barrier()
    return dict(state=state, summary=summary, ranges=ranges, batches=batches)


def _close(got, want, msg, rtol=1e-5, atol=1e-6):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=msg)


def _check(brax: dict, run: dict) -> None:
    """Every stored transition, the draw ranges, every update's batch, the observation
    statistics and the parameters after the run: jaxrl's loop against Brax's."""
    state, summary = run["state"], run["summary"]
    # The replay buffer: Brax's transitions in order (one slot per env step, one row per env).
    data = jax.device_get(state.buffer.data)
    assert int(state.buffer.size) == PREFILL + TRAIN_STEPS
    for t, (_, step) in enumerate(brax["steps"]):
        done = 1.0 - np.asarray(step.discount)
        truncated = np.asarray(step.extras["state_extras"]["truncation"])
        np.testing.assert_allclose(data.obs[t], step.observation, 1e-5, 1e-6, f"obs {t}")
        np.testing.assert_allclose(data.action[t], step.action, 1e-5, 1e-6, err_msg=f"act {t}")
        np.testing.assert_allclose(data.reward[t], step.reward, 1e-5, 1e-6, err_msg=f"rew {t}")
        np.testing.assert_array_equal(data.done[t], done, err_msg=f"done {t}")
        np.testing.assert_array_equal(data.terminated[t], done * (1 - truncated), f"term {t}")
        # Brax stores the next episode's first observation at an ending; jaxrl the one reached.
        going = done == 0
        want = step.next_observation[going]
        np.testing.assert_allclose(data.next_obs[t][going], want, 1e-5, 1e-6, f"next {t}")
    ends = np.stack([1.0 - np.asarray(s.discount) for _, s in brax["steps"]])
    truncs = np.stack([s.extras["state_extras"]["truncation"] for _, s in brax["steps"]])
    assert (ends * (1 - truncs)).any() and truncs.any()  # terminations and time limits
    # Learning started at Brax's first training step, and drew from Brax's filled rows.
    assert run["ranges"] == [(0, end) for _, _, end in brax["draws"]]
    assert int(summary["updates"]) == TRAIN_STEPS * UPDATES
    assert int(state.agent.step) == TRAIN_STEPS * UPDATES
    # Every update's batch: Brax's sampled transitions, normalised by the statistics Brax's
    # gradient step read (its state after the step holds them unchanged).
    assert len(run["batches"]) == TRAIN_STEPS * UPDATES
    for u, (batch, (_, transitions)) in enumerate(
        zip(run["batches"], brax["seen"]["critic"], strict=True)
    ):
        stats = brax["states"][u + 1].normalizer_params
        norm = lambda x, s=stats: (np.asarray(x) - s.mean) / s.std  # noqa: E731
        done = 1.0 - np.asarray(transitions.discount)
        going = done == 0
        np.testing.assert_allclose(batch.action, transitions.action, 1e-5, 1e-6, f"batch {u}")
        np.testing.assert_allclose(batch.reward, transitions.reward, 1e-5, 1e-6, f"batch {u}")
        np.testing.assert_allclose(batch.obs, norm(transitions.observation), 1e-4, 1e-5)
        np.testing.assert_allclose(
            batch.next_obs[going], norm(transitions.next_observation)[going], 1e-4, 1e-5
        )
        np.testing.assert_array_equal(batch.terminated + batch.truncated, done)
    # The observation statistics after the run: Brax's normaliser.
    stats = state.obs_stats
    np.testing.assert_allclose(stats.mean, brax["normalizer"].mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.sqrt(stats.var), brax["normalizer"].std, rtol=1e-4)
    # Every parameter after the 4 training steps (8 gradient steps).
    after = brax["states"][-1]
    agent = state.agent
    close = lambda got, want, msg: _close(got, want, msg, 1e-4, 2 * step_parity.STEP_ATOL)  # noqa: E731
    close(agent.actor.params, step_parity._policy_as_jaxrl(brax["policy"]), "policy")
    close(agent.critic.params, step_parity._q_as_jaxrl(after.q_params), "critics")
    close(agent.target_critic_params, step_parity._q_as_jaxrl(after.target_q_params), "targets")
    np.testing.assert_allclose(agent.log_alpha.params, after.alpha_params, rtol=1e-5, atol=1e-6)


def test_loop_runs_as_brax_sac_train_over_several_training_steps(brax_run, monkeypatch):
    """jaxrl's loop with the parity options, over Brax's prefill and 4 training steps: the
    same transitions stored, the same rows drawn from the same filled range, the same
    statistics normalising every batch, the same parameters after 8 gradient steps."""
    _check(brax_run, _run_jaxrl(brax_run, monkeypatch))


@pytest.mark.parametrize(
    "slip",
    [
        dict(renormalize_rollout=False),  # statistics fed the observations reached
        dict(learning_starts=PREFILL * N),  # first update one step early
        dict(learning_starts=(PREFILL + 2) * N),  # one step late
        dict(warmup_actions="uniform"),  # uniform random actions during the prefill
        dict(autoreset="random"),  # finished envs at fresh states (and other first states)
    ],
)
def test_each_loop_option_matters(brax_run, monkeypatch, slip):
    """Without any one of the loop options `sac_parity_flags` sets, jaxrl's loop no longer
    runs as Brax's."""
    with pytest.raises(AssertionError):
        _check(brax_run, _run_jaxrl(brax_run, monkeypatch, **slip))
