"""Sim-to-sim: an exported playground/ReacherEasy policy played in plain MuJoCo on the CPU
(`mujoco.MjData`, `mj_step`) with ONNX Runtime. Neither JAX nor jaxrl is imported.

    jaxrl export runs/reacher --out reacher.onnx
    python docs/examples/reacher_sim_to_sim.py reacher.onnx --episodes 10

The task is rebuilt from Playground's own model file as its ReacherEasy builds it: the target's
size, four physics steps of 5 ms per control step of 20 ms, the reset's random arm and target,
the observation [qpos, finger-to-target (x, y), qvel] and the reward (1 while the finger
touches the target, else 0), over 1,000 control steps. Playground's first observation is read
before the target moves to its drawn place (its reset forwards the physics, then moves the
target); this does the same, so the policy sees what it saw in training. docs/EXPORT.md has
the figures against `jaxrl eval` of the same checkpoint.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib

import mujoco
import numpy as np

TARGET_SIZE = 0.05  # ReacherEasy's (ReacherHard: 0.015)
SIM_DT, CTRL_DT = 0.005, 0.02
EPISODE_LENGTH = 1000


def model_file() -> pathlib.Path:
    """Playground's reacher.xml, found without importing Playground (which imports JAX)."""
    spec = importlib.util.find_spec("mujoco_playground")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the reacher's model file comes with Playground: pip install playground")
    root = pathlib.Path(spec.submodule_search_locations[0]) / "_src" / "dm_control_suite" / "xmls"
    return root / "reacher.xml"


def make_model(target_size: float = TARGET_SIZE) -> mujoco.MjModel:
    path = model_file()
    assets = {f.name: f.read_bytes() for f in (path.parent / "common").iterdir() if f.is_file()}
    spec = mujoco.MjSpec.from_string(path.read_text(), assets)
    spec.body("target").first_geom().size[0] = target_size
    model = spec.compile()
    model.opt.timestep = SIM_DT
    return model


class Reacher:
    """ReacherEasy in plain MuJoCo: reset(rng) and step(action) -> (obs, reward)."""

    def __init__(self, model: mujoco.MjModel):
        self.model, self.data = model, mujoco.MjData(model)
        self.substeps = round(CTRL_DT / SIM_DT)
        self.target = model.body("target").mocapid[0]
        self.finger_geom, self.target_geom = model.geom("finger").id, model.geom("target").id
        self.radii = model.geom_size[[self.target_geom, self.finger_geom], 0].sum()
        self.shoulder = model.jnt_qposadr[model.joint("shoulder").id]
        self.wrist = model.jnt_qposadr[model.joint("wrist").id]
        self.wrist_range = model.jnt_range[model.joint("wrist").id]

    def set_state(self, qpos: np.ndarray, target_xy: np.ndarray) -> np.ndarray:
        """Playground's reset from a drawn arm pose and target: forward, then the target
        moved; the first observation is read without another forward, as Playground does."""
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = qpos
        mujoco.mj_forward(self.model, self.data)
        self.data.mocap_pos[self.target, :2] = target_xy
        return self.observe()

    def reset(self, rng: np.random.Generator) -> np.ndarray:
        qpos = np.zeros(self.model.nq)
        qpos[self.shoulder] = rng.uniform(-np.pi, np.pi)
        qpos[self.wrist] = rng.uniform(*self.wrist_range)
        angle, radius = rng.uniform() * 2 * np.pi, rng.uniform(0.05, 0.2)
        return self.set_state(qpos, radius * np.array([np.sin(angle), np.cos(angle)]))

    def finger_to_target(self) -> np.ndarray:
        xpos = self.data.geom_xpos
        return xpos[self.target_geom, :2] - xpos[self.finger_geom, :2]

    def observe(self) -> np.ndarray:
        return np.concatenate([self.data.qpos, self.finger_to_target(), self.data.qvel])

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float]:
        self.data.ctrl[:] = action
        for _ in range(self.substeps):
            mujoco.mj_step(self.model, self.data)
        # geom_xpos after mj_step is that of the last substep's start, as in MJX's step.
        reward = float(np.linalg.norm(self.finger_to_target()) <= self.radii)
        return self.observe(), reward


def play(policy, env: Reacher, rng: np.random.Generator, steps: int = EPISODE_LENGTH) -> float:
    """One episode's undiscounted return; `policy(obs [1, n]) -> actions [1, m]`."""
    obs, total = env.reset(rng), 0.0
    for _ in range(steps):
        action = policy(obs[None].astype(np.float32))[0]
        obs, reward = env.step(action)
        total += reward
    return total


def onnx_policy(path: str):
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return lambda obs: session.run(["actions"], {"obs": obs})[0]


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the ONNX file (jaxrl export ... --out FILE)")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=EPISODE_LENGTH, help="control steps")
    args = parser.parse_args(argv)
    policy, env = onnx_policy(args.model), Reacher(make_model())
    rng = np.random.default_rng(args.seed)
    returns = [play(policy, env, rng, args.steps) for _ in range(args.episodes)]
    spread = np.std(returns, ddof=1) if len(returns) > 1 else 0.0
    print(f"return over {len(returns)} episodes: {np.mean(returns):.1f} +- {spread:.1f}")
    print("returns: " + ", ".join(f"{r:.0f}" for r in returns))
    return returns


if __name__ == "__main__":
    main()
