"""jaxrl's on-policy LOOP against Brax PPO's own `ppo.train`, over several whole training steps
and hard resets, not its pieces: `jaxrl.loops.onpolicy.make_train`'s real `chunk` (rollouts
of every env, finished envs back at their first state, the normaliser fed the observations
acted on before the update reads them, the update, every env hard-reset every `reset_every`
updates), with `benchmarks.brax_parity.ppo_parity_flags`' options. Both chunks are run: the one
that evaluates on envs of its own (a CPU's default) and the one that evaluates in the training
envs' simulator (`--eval-simulator shared`, a GPU's default, which ran the GPU parity runs).

Brax's run (a tiny env with terminations and time limits: 4 training steps of 2 unrolls of 5
steps of 4 envs, 2 epochs x 2 minibatches each, every env reset after steps 2 and 4 by
`num_resets_per_eval`) is read out as it goes. The two trainers derive their keys
differently, so jaxrl's run is handed Brax's draws where it draws: the i-th acting key of
jaxrl's loop is Brax's i-th env step's, the i-th update's key is Brax's i-th training step's
`key_sgd`, and the i-th hard reset makes the first states from Brax's i-th reset keys (jaxrl's
`AutoResetWrapper.reset` is given those keys in place of splitting its own). Everything else is
jaxrl's loop as it runs. Compared: every transition collected, the batch every update reads
(normalised by the statistics Brax's gradient steps read), the statistics after the run, and
every parameter at the end.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

from jaxrl.agents import ppo
from jaxrl.config import TrainConfig
from jaxrl.envs import wrappers
from jaxrl.loops import make_train, onpolicy
from tests import brax_peer
from tests.agents import test_ppo_brax_parity as step_parity

N, BATCH, MINIBATCHES, UNROLL, EPOCHS, EPISODE = 4, 4, 2, 5, 2, 6
TRAIN_STEPS, RESETS, SEED = 4, 2, 3
UNROLLS = BATCH * MINIBATCHES // N  # consecutive unrolls per training step
PER_STEP = BATCH * MINIBATCHES * UNROLL
TOTAL = TRAIN_STEPS * PER_STEP
# Brax PPO's settings for this run (ppo.train's arguments), as the parity suites give them.
SETTINGS = dict(
    num_envs=N,
    batch_size=BATCH,
    num_minibatches=MINIBATCHES,
    unroll_length=UNROLL,
    num_updates_per_batch=EPOCHS,
    episode_length=EPISODE,
    action_repeat=1,
    learning_rate=1e-3,
    entropy_cost=step_parity.ENTROPY,
    discounting=0.9,
    reward_scaling=2.0,
    normalize_observations=True,
    num_resets_per_eval=RESETS,
)


def _brax_arguments() -> dict:
    """The arguments Brax's run below is given (but its callbacks and restored parameters)."""
    from brax.training.agents.ppo import networks as brax_networks

    factory = functools.partial(
        brax_networks.make_ppo_networks,
        policy_hidden_layer_sizes=step_parity.CONFIG.actor_hidden,
        value_hidden_layer_sizes=step_parity.CONFIG.critic_hidden,
    )
    return dict(
        environment=brax_peer.MeteredDrift(),
        num_timesteps=TOTAL,
        clipping_epsilon=step_parity.CLIP,
        network_factory=factory,
        seed=SEED,
        num_evals=2,  # one evaluation interval after the initial one: RESETS epochs
        run_evals=False,
        **SETTINGS,
    )


def _users_factory(observation_size, action_size, **kwargs):
    """The step test's networks made by a function of the caller's, not a partial of Brax's
    factory: `jaxrl.brax.ppo` runs what it returns as it is (network injection)."""
    from brax.training.agents.ppo import networks as brax_networks

    return brax_networks.make_ppo_networks(
        observation_size,
        action_size,
        policy_hidden_layer_sizes=step_parity.CONFIG.actor_hidden,
        value_hidden_layer_sizes=step_parity.CONFIG.critic_hidden,
        **kwargs,
    )


def _drop_in_plan(**changes):
    """`jaxrl.brax.ppo.train`'s plan of the arguments Brax's run was given, with `changes`."""
    from jaxrl.brax import ppo as brax_door

    defaults = {
        name: p.default
        for name, p in inspect.signature(brax_door.train).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    return brax_door.make_plan({**defaults, **_brax_arguments(), **changes})


def _configs(
    eval_simulator: str, drop_in: bool = False, **slip
) -> tuple[TrainConfig, ppo.PPOConfig]:
    """jaxrl's configs from `ppo_parity_flags(SETTINGS)`, as the parity suites build them, with
    the step test's small networks, or (`drop_in`) those `jaxrl.brax.ppo.train` makes of Brax's
    own arguments; `slip` replaces run config fields, or agent config fields where prefixed
    "agent_"."""
    from jaxrl.benchmarks.brax_parity import ppo_parity_flags
    from jaxrl.config import resolve

    argv = ["--algo", "ppo", "--env", "classic/pendulum", "--seed", str(SEED)]
    argv += ["--num-envs", str(N), "--steps", str(TOTAL)]
    argv += [*ppo_parity_flags(SETTINGS, TOTAL, evals=1, eval_envs=2)]
    argv += ["--actor-hidden", ",".join(map(str, step_parity.CONFIG.actor_hidden))]
    argv += ["--critic-hidden", ",".join(map(str, step_parity.CONFIG.critic_hidden))]
    argv += ["--eval-simulator", eval_simulator]
    train_config, agent_config, _ = resolve.build_configs(argv)
    if drop_in:
        plan = _drop_in_plan()
        train_config, agent_config = plan.config, plan.agent_config
    agent_slip = {k[6:]: v for k, v in slip.items() if k.startswith("agent_")}
    run_slip = {k: v for k, v in slip.items() if not k.startswith("agent_")}
    return (
        dataclasses.replace(train_config, **run_slip),
        dataclasses.replace(agent_config, **agent_slip),
    )


def _brax_keys() -> dict:
    """Brax's keys (brax/training/agents/ppo/train.py, 0.14.2): each training step's key_sgd,
    the per-env keys of the first states and of every hard reset's."""
    _, local_key = jax.random.split(jax.random.PRNGKey(SEED))
    local_key = jax.random.fold_in(local_key, 0)
    local_key, key_env, _ = jax.random.split(local_key, 3)
    env_keys = [jax.random.split(key_env, N)]
    sgd = []
    for _ in range(RESETS):  # one evaluation interval: RESETS epochs, a hard reset after each
        epoch_key, local_key = jax.random.split(local_key)
        key = jax.random.split(epoch_key, 1)[0]
        for _ in range(TRAIN_STEPS // RESETS):
            key_sgd, _, key = jax.random.split(key, 3)
            sgd.append(np.asarray(key_sgd))
        env_keys.append(jax.random.split(env_keys[-1][0], N))
    return dict(sgd=sgd, key_env=np.asarray(key_env), env_keys=[np.asarray(k) for k in env_keys])


@pytest.fixture(scope="module")
def brax_run():
    """Brax's `ppo.train` on `MeteredDrift` (Drift with metrics of its own) from known
    parameters, with what it did read out: each env step's acting key, each unroll's data,
    each gradient step's loss key, every normaliser it built, and the parameters it ended at."""
    from brax.training import acting
    from brax.training.acme import running_statistics, specs
    from brax.training.agents.ppo import losses as brax_losses
    from brax.training.agents.ppo import train as brax_train

    act_keys, unrolls, loss_keys, normalizers, logs = [], [], [], [], []
    actor_step, generate_unroll = acting.actor_step, acting.generate_unroll
    compute_ppo_loss, update = brax_losses.compute_ppo_loss, running_statistics.update

    def recording_actor_step(env, env_state, policy, key, extra_fields=()):
        brax_peer.record(act_keys, key)
        return actor_step(env, env_state, policy, key, extra_fields=extra_fields)

    def recording_unroll(*args, **kwargs):
        state, data = generate_unroll(*args, **kwargs)
        brax_peer.record(unrolls, data)
        return state, data

    def recording_loss(params, normalizer, data, rng, *args, **kwargs):
        brax_peer.record(loss_keys, rng)
        return compute_ppo_loss(params, normalizer, data, rng, *args, **kwargs)

    def recording_update(*args, **kwargs):
        out = update(*args, **kwargs)
        brax_peer.record(normalizers, out)
        return out

    nets = step_parity._brax_networks()
    keys = jax.random.split(jax.random.PRNGKey(11), 2)
    start = (
        running_statistics.init_state(specs.Array((step_parity.OBS,), jnp.float32)),
        nets.policy_network.init(keys[0]),
        nets.value_network.init(keys[1]),
    )
    brax_peer.install_shims()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(acting, "actor_step", recording_actor_step)
        patch.setattr(acting, "generate_unroll", recording_unroll)
        patch.setattr(brax_losses, "compute_ppo_loss", recording_loss)
        patch.setattr(running_statistics, "update", recording_update)
        # log_training_metrics: Brax's training logs (episode/...) come to progress_fn too.
        _, after, _ = brax_train.train(
            restore_params=start,
            log_training_metrics=True,
            progress_fn=lambda step, metrics: logs.append((step, metrics)),
            **_brax_arguments(),
        )
        jax.effects_barrier()
    assert len(act_keys) == TRAIN_STEPS * UNROLLS * UNROLL
    assert len(unrolls) == TRAIN_STEPS * UNROLLS
    assert len(loss_keys) == TRAIN_STEPS * EPOCHS * MINIBATCHES
    assert len(normalizers) == TRAIN_STEPS
    # The training steps' data as jaxrl's rollouts hold it: [T, N], T = UNROLLS x UNROLL.
    steps = [
        jax.tree.map(lambda *x: np.concatenate(x), *unrolls[i * UNROLLS : (i + 1) * UNROLLS])
        for i in range(TRAIN_STEPS)
    ]
    keys = _brax_keys()
    # The derived keys are Brax's: its loss keys follow from each step's key_sgd (as in the
    # step test), and its first states from the first per-env keys.
    want = []
    for key in keys["sgd"]:
        for _ in range(EPOCHS):
            key, _, grad_key = jax.random.split(key, 3)
            for _ in range(MINIBATCHES):
                grad_key, loss_key = jax.random.split(grad_key)
                want.append(np.asarray(loss_key))
    np.testing.assert_array_equal(np.stack(loss_keys), np.stack(want))
    first = jax.vmap(brax_peer.Drift().reset)(jnp.asarray(keys["env_keys"][0]))
    np.testing.assert_allclose(steps[0].observation[0], first.obs, rtol=1e-6)
    return dict(
        act_keys=[np.asarray(k, np.uint32) for k in act_keys], steps=steps,
        normalizers=normalizers, start=start, after=after, **keys,
        training_logs=[(step, m) for step, m in logs if any(k.startswith("episode/") for k in m)],
    )  # fmt: skip


def _run_jaxrl(
    brax: dict,
    monkeypatch,
    eval_simulator: str = "own",
    drop_in: bool = False,
    plan=None,
    on_iteration=None,
    **slip,
) -> dict:
    """jaxrl's loop (one chunk: every iteration of the run) from Brax's initial parameters and
    first env states, handed Brax's draws in the order jaxrl's loop asks for them. `plan`: a
    drop-in plan whose configs and injected networks (`plan.injected`) run instead;
    `on_iteration`: the loop's host callback (`onpolicy.make_train`)."""
    key_shape = jax.ShapeDtypeStruct((2,), jnp.uint32)
    zeros = np.zeros(2, np.uint32)
    acts = iter(brax["act_keys"])
    # The r-th hard reset (after iteration (r + 1) x reset_every) makes env i's first state
    # from split(K, N)[i], K the first per-env key of the states before it (Brax's key_envs).
    every = TRAIN_STEPS // RESETS
    resets = {(r + 1) * every: k[0] for r, k in enumerate(brax["env_keys"][:-1])}
    batches = []

    def act_key(key):  # the evaluation's trips in a shared chunk, after training's: any key
        return io_callback(lambda: next(acts, zeros), key_shape, ordered=True)

    # A hard reset from Brax's keys: AutoResetWrapper.reset takes the key it is given as the
    # reset key (its own splits it first), and the loop's hard reset is given Brax's.
    def reset_as_given(self, key):
        state = self.env.reset(key)
        return wrappers._with_own_keys(state, state, key)

    make_hard_reset = onpolicy.make_hard_reset

    def hard_reset_with_brax_keys(config, env, data):
        hard_reset = make_hard_reset(config, env, data)

        def with_keys(env_state, iteration, key):
            given = lambda i: np.asarray(resets.get(int(i), zeros), np.uint32)  # noqa: E731
            return hard_reset(env_state, iteration, io_callback(given, key_shape, iteration))

        return with_keys

    monkeypatch.setattr(wrappers.AutoResetWrapper, "reset", reset_as_given)
    monkeypatch.setattr(onpolicy, "make_hard_reset", hard_reset_with_brax_keys)
    train_config, agent_config = _configs(eval_simulator, drop_in, **slip)
    networks = None
    if plan is not None:
        train_config, agent_config, networks = plan.config, plan.agent_config, plan.injected
    agent = ppo.make(agent_config, networks)

    def explore(state, obs, key):
        return agent.explore(state, obs, act_key(key))

    def update(state, batch, key):
        jax.debug.callback(lambda b: batches.append(jax.device_get(b)), batch, ordered=True)
        given = lambda s: brax["sgd"][int(s)] if int(s) < TRAIN_STEPS else zeros  # noqa: E731
        return agent.update(state, batch, io_callback(given, key_shape, state.step))

    env = brax_peer.MeteredDrift()
    given = agent._replace(explore=explore, update=update)
    trainer = make_train(train_config, given, env, on_iteration=on_iteration)
    assert onpolicy.shares_simulator(train_config, False) == (eval_simulator == "shared")
    # Brax's first env states: its per-env keys are split(key_env, N), as jaxrl's batched reset
    # splits the key `reset_as_given` takes; finished envs come back to them (autoreset "first").
    env_state = trainer.env.reset(jnp.asarray(brax["key_env"]))
    state = trainer.init(jax.random.PRNGKey(0), env_state=env_state)
    _, policy, value = brax["start"]
    params = {  # Brax's trees as they are where its networks run
        "policy": step_parity._as_jaxrl(policy, state.agent.params["policy"]),
        "value": step_parity._as_jaxrl(value, state.agent.params["value"]),
    }
    if networks is not None:
        jax.tree.map(np.testing.assert_array_equal, params, {"policy": policy, "value": value})
    # Adam's fresh state depends on shapes alone.
    state = state.replace(agent=state.agent.replace(params=params))
    state, summary = jax.jit(trainer.chunk)(state)
    jax.effects_barrier()
    return dict(state=state, summary=summary, batches=batches)


def _check(brax: dict, run: dict) -> None:
    """Every transition collected, every update's batch, the statistics and the parameters
    after the run: jaxrl's loop against Brax's."""
    state, summary = run["state"], run["summary"]
    assert int(state.iteration) == TRAIN_STEPS
    assert len(run["batches"]) == TRAIN_STEPS
    close = functools.partial(np.testing.assert_allclose, rtol=1e-4, atol=1e-5)
    for i, (batch, data) in enumerate(zip(run["batches"], brax["steps"], strict=True)):
        stats = brax["normalizers"][i]  # the statistics Brax's gradient steps read
        norm = lambda x, s=stats: (np.asarray(x) - s.mean) / s.std  # noqa: E731
        done = 1.0 - np.asarray(data.discount)
        truncation = np.asarray(data.extras["state_extras"]["truncation"])
        going = done == 0
        close(batch.obs, norm(data.observation), err_msg=f"obs {i}")
        close(batch.next_obs[going], norm(data.next_observation)[going], err_msg=f"next {i}")
        close(batch.reward, data.reward, err_msg=f"reward {i}")
        np.testing.assert_array_equal(batch.done, done, err_msg=f"done {i}")
        np.testing.assert_array_equal(batch.terminated, done * (1 - truncation), f"term {i}")
        policy = data.extras["policy_extras"]
        close(batch.extras["raw_action"], policy["raw_action"], err_msg=f"action {i}")
        close(batch.extras["log_prob"], policy["log_prob"], err_msg=f"log_prob {i}")
    dones = np.stack([1.0 - np.asarray(d.discount) for d in brax["steps"]])
    truncs = np.stack([d.extras["state_extras"]["truncation"] for d in brax["steps"]])
    assert (dones * (1 - truncs)).any() and truncs.any()  # terminations and time limits
    stats, normalizer = state.obs_stats, brax["after"][0]
    close(stats.mean, normalizer.mean, atol=1e-6)
    close(np.sqrt(stats.var), normalizer.std)
    _, policy, value = brax["after"]
    for part, brax_part in (("policy", policy), ("value", value)):
        want = step_parity._as_jaxrl(brax_part, state.agent.params[part])
        for got, exp in zip(
            jax.tree.leaves(state.agent.params[part]), jax.tree.leaves(want), strict=True
        ):
            close(got, exp, atol=4e-6, err_msg=part)
    assert int(summary["updates"]) == TRAIN_STEPS * EPOCHS * MINIBATCHES
    # The last hard reset (after the last update): the envs stand at Brax's last first states.
    last = jax.vmap(brax_peer.Drift().reset)(jnp.asarray(brax["env_keys"][RESETS]))
    close(state.env_state.obs, last.obs, err_msg="after the last hard reset")


@pytest.mark.parametrize("eval_simulator", ["own", "shared"])
def test_loop_runs_as_brax_ppo_train_over_several_training_steps(
    brax_run, monkeypatch, eval_simulator
):
    """jaxrl's loop with the parity options, over 4 of Brax's training steps and 2 hard
    resets: the same transitions collected, each update reading them normalised with the
    same statistics, the same parameters after 16 gradient steps."""
    _check(brax_run, _run_jaxrl(brax_run, monkeypatch, eval_simulator))


def test_the_drop_in_trains_this_loop_from_brax_s_own_arguments(brax_run, monkeypatch):
    """`jaxrl.brax.ppo.train`'s configs, made from the arguments Brax's run was given (not
    from the parity flags), run the same loop as Brax's: the translation is exact."""
    _check(brax_run, _run_jaxrl(brax_run, monkeypatch, "own", drop_in=True))


def test_the_drop_in_runs_a_factory_of_the_caller_s_as_brax_does(brax_run, monkeypatch):
    """A `network_factory` of the caller's (a function, not a partial of Brax's factory) is
    run as it is: its own networks and trees inside jaxrl's PPO (network injection) train the
    same loop as Brax's `ppo.train`, to the same parameters."""
    plan = _drop_in_plan(network_factory=_users_factory)
    assert plan.injected is not None and plan.networks.injected
    _check(brax_run, _run_jaxrl(brax_run, monkeypatch, "own", plan=plan))


@pytest.mark.parametrize("eval_simulator", ["own", "shared"])
def test_log_training_metrics_gives_brax_s_training_logs(brax_run, monkeypatch, eval_simulator):
    """`log_training_metrics=True`: the drop-in's `training_episodes` over jaxrl's loop (both
    chunks) gives progress_fn Brax's `episode/...` logs of the same run: at Brax's steps, each
    ended episode's return and length as Brax's logger averages them, and the losses Brax's
    gradient steps logged and the policy's Gaussian, and the env's own metrics summed over
    each episode (MeteredDrift's, one of them per step); `kl_mean` is jaxrl's estimate
    (docs/BRAX.md)."""
    from jaxrl.brax import metrics as brax_metrics
    from jaxrl.brax import ppo as brax_door

    plan = _drop_in_plan(log_training_metrics=True)
    assert plan.training_log == (PER_STEP, UNROLL)  # Brax's default: every training step
    report = brax_metrics.Report(plan.config, plan.agent_config, 1, plan.run_evals)
    logs = []
    hook = brax_door.training_episodes(plan, report, lambda step, m: logs.append((step, m)))
    drop_in = eval_simulator == "own"  # the parity flags' configs give the shared chunk
    run = _run_jaxrl(brax_run, monkeypatch, eval_simulator, drop_in, on_iteration=hook)
    _check(brax_run, run)  # the same run as Brax's
    want = brax_run["training_logs"]
    assert [step for step, _ in logs] == [step for step, _ in want]
    assert [step for step, _ in want] == [PER_STEP * (i + 1) for i in range(TRAIN_STEPS)]
    for (step, got), (_, brax_log) in zip(logs, want, strict=True):
        assert set(got) == set(brax_log), step
        gaussian = [k[len("episode/") :] for k in brax_log if k.startswith("episode/policy_dist_")]
        assert len(gaussian) == 6
        for key in ("sum_reward", "length", "x0", "push_per_step", "total_loss", "policy_loss",
                    "v_loss", "entropy_loss", "learning_rate", *gaussian):  # fmt: skip
            np.testing.assert_allclose(
                got[f"episode/{key}"], brax_log[f"episode/{key}"], rtol=1e-4, atol=1e-6,
                err_msg=f"{key} at {step}",
            )  # fmt: skip
    assert len({m["episode/sum_reward"] for _, m in want}) > 1  # episodes of several returns


@pytest.mark.parametrize(
    "eval_simulator, slip",
    [
        ("own", dict(renormalize_rollout=False)),  # statistics fed the observations reached
        ("own", dict(autoreset="random")),  # finished envs at fresh states
        ("own", dict(reset_every=0)),  # no hard resets
        ("shared", dict(reset_every=1)),  # a hard reset after every update
        ("shared", dict(obs_clip=1.0)),  # normalised observations clipped
    ],
)
def test_each_loop_option_matters(brax_run, monkeypatch, eval_simulator, slip):
    """Without any one of the loop options `ppo_parity_flags` sets, jaxrl's loop no longer
    runs as Brax's."""
    run = _run_jaxrl(brax_run, monkeypatch, eval_simulator, **slip)
    with pytest.raises(AssertionError, match="Not equal"):
        _check(brax_run, run)
