import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.agents import crossq
from jaxrl.networks import BatchRenorm
from jaxrl.types import Batch

SMALL = crossq.CrossQConfig(actor_hidden=(8,), critic_hidden=(16,), bn_warmup_steps=10)


def _batch(size=32):
    k = jax.random.split(jax.random.PRNGKey(7), 4)
    return Batch(
        obs=2.0 + jax.random.normal(k[0], (size, 3)),
        action=jax.random.uniform(k[1], (size, 1), minval=-1, maxval=1),
        reward=jax.random.normal(k[2], (size,)),
        next_obs=-1.0 + 3.0 * jax.random.normal(k[3], (size, 3)),
        terminated=jnp.zeros(size),
        discount=jnp.full(size, 0.99),
    )


def test_no_target_parameters_anywhere_in_the_state():
    state = crossq.make(SMALL).init(jax.random.PRNGKey(0), 3, 1)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(state)]
    # hp holds settings (target_entropy_scale), not parameters.
    assert paths and not any("target" in p for p in paths if not p.startswith(".hp["))
    assert set(crossq.CrossQState.__dataclass_fields__) == {
        "actor",
        "actor_stats",
        "critic",
        "critic_stats",
        "log_alpha",
        "step",
        "head_state",
        "hp",
        "action_size",
    }


def test_critic_batch_statistics_cover_the_concatenated_batch():
    agent = crossq.make(SMALL)
    state = agent.init(jax.random.PRNGKey(0), 3, 1)
    batch = _batch()
    new_state, _ = jax.jit(agent.update)(state, batch, jax.random.PRNGKey(1))
    # The critics' input BatchRenorm sees [(s, a); (s', a')]: its running mean of the observation
    # features moved by (1 - momentum) towards the mean over obs and next_obs together.
    stats = new_state.critic_stats["critics"]["BatchRenorm_0"]
    joint = jnp.concatenate([batch.obs, batch.next_obs]).mean(0)
    chex.assert_shape(stats["mean"], (2, 4))  # [E, obs + action features]
    for critic in range(2):
        chex.assert_trees_all_close(stats["mean"][critic, :3], 0.01 * joint, atol=1e-5)
        assert int(stats["steps"][critic]) == 1
    # Not the statistics of (s, a) alone.
    assert not np.allclose(stats["mean"][0, :3], 0.01 * batch.obs.mean(0), atol=1e-3)


def test_joint_pass_splits_back_in_order():
    calls = []

    def apply(obs, action):
        calls.append(obs.shape)
        return jnp.stack([obs[:, 0], -obs[:, 0]]), "stats"

    obs, next_obs = jnp.arange(3.0)[:, None], 10 + jnp.arange(3.0)[:, None]
    q, next_q, stats = crossq.joint_critic_pass(apply, obs, obs, next_obs, next_obs)
    assert calls == [(6, 1)] and stats == "stats"  # one pass over both halves
    chex.assert_trees_all_close(q, jnp.array([[0.0, 1, 2], [0, -1, -2]]))
    chex.assert_trees_all_close(next_q, jnp.array([[10.0, 11, 12], [-10, -11, -12]]))


def test_running_statistics_are_used_when_acting():
    agent = crossq.make(SMALL)
    state = agent.init(jax.random.PRNGKey(0), 3, 1)
    obs = jnp.ones((4, 3))
    # In inference mode one observation gets the same action alone or in any batch.
    alone = agent.act(state, obs[:1], jax.random.PRNGKey(2), 0.0)
    together = agent.act(state, jnp.concatenate([obs[:1], 5 * obs]), jax.random.PRNGKey(2), 0.0)
    chex.assert_trees_all_close(alone[0], together[0], atol=1e-6)


def test_batch_renorm_by_hand():
    x = jnp.array([[1.0], [3.0]])  # batch mean 2, var 1
    layer = BatchRenorm(warmup_steps=0, epsilon=0.0)
    variables = layer.init(jax.random.PRNGKey(0), x)
    # Running stats mean 0, var 1: r = std_B / std_run = 1, d = (2 - 0) / 1 = 2.
    y, updates = layer.apply(variables, x, mutable=["batch_stats"])
    chex.assert_trees_all_close(y, jnp.array([[-1.0 + 2.0], [1.0 + 2.0]]), atol=1e-5)
    chex.assert_trees_all_close(updates["batch_stats"]["mean"], jnp.array([0.02]), atol=1e-6)
    # During warm-up it is plain batch norm (r = 1, d = 0).
    warm = BatchRenorm(warmup_steps=5, epsilon=0.0)
    y, _ = warm.apply(warm.init(jax.random.PRNGKey(0), x), x, mutable=["batch_stats"])
    chex.assert_trees_all_close(y, jnp.array([[-1.0], [1.0]]), atol=1e-5)
    # d is clipped at d_max.
    far = BatchRenorm(warmup_steps=0, epsilon=0.0, d_max=0.5)
    y, _ = far.apply(far.init(jax.random.PRNGKey(0), x), x, mutable=["batch_stats"])
    chex.assert_trees_all_close(y, jnp.array([[-0.5], [1.5]]), atol=1e-5)


def test_the_policy_head_clips_its_log_std_to_the_authors_bounds():
    """The authors' head: log-std = clip(raw, -20, 2), so std 1 where raw is 0; without
    `log_std_clip`, squashed smoothly into [-5, 2] (-1.5, std 0.22, where raw is 0)."""
    obs = jax.random.normal(jax.random.PRNGKey(1), (5, 3))
    for clip, raws, expected in (
        (True, (-30.0, -12.0, 0.0, 1.5, 7.0), (-20.0, -12.0, 0.0, 1.5, 2.0)),
        (False, (-30.0, 0.0, 30.0), (-5.0, -1.5, 2.0)),
    ):
        config = crossq.CrossQConfig(actor_hidden=(8,), log_std_clip=clip)
        state = crossq.make(config).init(jax.random.PRNGKey(0), 3, 1)
        for raw, want in zip(raws, expected, strict=True):
            # The output layer's log-std half set to the constant raw.
            params = jax.tree_util.tree_map(lambda x: x, state.actor.params)
            head = params["BRNMLP_0"]["Dense_1"]
            head["kernel"] = head["kernel"].at[:, 1].set(0.0)
            head["bias"] = head["bias"].at[1].set(raw)
            _, log_std = crossq.policy(config, params, state.actor_stats, obs, 1)
            np.testing.assert_allclose(log_std, want, rtol=1e-6, atol=1e-6)
