"""Presets (algorithm x task hyperparameters) and experiment scripts over the public API:
`sweep` (jaxrl sweep), `scale` (jaxrl scale: scaling laws in the UTD ratio; `scale_plan` its
grid checked, `scale_train` trained, `scale_folder` read back, `scale_fit` its fitting core,
`scale_report` the fit and predictions, `scale_figures` scale.json and scale.png,
`scale_validate` a held-back prediction)."""
