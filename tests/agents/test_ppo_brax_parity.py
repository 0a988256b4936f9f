"""PPO with Brax's options against Brax's own loss (`brax.training.agents.ppo.losses.
compute_ppo_loss`), Brax's own minibatch shuffling and one whole training step of Brax's own
`ppo.train`: the same parameters, batch and key in, equal loss values, gradients and updated
parameters out, to float32 tolerance.

The batch is Brax's layout, whole unrolls [B, H], with rows that are terminated, truncated
(Brax's next observation there is already the next episode's first one) and neither; the
behaviour log-probabilities come from another policy, so ratios differ from 1 and the clip is
active. jaxrl's options: `advantage_in_loss` (GAE inside the loss, with the current value
parameters, per unroll), `truncation="mask"`, `advantage_estimator="vtrace"` (Brax's
r + gamma v_{t+1} - V), softplus std, swish networks. Brax normalises observations inside its
networks; jaxrl's loop hands the update observations it has already normalised, so jaxrl's
batch holds Brax's normalisation of the same observations.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.training import types as brax_types
from brax.training.acme import running_statistics, specs
from brax.training.agents.ppo import losses as brax_losses
from brax.training.agents.ppo import networks as brax_networks

from jaxrl.agents import ppo
from jaxrl.types import Rollout
from tests import brax_peer
from tests import reference as ref

B, H, OBS, ACT = 6, 5, 3, 2
GAMMA, LAMBDA, REWARD_SCALE, ENTROPY, CLIP = 0.97, 0.9, 10.0, 0.01, 0.3
# Per unroll and step: "T" terminated, "R" truncated (time limit), "." neither. Endings in the
# middle and at the last step, where Brax bootstraps from the unroll's next observation.
ENDS = [
    [".", ".", ".", ".", "."],
    [".", "T", ".", ".", "."],
    [".", ".", "R", ".", "."],
    [".", ".", ".", ".", "R"],
    [".", ".", ".", ".", "T"],
    ["R", ".", "T", ".", "."],
]
CONFIG = ppo.PPOConfig(
    actor_hidden=(8, 8),
    critic_hidden=(8,),
    activation="swish",
    softplus_std=True,
    clip_epsilon=CLIP,
    value_coef=0.5,
    entropy_coef=ENTROPY,
    gae_lambda=LAMBDA,
    reward_scale=REWARD_SCALE,
    max_grad_norm=0.0,
    advantage_estimator="vtrace",
    truncation="mask",
    advantage_in_loss=True,
    gae_horizon=H,
)
HP = {
    "clip_epsilon": jnp.float32(CLIP),
    "value_coef": jnp.float32(0.5),
    "entropy_coef": jnp.float32(ENTROPY),
    "gae_lambda": jnp.float32(LAMBDA),
    "reward_scale": jnp.float32(REWARD_SCALE),
}


def _brax_networks():
    return brax_networks.make_ppo_networks(
        OBS,
        ACT,
        preprocess_observations_fn=running_statistics.normalize,
        policy_hidden_layer_sizes=CONFIG.actor_hidden,
        value_hidden_layer_sizes=CONFIG.critic_hidden,
    )


def _as_jaxrl(brax_params: dict, like: dict) -> dict:
    """Brax's MLP parameters (hidden_0, hidden_1, ...) in jaxrl's tree (Dense_0, ...): the
    same layers in the same order."""
    return jax.tree.unflatten(jax.tree.structure(like), jax.tree.leaves(brax_params))


def _setup():
    """Brax's networks, parameters, normaliser and batch; jaxrl's parameters and batch."""
    nets = _brax_networks()
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    brax_params = brax_losses.PPONetworkParams(
        policy=nets.policy_network.init(keys[0]), value=nets.value_network.init(keys[1])
    )
    # A normaliser that is not the identity: statistics of shifted, scaled observations.
    normalizer = running_statistics.init_state(specs.Array((OBS,), jnp.float32))
    seen = 2.0 + 3.0 * jax.random.normal(keys[2], (64, OBS))
    normalizer = running_statistics.update(normalizer, seen)

    ends = np.array(ENDS)
    done = (ends != ".").astype(np.float32)
    truncation = (ends == "R").astype(np.float32)
    states = np.asarray(2.0 + 3.0 * jax.random.normal(keys[3], (B, H + 1, OBS)), np.float32)
    resets = np.asarray(2.0 + 3.0 * jax.random.normal(keys[4], (B, H, OBS)), np.float32)
    obs = states[:, :H].copy()
    # Brax's rollouts: after an ending the next observation is the next episode's first one.
    next_obs = np.where(done[..., None] > 0, resets, states[:, 1:])
    obs[:, 1:] = np.where(done[:, :-1, None] > 0, resets[:, :-1], obs[:, 1:])

    # Actions and their log-probabilities from another (older) policy.
    old_policy = ref.perturbed(brax_params.policy, keys[7], 0.15)
    logits = nets.policy_network.apply(normalizer, old_policy, jnp.asarray(obs))
    dist = nets.parametric_action_distribution
    raw_action = dist.sample_no_postprocessing(logits, keys[5])
    log_prob = dist.log_prob(logits, raw_action)
    reward = jax.random.normal(keys[6], (B, H))
    data = brax_types.Transition(
        observation=jnp.asarray(obs),
        action=jnp.tanh(raw_action),
        reward=reward,
        discount=jnp.asarray(1.0 - done),
        next_observation=jnp.asarray(next_obs),
        extras={
            "state_extras": {"truncation": jnp.asarray(truncation)},
            # The old policy's outputs: Brax's KL metric reads them.
            "policy_extras": {
                "raw_action": raw_action,
                "log_prob": log_prob,
                "distribution_params": logits,
            },
        },
    )

    like = ppo.make(CONFIG).init(keys[0], OBS, ACT).params
    params = {
        "policy": _as_jaxrl(brax_params.policy, like["policy"]),
        "value": _as_jaxrl(brax_params.value, like["value"]),
    }
    normalize = lambda x: running_statistics.normalize(jnp.asarray(x), normalizer)
    batch = {
        "obs": normalize(obs),
        "raw_action": raw_action,
        "log_prob": log_prob,
        "reward": reward,
        "terminated": jnp.asarray(done * (1.0 - truncation)),
        "done": jnp.asarray(done),
        "discount": jnp.full((B, H), GAMMA, jnp.float32),
        "bootstrap_obs": normalize(next_obs[:, -1]),
    }
    return nets, brax_params, normalizer, data, params, batch


def _brax_loss(nets, normalizer, data, key):
    def loss(params):
        return brax_losses.compute_ppo_loss(
            params,
            normalizer,
            data,
            key,
            nets,
            entropy_cost=ENTROPY,
            discounting=GAMMA,
            reward_scaling=REWARD_SCALE,
            gae_lambda=LAMBDA,
            clipping_epsilon=CLIP,
            normalize_advantage=True,
            vf_coefficient=0.5,
        )

    return loss


def _check_gaussian(metrics: dict, brax_metrics: dict) -> None:
    """The policy's Gaussian over the minibatch (its loc's and scale's mean, max and min), as
    Brax's loss reports it: the six policy_dist_* metrics (a learned std may be one number)."""
    names = [k for k in brax_metrics if k.startswith("policy_dist_")]
    assert len(names) == 6
    for name in names:
        np.testing.assert_allclose(metrics[name], brax_metrics[name], rtol=1e-5, err_msg=name)
    assert metrics["policy_dist_max_loc"] > metrics["policy_dist_min_loc"]


@pytest.mark.parametrize("gae_scan", ["sequential", "associative"])
def test_loss_and_gradients_match_brax_compute_ppo_loss(gae_scan):
    """Also with the advantage recursion as a parallel scan (`gae_scan`), a speed choice that
    sums in another order: Brax's loss to the same tolerance."""
    nets, brax_params, normalizer, data, params, batch = _setup()
    key = jax.random.PRNGKey(42)
    (brax_total, brax_metrics), brax_grads = jax.value_and_grad(
        _brax_loss(nets, normalizer, data, key), has_aux=True
    )(brax_params)

    loss = ppo.losses(dataclasses.replace(CONFIG, gae_scan=gae_scan)).unroll
    (total, metrics), grads = jax.value_and_grad(loss, has_aux=True)(params, batch, key, HP, ACT)

    # The batch exercises the clip on both sides and advantages of both signs.
    assert 0.0 < float(metrics["clip_fraction"]) < 1.0
    np.testing.assert_allclose(total, brax_total, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(metrics["policy_loss"], brax_metrics["policy_loss"], rtol=1e-5)
    # Brax reports its terms with their coefficients.
    np.testing.assert_allclose(0.5 * metrics["value_loss"], brax_metrics["v_loss"], rtol=1e-5)
    np.testing.assert_allclose(
        -ENTROPY * metrics["entropy"], brax_metrics["entropy_loss"], rtol=1e-5
    )
    _check_gaussian(metrics, brax_metrics)
    for part in ("policy", "value"):
        expected = _as_jaxrl(getattr(brax_grads, part), grads[part])
        for got, want in zip(jax.tree.leaves(grads[part]), jax.tree.leaves(expected), strict=True):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6, err_msg=part)
        assert max(float(jnp.abs(g).max()) for g in jax.tree.leaves(grads[part])) > 1e-3


@pytest.mark.parametrize(
    "options",
    [
        {},  # the same networks jaxrl builds itself, run as Brax's own modules
        # What jaxrl's own networks lack: another activation, initialisers with options.
        dict(
            activation=jax.nn.tanh,
            value_network_kernel_init_fn=jax.nn.initializers.variance_scaling,
            value_network_kernel_init_kwargs=dict(scale=2.0, mode="fan_in", distribution="uniform"),
        ),
        # Brax's Gaussian without tanh, its std a learned parameter (log-parameterised), the
        # mean clipped and initialised apart.
        dict(
            distribution_type="normal",
            noise_std_type="log",
            init_noise_std=0.5,
            mean_clip_scale=0.5,
            mean_kernel_init_fn=jax.nn.initializers.orthogonal,
            mean_kernel_init_kwargs={"scale": 0.01},
        ),
        # ... its std a function of the state.
        dict(distribution_type="normal", state_dependent_std=True, noise_std_type="log"),
    ],
)
def test_injected_brax_networks_give_brax_s_loss_and_gradients(options):
    """Network injection: Brax's own `PPONetworks` (a factory's, through
    `jaxrl.brax.factories.ppo_networks`) inside jaxrl's PPO loss, on Brax's parameter trees as
    they are, give Brax's `compute_ppo_loss` and its gradients."""
    import functools

    from jaxrl.brax import factories

    factory = functools.partial(
        brax_networks.make_ppo_networks,
        policy_hidden_layer_sizes=CONFIG.actor_hidden,
        value_hidden_layer_sizes=CONFIG.critic_hidden,
        **options,
    )
    settings = factories.ppo_settings(factory)
    assert settings.injected == bool(options)  # Brax's default options: translated instead
    injected = factories.ppo_networks(dataclasses.replace(settings, injected=True), OBS, ACT)
    nets = factory(OBS, ACT, preprocess_observations_fn=running_statistics.normalize)
    _, _, normalizer, data, _, batch = _setup()
    keys = jax.random.split(jax.random.PRNGKey(5), 2)
    brax_params = brax_losses.PPONetworkParams(  # a fresh pair of the factory's own trees
        policy=nets.policy_network.init(keys[0]), value=nets.value_network.init(keys[1])
    )
    # The behaviour: an older policy of these networks (its own distribution's parameters
    # and log-probabilities of the step test's raw actions), so that ratios differ from 1.
    older = ref.perturbed(brax_params.policy, keys[1], 0.15)
    behaviour = nets.policy_network.apply(normalizer, older, data.observation)
    raw = data.extras["policy_extras"]["raw_action"]
    log_prob = nets.parametric_action_distribution.log_prob(behaviour, raw)
    extras = {"raw_action": raw, "log_prob": log_prob, "distribution_params": behaviour}
    data = data._replace(extras={**data.extras, "policy_extras": extras})
    batch = {**batch, "log_prob": log_prob}
    key = jax.random.PRNGKey(42)
    (brax_total, brax_metrics), brax_grads = jax.value_and_grad(
        _brax_loss(nets, normalizer, data, key), has_aux=True
    )(brax_params)
    params = {"policy": brax_params.policy, "value": brax_params.value}
    loss = ppo.losses(CONFIG, injected).unroll
    (total, metrics), grads = jax.value_and_grad(loss, has_aux=True)(params, batch, key, HP, ACT)
    np.testing.assert_allclose(total, brax_total, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(metrics["policy_loss"], brax_metrics["policy_loss"], rtol=1e-5)
    np.testing.assert_allclose(0.5 * metrics["value_loss"], brax_metrics["v_loss"], rtol=1e-5)
    np.testing.assert_allclose(
        -ENTROPY * metrics["entropy"], brax_metrics["entropy_loss"], rtol=1e-5
    )
    _check_gaussian(metrics, brax_metrics)
    assert np.isfinite(float(total)) and float(metrics["approx_kl"]) > 1e-4  # ratios not 1
    for part in ("policy", "value"):
        want = jax.tree.leaves(getattr(brax_grads, part))
        for got, exp in zip(jax.tree.leaves(grads[part]), want, strict=True):
            np.testing.assert_allclose(got, exp, rtol=2e-4, atol=1e-6, err_msg=part)
    # The first parameters are Brax's too: jaxrl's init of the injected networks splits the
    # key as Brax's ppo.train does (policy first).
    first = ppo.make(CONFIG, injected).init(jax.random.PRNGKey(7), OBS, ACT).params
    policy_key, value_key = jax.random.split(jax.random.PRNGKey(7))
    jax.tree.map(
        np.testing.assert_array_equal, first["policy"], nets.policy_network.init(policy_key)
    )
    jax.tree.map(np.testing.assert_array_equal, first["value"], nets.value_network.init(value_key))


@pytest.mark.parametrize(
    "slip",
    [
        dict(truncation="bootstrap", advantage_in_loss=True),  # truncated rows bootstrapped
        dict(advantage_estimator="gae"),  # GAE's advantage, not Brax's r + gamma v - V
    ],
)
def test_each_brax_option_matters(slip):
    """Without any one of the options the loss is no longer Brax's (the batch can tell)."""
    nets, brax_params, normalizer, data, params, batch = _setup()
    key = jax.random.PRNGKey(42)
    brax_total, _ = _brax_loss(nets, normalizer, data, key)(brax_params)
    config = dataclasses.replace(CONFIG, **slip)
    if config.truncation == "bootstrap":  # every step's next observation, as jaxrl keeps it
        batch = {k: v for k, v in batch.items() if k != "bootstrap_obs"}
        batch["next_value_obs"] = running_statistics.normalize(data.next_observation, normalizer)
    total, _ = ppo.losses(config).unroll(params, batch, key, HP, ACT)
    assert abs(float(total) - float(brax_total)) > 1e-3


def test_in_loss_advantages_with_truncation_bootstrap_by_hand():
    """advantage_in_loss with jaxrl's truncation ("bootstrap", GAE's advantage): every step
    bootstraps from V of the observation it truly reached (a truncated one too, a terminated
    one not), and nothing flows back across an ending. The value loss against a numpy GAE over
    each unroll, with the values computed by hand from the same parameters."""
    _, _, normalizer, data, params, batch = _setup()
    config = dataclasses.replace(
        CONFIG, truncation="bootstrap", advantage_estimator="gae", normalize_advantages=False
    )
    # The observations the steps truly reached (Brax's rollouts keep the next episode's first
    # one instead at an ending): made here apart from Brax's next_observation.
    reached = np.asarray(data.next_observation) + 0.5
    batch = {k: v for k, v in batch.items() if k != "bootstrap_obs"}
    batch["next_value_obs"] = running_statistics.normalize(jnp.asarray(reached), normalizer)
    _, metrics = ppo.losses(config).unroll(params, batch, jax.random.PRNGKey(3), HP, ACT)

    b = ref.to64(batch)
    value = ref.value_mlp(ref.to64(params["value"]), b["obs"], "swish")  # [B, H]
    next_value = ref.value_mlp(ref.to64(params["value"]), b["next_value_obs"], "swish")
    advantage, running = np.zeros((B, H)), np.zeros(B)
    for t in reversed(range(H)):
        delta = REWARD_SCALE * b["reward"][:, t] - value[:, t]
        delta += GAMMA * (1.0 - b["terminated"][:, t]) * next_value[:, t]
        running = delta + GAMMA * LAMBDA * (1.0 - b["done"][:, t]) * running
        advantage[:, t] = running
    # target = A + V, so the value loss is half the mean squared advantage.
    np.testing.assert_allclose(metrics["value_loss"], 0.5 * (advantage**2).mean(), rtol=1e-5)
    np.testing.assert_allclose(metrics["value_mean"], value.mean(), rtol=1e-5, atol=1e-6)


def test_advantages_in_the_loss_follow_the_value_parameters():
    """The targets move with the value parameters the loss is given (Brax), where the
    once-per-rollout update would keep the ones from before the update."""
    _, _, _, _, params, batch = _setup()
    key = jax.random.PRNGKey(1)
    loss = ppo.losses(CONFIG).unroll
    moved = {**params, "value": jax.tree.map(lambda x: x * 1.5, params["value"])}
    _, before = loss(params, batch, key, HP, ACT)
    _, after = loss(moved, batch, key, HP, ACT)
    assert float(before["policy_loss"]) != pytest.approx(float(after["policy_loss"]), abs=1e-4)


def test_unrolls_are_shuffled_as_brax_shuffles_them():
    """update with advantage_in_loss cuts a Rollout [T, N] into unrolls in Brax's order (row
    u * N + e holds env e's steps u H .. u H + H - 1), permutes them with Brax's keys (per
    epoch: next, permutation, gradient; per step: next, loss) and takes minibatches of whole
    unrolls. With the learning rate's schedule at its end (progress 1, learning rate 0) the
    parameters stay put, so each step's loss is the loss of Brax's minibatch at the start."""
    T, N, M, EPOCHS = 2 * H, B // 2, 3, 2
    config = dataclasses.replace(CONFIG, num_minibatches=M, num_epochs=EPOCHS, lr_schedule="linear")
    _, _, _, _, params, batch = _setup()
    agent = ppo.make(config)
    state = agent.init(jax.random.PRNGKey(0), OBS, ACT).replace(params=params, hp=HP)

    def time_major(x):  # the [B, H] unrolls as a rollout of 2 unrolls of N envs: [T, N]
        x = x.reshape((2, N, H) + x.shape[2:])
        return jnp.swapaxes(x, 1, 2).reshape((T, N) + x.shape[3:])

    obs = time_major(batch["obs"])
    # Each unroll's last next observation where the unroll ends; elsewhere the next row's.
    next_obs = jnp.concatenate([obs[1:], obs[-1:]])
    next_obs = next_obs.at[H - 1].set(batch["bootstrap_obs"][:N])
    next_obs = next_obs.at[T - 1].set(batch["bootstrap_obs"][N:])
    rollout = Rollout(
        obs=obs,
        reward=time_major(batch["reward"]),
        next_obs=next_obs,
        terminated=time_major(batch["terminated"]),
        done=time_major(batch["done"]),
        discount=time_major(batch["discount"]),
        extras={
            "raw_action": time_major(batch["raw_action"]),
            "log_prob": time_major(batch["log_prob"]),
        },
        progress=jnp.float32(1.0),
    )
    key = jax.random.PRNGKey(7)
    new, metrics = jax.jit(agent.update)(state, rollout, key)
    for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(a, b)

    # Brax's sgd_step, by hand: the same unrolls, keys and minibatches.
    loss = ppo.losses(config).unroll
    expected = []
    for _ in range(EPOCHS):
        key, perm_key, grad_key = jax.random.split(key, 3)
        shuffled = jax.tree.map(lambda x, k=perm_key: jax.random.permutation(k, x), batch)
        for m in range(M):
            grad_key, loss_key = jax.random.split(grad_key)
            rows = slice(m * (B // M), (m + 1) * (B // M))
            minibatch = jax.tree.map(lambda x, r=rows: x[r], shuffled)
            expected.append(loss(params, minibatch, loss_key, HP, ACT)[1])
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl"):
        want = np.mean([float(e[name]) for e in expected])
        np.testing.assert_allclose(metrics[name], want, rtol=1e-5, err_msg=name)


def test_one_update_matches_a_whole_brax_training_step(monkeypatch):
    """One whole Brax training step, run by Brax's own `ppo.train` (num_timesteps = one
    step's env steps, a fixed seed, a small env with terminations and time limits), against
    one jaxrl update from the same parameters on the data that step collected: the
    parameters after it agree, and so do the observation statistics (jaxrl's own
    normalisation code against Brax's). The data and each gradient step's loss key are read
    out of Brax's step as it runs (jax.debug.callback in wrappers of `acting.generate_unroll`
    and `compute_ppo_loss`); the key of Brax's gradient steps is derived as its train() derives
    it, and checked against the loss keys it produced."""
    from brax.training import acting
    from brax.training.agents.ppo import train as brax_train

    from jaxrl import normalization

    envs_, batch_size, minibatches, unroll, epochs, episode = 4, 4, 2, 5, 2, 6
    gamma, lam, scale, lr, seed = 0.9, 0.95, 2.0, 1e-3, 3
    per_step = batch_size * minibatches * unroll
    unrolls, loss_keys = [], []
    generate_unroll, compute_ppo_loss = acting.generate_unroll, brax_losses.compute_ppo_loss

    def recording_unroll(*args, **kwargs):
        state, data = generate_unroll(*args, **kwargs)
        jax.debug.callback(lambda d: unrolls.append(jax.device_get(d)), data, ordered=False)
        return state, data

    def recording_loss(params, normalizer, data, rng, *args, **kwargs):
        jax.debug.callback(lambda k: loss_keys.append(np.asarray(k)), rng)
        return compute_ppo_loss(params, normalizer, data, rng, *args, **kwargs)

    monkeypatch.setattr(acting, "generate_unroll", recording_unroll)
    monkeypatch.setattr(brax_losses, "compute_ppo_loss", recording_loss)

    nets = _brax_networks()
    keys = jax.random.split(jax.random.PRNGKey(11), 2)
    start_policy = nets.policy_network.init(keys[0])
    start_value = nets.value_network.init(keys[1])
    start_normalizer = running_statistics.init_state(specs.Array((OBS,), jnp.float32))
    factory = lambda obs_size, act_size, preprocess_observations_fn: (
        brax_networks.make_ppo_networks(  # noqa: E501
            obs_size,
            act_size,
            preprocess_observations_fn=preprocess_observations_fn,
            policy_hidden_layer_sizes=CONFIG.actor_hidden,
            value_hidden_layer_sizes=CONFIG.critic_hidden,
        )
    )
    brax_peer.install_shims()
    _, brax_after, _ = brax_train.train(
        environment=brax_peer.Drift(),
        num_timesteps=per_step,
        episode_length=episode,
        num_envs=envs_,
        batch_size=batch_size,
        num_minibatches=minibatches,
        unroll_length=unroll,
        num_updates_per_batch=epochs,
        learning_rate=lr,
        entropy_cost=ENTROPY,
        discounting=gamma,
        gae_lambda=lam,
        reward_scaling=scale,
        clipping_epsilon=CLIP,
        normalize_observations=True,
        network_factory=factory,
        seed=seed,
        num_evals=1,
        run_evals=False,
        restore_params=(start_normalizer, start_policy, start_value),
    )
    assert len(unrolls) == batch_size * minibatches // envs_
    assert len(loss_keys) == epochs * minibatches

    # The data of Brax's step as jaxrl's loop hands it over: [T, N], T = unrolls x unroll.
    stacked = jax.tree.map(lambda *x: np.concatenate(x), *unrolls)
    truncation = stacked.extras["state_extras"]["truncation"]
    done = 1.0 - stacked.discount
    assert (truncation > 0).any() and ((done > 0) & (truncation == 0)).any()  # both endings
    stats = normalization.update(normalization.init(OBS), stacked.observation.reshape(-1, OBS))
    normalize = lambda x: normalization.normalize(stats, jnp.asarray(x), clip=0.0)
    rollout = Rollout(
        obs=normalize(stacked.observation),
        reward=jnp.asarray(stacked.reward),
        next_obs=normalize(stacked.next_observation),
        terminated=jnp.asarray(done * (1.0 - truncation)),
        done=jnp.asarray(done),
        discount=jnp.full(done.shape, gamma, jnp.float32),
        extras={
            "raw_action": jnp.asarray(stacked.extras["policy_extras"]["raw_action"]),
            "log_prob": jnp.asarray(stacked.extras["policy_extras"]["log_prob"]),
        },
        progress=jnp.float32(0.0),
    )
    # The key of Brax's gradient steps, as its train() derives it for the first step.
    _, local_key = jax.random.split(jax.random.PRNGKey(seed))
    local_key, _, _ = jax.random.split(jax.random.fold_in(local_key, 0), 3)
    epoch_key, _ = jax.random.split(local_key)
    step_key = jax.random.split(epoch_key, 1)[0]
    key_sgd = jax.random.split(step_key, 3)[0]

    config = dataclasses.replace(CONFIG, num_minibatches=minibatches, num_epochs=epochs,
                                 learning_rate=lr)  # fmt: skip
    agent = ppo.make(config)
    state = agent.init(jax.random.PRNGKey(0), OBS, ACT)
    hp = {**HP, "gae_lambda": jnp.float32(lam), "reward_scale": jnp.float32(scale)}
    params = {
        "policy": _as_jaxrl(start_policy, state.params["policy"]),
        "value": _as_jaxrl(start_value, state.params["value"]),
    }
    state = state.replace(params=params, hp=hp)  # Adam's fresh state depends on shapes alone
    new, _ = jax.jit(agent.update)(state, rollout, key_sgd)

    # Brax's loss keys are the ones jaxrl's update derives from the same key.
    expected_keys = []
    key = key_sgd
    for _ in range(epochs):
        key, _, grad_key = jax.random.split(key, 3)
        for _ in range(minibatches):
            grad_key, loss_key = jax.random.split(grad_key)
            expected_keys.append(np.asarray(loss_key))
    np.testing.assert_array_equal(np.stack(loss_keys), np.stack(expected_keys))

    brax_normalizer, brax_policy, brax_value = brax_after
    np.testing.assert_allclose(stats.mean, brax_normalizer.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.sqrt(stats.var), brax_normalizer.std, rtol=1e-4)
    for part, brax_part in (("policy", brax_policy), ("value", brax_value)):
        want = _as_jaxrl(brax_part, new.params[part])
        start = params[part]
        for got, exp, before in zip(
            jax.tree.leaves(new.params[part]),
            jax.tree.leaves(want),
            jax.tree.leaves(start),
            strict=True,
        ):
            assert np.abs(np.asarray(exp) - np.asarray(before)).max() > 1e-4  # it learned
            np.testing.assert_allclose(got, exp, rtol=1e-4, atol=2e-6, err_msg=part)

    # The benchmarks' Brax update alone (`speed.brax_ppo_update`, timed beside jaxrl's update
    # by the `brax-speed` cases) is Brax's training step less its rollout: on the data and key
    # of that step, from the same start, it ends where Brax's train() ended.
    from jaxrl.benchmarks import speed

    settings = {"policy_hidden_layer_sizes": CONFIG.actor_hidden, "batch_size": batch_size,
                "value_hidden_layer_sizes": CONFIG.critic_hidden, "unroll_length": unroll,
                "num_minibatches": minibatches, "num_updates_per_batch": epochs,
                "learning_rate": lr, "entropy_cost": ENTROPY, "discounting": gamma,
                "gae_lambda": lam, "reward_scaling": scale, "clipping_epsilon": CLIP}  # fmt: skip
    update, (_, adam, _), _, _ = speed.brax_ppo_update(settings, OBS, ACT)
    # Brax's layout: [unrolls, T, N] to [unrolls x N, T], as its training step reshapes it.
    brax_data = jax.tree.map(
        lambda *x: np.swapaxes(np.stack(x), 1, 2).reshape((-1, unroll) + x[0].shape[2:]),
        *unrolls,
    )
    start = (start_normalizer, adam, brax_losses.PPONetworkParams(start_policy, start_value))
    (normalizer, _, after), _ = jax.jit(update)(start, brax_data, key_sgd)
    np.testing.assert_allclose(normalizer.mean, brax_normalizer.mean, rtol=1e-6, atol=1e-7)
    for got, exp in zip(jax.tree.leaves((after.policy, after.value)),
                        jax.tree.leaves((brax_policy, brax_value)), strict=True):  # fmt: skip
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-7)
