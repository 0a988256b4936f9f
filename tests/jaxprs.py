"""Reading a program's jaxpr in tests: shared by tests/agents/test_ppo.py,
tests/agents/test_redq_droq.py and tests/loops/test_offpolicy.py, which pin how an update lays
out its arrays and where its loops sit."""

import jax.extend


def equations(jaxpr):
    """Every equation of `jaxpr` (a `jax.extend.core.Jaxpr`), nested ones included (the bodies
    of scans, conds and calls), outer ones first."""
    for eqn, _ in equations_within(jaxpr):
        yield eqn


def equations_within(jaxpr, within: tuple[str, ...] = ()):
    """`equations`, each with the names of the primitives whose bodies hold it, outermost
    first: `("scan", "cond")` for an equation in a cond's branch inside a scan."""
    for eqn in jaxpr.eqns:
        yield eqn, within
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from equations_within(sub, (*within, eqn.primitive.name))
