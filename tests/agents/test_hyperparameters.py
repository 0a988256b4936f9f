"""Hyperparameters are data: every continuous setting an agent or the loop reads lives in its
state (the learning rates in the optimiser states), none is a constant of the compiled program.

Checked without compiling: the programs (jaxprs, with their constants) of agents and loops
built from configs that differ only in an ARRAY_FIELDS entry are identical, the states they
start from have the same structure (so they stack under vmap), and the setting's value went
into the state. A vmapped grid equal to its runs one by one is in tests/test_grid.py."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, loops
from jaxrl.agents.base import array_fields
from jaxrl.config import TrainConfig
from jaxrl.types import Batch, Rollout

OBS, ACT, B, T, N = 3, 2, 8, 4, 2
SMALL = {"actor_hidden": (8,), "critic_hidden": (8,)}


def _config(name: str, **changes):
    spec = agents.get(name)
    if spec.on_policy:
        changes = {"num_minibatches": 2, **changes}
    return spec.config_cls(**{**SMALL, **changes})


def _changed(value: float, name: str) -> float:
    """Another valid value of the field."""
    if name == "v_min":
        return value - 50.0
    if name == "v_max":
        return value + 50.0
    return value * 0.5


def _inputs(on_policy: bool, next_action: bool = False):
    """Abstract update inputs; `next_action` adds the dataset's next action (ReBRAC reads it)."""
    f = jax.ShapeDtypeStruct
    if on_policy:
        return Rollout(
            obs=f((T, N, OBS), jnp.float32),
            reward=f((T, N), jnp.float32),
            next_obs=f((T, N, OBS), jnp.float32),
            terminated=f((T, N), jnp.float32),
            done=f((T, N), jnp.float32),
            discount=f((T, N), jnp.float32),
            extras={"raw_action": f((T, N, ACT), jnp.float32), "log_prob": f((T, N), jnp.float32)},
            progress=f((), jnp.float32),
        )
    return Batch(
        obs=f((B, OBS), jnp.float32),
        action=f((B, ACT), jnp.float32),
        reward=f((B,), jnp.float32),
        next_obs=f((B, OBS), jnp.float32),
        terminated=f((B,), jnp.float32),
        discount=f((B,), jnp.float32),
        next_action=f((B, ACT), jnp.float32) if next_action else None,
        next_action_known=f((B,), jnp.float32) if next_action else None,
    )


def _program(fn, *args) -> tuple[str, list]:
    closed = jax.make_jaxpr(fn)(*args)
    return str(closed.jaxpr), [np.asarray(c) for c in closed.consts]


def _assert_same_program(a, b, what: str) -> None:
    (text_a, consts_a), (text_b, consts_b) = a, b
    assert text_a == text_b, f"{what}: the programs differ"
    assert len(consts_a) == len(consts_b), f"{what}: the programs' constants differ"
    for x, y in zip(consts_a, consts_b, strict=True):
        np.testing.assert_array_equal(x, y, err_msg=f"{what}: a constant of the program differs")


CASES = [
    (name, field)
    for name, spec in agents.ALGORITHMS.items()
    for field in array_fields(spec.config_cls())
]


def test_every_algorithm_declares_its_array_fields():
    for name, spec in agents.ALGORITHMS.items():
        fields = array_fields(spec.config_cls())
        assert fields, name
        known = {f.name for f in dataclasses.fields(spec.config_cls)}
        assert set(fields) <= known, (name, set(fields) - known)
        for field in fields:
            assert isinstance(getattr(spec.config_cls(), field), float), (name, field)


@pytest.mark.parametrize(("name", "field"), CASES, ids=[f"{n}-{f}" for n, f in CASES])
def test_a_setting_is_state_not_program(name, field):
    base = _config(name)
    value = getattr(base, field)
    if value == 0.0:  # whether it is used at all is static (e.g. AdamW's decay vs Adam)
        base = dataclasses.replace(base, **{field: 0.1})
        value = 0.1
    other = dataclasses.replace(base, **{field: _changed(value, field)})
    make = agents.get(name).make
    agent_a, agent_b = make(base), make(other)
    key = jax.random.PRNGKey(0)
    state_a, state_b = agent_a.init(key, OBS, ACT), agent_b.init(key, OBS, ACT)

    # Same structure: the two states stack, and one vmapped program trains both.
    assert jax.tree.structure(state_a) == jax.tree.structure(state_b)
    # The setting went into the state.
    differ = [
        not np.array_equal(x, y)
        for x, y in zip(jax.tree.leaves(state_a), jax.tree.leaves(state_b), strict=True)
    ]
    assert any(differ), f"{name}.{field} is not in the agent state"
    # ... and nowhere else: the same programs act and learn.
    obs = jax.ShapeDtypeStruct((N, OBS), jnp.float32)
    _assert_same_program(
        _program(agent_a.act, state_a, obs, key, 1.0),
        _program(agent_b.act, state_a, obs, key, 1.0),
        f"{name} act with {field} changed",
    )
    batch = _inputs(agent_a.on_policy, agent_a.reads_next_action)
    _assert_same_program(
        _program(agent_a.update, state_a, batch, key),
        _program(agent_b.update, state_a, batch, key),
        f"{name} update with {field} changed",
    )


@pytest.mark.parametrize(("name", "field"), CASES, ids=[f"{n}-{f}" for n, f in CASES])
def test_a_zero_that_changes_the_program_changes_the_state_too(name, field):
    """A setting at zero may leave a mechanism out of the program (AdamW's decay, PPO's
    gradient clipping), but then the state must differ in structure from a nonzero one's: a
    vmapped grid refuses to mix the two by their structure (`jaxrl.run.state.member_settings`), and
    the store of compiled programs keys on it (`jaxrl.run.programs`). A clipping program
    given a zero clipped every gradient to zero: a grid member or a re-run at 0 learned
    nothing."""
    base = _config(name)
    nonzero = base if getattr(base, field) else dataclasses.replace(base, **{field: 0.1})
    try:
        zero = dataclasses.replace(base, **{field: 0.0})
    except ValueError:  # zero is refused for this field
        return
    make = agents.get(name).make
    agent_a, agent_b = make(nonzero), make(zero)
    key = jax.random.PRNGKey(0)
    state_a, state_b = agent_a.init(key, OBS, ACT), agent_b.init(key, OBS, ACT)
    if jax.tree.structure(state_a) != jax.tree.structure(state_b):
        return
    batch = _inputs(agent_a.on_policy, agent_a.reads_next_action)
    _assert_same_program(
        _program(agent_a.update, state_a, batch, key),
        _program(agent_b.update, state_a, batch, key),
        f"{name} update with {field} at 0 and not, in states of one structure",
    )


LOOP_CASES = [
    ("sac", {"exploration": "uniform"}),
    ("pql", {"n_step": 3}),
    ("ppo", {"unroll_length": 4}),
]


@pytest.mark.parametrize("field", TrainConfig.ARRAY_FIELDS)
@pytest.mark.parametrize(("algo", "extra"), LOOP_CASES, ids=[c[0] for c in LOOP_CASES])
def test_a_loop_setting_is_state_not_program(algo, extra, field):
    base = TrainConfig(
        env="classic/pendulum",
        algo=algo,
        num_envs=2,
        batch_size=8,
        total_steps=64,
        eval_every=32,
        eval_envs=2,
        learning_starts=8,
        noise_scale_min=0.1,
        noise_scale_max=0.8,
        **extra,
    )
    agent = agents.get(algo).make(_config(algo))
    a = loops.make_train(base, agent)
    value = getattr(a.config, field)
    b = loops.make_train(dataclasses.replace(base, **{field: value * 0.5}), agent)
    key = jax.random.PRNGKey(0)
    state_a, state_b = a.init(key), b.init(key)
    assert jax.tree.structure(state_a) == jax.tree.structure(state_b)
    np.testing.assert_allclose(state_b.hp[field], value * 0.5)
    _assert_same_program(
        _program(a.chunk, state_a), _program(b.chunk, state_a), f"{algo} chunk with {field}"
    )
