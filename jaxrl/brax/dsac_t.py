"""`jaxrl.brax.dsac_t.train`: Brax's `sac.train` arguments over jaxrl's dsac_t,
and its own options as keywords (jaxrl.brax.offpolicy, docs/BRAX.md)."""

from jaxrl.brax.offpolicy import door

train = door("dsac_t")
