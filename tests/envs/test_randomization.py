"""Domain randomization: each training env steps with physics of its own (MJX model fields
scaled per env), drawn from the run's seed; evaluation stays nominal unless asked."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl import cli, envs
from jaxrl.envs import randomization as dr
from jaxrl.envs.wrappers import VmapWrapper
from jaxrl.run import runs
from tests import tiny

CARTPOLE = "playground/CartpoleBalance"


def _same_start(env, key):
    """Every env's state set to env 0's (no auto-reset wrapper: the batched env itself)."""
    state = jax.jit(env.reset)(key)  # eager, MJX's reset takes seconds
    return jax.tree.map(lambda x: jnp.broadcast_to(x[:1], x.shape), state)


def test_each_env_steps_with_its_own_masses():
    key = jax.random.PRNGKey(3)
    fn = dr.scale_fields(("body_mass",), 0.2)
    env = envs.make_vec(CARTPOLE, 4, auto_reset=False, randomization=(fn, key))
    nominal = np.asarray(dr.model_of(env).body_mass)
    masses = np.asarray(env.models.body_mass)  # no auto-reset: the vmap wrapper is outermost
    assert isinstance(env, dr.RandomizedVmapWrapper) and masses.shape == (4, *nominal.shape)
    ratio = masses[:, nominal > 0] / nominal[nominal > 0]
    assert ((ratio >= 0.8) & (ratio <= 1.2)).all() and np.unique(ratio.round(6)).size == ratio.size
    # Same state, same push: the randomized envs move apart, nominal copies do not.
    action = jnp.ones((4, 1))
    for batched, differ in ((env, True), (envs.make_vec(CARTPOLE, 4, auto_reset=False), False)):
        state = _same_start(batched, jax.random.PRNGKey(0))
        step = jax.jit(batched.step)
        for _ in range(5):
            state = step(state, action)
        spread = float(np.ptp(np.asarray(state.obs), axis=0).max())
        assert (spread > 1e-4) == differ, spread
    # The draws come from the key alone.
    again = envs.make_vec(CARTPOLE, 4, auto_reset=False, randomization=(fn, key))
    np.testing.assert_array_equal(again.models.body_mass, masses)


def _config(**kw):
    """tiny.off_policy on the cart-pole: 2 chunks of 32 env steps."""
    sizes = dict(total_steps=64, eval_every=32, learning_starts=32)
    return tiny.off_policy(**{"env": CARTPOLE, **sizes, **kw})


def test_run_config_randomizes_training_envs_only_and_from_the_seed():
    agent = jaxrl.sac.make(tiny.agent("sac", hidden=(8,)))
    trainer = jaxrl.make_train(_config(randomize="mass,friction", randomize_scale=0.3), agent)
    vmapped = trainer.env.env  # AutoResetWrapper over the vmap wrapper
    assert isinstance(vmapped, dr.RandomizedVmapWrapper)
    assert type(trainer.eval_env) is VmapWrapper  # evaluation (no auto-reset): nominal
    model = dr.model_of(trainer.env)
    for field in ("body_mass", "geom_friction"):
        drawn = np.asarray(getattr(vmapped.models, field))
        assert drawn.shape == (4, *getattr(model, field).shape)
        assert not np.allclose(drawn[0], drawn[1])
    other_seed = jaxrl.make_train(_config(randomize="mass", seed=1), agent).env.env.models
    same_seed = jaxrl.make_train(_config(randomize="mass"), agent).env.env.models
    assert not np.allclose(other_seed.body_mass, same_seed.body_mass)  # seed 1's own draws
    repeat = jaxrl.make_train(_config(randomize="mass"), agent).env.env.models
    np.testing.assert_array_equal(same_seed.body_mass, repeat.body_mass)  # the seed alone
    evaluated = jaxrl.make_train(_config(randomize="mass", randomize_eval=True), agent)
    assert isinstance(evaluated.eval_env, dr.RandomizedVmapWrapper)
    assert not np.allclose(evaluated.eval_env.models.body_mass[0], same_seed.body_mass[0])


@pytest.mark.parametrize(
    "env,randomize,message",
    [
        (CARTPOLE, "playground", "no randomizer of Playground's own"),
        ("brax/inverted_pendulum", "mass", "backend=mjx"),
        ("classic/pendulum", "mass", "no MJX model"),
    ],
)
def test_randomization_that_cannot_apply_is_refused_by_name(env, randomize, message):
    agent = jaxrl.sac.make(jaxrl.SACConfig())
    config = jaxrl.TrainConfig(env, randomize=randomize)
    with pytest.raises(dr.RandomizationError, match=message):
        jaxrl.make_train(config, agent)


def test_bad_randomize_values_fail_before_anything_runs(tmp_path, capsys):
    with pytest.raises(jaxrl.ConfigError, match="randomize must be one of .*, got 'masss'"):
        jaxrl.TrainConfig(randomize="masss")
    with pytest.raises(jaxrl.ConfigError, match="randomize_scale"):
        jaxrl.TrainConfig(randomize="mass", randomize_scale=1.5)
    out = tmp_path / "run"
    argv = ["train", "--env", "brax/inverted_pendulum", "--randomize", "mass", "--out", str(out)]
    assert cli.main(argv) == 2
    assert "backend=mjx" in capsys.readouterr().err and not out.exists()


def test_own_randomization_function_is_used_and_needed_on_resume(tmp_path):
    def heavy_carts(model, rng):
        masses = jax.vmap(lambda k: model.body_mass * (2.0 + jax.random.uniform(k)))(rng)
        in_axes = jax.tree.map(lambda _: None, model).tree_replace({"body_mass": 0})
        return model.tree_replace({"body_mass": masses}), in_axes

    agent = tiny.agent("sac", hidden=(8,))
    config = _config()
    trainer = jaxrl.make_train(config, jaxrl.sac.make(agent), randomization_fn=heavy_carts)
    ratio = trainer.env.env.models.body_mass[:, 1:] / dr.model_of(trainer.env).body_mass[1:]
    assert (np.asarray(ratio) >= 2.0).all()
    out = tmp_path / "run"
    jaxrl.train(config, agent, out, progress=None, randomization_fn=heavy_carts)
    saved = json.loads((out / "config.json").read_text())
    assert saved["env_info"]["randomization_fn"].endswith("heavy_carts")
    with pytest.raises(runs.RunError, match="randomization function"):
        jaxrl.resume(out, total_steps=128, progress=None)
    resumed = jaxrl.resume(out, total_steps=128, progress=None, randomization_fn=heavy_carts)
    assert resumed.history[-1]["env_steps"] == 128


def test_every_randomizer_name_the_config_accepts_is_implemented():
    from jaxrl.config import RANDOMIZERS

    assert set(RANDOMIZERS) == {"playground", *dr.BUILT_IN}
