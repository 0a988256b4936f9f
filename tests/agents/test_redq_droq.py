import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, heads
from jaxrl.agents import droq, redq, sac, sac_family
from jaxrl.networks import QEnsemble, QNetwork
from tests.jaxprs import equations


def test_redq_target_is_min_over_a_random_subset_of_two():
    next_q = jnp.array([[5.0], [1.0], [3.0], [4.0]])  # [E=4, B=1]
    seen = set()
    for seed in range(60):
        subset = sac_family.target_subset(jax.random.PRNGKey(seed), next_q, 2)
        chex.assert_shape(subset, (2, 1))
        values = tuple(sorted(np.asarray(subset[:, 0]).tolist()))
        assert len(set(values)) == 2  # drawn without replacement
        seen.add(values)
        target = heads.Scalar().target(None, subset, jnp.zeros(1), jnp.zeros(1), 1.0, 0.0, {})
        assert float(target[0]) == min(values)
    assert len(seen) == 6  # every pair of the 4 critics comes up
    chex.assert_trees_all_equal(
        sac_family.target_subset(jax.random.PRNGKey(0), next_q, None), next_q
    )


def test_redq_actor_uses_the_ensemble_mean():
    q = jnp.array([[1.0, 2.0], [3.0, 6.0], [5.0, 1.0]])  # mean over critics [3, 3]
    loss = sac_family.actor_loss(q, jnp.array([1.0, -1.0]), 0.5, reduce="mean")
    assert float(loss) == pytest.approx(((0.5 - 3.0) + (-0.5 - 3.0)) / 2)


def test_vmapped_ensemble_equals_critics_evaluated_one_by_one():
    ensemble = QEnsemble((16, 16), num_critics=5, layer_norm=True)
    obs, action = jax.random.normal(jax.random.PRNGKey(1), (7, 3)), jnp.ones((7, 2)) * 0.3
    params = ensemble.init(jax.random.PRNGKey(0), obs, action)
    together = ensemble.apply(params, obs, action)
    chex.assert_shape(together, (5, 7))
    single = QNetwork((16, 16), layer_norm=True)
    for i in range(5):
        own = {"params": jax.tree.map(lambda x, i=i: x[i], params["params"]["critics"])}
        chex.assert_trees_all_close(single.apply(own, obs, action), together[i], atol=1e-5)
    assert np.unique(np.round(np.asarray(together[:, 0]), 5)).size == 5  # independent inits


def test_every_product_of_the_ensemble_is_batched_over_its_critics_on_both_sides():
    """The critics take their inputs along the ensemble axis (`QEnsemble`): every layer's
    product, the first included, and the weight gradients' are batched dots with the ensemble
    axis on both operands. Shared inputs gave the first layer an unbatched input, and XLA then
    transposed its [E, B, H] activations in both passes."""
    ensemble = QEnsemble((16, 8), num_critics=3)
    obs, action = jnp.ones((5, 4)), jnp.zeros((5, 2))
    params = ensemble.init(jax.random.PRNGKey(0), obs, action)

    def loss(params, action):
        return jnp.sum(ensemble.apply(params, obs, action) ** 2)

    jaxpr = jax.make_jaxpr(jax.grad(loss, argnums=(0, 1)))(params, action).jaxpr
    products = [e for e in equations(jaxpr) if e.primitive.name == "dot_general"]
    assert len(products) == 3 + 3 + 2 + 1  # forward; kernels' gradients; hidden, input grads
    for eqn in products:
        (_, (lhs_batch, rhs_batch)) = eqn.params["dimension_numbers"]
        assert len(lhs_batch) == len(rhs_batch) == 1, eqn


def test_droq_dropout_is_active_only_in_training():
    config = droq.DroQConfig()
    assert config.critic_dropout == 0.01 and config.critic_layer_norm and config.num_critics == 2
    ensemble = QEnsemble((64, 64), 2, layer_norm=True, dropout=0.2)
    obs, action = jnp.ones((8, 3)), jnp.zeros((8, 1))
    params = ensemble.init(jax.random.PRNGKey(0), obs, action)
    evaluate = ensemble.apply(params, obs, action)
    chex.assert_trees_all_equal(evaluate, ensemble.apply(params, obs, action, False))
    train_a = ensemble.apply(params, obs, action, True, rngs={"dropout": jax.random.PRNGKey(1)})
    train_b = ensemble.apply(params, obs, action, True, rngs={"dropout": jax.random.PRNGKey(2)})
    assert not np.allclose(train_a, evaluate) and not np.allclose(train_a, train_b)
    # Dropout keys are threaded through the agent's update: the same key gives the same update.
    agent = droq.make(droq.DroQConfig(actor_hidden=(8,), critic_hidden=(8,), critic_dropout=0.5))
    state = agent.init(jax.random.PRNGKey(0), 3, 1)
    params = state.critic.params["params"]["critics"]["MLP_0"]
    assert "LayerNorm_0" in params and "Dropout_0" not in params  # dropout holds no params
    batch = sac_batch()
    one, m1 = agent.update(state, batch, jax.random.PRNGKey(5))
    two, m2 = agent.update(state, batch, jax.random.PRNGKey(5))
    chex.assert_trees_all_equal(m1, m2)


def sac_batch():
    from jaxrl.types import Batch

    k = jax.random.split(jax.random.PRNGKey(3), 3)
    return Batch(
        jax.random.normal(k[0], (16, 3)),
        jnp.zeros((16, 1)),
        jax.random.normal(k[1], (16,)),
        jax.random.normal(k[2], (16, 3)),
        jnp.zeros(16),
        jnp.full(16, 0.99),
    )


def test_redq_and_droq_defaults_and_registry():
    config = redq.REDQConfig()
    assert (config.num_critics, config.num_target_critics, config.actor_q) == (10, 2, "mean")
    assert agents.get("redq").config_cls is redq.REDQConfig
    assert agents.get("droq").config_cls is droq.DroQConfig
    with pytest.raises(ValueError, match="num_target_critics"):
        redq.REDQConfig(num_critics=2, num_target_critics=3)


def test_residual_layer_norm_critic_blocks():
    ensemble = QEnsemble((32, 32, 32), num_critics=2, residual=True)
    obs, action = jnp.ones((5, 3)), jnp.zeros((5, 1))
    params = ensemble.init(jax.random.PRNGKey(0), obs, action)
    mlp = params["params"]["critics"]["MLP_0"]
    # Input projection + 2 Dense per block x 3 blocks + output; LayerNorm per block + final.
    assert len([k for k in mlp if k.startswith("Dense")]) == 1 + 2 * 3 + 1
    assert len([k for k in mlp if k.startswith("LayerNorm")]) == 3 + 1
    chex.assert_shape(mlp["Dense_1"]["kernel"], (2, 32, 128))
    chex.assert_shape(ensemble.apply(params, obs, action), (2, 5))
    with pytest.raises(ValueError, match="equal critic_hidden widths"):
        sac.SACConfig(critic_hidden=(64, 32), critic_residual=True)
    agent = sac.make(sac.SACConfig(critic_hidden=(16, 16), actor_hidden=(8,), critic_residual=True))
    state = agent.init(jax.random.PRNGKey(0), 3, 1)
    _, metrics = agent.update(state, sac_batch(), jax.random.PRNGKey(1))
    assert np.isfinite(float(metrics["critic_loss"]))
