"""Your own env: passed in as an object (`jaxrl.train(..., env=...)`, `make_train(..., env=...)`)
or registered by name (`jaxrl.envs.register`, `--import MODULE` on the command line); the
wrappers treat it as they treat the built-in tasks. And the package's own namespacing: nothing
named `envs`, `experiments` or `benchmarks` is installed at the top level."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl import cli, envs
from jaxrl.benchmarks.robots import tetrahedron_stl
from jaxrl.run import runs

# A pure-JAX task written as a user would: a point on a line pushed towards `target`.
# Reward -|x - target| per step; leaving [-2, 2] terminates. Episodes of 25 steps: holding
# still from x ~ U(-1, 1) scores about -12.5 (more with target != 0), reaching the target in a
# few steps and staying there about -2.
REACH_SOURCE = """
import jax
import jax.numpy as jnp
from brax.envs.base import State


class Reach:
    def __init__(self, target: float = 0.0, speed: float = 0.25):
        self.target, self.speed = target, speed

    observation_size = 2
    action_size = 1

    def _obs(self, x):
        return jnp.stack([x, x - self.target])

    def reset(self, key):
        x = jax.random.uniform(key, (), minval=-1.0, maxval=1.0)
        zero = jnp.zeros(())
        return State(x, self._obs(x), zero, zero, {}, {})

    def step(self, state, action):
        x = state.pipeline_state + self.speed * jnp.clip(action[0], -1.0, 1.0)
        done = (jnp.abs(x) > 2.0).astype(jnp.float32)
        reward = -jnp.abs(x - self.target)
        return state.replace(pipeline_state=x, obs=self._obs(x), reward=reward, done=done)
"""
namespace: dict = {}
exec(compile(REACH_SOURCE, "reach", "exec"), namespace)
Reach = namespace["Reach"]

TRIVIAL = -10.0  # above what holding still scores (about -12.5), below what reaching scores


@pytest.fixture
def registered():
    envs.register("testlab/Reach", Reach, episode_length=25)
    yield "testlab/Reach"
    envs.unregister("testlab/Reach")


def test_registered_env_is_a_name_with_its_options_checked(registered):
    assert registered in envs.list_envs() and envs.list_envs("testlab") == [registered]
    assert "testlab" in envs.families()
    env = envs.make(registered, target=0.5)
    assert (env.target, env.episode_length) == (0.5, 25)
    with pytest.raises(envs.EnvOptionError, match=r"\['speeed'\].*accepts: speed, target"):
        envs.make(registered, speeed=1.0)
    with pytest.raises(envs.UnknownEnvError, match="Did you mean: testlab/Reach"):
        envs.check_name("testlab/Raech")
    with pytest.raises(envs.RegistrationError, match="built-in family"):
        envs.register("brax/Reach", Reach)
    with pytest.raises(envs.RegistrationError, match="family/task"):
        envs.register("Reach", Reach)
    envs.register("testlab/Broken", lambda: object())
    try:
        with pytest.raises(envs.EnvOptionError, match="lacks reset, step"):
            envs.make("testlab/Broken")
    finally:
        envs.unregister("testlab/Broken")


def test_checking_an_env_object_does_not_run_its_members():
    """Playground's observation_size traces the task's reset at every read: the interface
    check looks the members up without running them (the loops read the size once)."""
    reads = []

    class Lazy(Reach):
        @property
        def observation_size(self):
            reads.append(self)
            return 2

    assert envs.check_env_object(Lazy()) is not None and reads == []
    with pytest.raises(envs.EnvOptionError, match="lacks reset, step, observation_size"):
        envs.check_env_object(object())


def test_wrappers_apply_to_a_registered_env(registered):
    env = envs.make_vec(registered, 4, action_repeat=2)
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    x0 = np.asarray(state.obs[:, 0])
    step = jax.jit(env.step)
    state = step(state, jnp.full((4, 1), 0.2))
    # Action repeat 2: two pushes of 0.25 x 0.2, and their two rewards summed.
    np.testing.assert_allclose(state.obs[:, 0], x0 + 0.1, atol=1e-6)
    np.testing.assert_allclose(state.reward, -np.abs(x0 + 0.05) - np.abs(x0 + 0.1), atol=1e-5)
    for _ in range(24):
        state = step(state, jnp.zeros((4, 1)))
    # The registered time limit (25) truncates, and auto-reset starts new episodes.
    np.testing.assert_array_equal(state.info["truncation"], 1.0)
    np.testing.assert_array_equal(state.info["finished_length"], 25)
    # Leaving [-2, 2] terminates, and is no truncation: pushed at 0.25 a step from x <= 1,
    # every env leaves within 13 steps, long before the time limit.
    env = envs.make_vec(registered, 2)
    state = env.reset(jax.random.PRNGKey(1))
    ended = np.zeros(2)
    for _ in range(13):
        state = env.step(state, jnp.ones((2, 1)))
        ended = np.maximum(ended, state.done)
        assert float(state.info["truncation"].max()) == 0.0
    np.testing.assert_array_equal(ended, 1.0)


class CarriesDone(Reach):
    """Reach written as docs/API.md's example is: its step leaves `done` as it found it."""

    def step(self, state, action):
        x = state.pipeline_state + self.speed * jnp.clip(action[0], -1.0, 1.0)
        return state.replace(pipeline_state=x, obs=self._obs(x), reward=-jnp.abs(x))


def test_an_env_whose_step_keeps_done_runs_whole_episodes_after_a_reset():
    """Each step starts from done = 0, as Brax's and Playground's auto-reset wrappers make it:
    the state an auto-reset returns carries the finished transition's done = 1, which an env
    that never sets done kept, so every episode after the first ended after one step."""
    env = envs.wrap(CarriesDone(), 2, episode_length=5)
    state = env.reset(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    dones = []
    for _ in range(12):
        state = step(state, jnp.zeros((2, 1)))
        dones.append(np.asarray(state.done))
        if dones[-1].any():
            np.testing.assert_array_equal(state.info["finished_length"], 5)
    np.testing.assert_array_equal(np.nonzero(np.stack(dones)[:, 0])[0], [4, 9])


def _config(**kw):
    settings = dict(
        env="testlab/Reach",
        total_steps=3_072,
        num_envs=8,
        eval_every=1_024,
        eval_envs=16,
        learning_starts=256,
        batch_size=64,
        updates_per_step=4,
    )
    return jaxrl.TrainConfig(**{**settings, **kw})


AGENT = jaxrl.SACConfig(actor_hidden=(32, 32), critic_hidden=(32, 32))


def test_train_on_an_env_object_learns_and_needs_it_again(tmp_path):
    # No registration: the object itself, its time limit from the config.
    config = _config(episode_length=25)
    out = tmp_path / "run"
    result = jaxrl.train(config, AGENT, out, progress=None, env=Reach(target=0.5))
    returns = [row["eval_return"] for row in result.history]
    assert max(returns) > TRIVIAL, returns
    saved = json.loads((out / "config.json").read_text())
    assert saved["env_info"]["env_object"].endswith("Reach")
    with pytest.raises(runs.RunError, match="trained on an env object"):
        jaxrl.resume(out, total_steps=4_096, progress=None)
    with pytest.raises(runs.RunError, match="trained on an env object"):
        jaxrl.evaluate_run(out)
    report = jaxrl.evaluate_run(out, episodes=8, env=Reach(target=0.5))
    assert report["mean"] > TRIVIAL
    resumed = jaxrl.resume(out, total_steps=4_096, progress=None, env=Reach(target=0.5))
    assert resumed.history[-1]["env_steps"] == 4_096
    # The same run through make_train with the object: the same program, the same numbers.
    trainer = jaxrl.make_train(config, jaxrl.sac.make(AGENT), env=Reach(target=0.5))
    _, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
    np.testing.assert_allclose(metrics["eval_return"], returns, rtol=1e-5, atol=1e-5)


def test_a_playground_env_object_brings_its_config_s_time_limit_and_action_repeat():
    """`registry.load(task)` as Playground's users build it (`jaxrl.train(..., env=env)`): the
    time limit and action repeat are read from its task config where the run gives none, as
    `envs.make("playground/...")` reads them; the run's own values win."""
    from mujoco_playground import registry

    overrides = {"impl": "jax", "episode_length": 6, "action_repeat": 2}
    env = registry.load("CartpoleBalance", config_overrides=overrides)
    assert not hasattr(env, "episode_length")  # Playground keeps both in its config only
    assert envs.episode_env(env)[1:] == (6, 2)
    assert envs.episode_env(env, episode_length=3, action_repeat=1)[1:] == (3, 1)
    batch = envs.wrap(env, 2)
    state, step = batch.reset(jax.random.PRNGKey(0)), jax.jit(batch.step)
    dones = []
    for _ in range(7):
        state = step(state, jnp.zeros((2, 1)))
        dones.append(bool(state.done[0]))
    assert dones == [False] * 5 + [True, False]  # the config's 6 steps, then a new episode
    # Each step repeated the action twice: 2 x ctrl_dt of simulated time per step.
    np.testing.assert_allclose(state.data.time[0], 2 * env.dt, rtol=1e-5)


def test_env_object_refuses_env_options_and_non_envs(tmp_path):
    with pytest.raises(jaxrl.ConfigError, match="env_options"):
        jaxrl.train(_config(env_options={"target": 1.0}), AGENT, None, env=Reach())
    with pytest.raises(envs.EnvOptionError, match="lacks reset, step"):
        jaxrl.train(_config(), AGENT, None, env=object())
    assert not any(tmp_path.iterdir())


def test_cli_imports_the_module_that_registers_the_env(tmp_path, monkeypatch, capsys):
    module = "mylab_reach_tasks"
    (tmp_path / f"{module}.py").write_text(
        REACH_SOURCE
        + "\nfrom jaxrl import envs\n"
        + "envs.register('mylab/Reach', Reach, episode_length=25)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    try:
        code = cli.main(["list", "mylab", "--import", module])
        assert code == 0 and "mylab/Reach" in capsys.readouterr().out
        argv = ["train", "--import", module, "--env", "mylab/Reach", "--env-option", "target=0.5"]
        argv += ["--steps", "3072", "--num-envs", "8", "--eval-every", "1024", "--eval-envs"]
        argv += ["16", "--learning-starts", "256", "--batch-size", "64", "--updates-per-step"]
        argv += ["4", "--actor-hidden", "32,32", "--critic-hidden", "32,32", "--out", "run"]
        argv += ["--quiet"]
        assert cli.main(argv) == 0
        saved = json.loads((tmp_path / "run" / "config.json").read_text())
        assert saved["train"]["env_imports"] == [module]
        final = json.loads((tmp_path / "run" / "summary.json").read_text())
        assert final["final_eval_return"] > TRIVIAL
        # A later process knows nothing of mylab/Reach: eval imports the saved module again.
        envs.unregister("mylab/Reach")
        sys.modules.pop(module, None)
        assert cli.main(["eval", "run", "--episodes", "4"]) == 0
        assert "mylab/Reach" in envs.list_envs()
    finally:
        envs.unregister("mylab/Reach")
        sys.modules.pop(module, None)
    capsys.readouterr()
    assert cli.main(["train", "--import", "no_such_module_xyz", "--env", "mylab/Reach"]) == 2
    assert "no module named 'no_such_module_xyz'" in capsys.readouterr().err


def _python(code: str, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_installed_package_leaves_envs_experiments_benchmarks_to_the_user(tmp_path):
    # A project with its own `envs` package, run from its folder (not the repository's).
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "__init__.py").write_text("MINE = True\n")
    done = _python(
        """
        import importlib.util, sys
        import envs
        import jaxrl
        from jaxrl import envs as jaxrl_envs
        assert envs.MINE, envs
        assert jaxrl_envs.make is jaxrl.make_env
        for name in ("experiments", "benchmarks"):
            assert importlib.util.find_spec(name) is None, name
        import jaxrl.experiments.presets, jaxrl.benchmarks.suites
        print("ok")
        """,
        tmp_path,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_library_does_not_import_experiments_or_benchmarks(tmp_path):
    done = _python(
        """
        import sys
        import jaxrl, jaxrl.run.driver, jaxrl.run.runs, jaxrl.loops, jaxrl.render
        import jaxrl.plot, jaxrl.cli
        loaded = [m for m in sys.modules if m.startswith(("jaxrl.experiments", "jaxrl.benchmarks"))]
        assert not loaded, loaded
        print("ok")
        """,
        tmp_path,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# -- Playground's robot tasks and the MuJoCo Menagerie assets ---------------------------------

GO1 = "playground/Go1JoystickFlatTerrain"
GO1_MESHES = ("calf", "hip", "thigh", "thigh_mirror", "trunk")  # what its MJX model loads


@pytest.fixture
def no_menagerie(tmp_path, monkeypatch):
    """Playground's own Menagerie location, empty, and its download failing as it does
    without network access (so no test ever downloads it)."""
    from mujoco_playground._src import mjx_env

    monkeypatch.setattr(mjx_env, "MENAGERIE_PATH", mjx_env.MENAGERIE_PATH.parent / "absent-xyz")
    monkeypatch.delenv(envs.menagerie.MENAGERIE_ENV, raising=False)

    def offline():
        if not mjx_env.MENAGERIE_PATH.exists():
            raise subprocess.CalledProcessError(128, ["git", "clone"])

    monkeypatch.setattr(mjx_env, "ensure_menagerie_exists", offline)
    return tmp_path


def test_robot_tasks_are_listed_and_say_how_to_get_their_assets(no_menagerie):
    assert GO1 in envs.list_envs("playground")
    with pytest.raises(envs.EnvOptionError) as error:
        envs.make(GO1)
    message = str(error.value)
    for words in ("Menagerie", "network", "menagerie_path=", envs.menagerie.MENAGERIE_ENV):
        assert words in message, message
    with pytest.raises(envs.EnvOptionError, match="is not a folder"):
        envs.make(GO1, menagerie_path=str(no_menagerie / "nowhere"))
    # A checkout without the robot's folder: the file MuJoCo could not open is named.
    (no_menagerie / "empty").mkdir()
    with pytest.raises(envs.EnvOptionError, match="lacks an asset"):
        envs.make(GO1, menagerie_path=str(no_menagerie / "empty"))
    # DM Control tasks need no assets and take no such option.
    with pytest.raises(envs.EnvOptionError, match="menagerie_path"):
        envs.make("playground/CartpoleBalance", menagerie_path=str(no_menagerie))


def _stand_in_menagerie(root):
    """A stand-in Menagerie checkout: the Go1 meshes its MJX model loads, as tiny tetrahedra."""
    folder = root / "mujoco_menagerie"
    (folder / "unitree_go1" / "assets").mkdir(parents=True)
    for name in GO1_MESHES:
        (folder / "unitree_go1" / "assets" / f"{name}.stl").write_bytes(tetrahedron_stl())
    return folder


@pytest.mark.parametrize("route", ["option", "environment"])
def test_menagerie_path_is_passed_on_to_playground(no_menagerie, monkeypatch, route):
    folder = _stand_in_menagerie(no_menagerie)
    options = {}
    if route == "option":
        options["menagerie_path"] = str(folder)
    else:
        monkeypatch.setenv(envs.menagerie.MENAGERIE_ENV, str(folder))
    env = envs.make(GO1, **options)
    # Dict observations: the policy's state and the critic's privileged state.
    sizes = env.observation_size
    assert env.action_size == 12 and {"state", "privileged_state"} <= set(sizes)
    assert sizes["privileged_state"][0] > sizes["state"][0] > 12
    assert env.unwrapped.mj_model.nmesh == len(GO1_MESHES)
    if route == "option":
        # Playground's own randomizer for the task, as --randomize playground uses it.
        from jaxrl.envs import randomization

        randomize = randomization.named("playground", 0.1, GO1, env)
        models, in_axes = randomize(randomization.model_of(env), jax.random.split(KEY, 3))
        batched = randomization._batched_fields(in_axes)
        assert "body_mass" in batched and models.body_mass.shape[0] == 3


KEY = jax.random.PRNGKey(0)


class Echo:
    """Observes the action it was given: what the wrappers pass on, read back."""

    observation_size = action_size = 2
    episode_length = 10

    def __init__(self, bounds=None):
        self.action_bounds = bounds

    def reset(self, key):
        from brax.envs.base import State

        zero = jnp.zeros(())
        return State(jnp.zeros(()), jnp.zeros(2), zero, zero, {}, {})

    def step(self, state, action):
        return state.replace(obs=action)


@pytest.mark.parametrize(
    "bounds,actions,expected",
    [
        (([0.0, -3.0], [1.0, 3.0]), [[-1.0, 1.0], [0.0, 0.0]], [[0.0, 3.0], [0.5, 0.0]]),
        ((-1.0, 1.0), [[-1.0, 0.5], [0.2, -0.3]], [[-1.0, 0.5], [0.2, -0.3]]),
        (None, [[-1.0, 0.5], [0.2, -0.3]], [[-1.0, 0.5], [0.2, -0.3]]),
    ],
)
def test_actions_are_rescaled_to_the_env_bounds(bounds, actions, expected):
    env = envs.wrap(Echo(bounds), 2)
    state = env.step(env.reset(jax.random.PRNGKey(0)), jnp.asarray(actions))
    np.testing.assert_allclose(state.info["final_obs"], expected, atol=1e-6)
    # An action beyond [-1, 1] (exploration noise) is clipped before the rescale.
    if bounds is not None and bounds[0] != -1.0:
        state = env.step(state, jnp.asarray([[-5.0, 5.0], [5.0, -5.0]]))
        np.testing.assert_allclose(state.info["final_obs"], [[0.0, 3.0], [1.0, -3.0]])


def test_joint_limit_actions_reach_each_joint_s_limits(no_menagerie):
    from jaxrl.envs import robots

    path = str(_stand_in_menagerie(no_menagerie))
    env = envs.make(GO1, menagerie_path=path)
    low, high = robots.joint_limit_bounds(env, GO1)
    # By hand from the MuJoCo model: Go1's targets are home pose + 0.5 x action, so the
    # actions reaching actuator i's joint limits are (limit - home angle) / 0.5.
    model = env.unwrapped.mj_model
    joints = model.actuator_trnid[:, 0]
    home = model.key("home").qpos[model.jnt_qposadr[joints]]
    lower, upper = model.jnt_range[joints].T
    lower = np.maximum(lower, model.actuator_ctrlrange[:, 0])  # Go1's actuators clip too
    upper = np.minimum(upper, model.actuator_ctrlrange[:, 1])
    assert model.actuator_ctrllimited.all() and model.jnt_limited[joints].all()
    np.testing.assert_allclose(low, (lower - home) / 0.5, rtol=1e-6)
    np.testing.assert_allclose(high, (upper - home) / 0.5, rtol=1e-6)
    assert (low < 0).all() and (high > 0).all() and (np.maximum(-low, high) > 1.5).any()
    # The wrapper: 0 stays the default pose, -1 and +1 reach the limits, halfway is halfway.
    wrapped = envs.wrappers.JointLimitActions(Echo(), low[:2], high[:2])
    state = wrapped.reset(KEY)
    for action, expected in (
        ([-1.0, 1.0], [low[0], high[1]]),
        ([0.0, -0.5], [0.0, 0.5 * low[1]]),
        ([3.0, -3.0], [high[0], low[1]]),  # beyond [-1, 1]: clipped first
    ):
        np.testing.assert_allclose(wrapped.step(state, jnp.asarray(action)).obs, expected)
    # Tasks that do not set targets from a default pose are refused before compiling.
    with pytest.raises(envs.EnvOptionError, match="joint-limit-actions.*playground/Cartpole"):
        robots.joint_limit_bounds(envs.make("playground/CartpoleBalance"), "playground/Cartpole")
    config = jaxrl.TrainConfig("classic/pendulum", joint_limit_actions=True)
    with pytest.raises(envs.EnvOptionError, match="classic/pendulum does not set motor targets"):
        jaxrl.make_train(config, jaxrl.sac.make())
    # envs.make_vec, the API's batched env, takes the option as jaxrl train does.
    with pytest.raises(envs.EnvOptionError, match="does not set motor targets"):
        envs.make_vec("classic/pendulum", 2, joint_limit_actions=True)
    batched = envs.make_vec(GO1, 2, joint_limit_actions=True, menagerie_path=path)
    layers = [batched]
    while hasattr(layers[-1], "env"):
        layers.append(layers[-1].env)
    (bounded,) = [e for e in layers if isinstance(e, envs.wrappers.JointLimitActions)]
    np.testing.assert_allclose(bounded.low, low)
    np.testing.assert_allclose(bounded.high, high)


def test_robot_check_builds_stand_ins_and_reports_each_task(no_menagerie, monkeypatch, capsys):
    from jaxrl.benchmarks import robots as check

    monkeypatch.setenv(envs.menagerie.MENAGERIE_ENV, "unset")  # restored after the test
    out = no_menagerie / "robots.jsonl"
    tasks = ["Go1JoystickFlatTerrain", "LeapCubeRotateZAxis", "PandaPickCube"]
    assert check.main(["--stand-in", str(no_menagerie / "m"), *tasks, "--out", str(out)]) == 0
    go1, leap, panda = (json.loads(line) for line in out.read_text().splitlines())
    assert go1["loads"] and go1["stand_ins"] == len(GO1_MESHES) and go1["action_size"] == 12
    assert set(go1["entries"]) == {"state", "privileged_state"} and go1["joint_limits"]
    assert leap["loads"] and leap["joint_limits"] is None  # Leap's targets are not pose-based
    # Panda's robot description is Menagerie's own XML: no stand-in for it.
    assert not panda["loads"] and "mjx_panda.xml" in panda["error"]
    assert "2 of 3 tasks load" in capsys.readouterr().err
