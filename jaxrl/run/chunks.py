"""The run's chunk programs, compiled or loaded: the seam between the runner and the store of
compiled programs. The driver hands the runner a `Chunks` (`Plan.chunks`), whose `online` and
`offline` give the programs to run; how they come (compiled by JAX, loaded from the store,
loading on a thread while the first state is built, or compiling beside it: `EarlyChunk`) is
this module's and the store's (`programs`), not the runner's."""

from __future__ import annotations

import contextlib
from typing import Any

import jax

from jaxrl.envs.wrappers import GRID_AXIS
from jaxrl.loops.base import evaluate_start, start_arguments
from jaxrl.run import background, program_key, programs
from jaxrl.run.resources import run_shardings
from jaxrl.run.state import RUN_ONCE_OPTIONS, compile_with_options


def chunk_program(trainer, run_grid) -> Any:
    """The chunk, vmapped over a grid's members under a named axis, so that envs can take a
    condition over all members (`envs.wrappers.any_member`) and keep a cond a cond."""
    return trainer.chunk if run_grid is None else jax.vmap(trainer.chunk, axis_name=GRID_AXIS)


def compile_chunk(trainer, state, run_grid, store: programs.Store = programs.NONE) -> Any:
    """The chunk program, compiled for `state` (vmapped over a grid's members), through
    `store` (loaded where it holds it)."""
    if trainer.compile_chunk is not None:  # several programs (jaxrl.loops.split)
        return trainer.compile_chunk(state)
    placed = {}
    if trainer.data.mesh is not None:  # the state keeps its shardings; metrics replicated
        placed["out_shardings"] = (
            run_shardings(trainer, state, run_grid),
            trainer.data.sharding(),
        )
    return store.load_or_compile(
        _chunk_kind(run_grid),
        (state,),
        lambda: _lower_chunk(trainer, run_grid, state, **placed),
        compile_chunk_lowered,
    )


def _lower_chunk(trainer, run_grid, state, **placed) -> Any:
    """The chunk program lowered for `state` (its buffers donated to the next state)."""
    return jax.jit(chunk_program(trainer, run_grid), donate_argnums=0, **placed).lower(state)


# XLA's copy insertion by region analysis, on CPU and on GPU: without it, a conditional whose
# branch passes an operand through unchanged copies it every time (the auto-reset's `cond`
# copied the env states on every env step, `learn_if`'s skipping branch the agent's state).
# With it chunks run faster on CPU, and on a GPU, where each copy is a kernel of its own,
# launch fewer kernels (benchmarks/notes/2026-12-06-code-figures.md); the computation and its
# numbers are the same (tests/run/test_program_store.py). Off by default in XLA.
CHUNK_OPTIONS = {
    "cpu": {"xla_cpu_copy_insertion_use_region_analysis": True},
    "gpu": {"xla_gpu_copy_insertion_use_region_analysis": True},
}


def compile_start_evaluation(trainer, state, run_grid, store=programs.NONE) -> Any:
    """`evaluate(state) -> metrics`: the evaluation of the run's first state before its first
    chunk (`loops.base.evaluate_start`, vmapped over a grid's members as the chunk is),
    compiled for `state` through `store` as a program that runs once (`state.RUN_ONCE_OPTIONS`:
    less compile for a slower run, benchmarks/notes/2026-12-07-door-speed-step-0.md). An
    actor/learner split's state lies on several devices: what the evaluation reads goes to the
    first."""
    program = evaluate_start(trainer.evaluate)
    if run_grid is not None:
        program = jax.vmap(program, axis_name=GRID_AXIS)

    def arguments(state) -> tuple:
        args = start_arguments(state)
        return args if trainer.compile_chunk is None else jax.device_put(args, jax.devices()[0])

    args = arguments(state)
    kind = "start-evaluation" + ("" if run_grid is None else "-vmapped")
    lower = lambda: jax.jit(program).lower(*args)  # noqa: E731
    once = lambda lowered: compile_with_options(lowered, RUN_ONCE_OPTIONS)  # noqa: E731
    compiled = store.load_or_compile(kind, args, lower, once)
    return lambda state: compiled(*arguments(state))


def compile_chunk_lowered(lowered) -> Any:
    """`lowered` (a chunk) compiled with `CHUNK_OPTIONS` for its backend, where XLA knows them."""
    return compile_with_options(lowered, CHUNK_OPTIONS)


def _chunk_kind(run_grid) -> str:
    return "chunk" if run_grid is None else "chunk-vmapped"


def compile_offline_chunk(trainer, state, dataset, run_grid, store=programs.NONE) -> Any:
    """The offline chunk (`jaxrl.loops.offline`), compiled for `state` and `dataset`."""
    return _compile_with_dataset(trainer.offline_chunk, "offline-chunk", state, dataset,
                                 run_grid, store)  # fmt: skip


def compile_online_chunk(trainer, state, dataset, run_grid, store=programs.NONE) -> Any:
    """The online chunk: `compile_chunk`'s, or, in a run that mixes a dataset into its batches
    (`TrainConfig.mixes_dataset`), the chunk of `(state, dataset)`."""
    if not trainer.config.mixes_dataset:
        return compile_chunk(trainer, state, run_grid, store)
    return _compile_with_dataset(trainer.chunk, "mixed-chunk", state, dataset, run_grid, store)


def _compile_with_dataset(program, kind, state, dataset, run_grid, store) -> Any:
    """`program(state, dataset)` compiled (vmapped over a grid's members, who share the one
    dataset) through `store`; only the state is donated."""
    if run_grid is not None:
        program = jax.vmap(program, in_axes=(0, None), axis_name=GRID_AXIS)
        kind += "-vmapped"
    return store.load_or_compile(
        kind,
        (state, dataset),
        lambda: jax.jit(program, donate_argnums=0).lower(state, dataset),
        compile_chunk_lowered,
    )


class EarlyChunk:
    """The chunk compiled on a thread of its own, beside the initial state's programs.

    A run's first chunk waits for two compiles: the initial state's programs (the envs' reset,
    the agent's and buffer's init) and the chunk's. Only the state's shapes are needed to
    compile the chunk, and `initial_state` has them before it compiles anything of its own, so
    it hands them to `start`: the chunk is traced and lowered there, on the calling thread (jax
    traces on one thread at a time here), then compiled by XLA on a thread of its own, which
    holds no lock of Python's while it compiles, while the calling thread compiles and runs the
    initial state's programs. `Chunks.online` then `take`s it.

    Used for one device and no actor/learner split (`readying`), and only where the
    chunk will compile: not where the store of compiled programs holds it or `prefetch` is
    loading it (a load takes seconds, not worth a second thread; `wanted`)."""

    def __init__(self, trainer, run_grid, store: programs.Store):
        self.trainer, self.run_grid, self.kind = trainer, run_grid, _chunk_kind(run_grid)
        self.store = store
        self._thread: Any = None  # the compile's thread (`background.start`)
        self._args: tuple | None = None
        self._key: str | None = None  # the store's key of `_args`, less the run's id
        self._result: Any = None
        self._error: BaseException | None = None
        self.taken = False

    @property
    def wanted(self) -> bool:
        """Whether the state's shapes are worth finding before its programs compile: not where
        `prefetch` is loading a stored chunk for this run."""
        return not self.store.prefetching(self.kind)

    def start(self, shapes) -> None:
        """Lowers the chunk for a state of `shapes` (placed on the default device, as the
        initial state will be) and starts its compile on a thread of its own, unless it is not
        `wanted` or the store holds it."""
        if not self.wanted or self._thread is not None:
            return
        if jax.config.jax_default_device is not None or jax.process_count() > 1:
            return  # where the state will be placed is not known here: compiled after it
        device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        like = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(
                x.shape, x.dtype, weak_type=x.weak_type, sharding=device
            ),
            shapes,
        )
        args = (like,)
        if self.store.stored(self.kind, args):
            return
        lowered = _lower_chunk(self.trainer, self.run_grid, like)
        self._args, self._key = args, program_key.key("", self.kind, args)
        self._thread = background.start("jaxrl-chunk-compile", self._compile, lowered)

    def _compile(self, lowered) -> None:
        try:
            self._result = self.store.load_or_compile(
                self.kind, self._args, lambda: lowered, compile_chunk_lowered
            )
        except BaseException as error:  # noqa: BLE001 - raised again on the thread that takes it
            self._error = error

    def take(self, state) -> Any:
        """The chunk compiled for a state like `state`, once its compile is done (its error
        raised here); None where none was started, or `state` is placed or shaped otherwise
        (then compiled as usual)."""
        if self._thread is None or self.taken:
            return None
        self._thread.join()  # interrupted here (Ctrl-C), it is left running (`cli._ended`)
        self.taken = True
        if program_key.key("", self.kind, (state,)) != self._key:
            return None
        if self._error is not None:
            raise self._error
        return self._result

    @property
    def started(self) -> bool:
        """Whether it started a compile (the store did not hold the chunk)."""
        return self._thread is not None


class Chunks:
    """A run's chunk programs through `store`: what the runner is handed. `early`: the chunk
    compiling beside the initial state's programs (`EarlyChunk`), taken by the first `online`
    call whose state it fits."""

    def __init__(self, trainer, run_grid, store: programs.Store = programs.NONE, early=None):
        self.trainer, self.run_grid, self.store, self.early = trainer, run_grid, store, early

    @property
    def keeps(self) -> bool:
        """Whether the store keeps what compiles (a re-run then loads it)."""
        return self.store.keeps

    @property
    def wanted(self) -> bool:
        """Whether the initial state should find its shapes for `start` before it compiles."""
        return self.early is not None and self.early.wanted

    def start(self, shapes) -> None:
        """The initial state's shapes, as soon as they are known: the chunk starts compiling
        beside the state's own programs (`EarlyChunk.start`)."""
        if self.early is not None:
            self.early.start(shapes)

    def stored(self, state) -> bool:
        """Whether the chunk for `state` will be loaded from the store (being loaded by
        `prefetch`, or held for its state), not compiled."""
        trainer, store, kind = self.trainer, self.store, _chunk_kind(self.run_grid)
        if trainer.compile_chunk is not None or not store.keeps:
            return False
        if self.early is not None and self.early.started:  # compiling on its thread
            return False
        if store.prefetching(kind):
            return True
        return store.stored(kind, (state,))

    def online(self, state, dataset=None) -> Any:
        """The online chunk for `state`: the one compiled beside the initial state where it
        fits, else `compile_online_chunk`'s."""
        early = self.early.take(state) if self.early is not None else None
        if early is not None:
            return early
        return compile_online_chunk(self.trainer, state, dataset, self.run_grid, self.store)

    def start_evaluation(self, state) -> Any:
        """The evaluation of the run's first state (`compile_start_evaluation`)."""
        return compile_start_evaluation(self.trainer, state, self.run_grid, self.store)

    def offline(self, state, dataset) -> Any:
        """The offline chunk for `state` and `dataset` (`compile_offline_chunk`)."""
        return compile_offline_chunk(self.trainer, state, dataset, self.run_grid, self.store)

    @staticmethod
    def loaded(program) -> bool:
        """Whether `program` was loaded from the store, not compiled."""
        return programs.loaded(program)


@contextlib.contextmanager
def readying(trainer, run_grid, dataset, store: programs.Store):
    """The run's `Chunks`, readied beside the initial state's work. Where `store` has the chunk
    that the last run of `trainer`'s settings used, starts loading it (`programs.prefetch`);
    on leaving, drops it if the run never asked for it (it raised before, or a resume found
    nothing left to train). With one device and no actor/learner split, an `EarlyChunk` for
    `initial_state` to start. A run whose first chunks are offline ones (a `dataset`) readies
    nothing: its online chunk, if it has one, compiles when its turn comes."""
    if dataset is not None:
        yield Chunks(trainer, run_grid, store)
        return
    kind = _chunk_kind(run_grid)
    early = None
    if trainer.compile_chunk is None:
        store.prefetch(kind)
        if trainer.data.mesh is None:
            early = EarlyChunk(trainer, run_grid, store)
    else:  # its programs are its own: a load `prefetch_early` started is not for it
        programs.drop_early()
    try:
        yield Chunks(trainer, run_grid, store, early)
    finally:  # a compile left running (the run raised first) is `cli._ended`'s to leave
        store.drop_prefetched(kind)
