"""`jaxrl.brax.sac.train` against Brax's own `sac.train`: the same signature, each argument
honoured or refused by name before anything compiles, Brax's units (its prefill and training
steps per interval), the configs of the parity suites' `sac_parity_flags` (whose loop is held
equal to Brax's in tests/loops/test_sac_loop_brax_parity.py), and, run side by side on the
same tiny env with the same arguments, the same progress steps, metric keys, parameter trees
and checkpoints, with Brax's `make_inference_fn` acting on what jaxrl returns. Learning: Brax's
own SAC train test (its `fast` env and settings)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json

import flax.linen as nn
import jax
import numpy as np
import pytest
from brax import envs as brax_envs
from brax.training.agents.sac import networks as sac_networks
from brax.training.agents.sac import train as brax_sac

from jaxrl.brax import sac
from jaxrl.errors import ConfigError
from tests import brax_peer

HIDDEN = (8, 8)
FACTORY = functools.partial(
    sac_networks.make_sac_networks, hidden_layer_sizes=HIDDEN, q_network_layer_norm=True
)
# MeteredDrift: 3 observations, 2 actions. A prefill of 2 steps of 4 envs (16 physics steps
# at action_repeat 2), then 2 intervals of 3 training steps: Brax reports at 0, 40 and 64.
RUN = dict(
    num_timesteps=64,
    num_envs=4,
    batch_size=8,
    grad_updates_per_step=2,
    min_replay_size=8,
    action_repeat=2,
    episode_length=13,
    num_evals=3,
    num_eval_envs=4,
    normalize_observations=True,
    learning_rate=1e-3,
    discounting=0.95,
    reward_scaling=2.0,
    seed=1,
    network_factory=FACTORY,
    # Brax's sac.train wraps only a brax.envs.Env by default: its wrapper, named
    wrap_env_fn=brax_envs.training.wrap,
)
EVAL_KEYS = {
    "eval/episode_reward", "eval/episode_reward_std", "eval/avg_episode_length",
    "eval/std_episode_length", "eval/walltime", "eval/episode_x0", "eval/episode_x0_std",
    "eval/episode_push_per_step", "eval/episode_push_per_step_std",
}  # fmt: skip
# The step-0 evaluation, timed apart (jaxrl's later ones run inside its training program)
FIRST_EVAL_KEYS = {"eval/epoch_eval_time", "eval/sps"}
TRAIN_KEYS = {
    "training/sps", "training/walltime", "training/critic_loss", "training/actor_loss",
    "training/alpha_loss", "training/alpha", "training/buffer_current_size",
}  # fmt: skip


def _arguments(**changes) -> dict:
    """Every argument of `sac.train` at its default, with RUN's and `changes`."""
    defaults = {
        name: p.default
        for name, p in inspect.signature(sac.train).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    return {**defaults, **RUN, "environment": brax_peer.MeteredDrift(), **changes}


def _brax_arguments(**changes) -> dict:
    theirs = inspect.signature(brax_sac.train).parameters
    return {k: v for k, v in _arguments(**changes).items() if k in theirs}


def test_the_signature_is_brax_s_and_playground_s_extra_setting():
    ours = inspect.signature(sac.train).parameters
    theirs = inspect.signature(brax_sac.train).parameters
    assert list(ours)[: len(theirs)] == list(theirs)
    assert list(ours)[len(theirs) :] == ["num_resets_per_eval"]  # brax_sac_config passes it
    for name, p in theirs.items():
        if name != "progress_fn":  # a lambda: equal only in behaviour
            assert ours[name].default == p.default, name


@pytest.mark.parametrize(
    "change, named",
    [
        (dict(wrap_env=False), "wrap_env"),
        (dict(eval_env=brax_peer.WideDrift()), "eval_env.*observation_size 4"),
        (dict(min_replay_size=64), "min_replay_size"),
        (dict(num_envs=0), "num_envs"),
        (dict(batch_size=0), "batch_size"),
        (dict(grad_updates_per_step=0), "grad_updates_per_step"),
        (dict(episode_length=0), "episode_length"),
        (dict(learning_rate=-1.0), "lr"),
        (dict(wrap_env_fn=lambda env, **kw: env), "wrap_env_fn"),
        (dict(max_replay_size=4), "max_replay_size"),
        (dict(num_timesteps=64.0), "num_timesteps"),
        (dict(network_factory=lambda *a, **kw: None), "network_factory.*not Brax's SAC"),
        (
            dict(network_factory=functools.partial(FACTORY, distribution_type="normal")),
            "distribution_type",
        ),
        (
            dict(network_factory=lambda obs, act, **kw: FACTORY(obs, act, n_critics=3, **kw)),
            "network_factory=.*failed",
        ),
    ],
)
def test_bad_or_unsupported_settings_fail_before_compiling(change, named, monkeypatch):
    from jaxrl.run import driver

    monkeypatch.setattr(driver, "train", lambda *a, **kw: pytest.fail("compiled"))
    with pytest.raises(ConfigError, match=named):
        sac.train(**_arguments(**change))


def test_eval_env_is_where_evaluation_runs():
    """Brax's `eval_env`: evaluation episodes run in it, wrapped as the training env is.
    PaidDrift pays 1 a physics step and never ends, so each episode returns its length."""
    steps = []
    _, _, metrics = sac.train(
        **_arguments(eval_env=brax_peer.PaidDrift(), progress_fn=lambda s, m: steps.append(m))
    )
    for reported in (steps[0], metrics):  # the step-0 evaluation and the last one
        assert reported["eval/episode_reward"] == reported["eval/avg_episode_length"] == 14
        assert reported["eval/episode_reward_std"] == 0


def test_brax_s_units_become_jaxrl_s():
    """Brax's prefill of ceil(min_replay_size / num_envs) steps, its training steps per
    interval rounded up from what the prefill leaves, physics steps to control steps."""
    args = _arguments(num_timesteps=1000, min_replay_size=10, num_evals=4, episode_length=13)
    plan = sac.make_plan(args)
    assert plan.prefill == 3  # ceil(10 / 4)
    left = 1000 - 3 * 4 * 2  # physics steps after the prefill
    per_interval = -(-left // (3 * 4 * 2))  # Brax: intervals x num_envs x action_repeat
    assert plan.steps_per_interval == per_interval
    assert plan.config.eval_every == per_interval * 4
    assert plan.config.total_steps == 3 * per_interval * 4  # the prefill runs apart
    assert (3 * 4 + plan.config.total_steps) * 2 >= 1000  # Brax's own assertion
    # The prefill runs apart, so the chunks learn from their first iteration: Brax's first
    # update, one training step after the prefill (see the prefill test below).
    assert plan.config.learning_starts == 0
    assert plan.config.episode_length == 7  # ceil(13 / 2)
    assert plan.config.buffer_size == (3 + 3 * per_interval) * 4  # never more rows than that
    assert plan.config.eval_actions == "sampled"  # Brax's default deterministic_eval=False
    assert sac.make_plan(_arguments(deterministic_eval=True)).config.eval_actions == "greedy"
    assert not plan.config.randomize_eval
    randomized = sac.make_plan(_arguments(randomization_fn=lambda model, rng: (model, None)))
    assert randomized.config.randomize_eval  # Brax's evaluator steps randomized envs too
    with pytest.warns(UserWarning, match="num_resets_per_eval"):
        sac.make_plan(_arguments(num_resets_per_eval=10))


def test_numpy_integers_are_taken_as_brax_takes_them():
    plan = sac.make_plan(_arguments(num_envs=np.int64(4), num_timesteps=np.int64(64)))
    assert plan.config.num_envs == 4 and isinstance(plan.config.num_envs, int)


def test_the_critic_loss_is_brax_s_mean_over_the_critics():
    """jaxrl's critic loss sums each critic's 0.5-scaled mean squared error; Brax's averages
    them (tests/agents/test_sac_brax_parity.py): the door reports Brax's."""
    from jaxrl.brax import metrics

    plan = sac.make_plan(_arguments())
    row = {"chunk_env_steps_per_second": 1.0, "train_seconds": 1.0, "env_steps": 40,
           "critic_loss": 3.0, "actor_loss": 0.0, "alpha_loss": 0.0, "alpha": 1.0}  # fmt: skip
    training = metrics.Report(plan.config, plan.agent_config, 2, False).row(row)
    assert training["training/critic_loss"] == 1.5


def test_the_configs_are_the_parity_suites_sac_parity_flags():
    """The door's configs are those of `sac_parity_flags`, whose loop is held equal to Brax's
    step for step (tests/loops/test_sac_loop_brax_parity.py), but for the run's length (the
    door runs the prefill apart, as Brax does) and the sizes of this test's networks."""
    from jaxrl.benchmarks.brax_parity import sac_parity_flags
    from jaxrl.config import resolve

    plan = sac.make_plan(_arguments())
    settings = {**RUN, "max_replay_size": plan.config.buffer_size, "q_network_layer_norm": True}
    settings["episode_length"] = plan.config.episode_length  # the flag counts control steps
    total = plan.prefill * 4 + plan.config.total_steps
    argv = ["--algo", "sac", "--env", "classic/pendulum", "--seed", "1", "--num-envs", "4"]
    argv += ["--steps", str(total), *sac_parity_flags(settings, total, evals=2, eval_envs=4)]
    argv += ["--actor-hidden", "8,8", "--critic-hidden", "8,8"]
    train_config, agent_config, _ = resolve.build_configs(argv)
    assert plan.agent_config == agent_config
    skip = {"env", "total_steps", "eval_every", "eval_actions", "eval_env_metrics"}
    skip |= {"eval_simulator", "devices"}
    # The flags' learning start and warm-up actions stand for Brax's prefill, which the door
    # runs apart: the prefill test below holds the two ways equal.
    skip |= {"learning_starts", "warmup_actions"}
    for field in dataclasses.fields(train_config):
        if field.name not in skip:
            assert getattr(plan.config, field.name) == getattr(train_config, field.name), field.name


def test_a_prefill_then_chunks_trains_as_chunks_that_stored_it_first():
    """`Trainer.prefill`: P iterations without updates, then the door's chunk of T (learning
    from its first iteration), give exactly the state of one chunk of P + T iterations at
    sac_parity_flags' learning start (`brax_sac_first_update_rows`) and warm-up actions."""
    from jaxrl.run import driver

    plan = sac.make_plan(_arguments(num_evals=2))
    config, per = plan.config, plan.steps_per_interval
    split = driver.check_setting(config, plan.agent_config, plan.env)
    whole = driver.check_setting(
        dataclasses.replace(
            config,
            total_steps=(plan.prefill + per) * 4,
            eval_every=(plan.prefill + per) * 4,
            learning_starts=sac.first_update_rows(4, RUN["min_replay_size"]),
            warmup_actions="policy",
        ),
        plan.agent_config,
        plan.env,
    )
    key = jax.random.PRNGKey(3)
    a = jax.jit(split.prefill, static_argnums=1)(split.init(key), plan.prefill)
    a, _ = jax.jit(split.chunk)(a)
    b, _ = jax.jit(whole.chunk)(whole.init(key))
    assert int(a.iteration) == int(b.iteration) == plan.prefill + per
    for x, y in zip(jax.tree.leaves((a.agent, a.buffer, a.obs_stats)),
                    jax.tree.leaves((b.agent, b.buffer, b.obs_stats)), strict=True):  # fmt: skip
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7)


def _users_factory(observation_size, action_size, **kwargs):
    """A factory of the caller's: Brax's with options jaxrl's own SAC networks lack (LayerNorm
    in the policy MLP, a tanh activation), as a function, not a partial."""
    return FACTORY(
        observation_size,
        action_size,
        policy_network_layer_norm=True,
        activation=nn.tanh,
        **kwargs,
    )


def test_a_factory_of_the_caller_s_runs_as_it_is(tmp_path):
    """Network injection: a factory jaxrl's SAC settings cannot build runs its own networks
    (SAC's door only; another algorithm's door refuses it by name). The policy params are its
    tree, Brax's `make_inference_fn` acts with them as jaxrl's agent does, Brax's checkpoint
    holds them, and they restore as they were written."""
    from brax.training.agents.sac import checkpoint

    from jaxrl import normalization
    from jaxrl.agents import sac as jaxrl_sac
    from jaxrl.brax import params as brax_params
    from jaxrl.run import driver

    plan = sac.make_plan(_arguments(network_factory=_users_factory))
    assert plan.networks.injected and plan.injected is not None
    progress = []
    make_policy, params, metrics = sac.train(
        **_arguments(
            network_factory=_users_factory,
            progress_fn=lambda *a: progress.append(a),
            checkpoint_logdir=str(tmp_path),
        )
    )
    assert [step for step, _ in progress] == [0, 40, 64]
    assert set(metrics) == EVAL_KEYS | TRAIN_KEYS
    assert np.isfinite(metrics["training/critic_loss"])
    nets = _users_factory(3, 2)
    shapes = functools.partial(jax.tree.map, lambda x: x.shape)
    assert shapes(params[1]) == shapes(nets.policy_network.init(jax.random.PRNGKey(0)))
    assert "LayerNorm_0" in params[1]["params"]

    obs = jax.random.normal(jax.random.PRNGKey(0), (6, 3))
    action, _ = make_policy(params, deterministic=True)(obs, jax.random.PRNGKey(1))
    agent = jaxrl_sac.make(plan.agent_config, plan.injected)
    state = agent.init(jax.random.PRNGKey(2), 3, 2)
    state = state.replace(actor=state.actor.replace(params=params[1]))
    stats = brax_params.normalizer_from_brax(params[0])
    mine = agent.act(state, normalization.normalize(stats, obs, 0.0), jax.random.PRNGKey(3), 0.0)
    np.testing.assert_allclose(action, mine, atol=1e-5)

    last = tmp_path / sorted(p.name for p in tmp_path.iterdir())[-1]
    brax_peer.assert_trees_equal(checkpoint.load(last), params)
    plan = sac.make_plan(
        _arguments(network_factory=_users_factory, restore_checkpoint_path=str(last))
    )
    trainer = driver.check_setting(plan.config, plan.agent_config, plan.env, None, plan.injected)
    state = sac._start_from(trainer.init(jax.random.PRNGKey(0)), plan.restored, True)
    brax_peer.assert_trees_equal(state.agent.actor.params, params[1])
    with pytest.raises(ConfigError, match="cannot be read by jaxrl.brax.td3.*only jaxrl.brax.sac"):
        sac.make_plan(_arguments(network_factory=_users_factory), "td3", {})
    layer_norm = functools.partial(FACTORY, policy_network_layer_norm=True)
    with pytest.raises(ConfigError, match="policy_network_layer_norm"):
        sac.make_plan(_arguments(network_factory=layer_norm), "td3", {})


def _recorded(train, arguments, checkpoints) -> dict:
    progress = []
    make_policy, params, metrics = train(
        **{**arguments, "checkpoint_logdir": str(checkpoints)},
        progress_fn=lambda step, m: progress.append((step, dict(m))),
    )
    return dict(make_policy=make_policy, params=params, metrics=metrics, progress=progress,
                checkpoints=checkpoints)  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    brax_peer.install_shims()
    folder = tmp_path_factory.mktemp("sac_checkpoints")
    ours = {k: v for k, v in _arguments().items() if k != "progress_fn"}
    theirs = {k: v for k, v in _brax_arguments().items() if k != "progress_fn"}
    return {
        "brax": _recorded(brax_sac.train, theirs, folder / "brax"),
        "jaxrl": _recorded(sac.train, ours, folder / "jaxrl"),
    }


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
    sac.train(**_arguments(progress_fn=lambda step, metrics: events.append(step)))
    assert events[:3] == ["start", 0, "take"]


def test_progress_comes_at_brax_s_steps_with_brax_s_keys(runs):
    brax, ours = runs["brax"]["progress"], runs["jaxrl"]["progress"]
    assert [s for s, _ in ours] == [s for s, _ in brax] == [0, 40, 64]
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
    assert set(runs["jaxrl"]["metrics"]) == EVAL_KEYS | TRAIN_KEYS
    for (_, theirs), (_, mine) in zip(brax[1:], ours[1:], strict=True):  # the same replay
        assert mine["training/buffer_current_size"] == theirs["training/buffer_current_size"]


def test_the_params_and_the_checkpoints_are_brax_s(runs):
    """Brax's (normalizer, policy) trees; Brax's checkpoint folders and network config, read
    by Brax's own loader both ways; jaxrl starts from Brax's checkpoint."""
    from brax.training.agents.sac import checkpoint

    brax, ours = runs["brax"], runs["jaxrl"]
    shapes = functools.partial(jax.tree.map, lambda x: np.shape(x))
    assert jax.tree.structure(ours["params"]) == jax.tree.structure(brax["params"])
    assert shapes(ours["params"]) == shapes(brax["params"])
    # Every observation acted on: the prefill's and the training steps', of every env.
    assert int(ours["params"][0].count) == int(brax["params"][0].count) == (2 + 6) * 4
    folders = sorted(p.name for p in brax["checkpoints"].iterdir())
    assert folders == sorted(p.name for p in ours["checkpoints"].iterdir())
    assert folders == ["000000000040", "000000000064"]
    config = "sac_network_config.json"
    for name in folders:
        assert json.loads((ours["checkpoints"] / name / config).read_text()) == json.loads(
            (brax["checkpoints"] / name / config).read_text()
        )
    brax_peer.assert_trees_equal(checkpoint.load(ours["checkpoints"] / folders[-1]), ours["params"])
    # jaxrl from Brax's checkpoint: its first state holds Brax's policy and normaliser.
    from jaxrl.brax import params as brax_params
    from jaxrl.run import driver

    path = str(brax["checkpoints"] / folders[-1])
    plan = sac.make_plan(_arguments(restore_checkpoint_path=path))
    trainer = driver.check_setting(plan.config, plan.agent_config, plan.env)
    state = sac._start_from(trainer.init(jax.random.PRNGKey(0)), plan.restored)
    restored = brax_params.sac_to_brax(state.agent.actor.params, state.obs_stats)
    brax_peer.assert_trees_equal(restored[1], brax["params"][1])
    normalizer = brax["params"][0]
    brax_peer.assert_trees_equal(
        (restored[0].mean, restored[0].count), (normalizer.mean, normalizer.count)
    )
    # Brax 0.14.2's sac.train cannot restore any checkpoint, its own included: it puts the
    # loaded (host) arrays in its device-replicated state, and its first evaluation fails
    # reading their shards. It fails alike on jaxrl's, so the format is not what stops it.
    for theirs in (brax, ours):
        path = str(theirs["checkpoints"] / folders[-1])
        with pytest.raises(AttributeError, match="addressable_shards"):
            brax_sac.train(**_brax_arguments(restore_checkpoint_path=path))


def test_brax_s_inference_fn_acts_with_jaxrl_s_params(runs):
    """make_policy is Brax's own: on jaxrl's params its greedy action is jaxrl's SAC's greedy
    action on the normalised observation; sampled, it is not."""
    from jaxrl import normalization
    from jaxrl.agents import sac as jaxrl_sac
    from jaxrl.brax import params as brax_params

    ours = runs["jaxrl"]
    obs = jax.random.normal(jax.random.PRNGKey(0), (6, 3))
    action, _ = ours["make_policy"](ours["params"], deterministic=True)(obs, jax.random.PRNGKey(1))
    policy, stats = brax_params.sac_from_brax(ours["params"])
    agent = jaxrl_sac.make(sac.make_plan(_arguments()).agent_config)
    state = agent.init(jax.random.PRNGKey(2), 3, 2)
    state = state.replace(actor=state.actor.replace(params=policy))
    mine = agent.act(state, normalization.normalize(stats, obs, 0.0), jax.random.PRNGKey(3), 0.0)
    np.testing.assert_allclose(action, mine, atol=1e-5)
    sampled, _ = ours["make_policy"](ours["params"])(obs, jax.random.PRNGKey(1))
    assert not np.allclose(sampled, action)


# Brax's SAC train test's settings (brax/training/agents/sac/train_test.py) and threshold.
BRAX_SAC_TEST = dict(
    num_timesteps=2**15, episode_length=128, num_envs=64, learning_rate=3e-4, discounting=0.99,
    batch_size=64, normalize_observations=True, reward_scaling=10, grad_updates_per_step=64,
    num_evals=3, seed=0,
)  # fmt: skip
BRAX_SAC_THRESHOLD = 140 * 0.995


@pytest.mark.slow
def test_it_learns_brax_s_own_sac_test():
    """Brax's SAC train test (brax/training/agents/sac/train_test.py, testTrain): its `fast`
    env and settings and its threshold, 140 x 0.995 (a random policy: about 70), but for its
    separate eval_env of the same task."""
    from brax import envs

    _, _, metrics = sac.train(
        envs.get_environment("fast"), eval_env=envs.get_environment("fast"), **BRAX_SAC_TEST
    )
    assert metrics["eval/episode_reward"] > BRAX_SAC_THRESHOLD
