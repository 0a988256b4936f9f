"""Kernels a program launches on a GPU, counted on a machine without one: the program compiled
by XLA:GPU for an H100 (XLA's deviceless compile, `jax.experimental.topologies`), its optimised
HLO read by `speed.kernel_counts` (issue 39).

    pip install 'jax[cuda12]==<jax's version>'   # the CUDA plugin; no GPU or driver needed
    python -m jaxrl.benchmarks.gpu_kernels --out benchmarks/results/gpu-kernels.jsonl

On a GPU the PPO update and rollout at Playground's settings launch kernels too small to fill the
card (`benchmarks/notes/2026-11-28-gpu-kernels.md`), so their number is what their time follows, and
GPU time is scarce: this counts them, for jaxrl's programs and Brax's, at `suites.GPU_SPEED_PPO`'s
settings (Playground's CartpoleBalance PPO: 2048 envs, batch 1024 x 32, unroll 30, 16 epochs), and
`fast_td3_playground`'s chunk on CheetahRun, each chunk compiled with XLA's defaults and with
`chunks.CHUNK_OPTIONS`. Nothing runs: the counts are XLA:GPU's program, not its timings, and
without a GPU XLA skips autotuning (its default product kernels are counted; a fusion's
kernel count is the same). One JSON line per case:

- `ppo-update`, `ppo-update+mixed`, `brax-ppo-update`: one update (`speed.update_speed`'s and
  `speed.brax_ppo_update`'s programs); its loop is the gradient step (num_minibatches trips).
- `ppo-chunk-own`, `ppo-chunk-shared`, `fast_td3-chunk-own` (`+unroll2`: with
  `--unroll-updates 2`): a chunk; its loop is the env
  step (`_loop`), its kernels per trip with each conditional's cheapest branch (for the
  auto-reset, a step where no env finishes) and with its costliest, and each of its own
  conditionals' branches as (kernels, copies).
- `brax-ppo-rollout`: Brax's rollout of one training step (`acting.generate_unroll` through
  Playground's `wrap_for_brax_training`, num_minibatches x batch_size / num_envs unrolls).

Each record's `compile_seconds` is its case's whole time (building the trainer and, for a
chunk, both of its compiles), not one program's compile.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

# XLA's description of an H100 SXM (the device information XLA:GPU compiles for, as
# `jax.lib.xla_client.get_topology_for_devices(jax.devices()).target_config` reads it off a
# card; the values of XLA's own `gpu_specs/h100_sxm.txtpb`, with the cuDNN and CUDA versions
# of jax's CUDA 12 wheels). An H200 is the same chip with more memory.
H100_TARGET = """
gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 3352320000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 84978434048
  shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 7 }
runtime_version { major: 12 minor: 8 patch: 0 }
device_description_str: "NVIDIA H100 80GB HBM3"
"""

# The chunks: (algorithm, eval_simulator, more `jaxrl train` flags) by case name.
CHUNKS = {
    "ppo-chunk-own": ("ppo", "own", ()),
    "ppo-chunk-shared": ("ppo", "shared", ()),
    "fast_td3-chunk-own": ("fast_td3", "own", ()),
    "fast_td3-chunk-own+unroll2": ("fast_td3", "own", ("--unroll-updates", "2")),
}
CASES = ("ppo-update", "ppo-update+mixed", "brax-ppo-update", "brax-ppo-rollout", *CHUNKS)


class NoCudaPlugin(RuntimeError):
    """jax's CUDA plugin is not installed, so XLA:GPU cannot compile here."""


def gpu_target(spec: str = H100_TARGET):
    """A sharding on the one device of a deviceless GPU topology described by `spec`. The
    process must not have started a GPU backend (jax_platforms is set to "cpu" here)."""
    import jax
    from jax.experimental import topologies

    jax.config.update("jax_platforms", "cpu")
    try:
        topology = topologies.get_topology_desc(
            platform="cuda", target_config=spec, topology="1x1x1"
        )
    except Exception as error:  # no plugin: jax names no backend "cuda"
        raise NoCudaPlugin(
            "XLA:GPU's deviceless compile needs jax's CUDA plugin: pip install "
            f"'jax[cuda12]=={jax.__version__}' ({type(error).__name__}: {error})"
        ) from error
    return jax.sharding.SingleDeviceSharding(topology.devices[0])


def shapes_on(tree: Any, sharding) -> Any:
    """`tree`'s arrays (or shapes) as `ShapeDtypeStruct`s placed by `sharding`."""
    import jax
    import jax.numpy as jnp

    def like(x):
        return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x), sharding=sharding)

    return jax.tree.map(like, tree)


HLO_FOLDER: str | None = None  # where `compile_text` also writes each program (--hlo)


def compile_text(fn, args: tuple, sharding, options: dict | None = None, name: str = "") -> str:
    """The optimised HLO of `fn(*args)` compiled for `sharding`'s device, with XLA `options`
    (written to HLO_FOLDER/name.hlo.txt too where HLO_FOLDER is set)."""
    import os

    import jax

    lowered = jax.jit(fn).lower(*shapes_on(args, sharding))
    text = lowered.compile(compiler_options=options).as_text()
    if HLO_FOLDER:
        with open(os.path.join(HLO_FOLDER, f"{name or 'program'}.hlo.txt"), "w") as out:
            out.write(text)
    return text


def _loop(counts: dict, trips: int | None = None) -> dict | None:
    """The loop of `counts` (`speed.kernel_counts`) with `trips` trips, else a chunk's env step:
    of the loops whose body holds a conditional of its own (the auto-reset's), the one of most
    trips per call."""
    if trips is not None:
        loops = [loop for loop in counts["loops"] if loop["trips"] == trips]
        loops = [max(loops, key=lambda loop: loop["kernels_per_trip"])] if loops else []
    else:
        loops = [loop for loop in counts["loops"] if loop["conditionals"]]
    if not loops:
        return None
    loop = max(loops, key=lambda loop: (loop["trips_per_call"], loop["kernels_per_trip"]))
    keep = ("trips", "trips_per_call", "kernels_per_trip", "copies_per_trip", "conditionals")
    return {key: loop[key] for key in keep} | {"sources": loop["sources"][:8]}


def summarise(text: str, loop_trips: int | None = None, update_trips: int | None = None) -> dict:
    """Kernels per call and of the named loop (`_loop`), both branch policies; for a chunk
    (`update_trips`), also its loop of updates (off-policy: an iteration's updates; PPO: an
    epoch's minibatches), where XLA:GPU may copy the agent's state on every trip."""
    from jaxrl.benchmarks import speed

    out = {}
    for branch in ("cheapest", "costliest"):
        counts = speed.kernel_counts(text, branch=branch)
        out[branch] = {
            "per_call": counts["per_call"],
            "copies_per_call": counts["copies_per_call"],
            "loop": _loop(counts, loop_trips),
        }
        if update_trips is not None:
            out[branch]["update_loop"] = _loop(counts, update_trips)
    out["conditionals"] = text.count(" conditional(")
    out["unknown_trip_loops"] = counts["unknown_trips"]  # the same whichever branch
    return out


def _ppo_settings() -> tuple[Any, dict]:
    from jaxrl.benchmarks import suites

    ppo, brax = suites.gpu_speed_ppo()
    return ppo, dict(brax.peer)


def _jaxrl_trainer(case, extra: tuple[str, ...] = ()):
    from jaxrl import agents
    from jaxrl.benchmarks.case import jaxrl_argv
    from jaxrl.config import resolve
    from jaxrl.loops import make_train

    argv = jaxrl_argv(case) + list(extra)
    train_config, agent_config, _ = resolve.build_configs(argv)
    return make_train(train_config, agents.get(case.algo).make(agent_config))


def measure(name: str, sharding) -> list[dict]:
    """The records of case `name` (`CASES`)."""
    import jax

    from jaxrl.benchmarks import speed, suites
    from jaxrl.run import chunks

    ppo, settings = _ppo_settings()
    records = []

    def record(label: str, text: str, loop_trips: int | None, update_trips=None, **extra) -> None:
        records.append({"case": label, **summarise(text, loop_trips, update_trips), **extra})

    tick = time.perf_counter()
    if name.startswith("ppo-update"):
        extra = suites.MIXED if name.endswith("+mixed") else ()
        trainer = _jaxrl_trainer(ppo, extra)
        key = jax.random.PRNGKey(0)
        state, data = speed.agent_state_and_data(trainer, key)
        text = compile_text(trainer.agent.update, (state, data, key), sharding, name=name)
        record(name, text, settings["num_minibatches"])
    elif name == "brax-ppo-update":
        from jaxrl import envs

        env = envs.make(ppo.env)
        update, state, data, key = speed.brax_ppo_update(
            settings, env.observation_size, env.action_size
        )
        text = compile_text(update, (state, data, key), sharding, name=name)
        record(name, text, settings["num_minibatches"])
    elif name == "brax-ppo-rollout":
        fn, args = _brax_rollout(ppo.env, ppo.num_envs, settings)
        record(name, compile_text(fn, args, sharding, name=name), settings["unroll_length"])
    else:  # a chunk, with XLA's defaults and with jaxrl's options
        algo, mode, flags = CHUNKS[name]
        if algo == "fast_td3":
            from jaxrl.benchmarks.suites import jaxrl_case

            case = jaxrl_case("fast_td3", "playground/CheetahRun", "fast_td3_playground", 0.0)
        else:
            case = ppo
        trainer = _jaxrl_trainer(case, ("--eval-simulator", mode, *flags))
        state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
        if algo == "ppo":
            updates = settings["num_minibatches"]
        else:
            updates = trainer.config.updates_per_step
        for label, options in (("xla-defaults", None), ("chunk-options", chunks.CHUNK_OPTIONS)):
            gpu = options["gpu"] if options else None
            text = compile_text(trainer.chunk, (state,), sharding, gpu, name=f"{name}-{label}")
            record(name, text, None, updates, options=label, compile_options=gpu)
    for item in records:
        item["compile_seconds"] = round(time.perf_counter() - tick, 1)
    return records


def _brax_rollout(env_name: str, num_envs: int, settings: dict):
    """Brax's PPO rollout of one training step, Playground's wrapper around the task, Brax's
    networks (policy 4 x 32 and value 5 x 256, as `playground_ppo` leaves them)."""
    import jax
    import jax.numpy as jnp
    from brax.training import acting
    from brax.training.acme import running_statistics, specs
    from brax.training.agents.ppo import networks as ppo_networks
    from mujoco_playground import wrapper

    from jaxrl import envs

    jaxrl_env = envs.make(env_name)
    env = wrapper.wrap_for_brax_training(
        jaxrl_env.unwrapped, episode_length=settings["episode_length"],
        action_repeat=settings["action_repeat"],
    )  # fmt: skip
    obs_size, action_size = jaxrl_env.observation_size, jaxrl_env.action_size
    network = ppo_networks.make_ppo_networks(
        obs_size, action_size, preprocess_observations_fn=running_statistics.normalize
    )
    make_policy = ppo_networks.make_inference_fn(network)
    key = jax.random.PRNGKey(0)
    params = (
        running_statistics.init_state(specs.Array((obs_size,), jnp.float32)),
        network.policy_network.init(key),
        network.value_network.init(key),
    )
    unrolls = settings["batch_size"] * settings["num_minibatches"] // num_envs
    fields = ("truncation", "episode_metrics", "episode_done")

    def rollout(params, state, key):
        policy = make_policy(params)

        def unroll(carry, _):
            state, key = carry
            key, next_key = jax.random.split(key)
            state, data = acting.generate_unroll(
                env, state, policy, key, settings["unroll_length"], extra_fields=fields
            )
            return (state, next_key), data

        return jax.lax.scan(unroll, (state, key), (), length=unrolls)

    state = jax.eval_shape(env.reset, jax.random.split(key, num_envs))
    return rollout, (params, state, key)


def _commit() -> str | None:
    """The checkout's commit, "+" marking uncommitted changes; None outside a git checkout."""
    import pathlib
    import subprocess

    here = pathlib.Path(__file__).resolve().parent

    def git(*words: str) -> str:
        done = subprocess.run(["git", *words], cwd=here, capture_output=True, text=True)
        done.check_returncode()
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help=f"of {', '.join(CASES)} (default: all)")
    parser.add_argument("--out", help="append the records to this JSONL file")
    parser.add_argument("--label", help="a note kept in each record (what the code is)")
    parser.add_argument("--hlo", help="also write each program's optimised HLO to this folder")
    args = parser.parse_args(argv)
    global HLO_FOLDER
    HLO_FOLDER = args.hlo
    unknown = [name for name in args.cases if name not in CASES]
    if unknown:
        names = ", ".join(CASES)
        print(f"error: no such case {', '.join(unknown)}; cases: {names}", file=sys.stderr)
        return 2
    try:
        sharding = gpu_target()
    except NoCudaPlugin as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from jaxrl.benchmarks.case import append_records, machine

    for name in args.cases or CASES:
        records = measure(name, sharding)
        for record in records:
            record.update(target="H100 (deviceless)", commit=_commit(), machine=machine())
            if args.label:
                record["label"] = args.label
            print(json.dumps(record), flush=True)
        if args.out:
            append_records(args.out, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
