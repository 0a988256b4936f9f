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


class MeteredDrift(Drift):
    """Drift with metrics of its own in its State, as MJX tasks keep them: the position's
    first coordinate, and a *per_step metric (Brax's evaluator reports it per step)."""

    def reset(self, rng):
        state = super().reset(rng)
        zero = jnp.zeros(())
        return state.replace(metrics={"x0": zero, "push_per_step": zero})

    def step(self, state, action):
        state = super().step(state, action)
        metrics = {**state.metrics, "x0": state.pipeline_state[0],
                   "push_per_step": jnp.abs(action[0])}  # fmt: skip
        return state.replace(metrics=metrics)


class PaidDrift(MeteredDrift):
    """MeteredDrift paying 1 per physics step and never ending: an episode's return is its
    length, whatever the policy (an evaluation env told apart from the training one)."""

    def step(self, state, action):
        state = super().step(state, action)
        return state.replace(reward=jnp.ones(()), done=jnp.zeros(()))


class WideDrift(Drift):
    """Drift with one more observation: an eval_env that does not fit Drift's policy."""

    observation_size = 4

    def reset(self, rng):
        state = super().reset(rng)
        return state.replace(obs=jnp.concatenate([state.obs, jnp.zeros(1)]))


class DictDrift(Drift):
    """Drift observed as a Playground robot task is: a dict of entries, the actor's "state",
    the critic's "privileged_state" (x and x^2) and an "extra" entry no network reads."""

    observation_size = {"state": (3,), "privileged_state": (6,), "extra": (2,)}

    @staticmethod
    def _obs(x):
        return {"state": x, "privileged_state": jnp.concatenate([x, x**2]), "extra": x[:2] * 2}

    def reset(self, rng):
        state = super().reset(rng)
        return state.replace(obs=self._obs(state.pipeline_state))

    def step(self, state, action):
        state = super().step(state, action)
        return state.replace(obs=self._obs(state.pipeline_state))


def install_shims():
    """Brax 0.14.2's trainers call jax.device_put_replicated, which jax removed."""
    from jaxrl.benchmarks import peers

    peers.install_jax_shims()


def record(store: list, tree) -> None:
    """Appends `tree` to `store` as the compiled program runs (a host callback)."""
    jax.debug.callback(lambda t: store.append(jax.device_get(t)), tree, ordered=False)


def record_sac_training(patch, steps: list, seen: dict, states: list) -> None:
    """Patches (`patch`: a pytest MonkeyPatch) Brax SAC's `acting.actor_step`, `make_losses`
    and `TrainingState` so that a run of its `sac.train` records, as it goes: each env step's
    (key, data) in `steps`, each loss's key (the critic's with its transitions) in
    seen["alpha" | "critic" | "actor"], and every training state built in `states`."""
    from brax.training import acting
    from brax.training.agents.sac import losses as brax_losses
    from brax.training.agents.sac import train as brax_train

    actor_step, make_losses = acting.actor_step, brax_losses.make_losses
    training_state = brax_train.TrainingState

    def recording_actor_step(env, env_state, policy, key, extra_fields=()):
        state, data = actor_step(env, env_state, policy, key, extra_fields=extra_fields)
        record(steps, (key, data))
        return state, data

    def recording_losses(*args, **kwargs):
        alpha_loss, critic_loss, actor_loss = make_losses(*args, **kwargs)

        def alpha(log_alpha, policy, normalizer, transitions, key):
            record(seen["alpha"], key)
            return alpha_loss(log_alpha, policy, normalizer, transitions, key)

        def critic(q, policy, normalizer, target_q, alpha, transitions, key):
            record(seen["critic"], (key, transitions))
            return critic_loss(q, policy, normalizer, target_q, alpha, transitions, key)

        def actor(policy, normalizer, q, alpha, transitions, key):
            record(seen["actor"], key)
            return actor_loss(policy, normalizer, q, alpha, transitions, key)

        return alpha, critic, actor

    def recording_state(**fields):
        state = training_state(**fields)
        record(states, state)
        return state

    patch.setattr(acting, "actor_step", recording_actor_step)
    patch.setattr(brax_losses, "make_losses", recording_losses)
    patch.setattr(brax_train, "TrainingState", recording_state)


def assert_trees_equal(a, b) -> None:
    """Equal leaves, in trees of one structure but lists for tuples (Brax's checkpoint
    loader gives lists)."""
    import numpy as np

    a, b = (tuple(t) if isinstance(t, list) else t for t in (a, b))
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y))
