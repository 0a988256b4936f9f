"""`matmul_precision`: with "bfloat16" every matrix product of every algorithm's networks, in
acting and in the update (forward and backward passes), carries JAX's BF16_BF16_F32 dot
algorithm where the program is traced for a GPU; with "float32", or on a CPU, none does. With
"mixed" every product is a bfloat16 one: the hidden layers' with bfloat16 operands and
results, the output layers' with the algorithm (GPU) and float32 results, and what the agents
return (actions, parameters, metrics) stays float32. Checked in the lowered programs
(StableHLO), without compiling, with the platform the networks see set to "gpu": this machine
has none, and a network left out would show in no number here."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

from jaxrl import agents, networks
from tests.agents.test_hyperparameters import ACT, OBS, N, _config, _inputs

BF16_ALGORITHM = "lhs_precision_type = bf16, rhs_precision_type = bf16, accumulation_type = f32"


def _dot_lines(fn, *args) -> list[str]:
    return re.findall(r"stablehlo\.dot_general.*", jax.jit(fn).lower(*args).as_text())


def _dots(fn, *args) -> tuple[int, int]:
    """(matrix products in `fn`'s lowered program, those with the bfloat16 algorithm)."""
    dots = _dot_lines(fn, *args)
    return len(dots), sum(BF16_ALGORITHM in dot for dot in dots)


def _mixed_dots(fn, *args) -> tuple[int, int, int]:
    """(products, those of bfloat16 operands and result, those with the bfloat16 algorithm
    and a float32 result) in `fn`'s lowered program."""
    dots = _dot_lines(fn, *args)
    # The operand and result types close the line: "(tensor<..xbf16>, tensor<..xbf16>) ->
    # tensor<..xbf16>".
    bf16 = [
        d
        for d in dots
        if re.search(r"\(tensor<[^>]*bf16>, tensor<[^>]*bf16>\) -> tensor<[^>]*bf16>$", d)
    ]
    algorithm = [d for d in dots if BF16_ALGORITHM in d and re.search(r"-> tensor<[^>]*f32>$", d)]
    return len(dots), len(bf16), len(algorithm)


@pytest.mark.parametrize("name", list(agents.ALGORITHMS))
def test_every_matmul_of_acting_and_updating_takes_the_chosen_precision(name, monkeypatch):
    key = jax.random.PRNGKey(0)
    obs = jnp.zeros((N, OBS))
    # The initial state computed here (its products run on this CPU), the programs traced as
    # for a GPU.
    state = agents.get(name).make(_config(name)).init(key, OBS, ACT)
    monkeypatch.setattr(networks, "_platform", lambda: "gpu")
    for precision in ("bfloat16", "float32"):
        agent = agents.get(name).make(_config(name, matmul_precision=precision))
        act = _dots(agent.act, state, obs, key, 1.0)
        update = _dots(agent.update, state, _inputs(agent.on_policy, agent.reads_next_action), key)
        # The update holds at least the critics' forward and backward products.
        assert act[0] >= 2 and update[0] >= 6, (name, act, update)
        if precision == "bfloat16":
            assert act[1] == act[0], f"{name}: {act[0] - act[1]} products of act in float32"
            assert update[1] == update[0], (
                f"{name}: {update[0] - update[1]} products of update in float32"
            )
        else:
            assert act[1] == update[1] == 0, (name, act, update)


@pytest.mark.parametrize("name", list(agents.ALGORITHMS))
def test_mixed_precision_computes_hidden_layers_in_bfloat16_and_returns_float32(name, monkeypatch):
    key = jax.random.PRNGKey(0)
    obs = jnp.zeros((N, OBS))
    spec = agents.get(name)
    state = spec.make(_config(name)).init(key, OBS, ACT)
    monkeypatch.setattr(networks, "_platform", lambda: "gpu")
    agent = spec.make(_config(name, matmul_precision="mixed"))
    data = _inputs(agent.on_policy, agent.reads_next_action)
    for fn, args in ((agent.act, (state, obs, key, 1.0)), (agent.update, (state, data, key))):
        dots, bf16, algorithm = _mixed_dots(fn, *args)
        # Every product is a bfloat16 one: the hidden layers' keep bfloat16, the output
        # layers' (and their backward products) return float32.
        assert dots == bf16 + algorithm, (name, fn.__name__, dots, bf16, algorithm)
        assert bf16 > 0 and algorithm > 0, (name, fn.__name__, dots, bf16, algorithm)
    action = jax.eval_shape(agent.act, state, obs, key, 1.0)
    assert action.dtype == jnp.float32
    new_state, metrics = jax.eval_shape(agent.update, state, data, key)
    for leaf in jax.tree.leaves((new_state, metrics)):
        assert leaf.dtype != jnp.bfloat16, name
    # The same state structure and dtypes as float32's: a run can resume in another mode.
    assert jax.tree.structure(new_state) == jax.tree.structure(state)
    assert [x.dtype for x in jax.tree.leaves(new_state)] == [
        x.dtype for x in jax.tree.leaves(state)
    ]


def test_mixed_precision_is_bfloat16_on_a_cpu_too():
    """Unlike "bfloat16", "mixed" needs no dot algorithm in its hidden layers, so a CPU runs
    it as it is (its output layers there compute in float32)."""
    assert jax.default_backend() == "cpu"
    agent = agents.get("ppo").make(_config("ppo", matmul_precision="mixed"))
    state = agent.init(jax.random.PRNGKey(0), OBS, ACT)
    dots, bf16, algorithm = _mixed_dots(agent.update, state, _inputs(True), jax.random.PRNGKey(0))
    assert bf16 > 0 and algorithm == 0 and dots > bf16


def test_on_a_cpu_bfloat16_is_float32():
    """XLA:CPU would refuse the algorithm in some products (a 1x1 result), and computes float32
    in the others: traced for a CPU, "bfloat16" adds nothing to the program."""
    assert jax.default_backend() == "cpu"
    key = jax.random.PRNGKey(0)
    for precision in ("bfloat16", "float32"):
        agent = agents.get("ppo").make(_config("ppo", matmul_precision=precision))
        state = agent.init(key, OBS, ACT)  # a [1, k] x [k, 1] product: the value head's
        dots, bf16 = _dots(agent.update, state, _inputs(True), key)
        assert dots > 0 and bf16 == 0


def test_unknown_precision_is_an_error_naming_the_choices():
    for name in agents.ALGORITHMS:
        with pytest.raises(ValueError, match="matmul_precision must be one of float32, bfloat16"):
            _config(name, matmul_precision="float16")
    assert networks.dense_precision("float32") is None
