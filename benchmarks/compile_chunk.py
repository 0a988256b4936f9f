"""What one chunk program and the initial-state program cost to compile, by JAX's own compile
events, with the persistent cache off (issue 39: the simulator once per program).

    python -m jaxrl.benchmarks.compile_chunk sac_dmc fast_td3_playground ppo_dmc \
        --modes own shared --out benchmarks/results/compile-chunk-cpu.jsonl

For each preset and each `eval_simulator` mode, in a fresh process each (so no program is
shared between them): the preset's trainer is built, its initial state's shapes taken with
`jax.eval_shape`, and its chunk traced, lowered and compiled, nothing run. One JSON line per
(preset, mode): the chunk's compile events (trace, lower, XLA), the size of its StableHLO, and,
with `--init`, the initial-state program's compile too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def measure(preset: str, mode: str, init: bool) -> dict:
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    import jaxrl
    from jaxrl import agents
    from jaxrl.benchmarks.case import CompileClock, machine
    from jaxrl.run import driver

    config, agent_config = jaxrl.preset(preset, eval_simulator=mode)
    config = driver.with_algorithm(config, agent_config)
    trainer = jaxrl.make_train(config, agents.get(config.algo).make(agent_config))
    state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
    clock = CompileClock()
    tick = time.perf_counter()
    lowered = jax.jit(trainer.chunk).lower(state)
    text = lowered.as_text()
    lowered.compile()
    record = {
        "preset": preset,
        "eval_simulator": mode,
        "env": config.env,
        "chunk_wall_seconds": time.perf_counter() - tick,
        **clock.record(),
        "stablehlo_chars": len(text),
        "machine": machine(),
    }
    if init:
        clock = CompileClock()
        jax.jit(trainer.init).lower(jax.random.PRNGKey(0)).compile()
        record["init"] = clock.record()
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("presets", nargs="+")
    parser.add_argument("--modes", nargs="+", default=["own", "shared"])
    parser.add_argument("--init", action="store_true", help="also the initial-state program")
    parser.add_argument("--out", help="JSON lines appended here (default: printed only)")
    parser.add_argument("--one", nargs=2, metavar=("PRESET", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # the child process: one measurement, one line on stdout
        print(json.dumps(measure(*args.one, args.init)))
        return 0
    for preset in args.presets:
        for mode in args.modes:
            command = [sys.executable, "-m", "jaxrl.benchmarks.compile_chunk", "x", "--one"]
            command += [preset, mode] + (["--init"] if args.init else [])
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            line = done.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as out:
                    out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
