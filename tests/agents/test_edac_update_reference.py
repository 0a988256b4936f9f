"""SAC-N's, EDAC's and E2O's whole `update` against an independent numpy reference, in the
reference code's order (temperature, actor, critics): the temperature's own draw, the actor
against the critics the update started from and the new temperature, the critics' target from
the new actor and temperature (E2O's: the minimum over all critics offline, the mean over
pairs of their minimum online, mixed by its pessimism schedule), EDAC's diversity term from
action gradients backpropagated by hand, each learner's first Adam step (finite-difference
gradients) and the Polyak targets."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import e2o, edac, sac_family
from tests import reference as ref

OBS, ACT, B = 3, 2, 8
SMALL = dict(actor_hidden=(8,), critic_hidden=(8, 8), num_critics=3, tau=0.1, init_alpha=0.5)
CONFIGS = {
    "edac": edac.EDACConfig(**SMALL, eta=2.0, reward_scale=2.0),
    "sac_n": edac.SACNConfig(**SMALL),
    "e2o": e2o.E2OConfig(**SMALL, eta=2.0, pessimism_decay_updates=8),
}
# E2O's state before the switch, just after it, and half way through its decay of 8 updates
# (step 10, online since 6): (state fields, the offline minimum's weight in the target).
E2O_PHASES = {
    "offline": (dict(online_from=-1), 1.0),
    "switched": (dict(online_from=3, step=3), 1.0),
    "decaying": (dict(online_from=6, step=10), 0.5),
    "online": (dict(online_from=6, step=30), 0.0),
}
CASES = [("edac", None), ("sac_n", None), *(("e2o", phase) for phase in E2O_PHASES)]


def _setup(config, key=0, phase=None):
    agent = (e2o if isinstance(config, e2o.E2OConfig) else edac).make(config)
    k_init, k_target, k_batch = jax.random.split(jax.random.PRNGKey(key), 3)
    state = agent.init(k_init, OBS, ACT)
    if phase is not None:
        fields = {k: jnp.asarray(v, jnp.int32) for k, v in E2O_PHASES[phase][0].items()}
        state = state.replace(**fields)
    state = state.replace(
        target_critic_params=ref.perturbed(state.target_critic_params, k_target, 0.2)
    )
    return agent, state, ref.mixed_batch(k_batch, B, OBS, ACT)


def numpy_diversity(grads: np.ndarray) -> float:
    """The mean over rows of sum_{i != j} cos(g_i, g_j), divided by E - 1, as a double loop."""
    size, rows = grads.shape[:2]
    total = 0.0
    for b in range(rows):
        for i in range(size):
            for j in range(size):
                if i != j:
                    gi, gj = grads[i, b], grads[j, b]
                    total += gi @ gj / ((np.linalg.norm(gi) + 1e-10) * (np.linalg.norm(gj) + 1e-10))
    return total / rows / (size - 1)


def test_diversity_is_the_mean_pairwise_cosine_of_the_action_gradients():
    grads = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (4, 5, 2)), np.float64)
    np.testing.assert_allclose(edac.diversity(jnp.asarray(grads)), numpy_diversity(grads), 1e-5)
    same = np.broadcast_to(grads[:1], grads.shape)  # identical critics: every cosine is 1
    np.testing.assert_allclose(edac.diversity(jnp.asarray(same)), 4.0, rtol=1e-5)
    opposed = np.concatenate([grads[:1], -grads[:1]])  # two critics apart: both pairs -1
    np.testing.assert_allclose(edac.diversity(jnp.asarray(opposed)), -2.0, rtol=1e-5)


def test_a_critic_flat_in_the_action_leaves_the_diversity_gradient_finite():
    """A zero action gradient (a ReLU critic flat in the action) has norm 0, whose own
    gradient is 0/0: the term's gradient must stay finite there (SAC-N and EDAC went NaN on
    the pendulum within thousands of updates before)."""
    grads = jax.random.normal(jax.random.PRNGKey(2), (3, 4, 1)).at[1, 2].set(0.0)
    through = jax.grad(lambda g: edac.diversity(g))(grads)
    assert np.isfinite(np.asarray(through)).all()


def numpy_weighted_min_pair(q: np.ndarray) -> np.ndarray:
    """[E, B] -> [B]: the mean over all pairs i < j of min(q_i, q_j), pair by pair."""
    pairs = list(itertools.combinations(range(q.shape[0]), 2))
    return np.mean([np.minimum(q[i], q[j]) for i, j in pairs], axis=0)


def test_weighted_min_pair_is_the_mean_over_pairs_of_their_minimum():
    q = np.asarray(jax.random.normal(jax.random.PRNGKey(4), (5, 7)), np.float64)
    np.testing.assert_allclose(e2o.weighted_min_pair(jnp.asarray(q)), numpy_weighted_min_pair(q),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    two = q[:2]  # one pair: its minimum
    np.testing.assert_allclose(e2o.weighted_min_pair(jnp.asarray(two)), two.min(0), rtol=1e-6)


@pytest.mark.parametrize("name,phase", CASES)
def test_update_matches_numpy_reference(name, phase):
    config = CONFIGS[name]
    agent, state, batch = _setup(config, phase=phase)
    weight = E2O_PHASES[phase][1] if phase else 1.0  # the offline minimum's, in the target
    key = jax.random.PRNGKey(7)
    new, metrics = jax.jit(agent.update)(state, batch, key)
    p, n, b = ref.to64(state), ref.to64(new), ref.to64(batch)
    keys = sac_family.UpdateKeys(*jax.random.split(key, 8))
    target_entropy = -ACT

    def policy(params, obs, key):
        mean, log_std = ref.gaussian_actor(params, obs, log_std_clip=True)
        u = mean + np.exp(log_std) * ref.normal(key, mean.shape)
        return np.tanh(u), ref.tanh_gaussian_log_prob(u, mean, log_std)

    # 1. The temperature, from its own draw at s, by one Adam step.
    _, draw_log_prob = policy(p.actor.params, b.obs, keys.temperature_action)
    alpha_grad = -(draw_log_prob + target_entropy).mean()
    np.testing.assert_allclose(
        metrics["alpha_loss"], -(p.log_alpha.params * (draw_log_prob + target_entropy)).mean(),
        rtol=1e-4, atol=1e-6,
    )  # fmt: skip
    np.testing.assert_allclose(
        n.log_alpha.params - p.log_alpha.params, -config.alpha_lr * np.sign(alpha_grad), rtol=1e-3
    )
    alpha = np.exp(n.log_alpha.params)  # the new temperature, which actor and critics read
    np.testing.assert_allclose(metrics["alpha"], alpha, rtol=1e-6)

    # 2. The actor, against the critics the update started from.
    def actor_loss(params):
        action, log_prob = policy(params, b.obs, keys.policy_action)
        q = ref.q_ensemble(p.critic.params, b.obs, action)[..., 0]
        return (alpha * log_prob - q.min(0)).mean()

    np.testing.assert_allclose(metrics["actor_loss"], actor_loss(p.actor.params), rtol=1e-4)
    actor_grad = ref.finite_difference_grad(actor_loss, p.actor.params)
    ref.assert_adam_first_step(state.actor.params, new.actor.params, actor_grad, config.actor_lr)

    # 3. The critics: the target from the new actor at s', the min over all target critics.
    next_action, next_log_prob = policy(n.actor.params, b.next_obs, keys.next_action)
    next_q = ref.q_ensemble(p.target_critic_params, b.next_obs, next_action)[..., 0]
    value = weight * next_q.min(0) + (1 - weight) * numpy_weighted_min_pair(next_q)
    soft = value - alpha * next_log_prob
    y = config.reward_scale * b.reward + b.discount * (1 - b.terminated) * soft

    def td_loss(params):
        q = ref.q_ensemble(params, b.obs, b.action)[..., 0]
        return 0.5 * ((q - y) ** 2).mean(-1).sum()

    def spread(params):
        return numpy_diversity(ref.q_action_grads(params, b.obs, b.action))

    def critic_loss(params):
        return td_loss(params) + 0.5 * config.eta * weight * spread(params)

    np.testing.assert_allclose(metrics["critic_loss"], td_loss(p.critic.params), rtol=1e-4)
    if config.eta:
        np.testing.assert_allclose(metrics["diversity"], spread(p.critic.params), 1e-4, 1e-6)
    else:
        assert "diversity" not in metrics
    critic_grad = ref.finite_difference_grad(critic_loss, p.critic.params)
    ref.assert_adam_first_step(
        state.critic.params, new.critic.params, critic_grad, config.critic_lr
    )
    if phase is not None:
        np.testing.assert_allclose(metrics["pessimism"], weight)
    if config.eta * weight:  # the diversity term moves the critics: its gradient is far from 0
        td_grad = ref.finite_difference_grad(td_loss, p.critic.params)
        moved = [np.sign(a) != np.sign(t) for a, t in zip(jax.tree.leaves(critic_grad),
                 jax.tree.leaves(td_grad), strict=True)]  # fmt: skip
        assert sum(int(m.sum()) for m in moved) >= 5

    ref.assert_polyak(new.target_critic_params, state.target_critic_params, new.critic.params, 0.1)
    assert int(new.step) == int(state.step) + 1


def test_the_policy_head_clips_its_log_std_to_minus_five_and_two():
    """EDAC's head: the raw log-std clipped to [-5, 2] (std 1 at a raw 0), where SAC squashes."""
    agent, state, _ = _setup(CONFIGS["edac"])
    obs = 30.0 * jax.random.normal(jax.random.PRNGKey(1), (64, OBS))  # raw outputs far out
    actor = sac_family.actor_network(CONFIGS["edac"], ACT)
    mean, log_std = actor.apply(state.actor.params, obs)
    layers = state.actor.params["params"]["MLP_0"]
    raw = np.split(ref.mlp(ref.to64(layers), np.asarray(obs, np.float64)), 2, -1)[1]
    assert (raw < -5).any() and (raw > 2).any()
    np.testing.assert_allclose(log_std, np.clip(raw, -5, 2), rtol=1e-4, atol=1e-4)
