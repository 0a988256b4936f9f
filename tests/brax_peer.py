"""What the whole-step parity tests need to run Brax's own trainers here: a tiny Brax env and
the shim for the jax function Brax 0.14.2 still calls."""

import jax
import jax.numpy as jnp


class Drift:
    """A tiny Brax env (brax.envs.Env's interface): x in R^3 drifts with the action, reward
    -0.1 |x|^2 + a_0, terminated when |x_0| > 1.2; Brax's wrappers add the time limit."""

    observation_size, action_size, backend = 3, 2, "jax"
    unwrapped = property(lambda self: self)

    def reset(self, rng):
        from brax.envs.base import State

        x = jax.random.uniform(rng, (3,), minval=-1.0, maxval=1.0)
        zero = jnp.zeros(())
        return State(pipeline_state=x, obs=x, reward=zero, done=zero, metrics={}, info={})

    def step(self, state, action):
        mix = jnp.array([[0.3, -0.2, 0.1], [0.1, 0.2, -0.3]])
        x = state.pipeline_state + action @ mix
        reward = -0.1 * jnp.sum(x**2) + action[0]
        done = (jnp.abs(x[0]) > 1.2).astype(jnp.float32)
        return state.replace(pipeline_state=x, obs=x, reward=reward, done=done)


def install_shims():
    """Brax 0.14.2's trainers call jax.device_put_replicated, which jax removed."""
    from jaxrl.benchmarks import peers

    peers.install_jax_shims()
