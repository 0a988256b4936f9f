"""What an update costs and how fast it runs against the hardware (issue 39's `gpu-speed`),
and how many envs fit in a device's memory.

- `matmul_flops(fn, *args)`: the floating-point operations of the matrix products a function
  runs, counted from its jaxpr. Written here because XLA's `cost_analysis()` counts the body of a
  while loop once, whatever its trip count (a 10-step `lax.scan` of a matmul reports the FLOPs of
  one), and PPO's update is a scan of epochs over a scan of minibatches: XLA's figure would be
  512 times too low at Playground's settings. Only products are counted (2 M N K per
  `dot_general`, batch dimensions included); they are what the card's tensor cores run, and
  the fraction of its matmul peak is the figure the issue asks for. Elementwise work is left out.
- `update_speed(trainer)`: one agent update compiled alone at the run's sizes, on made-up but
  well-formed data: its product FLOPs, seconds, FLOP/s, and XLA's memory figures.
- `brax_ppo_update_speed(settings, ...)`: the same for Brax's PPO update at Brax's settings
  (`brax_ppo_update`: its own loss, gradients and optimiser in its training step's loops), the
  peer's side of the question whether jaxrl's update or the rest of its loop is behind Brax's.
- `kernel_counts(hlo_text)`: the kernels a compiled program launches per call, from XLA's
  optimised HLO: its fusions, library calls and unfused ops, loop bodies times their trip
  counts. An update whose time divided by its kernels is a few microseconds is bound by the
  kernels' number, not their work.
- `matmul_peak(dtype)`: the dense product rate this device reaches on one large square product,
  the yardstick the update's FLOP/s is divided by (measured, not a datasheet figure: the same
  card's sustained rate depends on clocks and power).
- `memory_per_env(argv)`: bytes of the run's state and of the data one update learns from, by
  `jax.eval_shape` at two env counts (nothing allocated, nothing compiled), and the largest env
  count whose state and data fit a memory budget. A lower bound on the program's need: XLA's
  temporaries (activations, the simulator's work arrays) come on top; the GPU records give the
  measured peak beside it.
"""

from __future__ import annotations

import collections
import functools
import math
import re
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.benchmarks.profile import learning_data, median_seconds


def _size(shape) -> int:
    return math.prod(shape) if shape else 1


def _dot_flops(eqn) -> int:
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    out = eqn.outvars[0].aval.shape
    return 2 * _size(out) * _size([lhs[d] for d in lhs_contract])


def _jaxpr_flops(jaxpr) -> tuple[int, int]:
    """(product FLOPs, while loops counted once) of a jaxpr, scan bodies times their length,
    a cond's costliest branch."""
    total, whiles = 0, 0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            total += _dot_flops(eqn)
        elif name == "scan":
            inner, w = _jaxpr_flops(eqn.params["jaxpr"].jaxpr)
            total += eqn.params["length"] * inner
            whiles += w
        elif name == "cond":
            counted = [_jaxpr_flops(b.jaxpr) for b in eqn.params["branches"]]
            total += max(c[0] for c in counted)
            whiles += max(c[1] for c in counted)
        elif name == "while":
            inner, w = _jaxpr_flops(eqn.params["body_jaxpr"].jaxpr)
            total += inner
            whiles += w + 1
        else:  # pjit, custom_jvp/vjp, remat, shard_map, ...: their sub-jaxprs once
            for value in eqn.params.values():
                for sub in value if isinstance(value, (list, tuple)) else (value,):
                    inner = getattr(sub, "jaxpr", None)
                    if inner is not None and hasattr(inner, "eqns"):
                        flops, w = _jaxpr_flops(inner)
                    elif hasattr(sub, "eqns"):
                        flops, w = _jaxpr_flops(sub)
                    else:
                        continue
                    total += flops
                    whiles += w
    return total, whiles


def matmul_flops(fn: Callable, *args) -> dict:
    """Product FLOPs of `fn(*args)`, from its jaxpr: {"flops", "while_loops"} (loops whose
    bodies were counted once, their trip count unknown at trace time; 0 for jaxrl's updates)."""
    flops, whiles = _jaxpr_flops(jax.make_jaxpr(fn)(*args).jaxpr)
    return {"flops": flops, "while_loops": whiles}


# Instructions of an optimised HLO computation that launch no kernel of their own.
_FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while", "conditional",
         "call", "after-all", "opt-barrier", "partition-id", "replica-id", "add-dependency",
         "domain", "copy-done", "async-done", "send-done", "recv-done", "all-reduce-done",
         "all-gather-done", "collective-permute-done"}  # fmt: skip
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) \(.*\{$")
_OPCODE = re.compile(r"^\s*(?:ROOT )?%?[\w.\-]+ = .*? ([a-z][a-z0-9\-]*)\(")


def kernel_counts(hlo_text: str, branch: str = "costliest") -> dict:
    """Kernels a compiled program launches per call, read from its optimised HLO
    (`compiled.as_text()`): every instruction of the entry computation, of loop bodies and
    conditions, of conditional branches and of called computations that is not free (`_FREE`:
    parameters, tuples, bitcasts, control flow itself) counts one (a fusion or a library call
    is one kernel; what it calls is not descended into); a while loop counts its body and
    condition times its known trip count (once where XLA knows none: "unknown_trips"); a
    conditional its costliest branch, or with `branch="cheapest"` its cheapest (an auto-reset's
    on a step where no env finishes). Returns {"per_call", "copies_per_call", "loops":
    [{"body", "trips", "kernels_per_trip", "copies_per_trip", "sources", "conditionals"}] (per
    trip counting what nested loops run too; copies: the `copy` instructions among the
    kernels, which XLA's copy insertion adds, e.g. for an operand that a conditional's branch
    passes through; sources: the body's own commonest kernels by the last two parts of their
    jax op names, e.g. "Dense_3/dot_general"; conditionals: each conditional of the body's
    own, as its branches' (kernels, copies)), "unknown_trips"}.
    An estimate: XLA:GPU may run some as command buffers (CUDA graphs), and a fusion's kernel
    count can differ; but it counts the same way for two programs on one backend.

    Written here rather than taken from a library: jax and XLA report a program's FLOPs and
    bytes (`cost_analysis`, loop bodies once), not its kernels."""
    if branch not in ("costliest", "cheapest"):
        raise ValueError(f"branch must be 'costliest' or 'cheapest', not {branch!r}")
    pick = max if branch == "costliest" else min
    computations: dict[str, list[str]] = {}
    entry, current = None, None
    for line in hlo_text.splitlines():
        match = _COMPUTATION.match(line)
        if match:
            current = match.group(1)
            computations[current] = []
            if line.startswith("ENTRY"):
                entry = current
        elif line.startswith("}"):
            current = None
        elif current is not None:
            computations[current].append(line)
    loops: dict[str, dict] = {}  # by body
    calls: dict[str, list[tuple[str, int]]] = {}  # computation -> (callee, times per call)
    sources: dict[str, collections.Counter] = {}  # computation -> its kernels' op names
    branches: dict[str, list] = {}  # computation -> its conditionals' (kernels, copies) by branch
    unknown = [0]

    @functools.cache
    def count(name: str) -> tuple[int, int]:  # (kernels, copies) per call of `name`
        total, copies, callees = 0, 0, []
        for line in computations.get(name, ()):
            opcode = _OPCODE.match(line)
            if opcode is None:
                continue
            op = opcode.group(1)
            if op == "while":
                body = re.search(r"body=%?([\w.\-]+)", line).group(1)
                condition = re.search(r"condition=%?([\w.\-]+)", line).group(1)
                trips = re.search(r'"known_trip_count":\{"n":"(\d+)"', line)
                if trips is None:
                    unknown[0] += 1
                n = int(trips.group(1)) if trips else 1
                per_trip = [a + b for a, b in zip(count(body), count(condition), strict=True)]
                loops[body] = {"body": body, "trips": n if trips else None,
                               "kernels_per_trip": per_trip[0],
                               "copies_per_trip": per_trip[1]}  # fmt: skip
                callees += [(body, n), (condition, n)]
                total, copies = total + n * per_trip[0], copies + n * per_trip[1]
            elif op == "conditional":
                names = re.search(r"branch_computations=\{([^}]*)\}", line)
                branch_names = (
                    [b.strip().lstrip("%") for b in names.group(1).split(",")]
                    if names
                    else re.findall(r"(?:true|false)_computation=%?([\w.\-]+)", line)
                )
                options = [count(b) for b in branch_names]
                branches.setdefault(name, []).append(options)
                taken = pick(options, default=(0, 0))
                total, copies = total + taken[0], copies + taken[1]
                callees += [(b, 1) for b in branch_names]
            elif op == "call":
                callee = re.search(r"to_apply=%?([\w.\-]+)", line).group(1)
                called = count(callee)
                total, copies = total + called[0], copies + called[1]
                callees.append((callee, 1))
            elif op not in _FREE:
                total += 1
                copies += op == "copy"
                source = re.search(r'op_name="([^"]*)"', line)
                path = source.group(1).split("/") if source else ["?"]
                sources.setdefault(name, collections.Counter())["/".join(path[-2:])] += 1
        calls[name] = callees
        return total, copies

    per_call, copies_per_call = count(entry) if entry is not None else (0, 0)
    # Trips per call of each loop's body: its own trips times those of the loops around it.
    runs: dict[str, int] = {}

    def spread(name: str, times: int) -> None:
        runs[name] = runs.get(name, 0) + times
        for callee, n in calls.get(name, ()):
            spread(callee, times * n)

    if entry is not None:
        spread(entry, 1)
    found = []
    for body, loop in loops.items():
        inner = any(other in _reachable(body, calls) for other in loops if other != body)
        common = sources.get(body, collections.Counter()).most_common(12)
        found.append(
            {
                **loop,
                "trips_per_call": runs.get(body, 0),
                "innermost": not inner,
                "sources": common,
                "conditionals": branches.get(body, []),
            }
        )
    return {
        "per_call": per_call,
        "copies_per_call": copies_per_call,
        "loops": found,
        "unknown_trips": unknown[0],
    }


def _reachable(name: str, calls: dict[str, list[tuple[str, int]]]) -> set[str]:
    """The computations `name` runs, directly or through others (`kernel_counts`)."""
    seen, stack = set(), [name]
    while stack:
        for callee, _ in calls.get(stack.pop(), ()):
            if callee not in seen:
                seen.add(callee)
                stack.append(callee)
    return seen


def heaviest_inner_loop(kernels: dict) -> dict | None:
    """Of `kernel_counts`' loops that hold no other, the one launching the most kernels per call
    (trips per call times kernels per trip): on a GPU, PPO's gradient step. On a CPU it is a
    loop inside that step (jax rolls threefry's rounds into a 5-trip loop there), so there
    `loops` holds the gradient step itself (the loop of num_minibatches trips)."""
    inner = [loop for loop in kernels["loops"] if loop["innermost"]]
    return max(
        inner, key=lambda loop: loop["trips_per_call"] * loop["kernels_per_trip"], default=None
    )


def matmul_peak(dtype: str = "bfloat16", n: int | None = None, repeats: int = 5) -> dict:
    """FLOP/s of one n x n x n product in `dtype` (float32 sums), after a warm-up call; n
    defaults to 8192 on accelerators, 1024 on a CPU."""
    if n is None:
        n = 1024 if jax.default_backend() == "cpu" else 8192
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), dtype)
    b = jax.random.normal(jax.random.PRNGKey(1), (n, n), dtype)
    product = jax.jit(lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32))
    jax.block_until_ready(product(a, b))
    seconds = median_seconds(lambda: product(a, b), repeats)
    return {"dtype": dtype, "n": n, "seconds": seconds, "flops_per_second": 2 * n**3 / seconds}


def agent_state_and_data(trainer, key):
    observation = trainer.observation
    state = trainer.agent.init(
        key, observation.actor_size, trainer.env.action_size, observation.critic_size
    )
    return state, learning_data(trainer, state, key)


def update_speed(trainer, seed: int = 0, repeats: int = 5) -> dict:
    """One update of `trainer`'s agent, compiled alone at the run's sizes: compile seconds,
    product FLOPs (`matmul_flops`), median seconds over `repeats` calls (each on the state the
    last one returned), FLOP/s, and XLA's memory figures of the program."""
    key = jax.random.PRNGKey(seed)
    state, data = agent_state_and_data(trainer, key)
    return _timed_update(trainer.agent.update, state, data, key, repeats)


def _timed_update(update: Callable, state: Any, data: Any, key: jax.Array, repeats: int) -> dict:
    """`update(state, data, key) -> (state, metrics)` compiled alone and timed (`update_speed`)."""
    counted = matmul_flops(update, state, data, key)
    tick = time.perf_counter()
    compiled = jax.jit(update).lower(state, data, key).compile()
    compile_seconds = time.perf_counter() - tick
    carry = [compiled(state, data, key)[0]]

    def step():
        carry[0], metrics = compiled(carry[0], data, key)
        return metrics

    jax.block_until_ready(step())
    seconds = median_seconds(step, repeats)
    memory = compiled.memory_analysis()
    kernels = kernel_counts(compiled.as_text())
    return {
        "compile_seconds": compile_seconds,
        "flops_per_update": counted["flops"],
        "while_loops": counted["while_loops"],
        "seconds_per_update": seconds,
        "flops_per_second": counted["flops"] / seconds,
        "kernels_per_update": kernels["per_call"],
        "heaviest_inner_loop": heaviest_inner_loop(kernels),  # PPO's on a GPU: a gradient step
        "seconds_per_kernel": seconds / kernels["per_call"] if kernels["per_call"] else None,
        "temp_bytes": getattr(memory, "temp_size_in_bytes", None),
        "argument_bytes": getattr(memory, "argument_size_in_bytes", None),
    }


def brax_ppo_update(settings: dict, obs_size: int, action_size: int, seed: int = 0):
    """Brax's PPO update, as one of its `ppo.train`'s training steps runs it after the rollout:
    the normaliser's update, then `num_updates_per_batch` epochs of `num_minibatches` gradient
    steps through Brax's own networks, `compute_ppo_loss`, `gradients.loss_and_pgrad` and Adam
    (clipped where `max_grad_norm` is set). Returns `(update, state, data, key)` for
    `_timed_update`: `update(state, data, key)`, state (normaliser, optimiser state, parameters),
    and a rollout of Brax's layout, [batch_size x num_minibatches, unroll_length], random but
    well formed (no episode ends, as `learning_data`'s). `sgd_step` and `minibatch_step` are
    closures inside Brax's train(), so they are written out here as Brax 0.14 writes them
    (`brax/training/agents/ppo/train.py`; the adaptive-KL schedule and pixel augmentation left
    out); everything else is Brax's own code."""
    import optax
    from brax.training import gradients
    from brax.training import types as brax_types
    from brax.training.acme import running_statistics, specs
    from brax.training.agents.ppo import losses
    from brax.training.agents.ppo import networks as ppo_networks

    sizes = {k: tuple(settings[k]) for k in ("policy_hidden_layer_sizes",
             "value_hidden_layer_sizes") if k in settings}  # fmt: skip
    network = ppo_networks.make_ppo_networks(
        obs_size, action_size, preprocess_observations_fn=running_statistics.normalize, **sizes
    )
    optimizer = optax.adam(learning_rate=settings.get("learning_rate", 1e-4))
    if settings.get("max_grad_norm") is not None:
        optimizer = optax.chain(optax.clip_by_global_norm(settings["max_grad_norm"]), optimizer)
    loss_fn = functools.partial(
        losses.compute_ppo_loss,
        ppo_network=network,
        entropy_cost=settings.get("entropy_cost", 1e-4),
        discounting=settings.get("discounting", 0.9),
        reward_scaling=settings.get("reward_scaling", 1.0),
        gae_lambda=settings.get("gae_lambda", 0.95),
        clipping_epsilon=settings.get("clipping_epsilon", 0.3),
        normalize_advantage=settings.get("normalize_advantage", True),
        vf_coefficient=settings.get("vf_loss_coefficient", 0.5),
    )
    loss_and_pgrad = gradients.loss_and_pgrad(loss_fn, pmap_axis_name=None, has_aux=True)
    minibatches, epochs = settings["num_minibatches"], settings["num_updates_per_batch"]

    def minibatch_step(carry, data, normalizer_params):
        optimizer_state, params, key = carry
        key, key_loss = jax.random.split(key)
        (_, metrics), grads = loss_and_pgrad(params, normalizer_params, data, key_loss)
        params_update, optimizer_state = optimizer.update(grads, optimizer_state)
        return (optimizer_state, optax.apply_updates(params, params_update), key), metrics

    def sgd_step(carry, _, data, normalizer_params):
        optimizer_state, params, key = carry
        key, key_perm, key_grad = jax.random.split(key, 3)

        def convert_data(x):
            x = jax.random.permutation(key_perm, x)
            return jnp.reshape(x, (minibatches, -1) + x.shape[1:])

        (optimizer_state, params, _), metrics = jax.lax.scan(
            functools.partial(minibatch_step, normalizer_params=normalizer_params),
            (optimizer_state, params, key_grad),
            jax.tree.map(convert_data, data),
            length=minibatches,
        )
        return (optimizer_state, params, key), metrics

    def update(state, data, key):
        normalizer, optimizer_state, params = state
        normalizer = running_statistics.update(normalizer, data.observation)
        step = functools.partial(sgd_step, data=data, normalizer_params=normalizer)
        (optimizer_state, params, _), metrics = jax.lax.scan(
            step, (optimizer_state, params, key), (), length=epochs
        )
        return (normalizer, optimizer_state, params), metrics

    key = jax.random.PRNGKey(seed)
    keys = jax.random.split(key, 6)
    params = losses.PPONetworkParams(
        policy=network.policy_network.init(keys[0]), value=network.value_network.init(keys[1])
    )
    normalizer = running_statistics.init_state(specs.Array((obs_size,), jnp.float32))
    rows, steps = settings["batch_size"] * minibatches, settings["unroll_length"]
    obs = jax.random.normal(keys[2], (rows, steps, obs_size))
    logits = jax.random.normal(keys[3], (rows, steps, 2 * action_size))
    distribution = network.parametric_action_distribution
    raw_action = distribution.sample_no_postprocessing(logits, keys[4])
    zeros = jnp.zeros((rows, steps))
    data = brax_types.Transition(
        observation=obs,
        action=jnp.tanh(raw_action),
        reward=jax.random.normal(keys[5], (rows, steps)),
        discount=zeros + 1.0,
        next_observation=obs,
        extras={
            "state_extras": {"truncation": zeros},
            "policy_extras": {
                "raw_action": raw_action,
                "log_prob": distribution.log_prob(logits, raw_action),
                "distribution_params": logits,
            },
        },
    )
    return update, (normalizer, optimizer.init(params), params), data, key


def brax_ppo_update_speed(settings: dict, obs_size: int, action_size: int, seed: int = 0,
                          repeats: int = 5) -> dict:  # fmt: skip
    """Brax's PPO update (`brax_ppo_update`) compiled alone and timed as `update_speed` times
    jaxrl's: the peer's side of the update's speed at the same settings."""
    update, state, data, key = brax_ppo_update(settings, obs_size, action_size, seed)
    return _timed_update(update, state, data, key, repeats)


def tree_bytes(tree: Any) -> int:
    """Bytes of the arrays (or shape structs) of a tree."""
    return sum(_size(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def _footprint(argv: list[str], num_envs: int) -> dict:
    from jaxrl import agents
    from jaxrl.config import resolve
    from jaxrl.loops import make_train

    train_config, agent_config, _ = resolve.build_configs([*argv, "--num-envs", str(num_envs)])
    trainer = make_train(train_config, agents.get(train_config.algo).make(agent_config))
    key = jax.random.PRNGKey(0)
    state = jax.eval_shape(trainer.init, key)
    data = jax.eval_shape(lambda k: agent_state_and_data(trainer, k)[1], key)
    return {"state_bytes": tree_bytes(state), "data_bytes": tree_bytes(data)}


def memory_per_env(argv: list[str], budget_bytes: float, counts: tuple[int, int] = (64, 128)):
    """The run's state and learning-data bytes as a line in the env count (`jax.eval_shape` at
    `counts`: fixed + per_env x num_envs, exact for jaxrl's state, whose arrays are either per
    env or fixed), and the largest env count whose state and data fit `budget_bytes`. `argv`:
    `jaxrl train` flags (a --num-envs among them is overridden: the last one counts)."""
    low, high = (_footprint(argv, n) for n in counts)
    used = {n: f["state_bytes"] + f["data_bytes"] for n, f in zip(counts, (low, high), strict=True)}
    per_env = (used[counts[1]] - used[counts[0]]) / (counts[1] - counts[0])
    fixed = used[counts[0]] - per_env * counts[0]
    largest = int((budget_bytes - fixed) // per_env) if per_env > 0 else None
    return {
        "bytes_per_env": per_env,
        "fixed_bytes": fixed,
        "budget_bytes": budget_bytes,
        "largest_num_envs": largest,
        "at": {str(n): f for n, f in zip(counts, (low, high), strict=True)},
    }
