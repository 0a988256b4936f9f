"""`jaxrl.brax.pql.train`: Brax's `sac.train` arguments over jaxrl's pql,
and its own options as keywords (jaxrl.brax.offpolicy, docs/BRAX.md)."""

from jaxrl.brax.offpolicy import door

train = door("pql")
