"""SAC with Brax's options against Brax SAC's own losses (`brax.training.agents.sac.losses.
make_losses`: critic, actor and temperature) and against Brax's own gradient steps in Brax's
`sgd_step` order: the same parameters, batch and keys in, equal losses, gradients and updated
parameters out, to float32 tolerance.

The batch has rows that are terminated, truncated (time limit) and neither; the target critics
differ from the online ones; the normaliser is not the identity. jaxrl's options (as
`benchmarks.brax_parity.sac_parity_flags` sets them): softplus std, LayerNorm after the ReLU,
target entropy -|A|/2, the temperature's loss in alpha, truncated rows masked out of the critic
loss, the actor against the critics the step started from, the temperature's own action
draw. Brax normalises observations inside its networks; jaxrl's loop hands the update
observations it has already normalised.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from brax.training import gradients as brax_gradients
from brax.training import types as brax_types
from brax.training.acme import running_statistics, specs
from brax.training.agents.sac import losses as brax_losses
from brax.training.agents.sac import networks as brax_networks

from jaxrl import heads
from jaxrl.agents import sac, sac_family
from jaxrl.types import Batch
from tests import reference as ref

OBS, ACT, HIDDEN = 3, 2, (8, 8)
GAMMA, REWARD_SCALE, LR, ALPHA_LR, TAU = 0.97, 5.0, 1e-3, 3e-4, 0.005
# Per row: "T" terminated, "R" truncated (time limit), "." neither.
ENDS = [".", "T", "R", ".", "R", ".", "T", ".", ".", "R"]
CONFIG = sac.SACConfig(
    actor_hidden=HIDDEN,
    critic_hidden=HIDDEN,
    critic_layer_norm=True,
    critic_norm_after_relu=True,
    softplus_std=True,
    actor_lr=LR,
    critic_lr=LR,
    alpha_lr=ALPHA_LR,
    tau=TAU,
    target_entropy_scale=0.5,
    reward_scale=REWARD_SCALE,
    temperature_loss="alpha",
    truncation="mask",
    temperature_draw="own",
    actor_uses_updated_critic=False,
)


def _brax_networks():
    return brax_networks.make_sac_networks(
        OBS,
        ACT,
        preprocess_observations_fn=running_statistics.normalize,
        hidden_layer_sizes=HIDDEN,
        q_network_layer_norm=True,
    )


def _policy_as_jaxrl(brax_params: dict) -> dict:
    """Brax's policy MLP (hidden_0, hidden_1, ...) as jaxrl's GaussianActor (MLP_0/Dense_j)."""
    layers = brax_params["params"]
    return {"params": {"MLP_0": {name.replace("hidden", "Dense"): p for name, p in layers.items()}}}


def _q_as_jaxrl(brax_params: dict) -> dict:
    """Brax's critics (MLP_i/{hidden_j, LayerNorm_j}) as jaxrl's vmapped ensemble: the same
    layers, critic i at index i of a leading axis."""
    critics = [brax_params["params"][f"MLP_{i}"] for i in range(len(brax_params["params"]))]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *critics)
    renamed = {name.replace("hidden", "Dense"): p for name, p in stacked.items()}
    return {"params": {"critics": {"MLP_0": renamed}}}


def _setup(config=CONFIG):
    nets = _brax_networks()
    keys = jax.random.split(jax.random.PRNGKey(0), 10)
    policy = nets.policy_network.init(keys[0])
    q = nets.q_network.init(keys[1])
    target_q = ref.perturbed(q, keys[2], 0.2)
    log_alpha = jnp.asarray(np.log(0.3), jnp.float32)
    normalizer = running_statistics.init_state(specs.Array((OBS,), jnp.float32))
    normalizer = running_statistics.update(
        normalizer, 2.0 + 3.0 * jax.random.normal(keys[3], (64, OBS))
    )

    ends = np.array(ENDS)
    rows = len(ENDS)
    terminated = (ends == "T").astype(np.float32)
    truncated = (ends == "R").astype(np.float32)
    obs = 2.0 + 3.0 * jax.random.normal(keys[4], (rows, OBS))
    next_obs = 2.0 + 3.0 * jax.random.normal(keys[5], (rows, OBS))
    action = jax.random.uniform(keys[6], (rows, ACT), minval=-0.99, maxval=0.99)
    reward = jax.random.normal(keys[7], (rows,))
    transitions = brax_types.Transition(
        observation=obs,
        action=action,
        reward=reward,
        discount=jnp.asarray(1.0 - terminated),
        next_observation=next_obs,
        extras={"state_extras": {"truncation": jnp.asarray(truncated)}, "policy_extras": {}},
    )
    brax = dict(policy=policy, q=q, target_q=target_q, log_alpha=log_alpha, normalizer=normalizer)

    normalize = lambda x: running_statistics.normalize(x, normalizer)  # noqa: E731
    batch = Batch(
        obs=normalize(obs),
        action=action,
        reward=reward,
        next_obs=normalize(next_obs),
        terminated=jnp.asarray(terminated),
        discount=jnp.full((rows,), GAMMA, jnp.float32),
        truncated=jnp.asarray(truncated),
    )
    agent = sac.make(config)
    state = agent.init(keys[8], OBS, ACT)
    state = state.replace(
        actor=state.actor.replace(params=_policy_as_jaxrl(policy)),
        critic=state.critic.replace(params=_q_as_jaxrl(q)),
        target_critic_params=_q_as_jaxrl(target_q),
        log_alpha=state.log_alpha.replace(params=log_alpha),
    )
    # Brax's losses close over reward scaling and the discount.
    alpha_loss, critic_loss, actor_loss = brax_losses.make_losses(nets, REWARD_SCALE, GAMMA, ACT)
    brax_fns = dict(alpha=alpha_loss, critic=critic_loss, actor=actor_loss)
    return nets, brax, transitions, brax_fns, agent, state, batch


def _close(got, want, rtol=2e-5, atol=1e-6, msg=""):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=msg)


KEY = jax.random.PRNGKey(7)
KEYS = sac_family.update_keys(KEY)  # what jaxrl's update splits its key into


def test_critic_loss_and_gradients_match_brax():
    _, brax, transitions, fns, _, state, batch = _setup()
    alpha = jnp.exp(brax["log_alpha"])
    brax_loss, brax_grads = jax.value_and_grad(fns["critic"])(
        brax["q"], brax["policy"], brax["normalizer"], brax["target_q"], alpha, transitions,
        KEYS.next_action,
    )  # fmt: skip
    (loss, (q, *_)), grads = jax.value_and_grad(sac_family.losses(CONFIG).critic, has_aux=True)(
        state.critic.params, state, batch, KEYS
    )
    # Brax's loss is the mean over critics of each one's 0.5 mean squared error; jaxrl's the sum.
    critics = CONFIG.num_critics
    np.testing.assert_allclose(loss, critics * brax_loss, rtol=1e-5)
    _close(grads, jax.tree.map(lambda g: critics * g, _q_as_jaxrl(brax_grads)), msg="critic")
    assert max(float(jnp.abs(g).max()) for g in jax.tree.leaves(grads)) > 1e-3
    # The truncated rows add nothing: their gradient with respect to the critics' outputs is 0.
    grad_q = jax.grad(lambda out: heads.critic_mse(out, q + 1.0, 1.0 - batch.truncated))(q)
    assert np.all(np.asarray(grad_q)[:, np.array(ENDS) == "R"] == 0)


def test_actor_and_temperature_losses_and_gradients_match_brax():
    _, brax, transitions, fns, _, state, batch = _setup()
    alpha = jnp.exp(brax["log_alpha"])
    brax_actor, brax_actor_grads = jax.value_and_grad(fns["actor"])(
        brax["policy"], brax["normalizer"], brax["q"], alpha, transitions, KEYS.policy_action
    )
    brax_alpha, brax_alpha_grad = jax.value_and_grad(fns["alpha"])(
        brax["log_alpha"], brax["policy"], brax["normalizer"], transitions, KEYS.temperature_action
    )

    def objective(params):
        return sac_family.losses(CONFIG).actor(params, state.critic.params, state, batch, KEYS)

    (actor, (log_prob, _)), actor_grads = jax.value_and_grad(objective, has_aux=True)(
        state.actor.params
    )
    np.testing.assert_allclose(actor, brax_actor, rtol=1e-5)
    _close(actor_grads, _policy_as_jaxrl(brax_actor_grads), rtol=1e-4, msg="actor")
    target_entropy = -0.5 * ACT
    temperature, temperature_grad = jax.value_and_grad(sac_family.alpha_loss)(
        state.log_alpha.params, log_prob, target_entropy, "alpha"
    )
    np.testing.assert_allclose(temperature, brax_alpha, rtol=1e-5)
    np.testing.assert_allclose(temperature_grad, brax_alpha_grad, rtol=1e-5)


def _brax_sgd_steps(brax, transitions, fns, steps_keys):
    """Brax's `sgd_step` (brax/training/agents/sac/train.py), with Brax's own losses and
    gradient steps, once per entry of `steps_keys`: the temperature first; the critics with the
    temperature and the policy the step started from; the policy against the critics the step
    started from; then the target critics. Each step's three keys are given (Brax splits them
    from the key it carries). Returns the parameters after them and the last step's losses."""
    update = lambda loss, lr: brax_gradients.gradient_update_fn(loss, optax.adam(lr), None)  # noqa: E731
    alpha_update = update(fns["alpha"], ALPHA_LR)
    critic_update = update(fns["critic"], LR)
    actor_update = update(fns["actor"], LR)
    brax = dict(brax)
    opt = dict(
        alpha=optax.adam(ALPHA_LR).init(brax["log_alpha"]),
        q=optax.adam(LR).init(brax["q"]),
        policy=optax.adam(LR).init(brax["policy"]),
    )
    for key_alpha, key_critic, key_actor in steps_keys:
        alpha_loss, log_alpha, opt["alpha"] = alpha_update(
            brax["log_alpha"], brax["policy"], brax["normalizer"], transitions, key_alpha,
            optimizer_state=opt["alpha"],
        )  # fmt: skip
        alpha = jnp.exp(brax["log_alpha"])
        critic_loss, q, opt["q"] = critic_update(
            brax["q"], brax["policy"], brax["normalizer"], brax["target_q"], alpha, transitions,
            key_critic, optimizer_state=opt["q"],
        )  # fmt: skip
        actor_loss, policy, opt["policy"] = actor_update(
            brax["policy"], brax["normalizer"], brax["q"], alpha, transitions, key_actor,
            optimizer_state=opt["policy"],
        )  # fmt: skip
        target_q = jax.tree.map(lambda x, y: x * (1 - TAU) + y * TAU, brax["target_q"], q)
        brax.update(policy=policy, q=q, target_q=target_q, log_alpha=log_alpha)
    losses = dict(alpha_loss=alpha_loss, critic_loss=critic_loss, actor_loss=actor_loss)
    return brax, losses


# Two updates, so the second Adam step depends on the gradients' sizes, not only their signs
# (Adam's first step is about lr times the sign of each gradient).
UPDATE_KEYS = jax.random.split(jax.random.PRNGKey(11), 2)


def _brax_keys(key):
    """The (alpha, critic, actor) keys of Brax's step that equal jaxrl's update with `key`:
    the temperature's own draw, the next-action draw and the policy's draw."""
    keys = sac_family.update_keys(key)
    return keys.temperature_action, keys.next_action, keys.policy_action


def _updates(agent, state, batch):
    for key in UPDATE_KEYS:
        state, metrics = agent.update(state, batch, key)
    return state, metrics


# Parameters after Adam steps: a step is about lr per parameter whatever the gradient's size,
# so one whose gradient is near 0 moves by an amount float noise sets. 5% of a step.
STEP_ATOL = 0.05 * LR


def test_two_updates_match_brax_sgd_steps():
    _, brax, transitions, fns, agent, state, batch = _setup()
    after, brax_losses_ = _brax_sgd_steps(brax, transitions, fns, map(_brax_keys, UPDATE_KEYS))
    new, metrics = _updates(agent, state, batch)
    close = lambda got, want, msg: _close(got, want, 1e-5, STEP_ATOL, msg)  # noqa: E731
    close(new.actor.params, _policy_as_jaxrl(after["policy"]), "policy")
    close(new.critic.params, _q_as_jaxrl(after["q"]), "critics")
    close(new.target_critic_params, _q_as_jaxrl(after["target_q"]), "target critics")
    np.testing.assert_allclose(new.log_alpha.params, after["log_alpha"], rtol=1e-6)
    np.testing.assert_allclose(metrics["actor_loss"], brax_losses_["actor_loss"], rtol=1e-5)
    np.testing.assert_allclose(metrics["alpha_loss"], brax_losses_["alpha_loss"], rtol=1e-5)
    critics = CONFIG.num_critics
    np.testing.assert_allclose(metrics["critic_loss"], critics * brax_losses_["critic_loss"], 1e-5)
    # Every parameter moved.
    moved = jax.tree.map(lambda a, b: float(jnp.abs(a - b).min()), new.critic.params,
                         state.critic.params)  # fmt: skip
    assert min(jax.tree.leaves(moved)) > 0


@pytest.mark.parametrize(
    "options",
    [
        {},  # the networks jaxrl builds itself, run as Brax's own modules
        # What jaxrl's own SAC networks lack: LayerNorm in Brax's policy MLP (after the
        # activation), another activation, an initialiser with options.
        dict(
            policy_network_layer_norm=True,
            activation=jax.nn.tanh,
            q_network_kernel_init_fn=jax.nn.initializers.variance_scaling,
            q_network_kernel_init_kwargs=dict(scale=2.0, mode="fan_in", distribution="uniform"),
        ),
    ],
)
def test_injected_brax_networks_train_as_brax_sgd_steps(options):
    """Network injection: Brax's own `SACNetworks` (a factory's, through
    `jaxrl.brax.factories.sac_networks`) inside jaxrl's SAC, on Brax's trees as they are: two
    updates give Brax's two `sgd_step`s, and the first parameters are those Brax's `sac.train`
    draws from the same key."""
    from jaxrl.brax import factories

    factory = functools.partial(
        brax_networks.make_sac_networks,
        hidden_layer_sizes=HIDDEN,
        q_network_layer_norm=True,
        **options,
    )
    settings = factories.sac_settings(factory, inject=True)
    assert settings.injected == bool(options)  # translated where jaxrl's networks build it
    settings = dataclasses.replace(settings, injected=True)
    injected = factories.sac_networks(settings, OBS, ACT, CONFIG.num_critics)
    nets = factory(OBS, ACT, preprocess_observations_fn=running_statistics.normalize)
    _, given, transitions, _, _, _, batch = _setup()
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    q = nets.q_network.init(keys[1])
    brax = dict(given, policy=nets.policy_network.init(keys[0]), q=q,
                target_q=ref.perturbed(q, keys[2], 0.2))  # fmt: skip
    alpha_loss, critic_loss, actor_loss = brax_losses.make_losses(nets, REWARD_SCALE, GAMMA, ACT)
    fns = dict(alpha=alpha_loss, critic=critic_loss, actor=actor_loss)
    after, brax_losses_ = _brax_sgd_steps(brax, transitions, fns, map(_brax_keys, UPDATE_KEYS))

    agent = sac.make(CONFIG, injected)
    state = agent.init(jax.random.PRNGKey(9), OBS, ACT)
    policy_key, q_key = jax.random.split(jax.random.PRNGKey(9))
    _close(state.actor.params, nets.policy_network.init(policy_key), 0, 0, "first policy")
    _close(state.critic.params, nets.q_network.init(q_key), 0, 0, "first critics")
    state = state.replace(
        actor=state.actor.replace(params=brax["policy"]),
        critic=state.critic.replace(params=brax["q"]),
        target_critic_params=brax["target_q"],
        log_alpha=state.log_alpha.replace(params=brax["log_alpha"]),
    )
    new, metrics = _updates(agent, state, batch)
    close = lambda got, want, msg: _close(got, want, 1e-5, STEP_ATOL, msg)  # noqa: E731
    close(new.actor.params, after["policy"], "policy")
    close(new.critic.params, after["q"], "critics")
    close(new.target_critic_params, after["target_q"], "target critics")
    np.testing.assert_allclose(new.log_alpha.params, after["log_alpha"], rtol=1e-6)
    np.testing.assert_allclose(metrics["actor_loss"], brax_losses_["actor_loss"], rtol=1e-5)
    critics = CONFIG.num_critics
    np.testing.assert_allclose(metrics["critic_loss"], critics * brax_losses_["critic_loss"], 1e-5)


@pytest.mark.parametrize(
    "slip",
    [
        dict(truncation="bootstrap"),  # truncated rows kept in the critic loss
        dict(temperature_loss="log_alpha"),  # the temperature's loss in log alpha
        dict(actor_uses_updated_critic=True),  # the actor against this step's new critics
        dict(critic_norm_after_relu=False),  # LayerNorm before the ReLU
        dict(target_entropy_scale=1.0),  # target entropy -|A|
        dict(temperature_draw="actor"),  # the temperature reads the actor's draw
    ],
)
def test_each_brax_option_matters(slip):
    """Without any one of Brax's choices, two updates no longer match Brax's two steps: in the
    parameters, or in the losses (Adam's steps do not see a gradient's scale, so the
    temperature's two loss forms move log alpha alike)."""
    _, brax, transitions, fns, _, _, _ = _setup()
    after, brax_losses_ = _brax_sgd_steps(brax, transitions, fns, map(_brax_keys, UPDATE_KEYS))
    _, _, _, _, agent, state, batch = _setup(dataclasses.replace(CONFIG, **slip))
    new, metrics = _updates(agent, state, batch)
    want = (_policy_as_jaxrl(after["policy"]), _q_as_jaxrl(after["q"]), after["log_alpha"])
    got = (new.actor.params, new.critic.params, new.log_alpha.params)
    pairs = zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True)
    gaps = [float(jnp.abs(g - w).max()) for g, w in pairs]
    brax_losses_["critic_loss"] *= CONFIG.num_critics
    loss_gaps = [abs(float(metrics[k] / brax_losses_[k]) - 1) for k in brax_losses_]
    assert max(gaps) > 4 * STEP_ATOL or max(loss_gaps) > 1e-3, slip


def test_one_iteration_matches_a_whole_brax_training_step(monkeypatch):
    """One whole Brax SAC training step, run by Brax's own `sac.train` (a small env with
    terminations and time limits, a replay buffer prefilled by the untrained policy, then one
    step: collect, update the normaliser, sample, 2 gradient steps) against jaxrl's pieces of
    one iteration from the same parameters: its acting, its observation statistics over the
    observations acted on, and two of its updates on the transitions Brax sampled, normalised
    by jaxrl. The actions of every env step, the statistics and every parameter after the
    step agree.

    Read out of Brax's run as it goes (jax.debug.callback): each env step's key and data
    (wrapping `acting.actor_step`), each loss's key and batch (wrapping Brax's losses) and the
    whole training state after each gradient step (wrapping its constructor). Brax's update
    keys are handed to jaxrl's updates through `sac_family.update_keys`: the two systems derive
    their keys differently, so only the draws are made equal, not the key chains."""
    from brax import envs as brax_envs
    from brax.training.agents.sac import train as brax_train

    from jaxrl import normalization
    from tests import brax_peer

    envs_, batch_size, updates, prefill, episode = 4, 8, 2, 8, 6
    gamma, scale, lr, tau, seed = 0.9, 2.0, 1e-3, 0.1, 1
    steps, states, losses_seen = [], [], {"alpha": [], "critic": [], "actor": []}
    brax_peer.record_sac_training(monkeypatch, steps, losses_seen, states)
    factory = functools.partial(
        brax_networks.make_sac_networks, hidden_layer_sizes=HIDDEN, q_network_layer_norm=True
    )
    brax_peer.install_shims()
    _, (brax_normalizer, _), _ = brax_train.train(
        environment=brax_peer.Drift(),
        wrap_env_fn=brax_envs.training.wrap,  # Brax's own; Drift is no brax.envs.Env subclass
        num_timesteps=(prefill + 1) * envs_,
        episode_length=episode,
        num_envs=envs_,
        num_eval_envs=2,
        learning_rate=lr,
        discounting=gamma,
        seed=seed,
        batch_size=batch_size,
        num_evals=1,
        normalize_observations=True,
        reward_scaling=scale,
        tau=tau,
        min_replay_size=prefill * envs_,
        grad_updates_per_step=updates,
        deterministic_eval=True,
        network_factory=factory,
    )
    # The training env steps (the evaluation's 2 envs aside): the prefill's, then the step's.
    steps = [s for s in steps if s[1].observation.shape[0] == envs_]
    assert len(steps) == prefill + 1
    assert len(states) == 1 + updates  # the initial state, then one per gradient step
    assert all(len(seen) == updates for seen in losses_seen.values())
    start, after = states[0], states[-1]  # each as built, before Brax replicates it

    config = dataclasses.replace(
        CONFIG, actor_lr=lr, critic_lr=lr, tau=tau, reward_scale=scale, init_alpha=1.0
    )
    agent = sac.make(config)
    state = agent.init(jax.random.PRNGKey(0), OBS, ACT)
    state = state.replace(  # Adam's fresh states depend on shapes alone
        actor=state.actor.replace(params=_policy_as_jaxrl(start.policy_params)),
        critic=state.critic.replace(params=_q_as_jaxrl(start.q_params)),
        target_critic_params=_q_as_jaxrl(start.target_q_params),
        log_alpha=state.log_alpha.replace(params=jnp.asarray(start.alpha_params)),
    )
    np.testing.assert_array_equal(start.alpha_params, 0.0)  # alpha 1, jaxrl's init_alpha

    # Collection: every env step's actions from jaxrl's policy (the untrained one, the replay
    # warm-up's too) on observations normalised by the statistics before that step; the
    # statistics then take the observations acted on (Brax's SAC, --renormalize-rollout).
    stats = normalization.init(OBS)
    for key, data in steps:
        obs = normalization.normalize(stats, jnp.asarray(data.observation), clip=0.0)
        action = agent.act(state, obs, jnp.asarray(key))
        np.testing.assert_allclose(action, data.action, rtol=1e-5, atol=1e-6)
        stats = normalization.update(stats, jnp.asarray(data.observation))
    np.testing.assert_allclose(stats.mean, brax_normalizer.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.sqrt(stats.var), brax_normalizer.std, rtol=1e-4)

    # Learning: the transitions Brax sampled, as jaxrl's replay hands them to its updates
    # (done = 1 - discount; truncated = done - terminated), normalised with the new statistics.
    def as_batch(transitions):
        done = 1.0 - jnp.asarray(transitions.discount)
        terminated = done * (1.0 - jnp.asarray(transitions.extras["state_extras"]["truncation"]))
        normalize = lambda x: normalization.normalize(stats, jnp.asarray(x), clip=0.0)  # noqa: E731
        return Batch(
            obs=normalize(transitions.observation),
            action=jnp.asarray(transitions.action),
            reward=jnp.asarray(transitions.reward),
            next_obs=normalize(transitions.next_observation),
            terminated=terminated,
            discount=jnp.full(done.shape, gamma, jnp.float32),
            truncated=done - terminated,
        )

    batches = [as_batch(t) for _, t in losses_seen["critic"]]
    ends = np.concatenate([np.asarray(b.terminated) + 2 * np.asarray(b.truncated) for b in batches])
    assert {0.0, 1.0, 2.0} <= set(ends.tolist())  # plain, terminated and truncated rows
    # Brax's keys as jaxrl's update_keys that SAC reads: the next action, the policy's action
    # and the temperature's own action; the rest (zeros) unused here. Update u's: row u.
    table = sac_family.UpdateKeys(*np.zeros((8, updates, 2), np.uint32))
    for u in range(updates):
        table.next_action[u] = losses_seen["critic"][u][0]
        table.policy_action[u] = losses_seen["actor"][u]
        table.temperature_action[u] = losses_seen["alpha"][u]
    table = jax.tree.map(jnp.asarray, table)
    monkeypatch.setattr(
        sac_family, "update_keys", lambda key: jax.tree.map(lambda t: t[key[0]], table)
    )
    batches = jax.tree.map(lambda *x: jnp.stack(x), *batches)
    index_keys = jnp.stack([jnp.array([u, 0], jnp.uint32) for u in range(updates)])
    # As jaxrl's off-policy loop runs an iteration's updates: one scan over them.
    new, _ = jax.jit(lambda s: jax.lax.scan(lambda s, xs: agent.update(s, *xs), s,
                                            (batches, index_keys)))(state)  # fmt: skip

    close = lambda got, want, msg: _close(got, want, 1e-5, STEP_ATOL, msg)  # noqa: E731
    close(new.actor.params, _policy_as_jaxrl(after.policy_params), "policy")
    close(new.critic.params, _q_as_jaxrl(after.q_params), "critics")
    close(new.target_critic_params, _q_as_jaxrl(after.target_q_params), "target critics")
    np.testing.assert_allclose(new.log_alpha.params, after.alpha_params, rtol=1e-6, atol=1e-7)
    moved = jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), new.critic.params,
                         state.critic.params)  # fmt: skip
    assert min(jax.tree.leaves(moved)) > 10 * STEP_ATOL  # it learned
