"""Tiny pure-JAX control tasks that learn in seconds, for tests and quick experiments.

They follow Brax's reset/step/State convention, so every wrapper and trainer treats them
exactly like a simulator task.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from brax.envs.base import State


class Pendulum:
    """Pendulum swing-up with the classic (Gym Pendulum-v1) dynamics.

    State: angle th (0 = upright) and angular velocity thdot. Observation [cos th, sin th, thdot].
    Action in [-1, 1], scaled to a torque in [-max_torque, max_torque]. Reward
    -(th^2 + 0.1 thdot^2 + 0.001 torque^2), so a return near 0 means balanced upright; an
    episode of 200 steps that swings up and balances scores about -150, random play about -1200.
    Never terminates: episodes end only by the time limit (a truncation).
    """

    episode_length = 200
    action_repeat = 1

    def __init__(
        self,
        max_speed: float = 8.0,
        max_torque: float = 2.0,
        dt: float = 0.05,
        gravity: float = 10.0,
        mass: float = 1.0,
        length: float = 1.0,
    ):
        self.max_speed = max_speed
        self.max_torque = max_torque
        self.dt = dt
        self.gravity = gravity
        self.mass = mass
        self.length = length

    @property
    def observation_size(self) -> int:
        return 3

    @property
    def action_size(self) -> int:
        return 1

    def _obs(self, physics: jax.Array) -> jax.Array:
        th, thdot = physics[0], physics[1]
        return jnp.stack([jnp.cos(th), jnp.sin(th), thdot])

    def reset(self, key: jax.Array) -> State:
        high = jnp.array([jnp.pi, 1.0])
        physics = jax.random.uniform(key, (2,), minval=-high, maxval=high)
        zero = jnp.zeros(())
        return State(physics, self._obs(physics), zero, zero, {}, {})

    def step(self, state: State, action: jax.Array) -> State:
        th, thdot = state.pipeline_state[0], state.pipeline_state[1]
        torque = jnp.clip(action[0], -1.0, 1.0) * self.max_torque
        angle = jnp.mod(th + jnp.pi, 2 * jnp.pi) - jnp.pi
        cost = angle**2 + 0.1 * thdot**2 + 0.001 * torque**2
        g, m, length, dt = self.gravity, self.mass, self.length, self.dt
        thdot = thdot + (3 * g / (2 * length) * jnp.sin(th) + 3.0 / (m * length**2) * torque) * dt
        thdot = jnp.clip(thdot, -self.max_speed, self.max_speed)
        physics = jnp.stack([th + thdot * dt, thdot])
        return state.replace(
            pipeline_state=physics, obs=self._obs(physics), reward=-cost, done=jnp.zeros(())
        )


class PrivilegedPendulum(Pendulum):
    """Pendulum observed as Playground's robot tasks observe: a dict whose "state" entry is
    Pendulum's observation (what the policy reads) and whose "privileged_state" adds what only
    the simulator knows, the wrapped angle and the last torque, for an asymmetric critic
    (`--critic-obs privileged_state`)."""

    @property
    def observation_size(self) -> dict:
        return {"state": (3,), "privileged_state": (5,)}

    def _dict_obs(self, physics: jax.Array, torque: jax.Array) -> dict:
        obs = self._obs(physics)
        angle = jnp.mod(physics[0] + jnp.pi, 2 * jnp.pi) - jnp.pi
        extra = jnp.stack([angle, torque / self.max_torque])
        return {"state": obs, "privileged_state": jnp.concatenate([obs, extra])}

    def reset(self, key: jax.Array) -> State:
        state = super().reset(key)
        return state.replace(obs=self._dict_obs(state.pipeline_state, jnp.zeros(())))

    def step(self, state: State, action: jax.Array) -> State:
        state = super().step(state, action)
        torque = jnp.clip(action[0], -1.0, 1.0) * self.max_torque
        return state.replace(obs=self._dict_obs(state.pipeline_state, torque))


class MountainCarContinuous:
    """Continuous mountain car (Gym MountainCarContinuous-v0): a sparse-reward exploration task.

    Reaching position 0.45 terminates with +100; each step costs 0.1 * action^2.
    """

    episode_length = 999
    action_repeat = 1

    def __init__(self, power: float = 0.0015):
        self.power = power

    @property
    def observation_size(self) -> int:
        return 2

    @property
    def action_size(self) -> int:
        return 1

    def reset(self, key: jax.Array) -> State:
        position = jax.random.uniform(key, (), minval=-0.6, maxval=-0.4)
        physics = jnp.stack([position, jnp.zeros(())])
        zero = jnp.zeros(())
        return State(physics, physics, zero, zero, {}, {})

    def step(self, state: State, action: jax.Array) -> State:
        position, velocity = state.pipeline_state[0], state.pipeline_state[1]
        force = jnp.clip(action[0], -1.0, 1.0)
        velocity = jnp.clip(
            velocity + force * self.power - 0.0025 * jnp.cos(3 * position), -0.07, 0.07
        )
        position = jnp.clip(position + velocity, -1.2, 0.6)
        velocity = jnp.where((position <= -1.2) & (velocity < 0), 0.0, velocity)
        goal = position >= 0.45
        reward = jnp.where(goal, 100.0, 0.0) - 0.1 * force**2
        physics = jnp.stack([position, velocity])
        return state.replace(
            pipeline_state=physics, obs=physics, reward=reward, done=goal.astype(jnp.float32)
        )


ENVS = {
    "pendulum": Pendulum,
    "pendulum_privileged": PrivilegedPendulum,
    "mountain_car_continuous": MountainCarContinuous,
}
