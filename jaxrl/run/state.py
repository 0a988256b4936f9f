"""A run's first state: of its seed, or of every member of a grid stacked (each setting checked
to give a state of the same structure), placed on the run's devices once its memory was
checked."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl import agents, grid
from jaxrl.errors import ConfigError
from jaxrl.run import programs
from jaxrl.run.resources import check_memory, run_devices, run_shardings


def member_settings(
    trainer, agent_config: Any, run_grid: grid.Grid | None, networks: Any = None
) -> list | None:
    """(agent, config) of each setting of the grid, checked: each config as its own run's
    would be, and each state of the same structure as the trainer's (a setting that would
    change the program, e.g. AdamW's decay against none, is refused by name). `networks`:
    the caller's, where the run has them (`agents.build`)."""
    if run_grid is None:
        return None
    if not run_grid.axes:  # seeds alone
        return [(trainer.agent, trainer.config)]
    key = jax.random.PRNGKey(0)
    like = jax.eval_shape(trainer.init, key)
    members = []
    for setting in run_grid.settings:
        config, member_agent_config = grid.member_configs(setting, trainer.config, agent_config)
        member = (agents.build(config.algo, member_agent_config, networks), config)
        shape = jax.eval_shape(lambda k, m=member: trainer.init(k, m), key)
        if jax.tree.structure(shape) != jax.tree.structure(like) or any(
            a.shape != b.shape or a.dtype != b.dtype
            for a, b in zip(jax.tree.leaves(shape), jax.tree.leaves(like), strict=True)
        ):
            raise ConfigError(
                f"--vmap setting {grid.Grid.label(setting)} changes the program (its state "
                "differs in structure, e.g. AdamW's weight decay against none, or PPO's "
                "gradient clipping against none), so it cannot train inside one program with "
                "the others; use jaxrl sweep for it"
            )
        members.append(member)
    return members


def initial_state(
    trainer,
    run_grid: grid.Grid | None,
    members: list | None = None,
    early: Any = None,
    store: programs.Store = programs.NONE,
):
    """The run's first state: of `config.seed`, or of every member stacked (vmapped init of
    each setting's seeds, setting-major), placed on the run's devices (`run_shardings`).
    `early` (`chunks.Chunks`): handed the state's shapes as soon as they are known, before
    its programs compile, so that the chunk can compile beside them. `store`: the store of
    compiled programs, which keeps the envs' reset where it keeps the run's programs."""
    if run_grid is None:
        init, key = trainer.init, jax.random.PRNGKey(trainer.config.seed)
    else:
        key = jnp.stack([jax.random.PRNGKey(seed) for seed in run_grid.seeds])

        def init(keys, env_state=None):
            states = [
                jax.vmap(lambda k, e, m=member: trainer.init(k, m, e))(keys, env_state)
                for member in members
            ]
            return jax.tree.map(lambda *xs: jnp.concatenate(xs), *states)

    if store.keeps and trainer.reset is not None:
        return _stored_initial_state(trainer, run_grid, init, key, early, store)

    # Traced once: its shapes for the memory check, then lowered as it is (an eval_shape first
    # would trace the init a second time, part of a re-run's compile clock).
    traced = jax.jit(init).trace(key)
    shapes = getattr(traced, "out_info", None)
    if shapes is None:  # a jax whose Traced has no out_info: its shapes from a second trace
        shapes = jax.eval_shape(init, key)
    check_memory(shapes, run_devices(trainer))  # before anything of it is allocated
    if early is not None:
        early.start(shapes)
    if trainer.place is not None:  # an actor/learner split: parts on different devices
        return trainer.place(run_once(traced, key))
    if trainer.data.mesh is None:  # the default device
        return run_once(traced, key)
    shardings = run_shardings(trainer, shapes, run_grid)  # over a mesh, from the state's shapes
    return run_once(jax.jit(init, out_shardings=shardings), key)


def _stored_initial_state(trainer, run_grid, init, key, early, store):
    """`initial_state`'s state, as two programs: the training envs' reset (`Trainer.reset`),
    free of the run's settings and so kept in the store of compiled programs
    (`jaxrl.run.programs`) for a re-run with other ones, then the rest of `init`, given the
    reset's states. The same state as `init` in one program gives. Where `early` wants the
    state's shapes first (the chunk will compile: `EarlyChunk.wanted`), the reset is lowered
    before it is compiled or loaded, and its shapes taken from that."""
    reset = trainer.reset if run_grid is None else jax.vmap(trainer.reset)
    kind = "reset" if run_grid is None else "reset-vmapped"
    lower, compiled = (lambda: jax.jit(reset).lower(key)), None
    if early is not None and early.wanted:  # the reset's shapes before its compile
        lowered = lower()
        lower, env_shapes = (lambda: lowered), lowered.out_info
    else:
        compiled = store.load_or_compile(kind, (key,), lower, _compile_once)
        env_shapes = compiled.out_info
    # Traced against the reset's shapes: the whole state's shapes for the memory check
    # before either program allocates anything, and for the chunk's compile, which then
    # starts before the reset's (`early`).
    traced = jax.jit(lambda k, e: init(k, env_state=e)).trace(key, env_shapes)
    check_memory(traced.out_info, run_devices(trainer))
    if early is not None:
        early.start(traced.out_info)
    if compiled is None:
        compiled = store.load_or_compile(kind, (key,), lower, _compile_once)
    return _compile_once(traced.lower())(key, compiled(key))


def _compile_once(lowered):
    """`lowered` compiled with `RUN_ONCE_OPTIONS` (see `run_once`)."""
    return compile_with_options(lowered, RUN_ONCE_OPTIONS)


def compile_with_options(lowered, by_backend: dict[str, dict]):
    """`lowered` compiled with the XLA compile options `by_backend` holds for the backend it
    runs on (`jax.default_backend()`: "cpu", "gpu", ...); with XLA's defaults on a backend it
    holds none for, or where this XLA does not know the options."""
    options = by_backend.get(jax.default_backend())
    if options:
        try:
            return lowered.compile(compiler_options=options)
        except Exception as error:  # an XLA without these options: its defaults, below
            if "option" not in str(error).lower():
                raise
    return lowered.compile()


# XLA:CPU options for a program that runs once (the initial state), where compile time is all
# that counts: no fusion emitters, no LLVM optimisation. On Playground's CartpoleBalance the
# init program (MJX reset, agent and buffer init) then compiles in 1.8 s instead of 5.2 s and
# runs in 28 ms instead of 17 ms. The chunk program keeps XLA's defaults: these options slow
# its training steps by a third.
RUN_ONCE_OPTIONS = {
    "cpu": {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0}
}


def run_once(jitted, *args):
    """Calls `jitted(*args)`, compiled with `RUN_ONCE_OPTIONS` on CPU; with XLA's defaults
    elsewhere, or where this XLA does not know the options. `jitted` may be traced already
    (`jax.jit(f).trace(*args)`), then lowered as it is."""
    lowered = jitted.lower() if isinstance(jitted, jax.stages.Traced) else jitted.lower(*args)
    return _compile_once(lowered)(*args)


def check_init_from(config) -> tuple | None:
    """(checkpoint folder, step) of `config.init_from`'s newest checkpoint, checked to be a run
    of the same algorithm (ConfigError naming --init-from otherwise); None without one. Before
    anything compiles."""
    if config.init_from is None:
        return None
    import pathlib

    from jaxrl import checkpoint
    from jaxrl.run import runs

    where = f"--init-from {config.init_from}"
    try:
        saved = runs.read_config_json(config.init_from)
        directory = pathlib.Path(config.init_from) / "checkpoints"
        step = checkpoint.pick(directory)
    except (OSError, ValueError) as error:  # RunError and CheckpointError are ValueErrors
        raise ConfigError(f"{where}: {error}") from None
    algo = saved.get("train", {}).get("algo")
    if algo != config.algo:
        raise ConfigError(f"{where}: a run of {algo}, not of {config.algo}")
    return directory, step


def initialized_from(source: tuple | None, state: Any, run_grid: grid.Grid | None) -> Any:
    """`state` with the agent and observation statistics of checkpoint `source`
    (`check_init_from`'s), the rest (envs, replay, keys) its own. A run of one seed starts
    every member of a grid; a grid's checkpoint starts a grid of as many members."""
    if source is None:
        return state
    from jaxrl import checkpoint

    directory, step = source
    like_agent, like_stats = state.agent, state.obs_stats
    members = None if run_grid is None else len(run_grid)
    meta, _ = checkpoint.read_meta(directory, step)
    theirs = meta.get("seeds")
    if members is not None and theirs is None:  # one seed's, broadcast to every member
        like_agent, like_stats = jax.tree.map(lambda x: x[0], (like_agent, like_stats))
    try:
        agent, stats = checkpoint.restore_policy(directory, step, like_agent, like_stats)
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"--init-from {directory.parent}: its checkpoint {step} does not fit this run "
            f"(another network size, grid or observation size?): {error}"
        ) from None
    if members is not None and theirs is None:
        agent, stats = jax.tree.map(
            lambda x: jnp.broadcast_to(x, (members, *x.shape)), (agent, stats)
        )
    return state.replace(agent=agent, obs_stats=stats)
