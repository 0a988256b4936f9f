"""Training throughput against the simulator's own limit, one JSON line per case.

    python -m jaxrl.benchmarks.throughput --preset ppo_dmc --num-envs 4096 --steps 20000000 \
        --out benchmarks/results/throughput.jsonl

For the preset's env at `num_envs`, it measures
- the simulator limit: env-steps/s of the same vectorised env (auto-reset included) stepped with
  uniform random actions inside one compiled `lax.scan`, no learning (compile timed apart);
- training: `jaxrl.train` with the preset at that `num_envs`: compile seconds (to the first
  chunk), training env-steps/s (evaluations included, as a user sees it), final eval return;
and writes both with the machine's facts. The first piece of the wall-clock suite (issue 5).
"""

from __future__ import annotations

import argparse
import json

from jaxrl import envs
from jaxrl.benchmarks.case import append_records, machine, simulator_limit
from jaxrl.config import resolve
from jaxrl.run import driver


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON-lines file to append to")
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--skip-limit", action="store_true", help="no simulator-limit run")
    args, train_argv = parser.parse_known_args(argv)
    train_config, agent_config, _ = resolve.build_configs(train_argv)
    envs.import_modules(train_config.env_imports)
    record = {
        "case": f"{train_config.algo}/{train_config.env}/{train_config.num_envs}",
        "algo": train_config.algo,
        "env": train_config.env,
        "num_envs": train_config.num_envs,
        "machine": machine(),
    }
    if not args.skip_limit:
        record["limit"] = simulator_limit(
            train_config.env, train_config.num_envs, **train_config.env_options
        )
        print(json.dumps(record["limit"]), flush=True)
    if not args.skip_training:
        result = driver.train(train_config, agent_config, None, compile_cache=False)
        throughput = result.history[-1]["env_steps"] / result.train_seconds
        record["training"] = {
            "compile_seconds": result.compile_seconds,
            "train_seconds": result.train_seconds,
            "env_steps": result.history[-1]["env_steps"],
            "env_steps_per_second": throughput,
            "eval_returns": [row["eval_return"] for row in result.history],
            "eval_env_steps": [row["env_steps"] for row in result.history],
        }
        if "limit" in record:
            limit = record["limit"]["env_steps_per_second"]
            record["training"]["fraction_of_limit"] = throughput / limit
    append_records(args.out, [record])
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
