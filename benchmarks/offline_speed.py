"""Offline gradient updates per second at the published sizes (issue 70's speed figures).

    python -m jaxrl.benchmarks.offline_speed --out benchmarks/results/offline-speed-cpu.jsonl

Each case is an offline algorithm at its paper's sizes on D4RL's halfcheetah shapes (17
observations, 6 actions, 1,000,000 rows): the batch, the ensemble and the widths below. The
program timed is the offline loop's own: `iterations` of `jaxrl.loops.offpolicy.make_learn`
(one gather of `updates_per_step` batches from the dataset on the device, then as many agent
updates in a scan) inside one `lax.scan`, as `jaxrl.loops.offline`'s chunk runs them, without
its closing evaluation. The rows are random but well formed: the cost of an update does not
depend on their values.

Three variants per case, each compiled (timed apart) and then run `--repeats` times after a
warm-up call (median seconds):
- `vmapped`: jaxrl as it is, the critics one `nn.vmap`ped module (`jaxrl.networks.QEnsemble`);
- `looped`: the same critics, the same parameter layout, run one after another by `nn.scan`
  (`LoopedQEnsemble`): what a loop over N critic modules costs, as PyTorch code runs them
  unless it batches them by hand;
- `seeds`: `--seeds` seeds of the vmapped agent in one program (`jax.vmap` over the agent
  state and the key; the dataset shared), against one.

One JSON line per case and variant: compile seconds, seconds per call, updates per second (per
seed) and seed-updates per second, and the time the paper's update count would take at that
rate (`published_hours`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import statistics
import time
from typing import Any
from unittest import mock

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks import QEnsemble, QNetwork


@dataclasses.dataclass(frozen=True)
class OfflineCase:
    name: str
    algo: str
    batch_size: int
    agent: dict  # the agent config's fields the paper sets (the rest: jaxrl's defaults)
    published_updates: int  # the paper's (or its reference code's) gradient updates per run
    iterations: int = 8  # iterations of `updates_per_step` updates per timed call
    source: str = ""


# The sizes, from each method's paper or reference code as CORL keeps it (halfcheetah-medium);
# the widths and ensembles are also jaxrl's configs' defaults or presets (docs/OFFLINE.md).
CASES = (
    OfflineCase("sac_n", "sac_n", 256, {"num_critics": 10}, 3_000_000, 8,
                "An et al. 2021: N = 10 on halfcheetah, 3 x 256, batch 256, 3,000 epochs of 1,000"),
    OfflineCase("edac", "edac", 256, {"num_critics": 10, "eta": 1.0}, 3_000_000, 8,
                "An et al. 2021: N = 10, eta 1 on halfcheetah, 3 x 256, batch 256, 3M updates"),
    OfflineCase("lb_sac", "sac_n", 10_000,
                {"num_critics": 10, "actor_lr": 0.0018, "critic_lr": 0.0018, "alpha_lr": 0.0018},
                300_000, 1, "Nikulin et al. 2022 (preset lb_sac): batch 10,000, 10 critics, "
                "3 x 256, 300 x 1,000 updates"),
    OfflineCase("td3_bc", "td3_bc", 256, {}, 1_000_000, 8,
                "Fujimoto and Gu 2021: 2 x 256 twin critics, batch 256, 1M updates"),
    OfflineCase("rebrac", "rebrac", 1024, {}, 1_000_000, 4,
                "Tarasov et al. 2023: 3 x 256 LayerNorm critics, batch 1,024, 1M updates"),
)  # fmt: skip

OBS_SIZE, ACTION_SIZE, DATASET_ROWS = 17, 6, 1_000_000  # D4RL halfcheetah


class LoopedQEnsemble(QEnsemble):
    """`QEnsemble`'s critics run one after another (`nn.scan` over the ensemble axis) instead
    of side by side (`nn.vmap`): the same parameters, stacked [E] under the same name, so the
    same state gives the same values (tests/benchmarks/test_offline_speed.py)."""

    @nn.compact
    def __call__(
        self, obs: jax.Array, action: jax.Array, train: bool = False, stacked: bool = False
    ) -> jax.Array:
        critic = QNetwork(
            self.hidden,
            self.layer_norm,
            self.dropout,
            self.outputs,
            self.residual,
            self.norm_after_relu,
            self.matmul_precision,
            self.kernel_init,
            self.activation,
            name="critics",
        )

        def one(module, carry, action_e):
            return carry, module(obs, action_e, train)

        looped = nn.scan(
            one,
            variable_axes={"params": 0},
            split_rngs={"params": True, "dropout": True},
            length=self.num_critics,
        )
        actions = action if stacked else jnp.broadcast_to(action, (self.num_critics, *action.shape))
        return looped(critic, None, actions)[1]


@contextlib.contextmanager
def looped_critics():
    """Agents built inside get `LoopedQEnsemble` critics (SAC's and TD3's families)."""
    from jaxrl.agents import sac_family, td3

    with (
        mock.patch.object(sac_family, "QEnsemble", LoopedQEnsemble),
        mock.patch.object(td3, "QEnsemble", LoopedQEnsemble),
    ):
        yield


def make_agent(case: OfflineCase, looped: bool = False):
    from jaxrl import agents

    spec = agents.get(case.algo)
    config = spec.config_cls(**case.agent)
    with looped_critics() if looped else contextlib.nullcontext():
        return spec.make(config)


def dataset(rows: int, key: jax.Array) -> Any:
    """A full replay buffer [rows, 1] of random, well-formed transitions on the device, as
    `jaxrl.loops.offline.dataset_buffer` lays a dataset out (episodes of 1,000 steps)."""
    from jaxrl import replay
    from jaxrl.types import Transition

    k1, k2, k3, k4 = jax.random.split(key, 4)
    done = (jnp.arange(rows) % 1000 == 999).astype(jnp.float32)
    data = Transition(
        obs=jax.random.normal(k1, (rows, OBS_SIZE)),
        action=jax.random.uniform(k2, (rows, ACTION_SIZE), minval=-1, maxval=1),
        reward=jax.random.normal(k3, (rows,)),
        next_obs=jax.random.normal(k4, (rows, OBS_SIZE)),
        terminated=jnp.zeros(rows),
        done=done,
    )
    data = jax.tree.map(lambda x: x[:, None], data)
    return replay.ReplayBuffer(data, jnp.zeros((), jnp.int32), jnp.asarray(rows, jnp.int32))


def make_program(case: OfflineCase, agent):
    """`program(agent_state, dataset, key) -> agent_state`: `case.iterations` iterations of the
    offline loop's `learn` (`updates_per_step` updates each)."""
    from jaxrl import normalization, sharding
    from jaxrl.config import TrainConfig
    from jaxrl.loops.base import resolve_config
    from jaxrl.loops.offpolicy import make_learn

    config = resolve_config(TrainConfig(algo=case.algo, batch_size=case.batch_size), agent)
    learn = make_learn(config, agent, sharding.UNSHARDED)
    stats = normalization.init(OBS_SIZE)

    def program(agent_state, data, key):
        def iteration(carry, _):
            state, key = carry
            key, learn_key = jax.random.split(key)
            state, _ = learn(state, data, stats, learn_key, config.gamma)
            return (state, key), None

        (state, _), _ = jax.lax.scan(iteration, (agent_state, key), None, case.iterations)
        return state

    return program, case.iterations * config.updates_per_step


def measure(case: OfflineCase, variant: str, seeds: int, data, repeats: int) -> dict:
    agent = make_agent(case, looped=variant == "looped")
    program, updates = make_program(case, agent)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    init = functools.partial(agent.init, obs_size=OBS_SIZE, action_size=ACTION_SIZE)
    if seeds == 1:
        state, key = jax.jit(init)(keys[0]), keys[0]
    else:
        state, key = jax.jit(jax.vmap(init))(keys), keys
        program = jax.vmap(program, in_axes=(0, None, 0))
    tick = time.perf_counter()
    compiled = jax.jit(program, donate_argnums=0).lower(state, data, key).compile()
    compile_seconds = time.perf_counter() - tick
    state = jax.block_until_ready(compiled(state, data, key))  # warm-up
    times = []
    for _ in range(repeats):
        tick = time.perf_counter()
        state = jax.block_until_ready(compiled(state, data, key))
        times.append(time.perf_counter() - tick)
    seconds = statistics.median(times)
    rate = updates / seconds
    return {
        "case": case.name,
        "algo": case.algo,
        "variant": variant,
        "seeds": seeds,
        "batch_size": case.batch_size,
        "agent": case.agent,
        "updates_per_call": updates,
        "compile_seconds": round(compile_seconds, 2),
        "seconds_per_call": round(seconds, 4),
        "updates_per_second": round(rate, 2),
        "seed_updates_per_second": round(rate * seeds, 2),
        "published_updates": case.published_updates,
        "published_hours": round(case.published_updates / rate / 3600, 2),
        "source": case.source,
    }


def main(argv: list[str] | None = None) -> int:
    from jaxrl.benchmarks.case import append_records, machine

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="case names, comma-separated (all if empty)")
    parser.add_argument("--variants", default="vmapped,looped,seeds")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the `seeds` variant")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per variant")
    parser.add_argument("--rows", type=int, default=DATASET_ROWS, help="dataset rows")
    parser.add_argument("--out", help="JSON-lines file to append to")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - {c.name for c in CASES})
    if unknown:
        parser.error(f"--only: no case {', '.join(unknown)} (cases: "
                     f"{', '.join(c.name for c in CASES)})")  # fmt: skip
    variants = args.variants.split(",")
    if set(variants) - {"vmapped", "looped", "seeds"}:
        parser.error(f"--variants: {args.variants}; choose from vmapped, looped, seeds")
    data = dataset(args.rows, jax.random.PRNGKey(1))
    rows = []
    for case in (c for c in CASES if not names or c.name in names):
        for variant in variants:
            seeds = args.seeds if variant == "seeds" else 1
            row = measure(case, variant, seeds, data, args.repeats)
            row.update(dataset_rows=args.rows, obs_size=OBS_SIZE, action_size=ACTION_SIZE)
            print(json.dumps(row), flush=True)
            rows.append({**row, "machine": machine()})
    if args.out:
        append_records(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
