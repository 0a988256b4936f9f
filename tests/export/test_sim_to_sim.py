"""docs/examples/reacher_sim_to_sim.py: playground/ReacherEasy rebuilt in plain MuJoCo gives
Playground's own observations and rewards step by step (open loop and with a policy in the
loop), and the script plays an exported policy where JAX cannot be imported."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, normalization
from jaxrl.config import TrainConfig
from jaxrl.loops.base import init_agent, make_policy
from jaxrl.observations import ObservationView
from jaxrl.run import runs

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples" / "reacher_sim_to_sim.py"
OBS, A = 6, 2


def _script():
    spec = importlib.util.spec_from_file_location("reacher_sim_to_sim", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def playground():
    """Playground's ReacherEasy (its JAX implementation) with jitted reset and step."""
    from mujoco_playground import registry

    env = registry.load("ReacherEasy", config_overrides={"impl": "jax"})
    return env, jax.jit(env.reset), jax.jit(env.step)


def _same_start(script, playground, key: int):
    """Playground's reset, and the plain-MuJoCo env set to the same arm pose and target."""
    env, reset, _ = playground
    state = reset(jax.random.PRNGKey(key))
    sim = script.Reacher(script.make_model())
    obs = sim.set_state(np.asarray(state.data.qpos), np.asarray(state.data.mocap_pos[0, :2]))
    np.testing.assert_allclose(obs, np.asarray(state.obs), atol=1e-6)
    return state, sim


def test_plain_mujoco_gives_playground_s_observations_and_rewards(playground):
    """Open loop, 150 control steps of actions that hold the finger on the target, then swing
    it away: the same observations to 1e-3 and the same rewards, both 1s and 0s."""
    script = _script()
    _, _, step = playground
    state, sim = _same_start(script, playground, 3)
    # The target moved onto the fingertip, in both, so the reward starts at 1.
    tip = sim.data.geom_xpos[sim.finger_geom, :2].copy()
    sim.data.mocap_pos[sim.target, :2] = tip
    state = state.replace(
        data=state.data.replace(mocap_pos=state.data.mocap_pos.at[0, :2].set(tip))
    )
    actions = np.concatenate([np.zeros((50, A)), np.tile([[1.0, -1.0]], (100, 1))])
    rewards = []
    for action in actions.astype(np.float32):
        state = step(state, jnp.asarray(action))
        obs, reward = sim.step(action)
        np.testing.assert_allclose(obs, np.asarray(state.obs), atol=1e-3)
        assert reward == float(state.reward)
        rewards.append(reward)
    assert 1.0 in rewards and 0.0 in rewards


def _policy() -> runs.Policy:
    """A SAC policy of ReacherEasy's sizes, randomly initialised, with statistics."""
    spec = agents.get("sac")
    agent_config = spec.config_cls(actor_hidden=(32, 32))
    agent = spec.make(agent_config)
    config = TrainConfig(env="playground/ReacherEasy", algo="sac", normalize_observations=True)
    state = init_agent(agent, jax.random.PRNGKey(1), ObservationView(None, None, OBS, None), A)
    stats = normalization.RunningStats(jnp.zeros(OBS), jnp.full(OBS, 0.25), jnp.asarray(10.0))
    apply = jax.jit(make_policy(config, agent))
    return runs.Policy(config, agent_config, state, stats, 0, apply, None, (OBS, None, A))


def test_the_exported_policy_in_the_loop_follows_playground(playground, tmp_path):
    """Closed loop: the ONNX model acting in plain MuJoCo, jaxrl's policy acting in
    Playground, from the same start: the same trajectory for 100 control steps."""
    script = _script()
    _, _, step = playground
    policy = _policy()
    onnx_act = script.onnx_policy(str(policy.export_onnx(tmp_path / "reacher.onnx")))
    state, sim = _same_start(script, playground, 5)
    obs = np.asarray(state.obs)
    for _ in range(100):
        state = step(state, policy(state.obs))
        obs, reward = sim.step(onnx_act(obs[None].astype(np.float32))[0])
        np.testing.assert_allclose(obs, np.asarray(state.obs), atol=2e-3)
        assert reward == float(state.reward)


def test_the_script_runs_where_jax_cannot_be_imported(tmp_path):
    path = _policy().export_onnx(tmp_path / "reacher.onnx")
    code = f"""
import runpy, sys
for name in ("jax", "jaxlib", "jaxrl", "flax"):  # Playground's import needs jax too
    sys.modules[name] = None  # importing any of them now raises ImportError
sys.argv = ["reacher_sim_to_sim.py", {str(path)!r}, "--episodes", "2", "--steps", "30"]
runpy.run_path({str(SCRIPT)!r}, run_name="__main__")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path
    ).stdout
    assert out.startswith("return over 2 episodes: ") and out.count("\n") == 2
