"""jaxrl's evaluation against Brax's own `acting.Evaluator`, the one `ppo.train` and `sac.train`
report "eval/episode_reward" from: the same policy parameters, observation statistics and
first states, each episode's return equal, for PPO's and SAC's deterministic policies.

The parity suites compare jaxrl's "eval_return" with Brax's "eval/episode_reward", so a
difference in how either measures a return (which action is greedy, how observations are
normalised, when an episode stops counting, how long it may run) would read as a difference
in learning. The env is `tests.brax_peer.Drift` with a time limit of 6 steps, on which some
episodes terminate before it and some reach it. Brax's Evaluator resets its envs from
split(K, num_eval_envs) for the key K it hands its unroll; jaxrl's evaluation resets from
split(K, eval_envs) for K = split(key)[0], so both are given the same K.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import normalization
from jaxrl.agents import ppo, sac
from jaxrl.loops import make_train
from jaxrl.loops.base import make_evaluate
from tests import brax_peer, reference
from tests.agents import test_ppo_brax_parity as ppo_parity
from tests.agents import test_sac_brax_parity as sac_parity
from tests.loops import test_ppo_loop_brax_parity as ppo_loop
from tests.loops import test_sac_loop_brax_parity as sac_loop

EVAL_ENVS, EPISODE, OBS = 16, 6, 3
KEY = jax.random.PRNGKey(5)


def _statistics():
    """Observation statistics that are not the identity, as Brax's normaliser and jaxrl's."""
    from brax.training.acme import running_statistics, specs

    seen = 0.3 + 0.5 * jax.random.normal(jax.random.PRNGKey(1), (64, OBS))
    brax = running_statistics.init_state(specs.Array((OBS,), jnp.float32))
    brax = running_statistics.update(brax, seen)
    return brax, normalization.update(normalization.init(OBS), seen)


def _jaxrl_evaluation(algo, agent, agent_state, stats, env=None, **slip) -> dict:
    """jaxrl's evaluation (`make_evaluate`, per episode) of the trainer's own eval env for
    `env` (default: `Drift`), at the parity flags' run config with `slip`."""
    """Each episode's return from jaxrl's evaluation (`make_evaluate`, per episode) of the
    trainer's own eval env, for the parity flags' run config."""
    from jaxrl.benchmarks.brax_parity import ppo_parity_flags, sac_parity_flags
    from jaxrl.config import resolve

    # The loop parity tests' Brax settings, with this test's time limit.
    loop = ppo_loop if algo == "ppo" else sac_loop
    parity_flags = ppo_parity_flags if algo == "ppo" else sac_parity_flags
    settings = {**loop.SETTINGS, "episode_length": EPISODE}
    flags = parity_flags(settings, 400, evals=1, eval_envs=EVAL_ENVS)
    argv = ["--algo", algo, "--env", "classic/pendulum", "--steps", "400"]
    argv += ["--num-envs", str(settings["num_envs"])]
    config, _, _ = resolve.build_configs([*argv, *flags])
    config = dataclasses.replace(config, **slip)
    trainer = make_train(config, agent, env or brax_peer.Drift())
    evaluate = make_evaluate(trainer.config, agent, trainer.eval_env, per_episode=True)
    return jax.device_get(jax.jit(evaluate)(agent_state, stats, KEY))


def _jaxrl_returns(algo: str, agent, agent_state, stats, **slip) -> tuple:
    result = _jaxrl_evaluation(algo, agent, agent_state, stats, **slip)
    return np.asarray(result["eval_returns"]), float(result["eval_return"])


def _brax_eval_metrics(policy_fn, params, env=None):
    """Brax's Evaluator's episode metrics (its unroll, from the reset key jaxrl's evaluation
    uses), with Brax's training wrappers on `env` (default: `Drift`)."""
    from brax import envs as brax_envs
    from brax.training import acting

    env = brax_envs.training.wrap(env or brax_peer.Drift(), episode_length=EPISODE)
    evaluator = acting.Evaluator(env, policy_fn, EVAL_ENVS, EPISODE, 1, jax.random.PRNGKey(0))
    env_key = jax.random.split(KEY)[0]
    state = evaluator._generate_eval_unroll(evaluator._eval_state_to_donate, params, env_key)
    return jax.tree.map(np.asarray, state.info["eval_metrics"])


def _brax_returns(policy_fn, params) -> tuple[np.ndarray, np.ndarray]:
    """Each episode's return and length from Brax's Evaluator on `Drift`."""
    metrics = _brax_eval_metrics(policy_fn, params)
    return metrics.episode_metrics["reward"], metrics.episode_steps


def _check(brax: tuple, jaxrl: tuple) -> None:
    (returns, lengths), (got, mean) = brax, jaxrl
    assert (lengths < EPISODE).any() and (lengths == EPISODE).any()  # both endings
    assert got.shape == returns.shape == (EVAL_ENVS,)
    np.testing.assert_allclose(got, returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, returns.mean(), rtol=1e-5, atol=1e-5)


@functools.cache
def _ppo():
    from brax.training.agents.ppo import networks as brax_networks

    nets = ppo_parity._brax_networks()
    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    # Scaled up so the greedy policy drives some episodes over the termination threshold.
    policy = jax.tree.map(lambda x: 3.0 * x, nets.policy_network.init(keys[0]))
    value = nets.value_network.init(keys[1])
    brax_stats, stats = _statistics()
    policy_fn = functools.partial(brax_networks.make_inference_fn(nets), deterministic=True)
    brax = _brax_returns(policy_fn, (brax_stats, policy, value))
    agent = ppo.make(ppo_parity.CONFIG)
    state = agent.init(keys[2], OBS, ppo_parity.ACT)
    params = {
        "policy": ppo_parity._as_jaxrl(policy, state.params["policy"]),
        "value": ppo_parity._as_jaxrl(value, state.params["value"]),
    }
    return brax, agent, state.replace(params=params), stats


@functools.cache
def _sac():
    from brax.training.agents.sac import networks as brax_networks

    nets = sac_parity._brax_networks()
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    policy = jax.tree.map(lambda x: 3.0 * x, nets.policy_network.init(keys[0]))
    brax_stats, stats = _statistics()
    policy_fn = functools.partial(brax_networks.make_inference_fn(nets), deterministic=True)
    brax = _brax_returns(policy_fn, (brax_stats, policy))
    agent = sac.make(sac_parity.CONFIG)
    state = agent.init(keys[1], OBS, sac_parity.ACT)
    state = state.replace(actor=state.actor.replace(params=sac_parity._policy_as_jaxrl(policy)))
    return brax, agent, state, stats


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_evaluation_returns_equal_brax_evaluators(algo):
    """Each evaluation episode's return, jaxrl's against Brax's Evaluator: the same greedy
    actions on the same normalised observations, counted until the episode ends."""
    brax, agent, state, stats = _ppo() if algo == "ppo" else _sac()
    _check(brax, _jaxrl_returns(algo, agent, state, stats))


@pytest.mark.parametrize(
    "slip",
    [
        dict(obs_clip=0.5),  # normalised observations clipped (jaxrl's default clips at 10)
        dict(normalize_observations=False),  # the statistics not applied
    ],
)
def test_each_evaluation_choice_matters(slip):
    """The check sees a different normalisation of the policy's input."""
    brax, agent, state, stats = _ppo()
    jaxrl = _jaxrl_returns("ppo", agent, state, stats, **slip)
    with pytest.raises(AssertionError, match="Not equal"):
        _check(brax, jaxrl)


def test_evaluation_sees_a_perturbed_policy():
    """The check sees a slightly different policy (parameters off by a few percent)."""
    brax, agent, state, stats = _ppo()
    params = reference.perturbed(state.params, jax.random.PRNGKey(9), 0.05)
    jaxrl = _jaxrl_returns("ppo", agent, state.replace(params=params), stats)
    with pytest.raises(AssertionError, match="Not equal"):
        _check(brax, jaxrl)


def test_the_env_s_own_metrics_are_summed_as_brax_s_evaluator_reports_them():
    """`eval_env_metrics`: each env metric summed over every episode (a *per_step one per
    step), mean and spread over episodes, and the spread of the lengths, equal to what Brax's
    Evaluator reports as eval/episode_<name>, its _std and eval/std_episode_length."""
    from brax.training import acting
    from brax.training.agents.ppo import networks as brax_networks

    _, agent, state, stats = _ppo()
    nets = ppo_parity._brax_networks()
    policy_fn = functools.partial(brax_networks.make_inference_fn(nets), deterministic=True)
    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    params = (
        _statistics()[0],
        jax.tree.map(lambda x: 3.0 * x, nets.policy_network.init(keys[0])),
        nets.value_network.init(keys[1]),
    )
    brax = _brax_eval_metrics(policy_fn, params, brax_peer.MeteredDrift())
    ours = _jaxrl_evaluation(
        "ppo", agent, state, stats, brax_peer.MeteredDrift(), eval_env_metrics=True
    )
    lengths = np.maximum(brax.episode_steps, 1.0).astype(float)
    assert (brax.episode_steps < EPISODE).any()  # episodes of several lengths
    for name in ("x0", "push_per_step"):
        value = brax.episode_metrics[name]
        for fn, suffix in ((np.mean, ""), (np.std, "_std")):
            want = acting._agg_fn(value, fn, True, name.endswith("per_step"), lengths)
            np.testing.assert_allclose(ours[f"eval_episode/{name}{suffix}"], want, rtol=1e-5,
                                       atol=1e-6, err_msg=name + suffix)  # fmt: skip
    np.testing.assert_allclose(ours["eval_length_std"], np.std(brax.episode_steps), rtol=1e-6)
