"""E2O's parts besides its update (tests/agents/test_edac_update_reference.py has that): the
pessimism schedule, SUNRISE's upper-confidence choice of action, the switch to online, and
acting, each against numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import distributions
from jaxrl.agents import e2o, sac_family
from tests import reference as ref

OBS, ACT = 3, 2
SMALL = dict(actor_hidden=(8,), critic_hidden=(8,), num_critics=4)


def numpy_pessimism(step: int, online_from: int, decay: int) -> float:
    if online_from < 0:
        return 1.0
    if decay == 0:
        return 0.0
    return float(np.clip(1 - (step - online_from) / decay, 0, 1))


@pytest.mark.parametrize("decay", [0, 1, 5])
def test_the_pessimism_schedule_falls_from_one_after_the_switch(decay):
    for online_from in (-1, 0, 4):
        for step in range(12):
            if online_from > step:
                continue
            got = e2o.pessimism(jnp.asarray(step), jnp.asarray(online_from), decay)
            assert float(got) == pytest.approx(numpy_pessimism(step, online_from, decay))


def test_the_upper_confidence_choice_takes_the_highest_mean_plus_lambda_std():
    key = jax.random.PRNGKey(0)
    candidates = np.asarray(jax.random.uniform(key, (6, 5, ACT), minval=-1, maxval=1))
    q = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (4, 6, 5)))
    for lam in (0.0, 1.0, 10.0):
        got = np.asarray(e2o.ucb_choice(jnp.asarray(candidates), jnp.asarray(q), lam))
        score = q.mean(0) + lam * q.std(0)
        want = candidates[score.argmax(0), np.arange(5)]
        np.testing.assert_array_equal(got, want)
    # lambda changes the choice where the critics disagree: the mean's and the bound's differ
    greedy = e2o.ucb_choice(jnp.asarray(candidates), jnp.asarray(q), 0.0)
    bold = e2o.ucb_choice(jnp.asarray(candidates), jnp.asarray(q), 10.0)
    assert not np.array_equal(np.asarray(greedy), np.asarray(bold))


def test_acting_draws_candidates_from_the_policy_and_keeps_the_best_bound():
    config = e2o.E2OConfig(**SMALL, ucb_candidates=5, ucb_lambda=2.0)
    agent = e2o.make(config)
    state = agent.init(jax.random.PRNGKey(0), OBS, ACT)
    obs = jax.random.normal(jax.random.PRNGKey(1), (7, OBS))
    key = jax.random.PRNGKey(2)
    action = np.asarray(agent.act(state, obs, key, 1.0))
    p = ref.to64(state)
    mean, log_std = ref.gaussian_actor(p.actor.params, np.asarray(obs, np.float64),
                                       log_std_clip=True)  # fmt: skip
    keys = jax.random.split(key, 5)
    candidates = np.stack([np.tanh(mean + np.exp(log_std) * ref.normal(k, mean.shape))
                           for k in keys])  # fmt: skip
    q = np.stack(
        [
            ref.q_ensemble(p.critic.params, np.asarray(obs, np.float64), c)[..., 0]
            for c in candidates
        ],
        axis=1,
    )  # fmt: skip  [E, M, N]
    score = q.mean(0) + 2.0 * q.std(0)
    np.testing.assert_allclose(action, candidates[score.argmax(0), np.arange(7)], atol=1e-5)
    # evaluation (noise 0): every candidate is the mode
    np.testing.assert_allclose(agent.act(state, obs, key, 0.0), np.tanh(mean), atol=1e-5)


def test_one_candidate_acts_as_sac_does():
    config = e2o.E2OConfig(**SMALL, ucb_candidates=1)
    state = e2o.make(config).init(jax.random.PRNGKey(0), OBS, ACT)
    obs, key = jax.random.normal(jax.random.PRNGKey(1), (7, OBS)), jax.random.PRNGKey(2)
    mean, log_std = sac_family.actor_network(config, ACT).apply(state.actor.params, obs)
    np.testing.assert_array_equal(
        e2o.make(config).act(state, obs, key, 0.5),
        distributions.tanh_gaussian_act(key, mean, log_std, 0.5),
    )


def test_the_switch_is_marked_once_at_the_update_count_it_happens_at():
    agent = e2o.make(e2o.E2OConfig(**SMALL))
    state = agent.init(jax.random.PRNGKey(0), OBS, ACT)
    assert int(state.online_from) == -1
    state = agent.begin_online(state.replace(step=jnp.asarray(40, jnp.int32)))
    assert int(state.online_from) == 40
    later = agent.begin_online(state.replace(step=jnp.asarray(90, jnp.int32)))
    assert int(later.online_from) == 40
