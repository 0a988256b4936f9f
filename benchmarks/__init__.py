"""The wall-clock benchmark suite (`jaxrl bench`): jaxrl against Brax's own trainers and the
simulator's random-action limit."""
