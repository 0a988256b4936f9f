"""Reading a program's jaxpr in tests: shared by tests/agents/test_ppo.py and
tests/agents/test_redq_droq.py, which pin how an update lays out its arrays."""

import jax.extend


def equations(jaxpr):
    """Every equation of `jaxpr` (a `jax.extend.core.Jaxpr`), nested ones included (the bodies
    of scans, conds and calls), outer ones first."""
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from equations(sub)
