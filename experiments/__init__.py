"""Presets (algorithm x task hyperparameters) and experiment scripts over the public API:
`sweep` (jaxrl sweep), `scale` (jaxrl scale: scaling laws in the UTD ratio; `scale_fit` its
fitting core, `scale_report` reading and reporting, `scale_validate` a held-back prediction)."""
