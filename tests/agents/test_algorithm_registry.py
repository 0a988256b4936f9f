"""The registry (`jaxrl.agents.ALGORITHMS`) says without jax what it used to learn by building
each agent: which config class, which `make`, on-policy or not (issue 37). These tests build
the agents once and check that the static table agrees with them, so it cannot drift."""

import dataclasses

import pytest

from jaxrl import agents, heads, networks
from jaxrl.agents import configs


@pytest.mark.parametrize("name", list(agents.ALGORITHMS))
def test_the_static_on_policy_flag_is_the_agents(name):
    spec = agents.get(name)
    agent = spec.make(spec.config_cls())
    assert spec.on_policy == agent.on_policy
    assert agent.name == name  # `module` names the algorithm's own make


@pytest.mark.parametrize("name", list(agents.ALGORITHMS))
def test_each_agent_module_re_exports_its_config(name):
    import importlib

    spec = agents.get(name)
    module = importlib.import_module(spec.module)
    assert getattr(module, spec.config_cls.__name__) is spec.config_cls
    assert spec.config_cls.__module__.startswith("jaxrl.agents.configs.")
    assert agents.algorithm_of(spec.config_cls()) == name


def test_the_config_names_are_the_networks_and_heads_tables():
    """The configs name choices without jax; the jax modules map the same names."""
    assert tuple(networks.KERNEL_INITS) == configs.network.KERNEL_INIT_NAMES
    assert tuple(networks.ACTIVATIONS) == configs.network.ACTIVATION_NAMES
    assert heads.Categorical.HYPERPARAMETERS == configs.heads.CATEGORICAL_HYPERPARAMETERS
    assert heads.Gaussian.HYPERPARAMETERS == configs.heads.GAUSSIAN_HYPERPARAMETERS
    assert heads.ACTOR_Q is configs.heads.ACTOR_Q


def test_every_config_holds_the_shared_network_settings_together():
    """`NetworkSettings`'s fields, their docstrings written once, are in every config, together
    and in their order (first, but after the C51 fields of FastTD3 and PQL)."""
    shared = [f.name for f in dataclasses.fields(configs.NetworkSettings)]
    for spec in agents.ALGORITHMS.values():
        names = [f.name for f in dataclasses.fields(spec.config_cls)]
        assert issubclass(spec.config_cls, configs.NetworkSettings)
        start = names.index(shared[0])
        assert names[start : start + len(shared)] == shared, spec.config_cls
