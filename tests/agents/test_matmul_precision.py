"""`matmul_precision`: with "bfloat16" every matrix product of every algorithm's networks, in
acting and in the update (forward and backward passes), carries JAX's BF16_BF16_F32 dot
algorithm where the program is traced for a GPU; with "float32", or on a CPU, none does.
Checked in the lowered programs (StableHLO), without compiling, with the platform the networks
see set to "gpu": this machine has none, and a network left out would show in no number here."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

from jaxrl import agents, networks
from tests.agents.test_hyperparameters import ACT, OBS, N, _config, _inputs

BF16_ALGORITHM = "lhs_precision_type = bf16, rhs_precision_type = bf16, accumulation_type = f32"


def _dots(fn, *args) -> tuple[int, int]:
    """(matrix products in `fn`'s lowered program, those with the bfloat16 algorithm)."""
    text = jax.jit(fn).lower(*args).as_text()
    dots = re.findall(r"stablehlo\.dot_general.*", text)
    return len(dots), sum(BF16_ALGORITHM in dot for dot in dots)


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
        update = _dots(agent.update, state, _inputs(agent.on_policy), key)
        # The update holds at least the critics' forward and backward products.
        assert act[0] >= 2 and update[0] >= 6, (name, act, update)
        if precision == "bfloat16":
            assert act[1] == act[0], f"{name}: {act[0] - act[1]} products of act in float32"
            assert update[1] == update[0], (
                f"{name}: {update[0] - update[1]} products of update in float32"
            )
        else:
            assert act[1] == update[1] == 0, (name, act, update)


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
