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


def test_an_env_object_s_observation_size_is_traced_once():
    """`envs.traced_size`: an env handed in whole (the Brax door's `environment`) whose size is a
    property (Brax's runs an eager reset, 6 s the first time on inverted_pendulum; Playground's
    traces one per read) is read through one trace of its reset; one that keeps a number, or is
    viewed already, is left as it is."""
    from brax import envs as brax_envs

    from jaxrl.brax import arguments

    env = brax_envs.get_environment("inverted_pendulum")
    brax_reset, keys = env.reset, []

    def reset(key):
        keys.append(key)
        return brax_reset(key)

    env.reset = reset
    viewed = arguments.checked_env(env)  # the door's
    sizes = [viewed.observation_size for _ in range(3)]
    assert sizes == [4, 4, 4] and len(keys) == 1 and isinstance(keys[0], jax.core.Tracer)
    assert viewed.sys is env.sys and viewed.action_size == env.action_size == 1
    assert envs.traced_size(viewed) is viewed
    plain = type("Plain", (_Counted,), {"observation_size": 3})()  # a number: nothing to trace
    assert envs.traced_size(plain) is plain
    pair = envs.traced_size(envs.WithEvalEnv(env, _Counted()))
    assert isinstance(pair.env, envs.TracedSize) and isinstance(pair.eval_env, envs.TracedSize)


class _Counted:
    """A Brax-like env whose size reads are counted (Playground's trace a reset each)."""

    reads = 0
    action_size = 1

    def reset(self, key):
        raise AssertionError("not run")

    def step(self, state, action):
        raise AssertionError("not run")

    @property
    def observation_size(self):
        _Counted.reads += 1
        return 3


def test_an_env_pair_s_sizes_are_compared_once_and_a_misfit_named():
    """The door, the driver and the loops each split a `WithEvalEnv` before compiling; its
    sizes are read for the first alone."""
    pair = envs.WithEvalEnv(_Counted(), _Counted())
    _Counted.reads = 0
    for _ in range(3):
        train, evaluate = envs.split_eval_env(pair)
    assert (train, evaluate) == (pair.env, pair.eval_env) and _Counted.reads == 2
    assert pair == envs.WithEvalEnv(pair.env, pair.eval_env)  # the mark is not compared

    class Wide(_Counted):
        observation_size = 4

    with pytest.raises(envs.EnvOptionError, match="eval_env .Wide. has observation_size 4"):
        envs.split_eval_env(envs.WithEvalEnv(_Counted(), Wide()))


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


def test_autoreset_first_steps_as_playground_s_own_training_wrapper():
    """Against MuJoCo Playground's `wrap_for_brax_training` (what Brax's trainers step in the
    parity runs: its EpisodeWrapper, vmap and BraxAutoResetWrapper, which restarts a finished
    env from its cached first data and observation). From the same first states, the same
    actions give the same observations, rewards, dones and truncation flags at every step of
    three episodes per env, episode ends included."""
    from mujoco_playground import registry, wrapper

    num, length, steps = 4, 20, 65
    peer = wrapper.wrap_for_brax_training(
        registry.load("ReacherEasy", config_overrides={"impl": "jax"}),
        episode_length=length,
        action_repeat=1,
    )
    ours = envs.make_vec("playground/ReacherEasy", num, episode_length=length, reset_to_first=True)
    key = jax.random.PRNGKey(3)
    mine = jax.jit(ours.reset)(key)
    # jaxrl's reset derives each env's key from one key (its first split, then one per env);
    # Playground's takes the per-env keys. Its state is built from the same per-env resets, with
    # the first data and observation cached as its own reset caches them.
    theirs = jax.jit(peer.env.reset)(jax.random.split(jax.random.split(key)[0], num))
    cache = "AutoResetWrapper"
    theirs.info.update(
        {
            f"{cache}_first_data": theirs.data,
            f"{cache}_first_obs": theirs.obs,
            f"{cache}_rng": jax.random.split(key, num),
            f"{cache}_done_count": jnp.zeros(num, jnp.int32),
        }
    )
    np.testing.assert_array_equal(theirs.obs, mine.obs)
    actions = jax.random.uniform(jax.random.PRNGKey(9), (steps, num, 2), minval=-1, maxval=1)

    def run(step, state):
        def body(state, action):
            state = step(state, action)
            return state, (state.obs, state.reward, state.done, state.info["truncation"])

        return jax.lax.scan(body, state, actions)[1]

    got = jax.jit(lambda s: run(ours.step, s))(mine)
    want = jax.jit(lambda s: run(peer.step, s))(theirs)
    assert float(want[2].sum()) == 3 * num  # three episode ends per env, all truncations
    np.testing.assert_array_equal(want[2], want[3])
    for name, a, b in zip(
        ("observations", "rewards", "dones", "truncations"), got, want, strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(got[0][length - 1], mine.obs)  # back at the first states


def test_a_grid_restarts_envs_in_a_cond_and_each_member_steps_as_alone():
    """Under the grid's named vmap the auto-reset's condition is taken over all members
    (`any_member`), so the reset stays in a cond instead of a select that runs it on every step
    (CheetahRun's reset is 200 physics steps); a member none of whose envs finished keeps its
    states and its reset key, as when it steps alone."""
    from jaxrl.envs.wrappers import GRID_AXIS

    env = envs.make_vec("classic/pendulum", 4, episode_length=3)
    first = env.reset(jax.random.PRNGKey(0))
    ahead = env.step(env.reset(jax.random.PRNGKey(1)), jnp.ones((4, 1)))
    action = jnp.ones((4, 1))
    members = [env.step(env.step(first, action), action), ahead]
    # Member 0 finishes on the next step, member 1 one step later.
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *members)
    actions = jnp.ones((2, 4, 1))
    step = jax.vmap(env.step, axis_name=GRID_AXIS)
    assert "cond[" in str(jax.make_jaxpr(step)(stacked, actions))
    assert "cond[" not in str(jax.make_jaxpr(jax.vmap(env.step))(stacked, actions))
    stepped = jax.jit(step)(stacked, actions)
    assert float(stepped.done[0].min()) == 1.0 and float(stepped.done[1].max()) == 0.0
    for i, member in enumerate(members):
        alone = jax.jit(env.step)(member, action)
        mine = jax.tree.map(lambda x, i=i: x[i], stepped)
        chex.assert_trees_all_close(mine, alone, atol=1e-6)
        assert (mine.info["autoreset_key"] == alone.info["autoreset_key"]).all()


def test_the_grid_program_binds_the_axis_the_envs_reduce_over():
    from jaxrl import agents, make_train
    from jaxrl.run import chunks
    from tests import tiny

    config = tiny.on_policy(episode_length=8)
    trainer = make_train(config, agents.get("ppo").make(tiny.PPO))
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    state = jax.eval_shape(jax.vmap(trainer.init), keys)
    assert "psum" in str(jax.make_jaxpr(chunks.chunk_program(trainer, object()))(state))


def test_metric_sums_give_each_finished_episode_its_metrics_summed():
    """`envs.wrap(..., metric_sums=True)` (Brax's `log_training_metrics`): each finished
    episode's env metrics summed over its agent steps, as Brax's EpisodeWrapper sums them,
    against the base env stepped by hand; the sums restart with each episode."""
    from tests import brax_peer

    base, n, limit = brax_peer.MeteredDrift(), 4, 3
    env = envs.wrap(base, n, episode_length=limit, metric_sums=True)
    state, step = env.reset(jax.random.PRNGKey(0)), jax.jit(env.step)
    actions = jax.random.uniform(jax.random.PRNGKey(1), (3 * limit, n, 2), minval=-1.0)
    x = np.asarray(state.obs)  # Drift's state is its observation
    running, ended = np.zeros((n, 2)), 0
    for a in np.asarray(actions):
        state = step(state, jnp.asarray(a))
        done = np.asarray(state.done) > 0
        x = x + a @ np.array([[0.3, -0.2, 0.1], [0.1, 0.2, -0.3]])  # Drift's step, by hand
        running += np.stack([x[:, 0], np.abs(a[:, 0])], axis=1)
        got = state.info["finished_metrics"]
        for i in np.flatnonzero(done):
            np.testing.assert_allclose(got["x0"][i], running[i, 0], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got["push_per_step"][i], running[i, 1], rtol=1e-5)
        ended += done.sum()
        running[done] = 0.0
        x = np.where(done[:, None], np.asarray(state.obs), x)  # the next episode's start
    assert ended >= n  # every env ended an episode (at the time limit, or out of bounds)
    plain = envs.wrap(base, n, episode_length=limit)
    assert "finished_metrics" not in plain.reset(jax.random.PRNGKey(0)).info  # off by default
