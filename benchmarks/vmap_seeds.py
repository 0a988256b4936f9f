"""The cost of training seeds together under `jax.vmap`, against one seed alone.

    python -m jaxrl.benchmarks.vmap_seeds --preset sac_pendulum --seeds 1,2,4,8 \
        --out benchmarks/results/vmap-seeds-cpu.jsonl

For each seed count S it builds the preset's training program, vmaps its chunk over S seeds
(`jax.vmap(trainer.chunk)` over `jax.vmap(trainer.init)` of seeds 0..S-1), compiles it (timed
apart) and runs `--chunks` chunks, timing each after a warm-up chunk. One JSON line per S:
compile seconds, seconds per chunk, env-steps/s over all seeds, and both as ratios to S = 1
(the cost of S seeds against one: S x 1.0 would be no gain over running them one by one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax


def measure(trainer, seeds: int, chunks: int) -> dict:
    keys = jax.vmap(jax.random.PRNGKey)(jax.numpy.arange(seeds))
    state = jax.jit(jax.vmap(trainer.init))(keys)
    tick = time.perf_counter()
    chunk = jax.jit(jax.vmap(trainer.chunk), donate_argnums=0).lower(state).compile()
    compile_seconds = time.perf_counter() - tick
    state, _ = jax.block_until_ready(chunk(state))  # warm-up: past the learning-starts switch
    times = []
    for _ in range(chunks):
        tick = time.perf_counter()
        state, metrics = jax.block_until_ready(chunk(state))
        times.append(time.perf_counter() - tick)
    per_chunk = statistics.median(times)
    steps = trainer.config.env_steps_per_chunk * seeds
    return {
        "seeds": seeds,
        "compile_seconds": round(compile_seconds, 2),
        "seconds_per_chunk": round(per_chunk, 4),
        "env_steps_per_second": round(steps / per_chunk, 1),
        "eval_return": [round(float(r), 2) for r in jax.device_get(metrics["eval_return"])],
    }


def main(argv: list[str] | None = None) -> int:
    from jaxrl import agents, envs, loops
    from jaxrl.benchmarks.case import append_records, machine
    from jaxrl.config import resolve

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,4,8", help="seed counts, e.g. 1,2,4,8")
    parser.add_argument("--chunks", type=int, default=3, help="timed chunks per count")
    parser.add_argument("--out", help="JSON-lines file to append to")
    args, train_argv = parser.parse_known_args(argv)
    config, agent_config, _ = resolve.build_configs(train_argv)
    envs.import_modules(config.env_imports)
    trainer = loops.make_train(config, agents.get(config.algo).make(agent_config))
    rows = []
    for count in (int(s) for s in args.seeds.split(",")):
        row = measure(trainer, count, args.chunks)
        base = rows[0] if rows else row
        row["compile_ratio"] = round(row["compile_seconds"] / base["compile_seconds"], 2)
        row["chunk_time_ratio"] = round(row["seconds_per_chunk"] / base["seconds_per_chunk"], 2)
        row.update(
            case=f"{config.algo}/{config.env}",
            num_envs=config.num_envs,
            env_steps_per_chunk=config.env_steps_per_chunk,
            machine=machine(),
        )
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "machine"}), flush=True)
    if args.out:
        append_records(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
