"""Presets (algorithm x task hyperparameters) and experiment scripts over the public API."""
