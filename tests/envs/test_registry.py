import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs


@pytest.mark.parametrize(
    "name,obs_size,action_size",
    [
        ("classic/pendulum", 3, 1),
        ("brax/inverted_pendulum", 4, 1),
        ("playground/CartpoleBalance", 5, 1),
    ],
)
def test_every_family_makes_resets_and_steps_vectorised(name, obs_size, action_size):
    env = envs.make_vec(name, 3, episode_length=4)
    assert (env.observation_size, env.action_size) == (obs_size, action_size)
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    chex.assert_shape(state.obs, (3, obs_size))
    for _ in range(4):
        state = step(state, jnp.zeros((3, action_size)))
    chex.assert_shape([state.reward, state.done, state.info["truncation"]], (3,))
    chex.assert_type(state.obs, jnp.float32)
    # After 4 steps every episode hit the time limit: done, truncated, not terminated.
    np.testing.assert_array_equal(state.done, 1.0)
    np.testing.assert_array_equal(state.info["truncation"], 1.0)
    np.testing.assert_array_equal(state.info["finished_length"], 4)
    np.testing.assert_array_equal(state.info["episode_length"], 0)  # auto-reset started anew
    assert np.isfinite(np.asarray(state.info["finished_return"])).all()


def test_truncation_keeps_the_final_observation_and_resets_fresh():
    env = envs.make_vec("classic/pendulum", 8, episode_length=2)
    state = env.reset(jax.random.PRNGKey(1))
    state = env.step(state, jnp.ones((8, 1)))
    before = state
    state = env.step(state, jnp.ones((8, 1)))
    # final_obs is where the 2nd step went; obs is already the next episode's first observation.
    single = envs.make_vec("classic/pendulum", 8, episode_length=10, auto_reset=False)
    reached = single.step(
        before.replace(
            info={
                k: v
                for k, v in before.info.items()
                if k in ("truncation", "episode_return", "episode_length")
            }
        ),
        jnp.ones((8, 1)),
    )
    chex.assert_trees_all_close(state.info["final_obs"], reached.obs, atol=1e-6)
    assert not np.allclose(state.obs, state.info["final_obs"])
    # Fresh random resets: the 8 new episodes do not all start from one cached state.
    assert np.unique(np.round(np.asarray(state.obs[:, 2]), 5)).size == 8
    chex.assert_trees_all_close(
        state.info["finished_return"], before.reward + reached.reward, atol=1e-5
    )


def test_termination_is_not_truncation():
    env = envs.make_vec("brax/inverted_pendulum", 4)
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))  # eager, MJX's reset takes seconds
    step = jax.jit(env.step)
    for _ in range(30):  # full force one way topples the pole long before the time limit
        state = step(state, jnp.ones((4, 1)))
        if state.done.all():
            break
    np.testing.assert_array_equal(state.done, 1.0)
    np.testing.assert_array_equal(state.info["truncation"], 0.0)
    assert (np.abs(np.asarray(state.info["final_obs"][:, 1])) > 0.2).all()


def test_action_repeat_sums_rewards_of_repeated_steps():
    key = jax.random.PRNGKey(2)
    once = envs.make_vec("classic/pendulum", 2, auto_reset=False)
    twice = envs.make_vec("classic/pendulum", 2, action_repeat=2, auto_reset=False)
    action = jnp.full((2, 1), 0.5)
    s1 = once.step(once.step(once.reset(key), action), action)
    s2 = twice.step(twice.reset(key), action)
    first = once.step(once.reset(key), action)
    chex.assert_trees_all_close(s2.obs, s1.obs, atol=1e-6)
    chex.assert_trees_all_close(s2.reward, first.reward + s1.reward, atol=1e-5)


def test_unknown_names_fail_with_close_matches():
    with pytest.raises(envs.UnknownEnvError, match="brax/inverted_pendulum"):
        envs.make("brax/invertedpendulum")
    with pytest.raises(envs.UnknownEnvError, match="playground/CheetahRun"):
        envs.make("playground/cheetahrun")
    with pytest.raises(envs.UnknownEnvError, match="family one of brax, playground, classic"):
        envs.make("gym/Pendulum-v1")


def test_unknown_options_and_backends_are_named():
    with pytest.raises(envs.EnvOptionError, match=r"\['torque'\].*max_torque"):
        envs.make("classic/pendulum", torque=3.0)
    with pytest.raises(envs.EnvOptionError, match="backend 'physx'"):
        envs.make("brax/inverted_pendulum", backend="physx")
    with pytest.raises(envs.EnvOptionError, match="episode_length"):
        envs.make("playground/CartpoleBalance", episode_lenght=10)
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        envs.make_vec("classic/pendulum", 0)


def test_brax_backend_option_is_applied():
    assert envs.make("brax/inverted_pendulum", backend="positional").backend == "positional"


def test_brax_observation_size_is_read_without_running_a_reset():
    """Brax's own `observation_size` runs a reset eagerly, compiling one little program per
    operation (about 4 s on inverted_pendulum before any training program); ours traces it."""
    from brax import envs as brax_envs

    env = envs.make("brax/inverted_pendulum")
    brax_reset, keys = env.unwrapped.reset, []

    def reset(key):
        keys.append(key)
        return brax_reset(key)

    env.unwrapped.reset = reset
    size = env.observation_size
    assert keys and all(isinstance(key, jax.core.Tracer) for key in keys)
    assert size == brax_envs.get_environment("inverted_pendulum").observation_size == 4
    assert env.unwrapped.backend == env.backend == "generalized" and env.sys is env.unwrapped.sys


def test_list_covers_every_family():
    names = envs.list_envs()
    for name in (
        "brax/ant",
        "brax/humanoid",
        "playground/CheetahRun",
        "playground/WalkerWalk",
        "classic/pendulum",
    ):
        assert name in names
    assert all(n.startswith("classic/") for n in envs.list_envs("classic"))


def test_autoreset_first_restarts_each_env_from_its_own_first_state():
    """Brax's and Playground's training wrappers: a finished env restarts from the state it
    started the run from (each env its own), not from a fresh random one."""
    env = envs.make_vec("classic/pendulum", 8, episode_length=2, reset_to_first=True)
    first = env.reset(jax.random.PRNGKey(1))
    state = first
    for _ in range(2):
        state = env.step(state, jnp.ones((8, 1)))
    np.testing.assert_array_equal(state.done, 1.0)
    chex.assert_trees_all_close(state.obs, first.obs, atol=0)
    assert np.unique(np.round(np.asarray(state.obs[:, 2]), 5)).size == 8  # each env its own
    assert not np.allclose(state.info["final_obs"], first.obs)
    for _ in range(2):  # and again at the next ending
        state = env.step(state, -jnp.ones((8, 1)))
    chex.assert_trees_all_close(state.obs, first.obs, atol=0)
