"""`jaxrl.brax.fast_sac.train`: Brax's `sac.train` arguments over jaxrl's fast_sac,
and its own options as keywords (jaxrl.brax.offpolicy, docs/BRAX.md)."""

from jaxrl.brax.offpolicy import door

train = door("fast_sac")
