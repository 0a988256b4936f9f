"""Datasets for offline RL, in Minari's format (the Farama standard that replaced D4RL).

- `jaxrl.data.minari_format`: writes episodes as a Minari dataset and reads any local one
  with box observations and actions back as flat transitions (`OfflineData`), with the
  random and reference returns that normalise scores as D4RL's are (0 random, 100 expert);
- `jaxrl.data.collect`: `jaxrl collect`, a run's policy played with Gaussian action noise in
  its vectorised env, one compiled program, written as a Minari dataset.

Minari stores episodes (observations T + 1, actions, rewards, terminations and truncations
T); jaxrl's learners read transitions. Nothing here imports jax until a dataset goes to the
device (`OfflineData.transitions`).
"""
