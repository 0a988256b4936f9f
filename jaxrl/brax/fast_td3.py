"""`jaxrl.brax.fast_td3.train`: Brax's `sac.train` arguments over jaxrl's fast_td3,
and its own options as keywords (jaxrl.brax.offpolicy, docs/BRAX.md)."""

from jaxrl.brax.offpolicy import door

train = door("fast_td3")
