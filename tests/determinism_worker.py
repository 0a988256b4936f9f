"""Fingerprints of a short run of every algorithm: a hash of its metric rows (timings left
out) and of every array of its final state (parameters, optimiser states, replay buffer, env
states, key). tests/run/test_faults.py compares those of its own process with those printed by

    python -m tests.determinism_worker

in a fresh one: the same seed on the same device must give the same bits."""

from __future__ import annotations

import hashlib
import json
import sys

import jax
import numpy as np

from jaxrl import agents
from jaxrl.config import TrainConfig
from jaxrl.run import driver
from jaxrl.run.rows import learning_metrics
from tests import tiny


def _config(algo: str) -> tuple[TrainConfig, object]:
    """tiny.run of `algo`, 256 env steps (2 chunks) with normalised observations."""
    config = tiny.run(algo, total_steps=256, eval_every=128, normalize_observations=True)
    return config, tiny.agent(algo)


def fingerprint(algo: str) -> str:
    config, agent_config = _config(algo)
    result = driver.train(config, agent_config, progress=None)
    digest = hashlib.sha256()
    digest.update(json.dumps(learning_metrics(result.history), sort_keys=True).encode())
    for leaf in jax.tree.leaves(result.state):
        digest.update(np.asarray(jax.random.key_data(leaf) if _is_key(leaf) else leaf).tobytes())
    return digest.hexdigest()


def _is_key(leaf) -> bool:
    return jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key)


def fingerprints() -> dict[str, str]:
    return {algo: fingerprint(algo) for algo in agents.ALGORITHMS}


if __name__ == "__main__":
    print(json.dumps(fingerprints()))
    sys.exit(0)
