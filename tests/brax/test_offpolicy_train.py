"""`jaxrl.brax.<algo>.train` for TD3, CrossQ, DroQ, REDQ, FastTD3, FastSAC, DSAC-T and PQL:
Brax's sac.train signature plus each algorithm's options, Brax's units and metrics, jaxrl's
make_policy with Brax's signature, refusals by name; learning on Brax's `fast` env (slow)."""

from __future__ import annotations

import importlib
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.training.acme import running_statistics

from jaxrl import agents
from jaxrl.brax import offpolicy, sac
from jaxrl.errors import ConfigError
from tests import brax_peer
from tests.brax.test_sac_train import BRAX_SAC_TEST, BRAX_SAC_THRESHOLD, EVAL_KEYS, RUN


def _door(algo: str):
    return importlib.import_module(f"jaxrl.brax.{algo}").train


def _arguments(algo: str, **changes) -> dict:
    defaults = {
        name: p.default
        for name, p in inspect.signature(_door(algo)).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    run = {k: v for k, v in RUN.items() if k != "network_factory"}
    return {**defaults, **run, "environment": brax_peer.MeteredDrift(), **changes}


@pytest.mark.parametrize("algo", offpolicy.ALGORITHMS)
def test_every_door_takes_sac_train_s_arguments_and_its_algorithm_s_options(algo):
    ours = inspect.signature(_door(algo)).parameters
    theirs = inspect.signature(sac.train).parameters
    assert list(ours)[:-1] == list(theirs)  # the same names in the same order, then **options
    assert ours["options"].kind is inspect.Parameter.VAR_KEYWORD
    for name, parameter in theirs.items():
        if name not in ("network_factory", "progress_fn"):
            assert ours[name].default == parameter.default, name
    assert ours["network_factory"].default is None  # the algorithm's own networks


@pytest.mark.parametrize("algo", offpolicy.ALGORITHMS)
def test_brax_s_arguments_and_the_options_reach_the_algorithm_s_configs(algo):
    spec = agents.get(algo)
    own = spec.config_cls()
    option = {"num_critics": 3} if "num_critics" in vars(own) else {"policy_delay": 3}
    tau = 0.02 if hasattr(own, "tau") else 0.005  # CrossQ has no target networks
    plan = sac.make_plan(_arguments(algo, tau=tau), algo, option)
    config, agent = plan.config, plan.agent_config
    assert config.algo == algo and type(agent) is spec.config_cls
    assert (config.num_envs, config.batch_size, config.updates_per_step) == (4, 8, 2)
    assert (config.gamma, config.action_repeat, plan.prefill) == (0.95, 2, 2)
    assert (agent.actor_lr, agent.critic_lr, agent.reward_scale) == (1e-3, 1e-3, 2.0)
    assert getattr(agent, "tau", tau) == tau and getattr(agent, next(iter(option))) == 3
    # Everything else is the algorithm's own.
    assert agent.actor_hidden == own.actor_hidden and agent.critic_hidden == own.critic_hidden


def test_per_env_noise_algorithms_evaluate_greedily_and_explore_at_their_middle_scale():
    """FastTD3 and PQL spread their exploration over the envs (scales in a range of a noise of
    std 1): Brax's sampled evaluation would act at scale 1, which their training never used."""
    from jaxrl.brax.sac import _exploring_scale
    from jaxrl.loops.base import resolve_config

    for algo, sampled in (("td3", "sampled"), ("fast_td3", "greedy"), ("pql", "greedy")):
        plan = sac.make_plan(_arguments(algo), algo, {})
        assert plan.config.eval_actions == sampled, algo
        config = resolve_config(plan.config, agents.get(algo).make(plan.agent_config))
        scale = _exploring_scale(config)
        if algo == "td3":  # one noise for every env
            assert scale == 1.0
        else:  # the middle of the envs' range, below 1
            assert scale == (config.noise_scale_min + config.noise_scale_max) / 2 < 1.0


def test_a_factory_s_networks_are_taken_and_options_checked():
    import functools

    from brax.training.agents.sac import networks as sac_networks

    factory = functools.partial(sac_networks.make_sac_networks, hidden_layer_sizes=(16, 8))
    agent = sac.make_plan(_arguments("td3", network_factory=factory), "td3", {}).agent_config
    assert agent.actor_hidden == agent.critic_hidden == (16, 8)
    with pytest.raises(ConfigError, match="polic_delay: not an option of td3"):
        sac.make_plan(_arguments("td3"), "td3", {"polic_delay": 2})
    with pytest.raises(ConfigError, match="checkpoint_logdir cannot be honoured by jaxrl.brax.td3"):
        sac.make_plan(_arguments("td3", checkpoint_logdir="/tmp/x"), "td3", {})
    with pytest.raises(ConfigError, match="policy_delay must be >= 1"):
        sac.make_plan(_arguments("td3"), "td3", {"policy_delay": 0})
    with pytest.raises(ConfigError, match="tau=0.02: crossq has no tau"):
        sac.make_plan(_arguments("crossq", tau=0.02), "crossq", {})


@pytest.fixture(scope="module")
def trained():
    """A short run of TD3 (deterministic, clipped noise) and CrossQ (BatchRenorm statistics in
    its policy) through their doors, Brax's progress calls recorded."""
    out = {}
    for algo in ("td3", "crossq"):
        calls = []
        args = _arguments(algo, progress_fn=lambda step, m, calls=calls: calls.append((step, m)))
        small = {"actor_hidden": (8, 8), "critic_hidden": (16, 16)}
        result = _door(algo)(**args, **small)
        out[algo] = (result, calls)
    return out


@pytest.mark.parametrize("algo", ["td3", "crossq"])
def test_a_door_reports_at_brax_s_steps_and_returns_brax_s_triple(trained, algo):
    (make_policy, params, metrics), calls = trained[algo]
    assert [step for step, _ in calls] == [0, 40, 64]  # as jaxrl.brax.sac and Brax's sac.train
    assert EVAL_KEYS <= set(calls[0][1])
    train_keys = {"training/sps", "training/walltime", "training/critic_loss",
                  "training/actor_loss", "training/buffer_current_size"}  # fmt: skip
    assert train_keys <= set(metrics)
    assert ("training/alpha" in metrics) == (algo == "crossq")  # TD3 has no temperature
    normalizer, policy = params
    assert isinstance(normalizer, running_statistics.RunningStatisticsState)
    assert int(normalizer.count) == (2 + 6) * 4  # prefill and training steps of 4 envs
    # The actor (CrossQ: and its BatchRenorm statistics) and the noise's settings; no critic.
    assert any(k.startswith(".actor.params") for k in policy)
    assert all(k.startswith((".actor.params", ".actor_stats", ".hp[")) for k in policy)
    obs = jax.random.normal(jax.random.PRNGKey(0), (5, 3))
    greedy = make_policy(params, deterministic=True)
    action, extras = greedy(obs, jax.random.PRNGKey(1))
    assert action.shape == (5, 2) and extras == {} and float(jnp.abs(action).max()) <= 1.0
    np.testing.assert_array_equal(greedy(obs, jax.random.PRNGKey(2))[0], action)
    explore = make_policy(params)
    a1, a2 = (explore(obs, jax.random.PRNGKey(k))[0] for k in (1, 2))
    assert not np.allclose(a1, a2) and not np.allclose(a1, action)
    # The greedy action is the policy's: jaxrl's own greedy act on the state rebuilt from params.
    from jaxrl.loops.base import init_agent
    from jaxrl.loops.base import make_policy as jaxrl_policy
    from jaxrl.observations import ObservationView
    from jaxrl.run import runs

    plan = sac.make_plan(
        _arguments(algo), algo, {"actor_hidden": (8, 8), "critic_hidden": (16, 16)}
    )
    agent = agents.get(algo).make(plan.agent_config)
    like = init_agent(agent, jax.random.PRNGKey(0), ObservationView(None, None, 3, None), 2)
    state = runs.agent_state_from_arrays(like, policy)
    from jaxrl.brax import params as brax_params

    want = jaxrl_policy(plan.config, agent)(
        state, brax_params.normalizer_from_brax(normalizer), obs
    )
    np.testing.assert_allclose(action, want, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["crossq"])
def test_it_learns_brax_s_own_sac_test(algo):
    """Brax's SAC train test's `fast` env, settings and threshold (140 x 0.995; a random
    policy gets about 70) through the CrossQ door, with 64 x 64 networks. Not TD3: `fast`
    rewards only the sign of the action (its velocity grows while the action is > 0), so a
    deterministic policy's gradient has no slope to follow; through the door TD3 ends at 0
    there with Brax's SAC settings, with reward_scaling 1, and with 8 updates per step."""
    from brax import envs

    _, _, metrics = _door(algo)(
        envs.get_environment("fast"), **BRAX_SAC_TEST, actor_hidden=(64, 64), critic_hidden=(64, 64)
    )
    assert metrics["eval/episode_reward"] > BRAX_SAC_THRESHOLD
