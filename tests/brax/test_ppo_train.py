"""`jaxrl.brax.ppo.train` against Brax's own `ppo.train`: the same signature, each argument
honoured or refused by name before anything compiles, Brax's units, and, run side by side on
the same tiny env with the same arguments, the same progress steps, metric keys,
policy_params_fn calls and parameter trees, with Brax's `make_inference_fn` acting on what
jaxrl returns. Learning: Brax's own PPO train test (its `fast` env and settings)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.training.agents.ppo import networks as ppo_networks
from brax.training.agents.ppo import train as brax_ppo
from brax.training.agents.sac import networks as sac_networks

from jaxrl.brax import ppo
from jaxrl.errors import ConfigError
from tests import brax_peer

# MeteredDrift: 3 observations, 2 actions. Two training steps per interval of 2 x 5 x 4 x 2 physics
# steps (action_repeat 2), 3 evaluations with the one at step 0.
RUN = dict(
    num_timesteps=160,
    num_envs=4,
    batch_size=4,
    num_minibatches=2,
    unroll_length=5,
    action_repeat=2,
    episode_length=13,
    num_evals=3,
    num_eval_envs=4,
    normalize_observations=True,
    learning_rate=1e-3,
    seed=1,
)
# The keys jaxrl gives, every one a key Brax gives at the same step.
EVAL_KEYS = {
    "eval/episode_reward", "eval/episode_reward_std", "eval/avg_episode_length",
    "eval/std_episode_length", "eval/walltime",
    # MeteredDrift's own metrics, summed over each episode
    "eval/episode_x0", "eval/episode_x0_std", "eval/episode_push_per_step",
    "eval/episode_push_per_step_std",
}  # fmt: skip
# The step-0 evaluation, timed apart (jaxrl's later ones run inside its training program)
FIRST_EVAL_KEYS = {"eval/epoch_eval_time", "eval/sps"}
TRAIN_KEYS = {
    "training/sps", "training/walltime", "training/total_loss", "training/policy_loss",
    "training/v_loss", "training/entropy_loss", "training/kl_mean", "training/learning_rate",
    # The policy's Gaussian over the minibatches (Brax's compute_ppo_loss)
    "training/policy_dist_mean_std", "training/policy_dist_max_std",
    "training/policy_dist_min_std", "training/policy_dist_mean_loc",
    "training/policy_dist_max_loc", "training/policy_dist_min_loc",
}  # fmt: skip


def _arguments(**changes) -> dict:
    """Every argument of Brax's `ppo.train` at its default (as `ppo.train` gives it), with
    RUN's and `changes`."""
    defaults = {
        name: p.default
        for name, p in inspect.signature(ppo.train).parameters.items()
        if p.default is not inspect.Parameter.empty and p.kind is not p.KEYWORD_ONLY
    }
    return {**defaults, **RUN, "environment": brax_peer.MeteredDrift(), **changes}


def test_the_signature_is_brax_s():
    """Brax's, in its order and with its defaults, and one keyword-only argument after them."""
    ours = inspect.signature(ppo.train).parameters
    theirs = inspect.signature(brax_ppo.train).parameters
    assert list(ours) == [*theirs, "jaxrl_choices"]
    assert ours["jaxrl_choices"].kind is inspect.Parameter.KEYWORD_ONLY
    assert ours["jaxrl_choices"].default is False
    for name, p in theirs.items():
        if name in ("progress_fn", "policy_params_fn"):  # lambdas: equal only in behaviour
            continue
        assert ours[name].default == p.default, name


@pytest.mark.parametrize("name", sorted(ppo._REFUSED))
def test_an_argument_jaxrl_cannot_honour_is_refused_by_name(name):
    value = {None: "x", False: True, True: False}.get(ppo._REFUSED[name][0], 0.5)
    with pytest.raises(ConfigError, match=name):
        ppo.make_plan(_arguments(**{name: value}))


@pytest.mark.parametrize(
    "change, named",
    [
        (dict(learning_rate_schedule="ADAPTIVE_KL"), "learning_rate_schedule"),
        (dict(wrap_env_fn=lambda env, **kw: env), "wrap_env_fn"),
        (dict(network_factory=lambda *a, **kw: None), "network_factory"),
        (
            dict(network_factory=sac_networks.make_sac_networks),
            "network_factory='make_sac_networks' returned a SACNetworks, not Brax's PPONetworks",
        ),
        (
            dict(
                network_factory=functools.partial(
                    ppo_networks.make_ppo_networks, use_distributional_critic=True
                )
            ),
            "distributional critic",
        ),  # fmt: skip
        (
            dict(network_factory=lambda obs, act, **kw: ppo_networks.make_ppo_networks(obs)),
            "network_factory=.*failed",
        ),
        (dict(batch_size=3), "num_envs"),
        (dict(log_training_metrics=True, training_metrics_steps=0), "training_metrics_steps"),
        (dict(episode_length=0), "episode_length"),
        (dict(num_envs=0), "num_envs"),
        (dict(learning_rate=-1.0), "learning_rate"),
        (dict(eval_env=brax_peer.WideDrift()), "eval_env.*observation_size 4"),
        (dict(normalize_observations_mode="rms"), "normalize_observations_mode.*'rms'"),
        (dict(normalize_until_count=0), "normalize_until_count"),
        (dict(normalize_observations_std_eps=-1e-3), "normalize_observations_std_eps"),
    ],
)
def test_bad_or_unsupported_settings_fail_before_compiling(change, named, monkeypatch):
    from jaxrl.run import driver

    monkeypatch.setattr(driver, "train", lambda *a, **kw: pytest.fail("compiled"))
    with pytest.raises(ConfigError, match=named):
        ppo.train(**_arguments(**change))


def test_eval_env_is_where_evaluation_runs():
    """Brax's `eval_env`: evaluation episodes run in it, wrapped as the training env is
    (PaidDrift: each episode returns its length, 7 control steps of 2 physics steps); with
    run_evals=False it is ignored, as Brax ignores it."""
    steps = []
    _, _, metrics = ppo.train(
        **_arguments(eval_env=brax_peer.PaidDrift(), progress_fn=lambda s, m: steps.append(m))
    )
    for reported in (steps[0], metrics):  # the step-0 evaluation and the last one
        assert reported["eval/episode_reward"] == reported["eval/avg_episode_length"] == 14
        assert reported["eval/episode_reward_std"] == 0
    plan = ppo.make_plan(_arguments(eval_env=brax_peer.WideDrift(), run_evals=False))
    assert isinstance(plan.trainer_env, brax_peer.MeteredDrift)
    # The pair the door checked goes on as it is: the driver and loops read no size again.
    plan = ppo.make_plan(_arguments(eval_env=brax_peer.PaidDrift()))
    assert plan.trainer_env._sizes_agree


def test_brax_s_units_become_jaxrl_s():
    """Physics steps (action_repeat in them) to control steps, Brax's rounding up of training
    steps per epoch, and num_resets_per_eval epochs per evaluation interval."""
    args = _arguments(num_timesteps=1000, num_evals=4, num_resets_per_eval=2, episode_length=13)
    plan = ppo.make_plan(args)
    per_step = 4 * 2 * 5  # batch_size x num_minibatches x unroll_length, control steps
    steps = math.ceil(1000 / (3 * per_step * 2 * 2))  # Brax: intervals x physics x epochs
    assert plan.config.total_steps == 3 * 2 * steps * per_step
    assert plan.config.total_steps * 2 >= 1000  # Brax's own assertion, in physics steps
    assert plan.config.eval_every == 2 * steps * per_step  # three intervals
    assert plan.config.reset_every == steps  # a hard reset after every epoch
    assert plan.config.episode_length == 7  # ceil(13 / 2): Brax counts steps x action_repeat
    assert plan.config.unroll_length == 5 * 2  # batch x minibatches / num_envs unrolls
    assert plan.agent_config.gae_horizon == 5
    assert plan.config.eval_actions == "sampled"  # Brax's default deterministic_eval=False
    assert ppo.make_plan(_arguments(deterministic_eval=True)).config.eval_actions == "greedy"


# Brax's argument, a value other than its default and RUN's, and the jaxrl field it sets.
HYPERPARAMETERS = [
    ("learning_rate", 7e-4, "agent_config", "learning_rate", 7e-4),
    ("num_updates_per_batch", 3, "agent_config", "num_epochs", 3),
    ("clipping_epsilon", 0.25, "agent_config", "clip_epsilon", 0.25),
    ("vf_loss_coefficient", 0.8, "agent_config", "value_coef", 0.8),
    ("entropy_cost", 0.02, "agent_config", "entropy_coef", 0.02),
    ("max_grad_norm", 2.5, "agent_config", "max_grad_norm", 2.5),
    ("gae_lambda", 0.9, "agent_config", "gae_lambda", 0.9),
    ("normalize_advantage", False, "agent_config", "normalize_advantages", False),
    ("reward_scaling", 5.0, "agent_config", "reward_scale", 5.0),
    ("discounting", 0.95, "config", "gamma", 0.95),
    ("seed", 11, "config", "seed", 11),
    ("num_eval_envs", 6, "config", "eval_envs", 6),
    ("normalize_observations", False, "config", "normalize_observations", False),
]


@pytest.mark.parametrize("name,value,part,field,expected", HYPERPARAMETERS)
def test_each_hyperparameter_reaches_its_jaxrl_field(name, value, part, field, expected):
    """A value of Brax's argument other than its default reaches jaxrl's field, and changes
    nothing else of the configs (so a dropped or crossed mapping fails here, where the defaults
    of both sides agree)."""
    base, changed = ppo.make_plan(_arguments()), ppo.make_plan(_arguments(**{name: value}))
    assert getattr(getattr(changed, part), field) == expected
    assert getattr(getattr(base, part), field) != expected
    for config in ("config", "agent_config"):
        before = dataclasses.asdict(getattr(base, config))
        after = dataclasses.asdict(getattr(changed, config))
        assert {k for k in after if after[k] != before[k]} == ({field} if config == part else set())


def test_wrappers_and_devices_are_taken_as_brax_takes_them():
    """`wrap_env_fn`: Brax's and Playground's training wrappers restart a finished env at its
    first state, Playground's with `full_reset=True` at a fresh one; `max_devices_per_host`
    caps the devices (1: one, unsharded) and must be >= 1."""
    import brax.envs
    from mujoco_playground import wrapper

    def autoreset(**changes):
        return ppo.make_plan(_arguments(**changes)).config.autoreset

    assert autoreset() == autoreset(wrap_env_fn=brax.envs.training.wrap) == "first"
    assert autoreset(wrap_env_fn=wrapper.wrap_for_brax_training) == "first"
    full = functools.partial(wrapper.wrap_for_brax_training, full_reset=True)
    assert autoreset(wrap_env_fn=full) == "random"
    assert ppo.make_plan(_arguments(max_devices_per_host=1)).config.devices == 0
    with pytest.raises(ConfigError, match="max_devices_per_host"):
        ppo.make_plan(_arguments(max_devices_per_host=0))


def test_brax_s_normaliser_modes_and_options_reach_the_run():
    """`normalize_observations_std_eps` is the normalisation's eps; `normalize_until_count`
    stops the statistics in Brax's "ema" mode and, as in Brax, does nothing in "welford"; the
    mode is how the returned and checkpointed statistics are held (tests/brax/test_params.py
    checks both modes' statistics against Brax's own update)."""
    from brax.training.acme import running_statistics

    plan = ppo.make_plan(_arguments(normalize_observations_std_eps=0.01))
    assert plan.config.obs_std_eps == 0.01 and plan.config.obs_stats_until == 0
    ema = dict(normalize_observations_mode="ema", normalize_until_count=np.int64(500))
    assert ppo.make_plan(_arguments(**ema)).config.obs_stats_until == 500
    welford = dict(normalize_observations_mode="welford", normalize_until_count=500)
    assert ppo.make_plan(_arguments(**welford)).config.obs_stats_until == 0
    _, params, _ = ppo.train(**_arguments(**ema, normalize_observations_std_eps=0.01))
    assert params[0].mode == running_statistics.NormalizationMode.EMA
    assert params[0].std_eps == 0.01
    np.testing.assert_allclose(params[0].std, np.sqrt(params[0].summed_variance + 0.01), rtol=1e-5)


def test_jaxrl_choices_changes_the_choices_and_nothing_else():
    """`jaxrl_choices=True`: the configs differ from Brax's-choice ones in exactly the fields of
    `JAXRL_CHOICES`, at jaxrl's own values (its configs' defaults); a value that is not a bool
    is refused by name."""
    from jaxrl.agents.ppo import PPOConfig
    from jaxrl.config import TrainConfig

    brax, own = ppo.make_plan(_arguments()), ppo.make_plan(_arguments(jaxrl_choices=True))
    for part, config, default in (
        ("train", "config", TrainConfig), ("agent", "agent_config", PPOConfig)
    ):  # fmt: skip
        theirs = dataclasses.asdict(getattr(brax, config))
        ours = dataclasses.asdict(getattr(own, config))
        assert {k for k in ours if ours[k] != theirs[k]} == set(ppo.JAXRL_CHOICES[part])
        fields = {f.name: f.default for f in dataclasses.fields(default)}
        assert all(ours[k] == fields[k] for k in ppo.JAXRL_CHOICES[part])
    assert ppo.make_plan(_arguments(jaxrl_choices=np.bool_(True))).agent_config == own.agent_config
    with pytest.raises(ConfigError, match="jaxrl_choices must be True or False, got 'yes'"):
        ppo.make_plan(_arguments(jaxrl_choices="yes"))


def test_numpy_integers_are_taken_as_brax_takes_them():
    plan = ppo.make_plan(_arguments(num_envs=np.int64(4), batch_size=np.int64(4)))
    assert plan.config.num_envs == 4 and isinstance(plan.config.num_envs, int)
    assert isinstance(plan.agent_config.num_minibatches, int)


def test_a_factory_partial_builds_brax_s_trees():
    factory = functools.partial(
        ppo_networks.make_ppo_networks,
        policy_hidden_layer_sizes=(8, 8),
        value_hidden_layer_sizes=(16,),
        activation=nn.relu,
    )
    plan = ppo.make_plan(_arguments(network_factory=factory))
    assert plan.agent_config.actor_hidden == (8, 8)
    assert plan.agent_config.critic_hidden == (16,)
    assert plan.agent_config.activation == "relu"
    _, params, metrics = ppo.train(**_arguments(network_factory=factory, num_timesteps=0))
    assert metrics == {}
    nets = factory(3, 2)
    shapes = functools.partial(jax.tree.map, lambda x: x.shape)
    assert shapes(params[1]) == shapes(nets.policy_network.init(jax.random.PRNGKey(0)))
    assert shapes(params[2]) == shapes(nets.value_network.init(jax.random.PRNGKey(0)))


def _users_factory(observation_size, action_size, **kwargs):
    """A factory of the caller's: Brax's with options jaxrl's own networks lack (a tanh
    activation; Brax's Gaussian without tanh, its std a learned parameter, its mean clipped),
    as a function, not a partial."""
    return ppo_networks.make_ppo_networks(
        observation_size,
        action_size,
        policy_hidden_layer_sizes=(8, 8),
        value_hidden_layer_sizes=(16,),
        activation=nn.tanh,
        distribution_type="normal",
        noise_std_type="log",
        mean_clip_scale=1.0,
        **kwargs,
    )


def test_a_factory_of_the_caller_s_runs_as_it_is():
    """Network injection: a factory jaxrl's settings cannot build runs its own networks. The
    params are its trees, Brax's own `make_inference_fn` acts with them as jaxrl's agent does,
    and they restore as they were returned."""
    from jaxrl import normalization
    from jaxrl.agents import ppo as jaxrl_ppo
    from jaxrl.brax import params as brax_params

    plan = ppo.make_plan(_arguments(network_factory=_users_factory))
    assert plan.networks.injected and plan.injected is not None
    progress = []
    make_policy, params, metrics = ppo.train(
        **_arguments(network_factory=_users_factory, progress_fn=lambda *a: progress.append(a))
    )
    assert [step for step, _ in progress] == [0, 80, 160]
    assert set(metrics) == EVAL_KEYS | TRAIN_KEYS and np.isfinite(metrics["training/total_loss"])
    nets = _users_factory(3, 2)
    shapes = functools.partial(jax.tree.map, lambda x: x.shape)
    assert shapes(params[1]) == shapes(nets.policy_network.init(jax.random.PRNGKey(0)))
    assert shapes(params[2]) == shapes(nets.value_network.init(jax.random.PRNGKey(0)))

    obs = jax.random.normal(jax.random.PRNGKey(0), (6, 3))
    action, _ = make_policy(params, deterministic=True)(obs, jax.random.PRNGKey(1))
    agent = jaxrl_ppo.make(plan.agent_config, plan.injected)
    state = agent.init(jax.random.PRNGKey(2), 3, 2)
    state = state.replace(params={"policy": params[1], "value": params[2]})
    stats = brax_params.normalizer_from_brax(params[0])
    mine = agent.act(state, normalization.normalize(stats, obs, 0.0), jax.random.PRNGKey(3), 0.0)
    np.testing.assert_allclose(action, mine, atol=1e-5)
    assert float(jnp.abs(action).max()) > 1e-3

    arguments = _arguments(network_factory=_users_factory, num_timesteps=0)
    _, restored, _ = ppo.train(**{**arguments, "restore_params": params})
    brax_peer.assert_trees_equal(restored[1:], params[1:])
    np.testing.assert_allclose(restored[0].mean, params[0].mean, rtol=1e-6)


def _recorded(train, checkpoints) -> dict:
    progress, params_calls = [], []
    arguments = {
        k: v for k, v in _arguments().items() if k not in ("progress_fn", "policy_params_fn")
    }
    make_policy, params, metrics = train(
        progress_fn=lambda step, m: progress.append((step, dict(m))),
        policy_params_fn=lambda step, mp, p: params_calls.append((step, p)),
        **{**arguments, "save_checkpoint_path": str(checkpoints)},
    )
    return dict(make_policy=make_policy, params=params, metrics=metrics, progress=progress,
                params_calls=params_calls, checkpoints=checkpoints)  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    brax_peer.install_shims()
    folder = tmp_path_factory.mktemp("checkpoints")
    return {
        "brax": _recorded(brax_ppo.train, folder / "brax"),
        "jaxrl": _recorded(ppo.train, folder / "jaxrl"),
    }


def test_checkpoints_are_brax_s_both_ways(runs):
    """jaxrl writes Brax's checkpoints (the same folders and network config, read by Brax's
    own loader), resumes from those Brax's `ppo.train` wrote, and Brax's `ppo.train` starts
    from jaxrl's."""
    import json

    from brax.training.agents.ppo import checkpoint

    brax, ours = runs["brax"], runs["jaxrl"]
    folders = sorted(p.name for p in brax["checkpoints"].iterdir())
    assert folders == sorted(p.name for p in ours["checkpoints"].iterdir())
    assert folders == ["000000000080", "000000000160"]  # after each interval, physics steps
    for name in folders:
        config = "ppo_network_config.json"
        assert json.loads((ours["checkpoints"] / name / config).read_text()) == json.loads(
            (brax["checkpoints"] / name / config).read_text()
        )
    last = folders[-1]
    brax_peer.assert_trees_equal(checkpoint.load(ours["checkpoints"] / last), ours["params"])
    # jaxrl from Brax's checkpoint, and Brax from jaxrl's (0 steps: the restored parameters).
    for train, theirs in ((ppo.train, brax), (brax_ppo.train, ours)):
        path = str(theirs["checkpoints"] / last)
        _, params, _ = train(**_arguments(num_timesteps=0, restore_checkpoint_path=path))
        brax_peer.assert_trees_equal(params[:2], theirs["params"][:2])
        brax_peer.assert_trees_equal(params[0].count, theirs["params"][0].count)
        brax_peer.assert_trees_equal(params[2], theirs["params"][2])


def test_dict_observations_give_brax_s_params_and_checkpoints_both_ways(tmp_path):
    """A Playground robot task's dict observations, the factory naming the actor's and the
    critic's entries: the params are Brax's (its normaliser per entry, every entry of the
    env's, one count), Brax's inference function acts on the dict, the checkpoints' network
    config is what Brax's own `ppo.train` writes, and each trainer restores the other's."""
    import json

    from brax.training.agents.ppo import checkpoint

    brax_peer.install_shims()
    factory = functools.partial(
        ppo_networks.make_ppo_networks, policy_obs_key="state", value_obs_key="privileged_state",
        policy_hidden_layer_sizes=(8, 8), value_hidden_layer_sizes=(8, 8),
    )  # fmt: skip
    args = _arguments(environment=brax_peer.DictDrift(), network_factory=factory)
    done = {}
    for name, train in (("brax", brax_ppo.train), ("jaxrl", ppo.train)):
        done[name] = (*train(**{**args, "save_checkpoint_path": str(tmp_path / name)}),)
    (_, theirs, _), (make_policy, ours, _) = done["brax"], done["jaxrl"]
    shapes = functools.partial(jax.tree.map, jnp.shape)
    assert shapes(ours) == shapes(theirs)
    assert set(ours[0].mean) == {"state", "privileged_state", "extra"}
    assert int(ours[0].count) == int(theirs[0].count)
    obs = brax_peer.DictDrift._obs(jnp.array([0.5, -0.2, 0.1]))
    action, _ = make_policy(ours, deterministic=True)(obs, jax.random.PRNGKey(0))
    assert action.shape == (2,) and jnp.isfinite(action).all()
    last = sorted(p.name for p in (tmp_path / "jaxrl").iterdir())[-1]
    config = "ppo_network_config.json"
    assert json.loads((tmp_path / "jaxrl" / last / config).read_text()) == json.loads(
        (tmp_path / "brax" / last / config).read_text()
    )
    brax_peer.assert_trees_equal(checkpoint.load(tmp_path / "jaxrl" / last), ours)
    for train, source in ((ppo.train, "brax"), (brax_ppo.train, "jaxrl")):
        path = str(tmp_path / source / last)
        _, params, _ = train(**{**args, "num_timesteps": 0, "restore_checkpoint_path": path})
        kept = done[source][1]
        for key in ("state", "privileged_state"):  # the entries the networks read
            brax_peer.assert_trees_equal(params[0].mean[key], kept[0].mean[key])
            brax_peer.assert_trees_equal(params[0].std[key], kept[0].std[key])
        brax_peer.assert_trees_equal(params[1:], kept[1:])


def test_jaxrl_choices_trains_otherwise_and_returns_brax_s(runs, tmp_path):
    """`jaxrl_choices=True` runs a program of its own choices (other parameters from the same
    seed) and gives back what the Brax-choice door gives: Brax's progress steps and keys,
    parameter trees, and checkpoints Brax's own loader reads."""
    from brax.training.agents.ppo import checkpoint

    progress = []
    _, params, metrics = ppo.train(
        **_arguments(
            jaxrl_choices=True,
            save_checkpoint_path=str(tmp_path),
            progress_fn=lambda step, m: progress.append((step, set(m))),
        )
    )
    theirs = runs["jaxrl"]
    assert progress == [(step, set(m)) for step, m in theirs["progress"]]
    assert set(metrics) == set(theirs["metrics"])
    shapes = functools.partial(jax.tree.map, lambda x: (np.shape(x), np.asarray(x).dtype))
    assert shapes(params) == shapes(theirs["params"])
    assert not np.allclose(params[1]["params"]["hidden_0"]["kernel"],
                           theirs["params"][1]["params"]["hidden_0"]["kernel"])  # fmt: skip
    brax_peer.assert_trees_equal(checkpoint.load(tmp_path / "000000000160"), params)


def test_restore_params_and_restore_value_fn(runs):
    brax = runs["brax"]["params"]
    _, fresh, _ = ppo.train(**_arguments(num_timesteps=0))
    _, params, _ = ppo.train(**_arguments(num_timesteps=0, restore_params=brax))
    brax_peer.assert_trees_equal(params, brax)
    _, params, _ = ppo.train(
        **_arguments(num_timesteps=0, restore_params=brax, restore_value_fn=False)
    )
    brax_peer.assert_trees_equal(params[1], brax[1])
    brax_peer.assert_trees_equal(params[2], fresh[2])  # the value network's own first parameters


def test_a_checkpoint_that_is_not_there_is_refused_by_name(tmp_path, monkeypatch):
    from jaxrl.run import driver

    monkeypatch.setattr(driver, "train", lambda *a, **kw: pytest.fail("compiled"))
    with pytest.raises(ConfigError, match="restore_checkpoint_path"):
        ppo.train(**_arguments(restore_checkpoint_path=str(tmp_path / "none")))


def test_the_step_0_evaluation_compiles_while_the_first_chunk_does(monkeypatch):
    """Brax evaluates the untrained policy first; the door does it where the driver has
    started the first chunk's compile on a thread of its own and not yet waited for it, so
    the evaluation's compile runs beside the chunk's."""
    from jaxrl.run import chunks

    events = []
    start, take = chunks.EarlyChunk.start, chunks.EarlyChunk.take
    monkeypatch.setattr(
        chunks.EarlyChunk, "start", lambda self, s: (events.append("start"), start(self, s))[1]
    )
    monkeypatch.setattr(
        chunks.EarlyChunk, "take", lambda self, s: (events.append("take"), take(self, s))[1]
    )
    ppo.train(**_arguments(progress_fn=lambda step, metrics: events.append(step)))
    assert events[:3] == ["start", 0, "take"]


def test_progress_comes_at_brax_s_steps_with_brax_s_keys(runs):
    brax, ours = runs["brax"]["progress"], runs["jaxrl"]["progress"]
    assert [s for s, _ in ours] == [s for s, _ in brax] == [0, 80, 160]
    for (_, theirs), (step, mine) in zip(brax, ours, strict=True):
        want = EVAL_KEYS | (TRAIN_KEYS if step else FIRST_EVAL_KEYS)
        assert set(mine) == want, step
        assert want <= set(theirs), step  # every key jaxrl gives is one Brax gives
    # The step-0 evaluation's time, at every step; its rate, at step 0 alone
    first = ours[0][1]
    assert first["eval/walltime"] == first["eval/epoch_eval_time"] > 0
    assert all(m["eval/walltime"] == first["eval/walltime"] for _, m in ours)
    # Brax's count: episode_length x num_eval_envs, 13 physics steps where jaxrl's episodes,
    # 7 control steps of 2, run 14; Brax's own rate counts the same.
    steps = RUN["num_eval_envs"] * RUN["episode_length"]
    assert first["eval/sps"] * first["eval/epoch_eval_time"] == pytest.approx(steps)
    theirs = brax[0][1]
    assert theirs["eval/sps"] * theirs["eval/epoch_eval_time"] == pytest.approx(steps)
    # An episode is 7 control steps of 2 physics steps, unless Drift terminates it sooner.
    assert all(0 < m["eval/avg_episode_length"] <= 14 for _, m in ours)
    assert set(runs["jaxrl"]["metrics"]) == EVAL_KEYS | TRAIN_KEYS
    np.testing.assert_allclose(runs["jaxrl"]["metrics"]["training/learning_rate"], 1e-3)


def test_policy_params_fn_and_the_params_are_brax_s(runs):
    brax, ours = runs["brax"], runs["jaxrl"]
    assert [s for s, _ in ours["params_calls"]] == [s for s, _ in brax["params_calls"]]
    assert jax.tree.structure(ours["params"]) == jax.tree.structure(brax["params"])
    shapes = functools.partial(jax.tree.map, lambda x: np.shape(x))
    assert shapes(ours["params"]) == shapes(brax["params"])
    assert int(ours["params"][0].count) == 160 // 2 // 5 * 5  # every observation acted on
    # The last params given to policy_params_fn are those returned.
    last = ours["params_calls"][-1][1]
    jax.tree.map(np.testing.assert_array_equal, last, ours["params"])


def test_brax_s_inference_fn_acts_with_jaxrl_s_params(runs):
    """make_policy is Brax's own: on jaxrl's params its greedy action is tanh of the mean
    that jaxrl's policy computes from its normalised observation."""
    from jaxrl.brax import params as brax_params

    ours = runs["jaxrl"]
    obs = jax.random.normal(jax.random.PRNGKey(0), (6, 3))
    action, _ = ours["make_policy"](ours["params"], deterministic=True)(obs, jax.random.PRNGKey(1))
    agent, stats = brax_params.ppo_from_brax(ours["params"])
    from jaxrl import normalization
    from jaxrl.agents import ppo as jaxrl_ppo

    config = ppo.make_plan(_arguments()).agent_config
    state = jaxrl_ppo.make(config).init(jax.random.PRNGKey(2), 3, 2).replace(params=agent)
    mine = jaxrl_ppo.make(config).act(
        state, normalization.normalize(stats, obs, 0.0), jax.random.PRNGKey(3), 0.0
    )
    np.testing.assert_allclose(action, mine, atol=1e-5)
    sampled, _ = ours["make_policy"](ours["params"], deterministic=False)(
        obs, jax.random.PRNGKey(1)
    )
    assert not np.allclose(sampled, action)


@pytest.mark.slow
def test_it_learns_brax_s_own_ppo_test():
    """Brax's PPO train test (brax/training/agents/ppo/train_test.py, testTrain): its `fast`
    env and settings, its threshold of 135 (a random policy: about 70; the best about 142).
    Seed 0: Brax's own run of seed 1 ends at 37 on this CPU, as jaxrl's does."""
    from brax import envs

    _, _, metrics = ppo.train(
        envs.get_environment("fast"),
        num_timesteps=2**15,
        episode_length=128,
        num_envs=64,
        learning_rate=3e-4,
        entropy_cost=1e-2,
        discounting=0.95,
        unroll_length=5,
        batch_size=64,
        num_minibatches=8,
        num_updates_per_batch=4,
        normalize_observations=True,
        seed=0,
        num_evals=3,
        reward_scaling=10,
        normalize_advantage=False,
    )
    assert metrics["eval/episode_reward"] > 135
    assert jnp.isfinite(metrics["training/total_loss"])


def test_a_playground_env_built_as_warp_is_refused_with_how_to_load_the_jax_one():
    """Playground 0.2's `registry.load(task)` without `impl` builds the Warp version (its
    config's `impl` is then "warp"), which ended in a broadcasting traceback deep in the
    wrappers; now one line says what to do, from the drop-in and from `jaxrl.train(...,
    env=env)` alike. (Built here as Drift with such a config: in a process that imported
    jaxrl, Playground cannot build its Warp version at all, `envs/skip_warp.py`.)"""
    import ml_collections

    from jaxrl.config import TrainConfig
    from jaxrl.run import driver

    class WarpBuilt(brax_peer.Drift):
        _config = ml_collections.ConfigDict({"impl": "warp", "episode_length": 100})

    with pytest.raises(ConfigError, match="impl.*jax"):
        ppo.train(WarpBuilt(), num_timesteps=1000)
    with pytest.raises(ValueError, match=r"config_overrides=\{'impl': 'jax'\}"):
        driver.train(TrainConfig(algo="ppo", env="playground/CartpoleBalance"), env=WarpBuilt())


def test_playground_s_notebook_pattern_runs_end_to_end():
    """Playground's training notebooks: `functools.partial(ppo.train, **brax_ppo_config(task),
    network_factory=..., progress_fn=...)`, then `train_fn(environment=env,
    wrap_env_fn=wrapper.wrap_for_brax_training)`, with only the import changed (its sizes cut
    to a CPU test's: the notebook's config otherwise as Playground writes it)."""
    import functools

    from brax.training.agents.ppo import networks as ppo_networks
    from mujoco_playground import registry, wrapper
    from mujoco_playground.config import dm_control_suite_params

    task = "CartpoleBalance"
    env = registry.load(task, config_overrides={"impl": "jax"})
    config = dm_control_suite_params.brax_ppo_config(task)
    small = dict(
        num_timesteps=2 * 8 * 4 * 30, num_envs=8, batch_size=8, num_minibatches=4, num_evals=2,
        num_eval_envs=4, episode_length=60, num_updates_per_batch=2,
    )  # fmt: skip
    config.update(small)
    factory = functools.partial(
        ppo_networks.make_ppo_networks, policy_hidden_layer_sizes=(16, 16),
        value_hidden_layer_sizes=(16, 16),
    )  # fmt: skip
    steps = []
    train_fn = functools.partial(
        ppo.train,
        **dict(config),
        network_factory=factory,
        progress_fn=lambda step, metrics: steps.append((step, metrics)),
    )
    randomized = []  # the batch sizes the randomization_fn was given (training, evaluation)

    def heavy_carts(model, rng):  # Playground's pattern: (batched model, its in_axes)
        randomized.append(rng.shape[0])
        masses = jax.vmap(lambda k: model.body_mass * (2.0 + jax.random.uniform(k)))(rng)
        in_axes = jax.tree.map(lambda _: None, model).tree_replace({"body_mass": 0})
        return model.tree_replace({"body_mass": masses}), in_axes

    make_inference_fn, params, metrics = train_fn(
        environment=env, wrap_env_fn=wrapper.wrap_for_brax_training, randomization_fn=heavy_carts
    )
    assert set(randomized) == {small["num_envs"], small["num_eval_envs"]}  # one model per env
    assert [step for step, _ in steps][0] == 0 and steps[-1][0] >= small["num_timesteps"]
    assert {"eval/episode_reward", "training/total_loss"} <= set(metrics)
    assert np.isfinite(metrics["eval/episode_reward"])
    policy = make_inference_fn(params, deterministic=True)
    action, _ = policy(jnp.zeros((3, env.observation_size)), jax.random.PRNGKey(0))
    assert action.shape == (3, env.action_size)


def test_training_logs_keep_brax_s_order_units_and_window():
    """`training_episodes` feeds Brax's logger as Brax's training step does, past the 100
    values of each metric its logger keeps: each iteration's episodes in the order of Brax's
    training data (row u x envs + n holds unroll u of env n), lengths in physics steps, and
    each loss once per gradient step, the env's metrics as summed (a `*_per_step` one per
    physics step). Independent reference: the last 100 episodes and the last 100 gradient
    steps' losses, listed by hand from Brax's layout."""
    from jaxrl.brax import metrics as brax_metrics

    plan = ppo.make_plan(_arguments(log_training_metrics=True, training_metrics_steps=10**9))
    plan = dataclasses.replace(plan, training_log=(30 * 40, RUN["unroll_length"]))  # one log
    report = brax_metrics.Report(plan.config, plan.agent_config, 2, plan.run_evals)
    logs = []
    hook = ppo.training_episodes(plan, report, lambda step, m: logs.append((step, m)))
    unroll, n = RUN["unroll_length"], RUN["num_envs"]
    unrolls = RUN["batch_size"] * RUN["num_minibatches"] // n
    t = unrolls * unroll  # jaxrl's rollout: [t, n], step u x unroll + l of unroll u
    per_update = plan.agent_config.num_epochs * plan.agent_config.num_minibatches
    rng = np.random.default_rng(0)
    episodes, policy_losses = [], []
    for i in range(30):  # 30 iterations of 40 env steps, about 12 episodes each
        done = (rng.random((t, n)) < 0.3).astype(np.float32)
        returns = rng.normal(size=(t, n)).astype(np.float32)
        lengths = rng.integers(1, 7, size=(t, n)).astype(np.float32)
        sums = {"x0": rng.normal(size=(t, n)), "push_per_step": rng.random((t, n)) * lengths}
        for u in range(unrolls):  # Brax's rows: unroll u's env k, its steps in order
            for k in range(n):
                for step in range(u * unroll, (u + 1) * unroll):
                    if done[step, k]:
                        length = 2 * lengths[step, k]  # physics steps: action_repeat 2
                        push = sums["push_per_step"][step, k] / length
                        episodes.append((returns[step, k], length, sums["x0"][step, k], push))
        metrics = {"policy_loss": np.float32(i), "value_loss": np.float32(0.5),
                   "entropy": np.float32(1.0), "approx_kl": np.float32(0.0)}  # fmt: skip
        policy_losses += [float(i)] * per_update
        hook({"done": done, "return": returns, "length": lengths, "metrics": sums}, metrics)
    ((step, log),) = logs
    assert step == 30 * t * n
    close = functools.partial(np.testing.assert_allclose, rtol=1e-6)
    for i, name in enumerate(("sum_reward", "length", "x0", "push_per_step")):
        close(log[f"episode/{name}"], np.mean([float(e[i]) for e in episodes[-100:]]))
    close(log["episode/policy_loss"], np.mean(policy_losses[-100:]))


def test_training_logs_over_several_devices():
    """Over 4 devices (the envs sharded) JAX has no ordered effects: the training logs come
    unordered, as Brax's do, in the order the device reaches them, at Brax's steps."""
    from tests.devices import run_on_four_devices

    code = """
import functools, json
from brax import envs
from brax.training.agents.ppo import networks as ppo_networks
from jaxrl.brax import ppo
logs = []
ppo.train(
    envs.get_environment("fast"), num_timesteps=1024, num_envs=4, batch_size=4,
    num_minibatches=2, unroll_length=8, episode_length=20, num_evals=2,
    network_factory=functools.partial(ppo_networks.make_ppo_networks,
        policy_hidden_layer_sizes=(8,), value_hidden_layer_sizes=(8,)),
    log_training_metrics=True, progress_fn=lambda step, m: logs.append((step, m)))
print(json.dumps([[s, float(m.get("episode/length", 0))] for s, m in logs if "episode/sps" in m]))
"""
    out = run_on_four_devices("-c", code)
    logs = json.loads(out.strip().splitlines()[-1])
    assert [step for step, _ in logs] == [64 * (i + 1) for i in range(16)]
    assert logs[-1][1] == 20.0
