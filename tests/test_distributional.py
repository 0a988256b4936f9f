import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import heads

ATOMS = jnp.array([-1.0, 0.0, 1.0])


def test_c51_projection_worked_example_conserves_mass_and_clips():
    # Mass 0.5 at z=-1 -> 1 - 0.5 = 0.5 (between atoms 0 and 1: 0.25 each); mass 0.5 at z=0 ->
    # 1.0 (atom 1 exactly).
    probs = jnp.array([[0.5, 0.5, 0.0]])
    projected = heads.categorical_projection(probs, jnp.array([1.0]), jnp.array([0.5]), ATOMS)
    chex.assert_trees_all_close(projected, jnp.array([[0.0, 0.25, 0.75]]))


def test_projection_clips_at_both_ends_and_terminal_collapses_to_reward():
    probs = jnp.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
    reward = jnp.array([5.0, -5.0, 0.25])
    bootstrap = jnp.array([0.9, 0.9, 0.0])  # the third transition terminated
    projected = heads.categorical_projection(probs, reward, bootstrap, ATOMS)
    chex.assert_trees_all_close(projected[0], jnp.array([0.0, 0.0, 1.0]))  # all above v_max
    chex.assert_trees_all_close(projected[1], jnp.array([1.0, 0.0, 0.0]))  # all below v_min
    chex.assert_trees_all_close(projected[2], jnp.array([0.0, 0.75, 0.25]))  # point mass at 0.25


def test_projection_conserves_mass_on_random_inputs():
    key1, key2, key3 = jax.random.split(jax.random.PRNGKey(0), 3)
    atoms = heads.support(51, -10.0, 10.0)
    probs = jax.nn.softmax(jax.random.normal(key1, (64, 51)))
    reward = 5 * jax.random.normal(key2, (64,))
    bootstrap = jax.random.uniform(key3, (64,))
    projected = heads.categorical_projection(probs, reward, bootstrap, atoms)
    np.testing.assert_allclose(projected.sum(-1), 1.0, atol=1e-5)
    assert (projected >= 0).all()
    # Inside the support the projection keeps the mean: E = r + bootstrap * E[Z].
    inside = (jnp.abs(reward) + bootstrap * 10.0) <= 10.0
    expected = reward + bootstrap * (probs * atoms).sum(-1)
    np.testing.assert_allclose(((projected * atoms).sum(-1))[inside], expected[inside], atol=1e-4)


def test_c51_target_takes_the_critic_with_the_lower_expected_value():
    # Critic 0 puts its mass on +1, critic 1 on -1 (for sample 0) and the reverse for sample 1.
    high, low = jnp.array([-9.0, -9.0, 9.0]), jnp.array([9.0, -9.0, -9.0])
    next_logits = jnp.stack([jnp.stack([high, low]), jnp.stack([low, high])])  # [E=2, B=2, K]
    target = heads.c51_target(next_logits, jnp.zeros(2), jnp.ones(2), jnp.ones(2), ATOMS)
    # terminated: the target is the reward's point mass; bootstrap off.
    chex.assert_trees_all_close(target, jnp.array([[0.0, 1.0, 0.0]] * 2), atol=1e-6)
    target = heads.c51_target(next_logits, jnp.zeros(2), jnp.zeros(2), jnp.ones(2), ATOMS)
    chex.assert_trees_all_close(target, jnp.array([[1.0, 0.0, 0.0]] * 2), atol=1e-3)


def test_c51_critic_loss_is_the_summed_cross_entropy():
    logits = jnp.log(jnp.array([[[0.5, 0.25, 0.25]], [[0.25, 0.5, 0.25]]]))  # [E=2, B=1, K]
    target = jnp.array([[0.0, 1.0, 0.0]])
    loss = heads.c51_critic_loss(logits, target)
    np.testing.assert_allclose(float(loss), -np.log(0.25) - np.log(0.5), rtol=1e-6)
