"""The chunk loop of a run, from the `Plan` that `train` and `resume` build: compiles the chunk
program once, runs the chunks after the plan's history, and between chunks only logs, checks for
non-finite values (rolling back or stopping), checkpoints and answers Ctrl-C. Nothing here runs
per environment step."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import threading
import time
from typing import Any

import jax

from jaxrl import checkpoint, logs, sharding
from jaxrl.envs.wrappers import GRID_AXIS
from jaxrl.errors import Interrupted
from jaxrl.files import write_atomically
from jaxrl.run import program_key, programs
from jaxrl.run.folder import run_meta, write_summary
from jaxrl.run.health import NonFiniteError, chunk_problem, roll_back, stop_message
from jaxrl.run.plan import Plan, RunResult
from jaxrl.run.resources import run_shardings
from jaxrl.run.rows import (
    chunk_row,
    evaluation_note,
    grid_row,
    rounding_note,
    step_of,
    where,
    without_seeds,
)
from jaxrl.run.state import compile_with_options


def execute(plan: Plan) -> RunResult:
    """Compiles the chunk program and runs the chunks after `plan.history`'s last one.
    `plan.run_grid`: `plan.state` holds its members stacked, trained together by the vmapped
    chunk; each gets its own metrics (under seed_<seed>/, or SETTING/seed_<seed>/) and the run's
    rows summarise them (`_seeds_row`, `grid_row`)."""
    return Runner(plan).run()


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


def compile_chunk_lowered(lowered) -> Any:
    """`lowered` (a chunk) compiled with `CHUNK_OPTIONS` for its backend, where XLA knows them."""
    return compile_with_options(lowered, CHUNK_OPTIONS)


def _chunk_stored(plan: Plan) -> bool:
    """Whether the run's chunk will be loaded from the store of compiled programs (being
    loaded by `prefetch`, or held for its state), not compiled."""
    trainer, store, kind = plan.trainer, plan.store, _chunk_kind(plan.run_grid)
    if trainer.compile_chunk is not None or not store.keeps:
        return False
    if plan.early is not None and plan.early.started:  # compiling on its thread, not loaded
        return False
    if store.prefetching(kind):
        return True
    return store.stored(kind, (plan.state,))


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
    initial state's programs. `Runner` then `take`s it.

    Used for one device and no actor/learner split (`prefetching_chunk`), and only where the
    chunk will compile: not where the store of compiled programs holds it or `prefetch` is
    loading it (a load takes seconds, not worth a second thread; `wanted`)."""

    def __init__(self, trainer, run_grid, store: programs.Store):
        self.trainer, self.run_grid, self.kind = trainer, run_grid, _chunk_kind(run_grid)
        self.store = store
        self._thread: threading.Thread | None = None
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
        self._thread = threading.Thread(
            target=self._compile, args=(lowered,), name="jaxrl-chunk-compile"
        )
        self._thread.start()

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
        self._thread.join()  # interrupted here (Ctrl-C), it is left running: `_LEFT`
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

    def running(self) -> bool:
        """Whether its compile still runs for a run that never took it."""
        return self._thread is not None and not self.taken and self._thread.is_alive()


# The compiles `prefetching_chunk` started for runs that left it without taking them (they
# raised before): `cli._ended` ends a `jaxrl` process at once rather than wait for them.
_LEFT: list[EarlyChunk] = []


def early_compile_running() -> bool:
    """Whether a chunk's compile (`EarlyChunk`) still runs for a run that never took it."""
    return any(early.running() for early in _LEFT)


@contextlib.contextmanager
def prefetching_chunk(trainer, run_grid, store: programs.Store):
    """Readies the chunk program beside the initial state's work. Where `store` has the chunk
    that the last run of `trainer`'s settings used, starts loading it
    (`programs.prefetch`); on leaving, drops it if the run never asked for it (it raised
    before, or a resume found nothing left to train). Yields an `EarlyChunk` (one device, no
    actor/learner split) for `initial_state` to start and the runner to take, else None."""
    kind = _chunk_kind(run_grid)
    early = None
    if trainer.compile_chunk is None:
        store.prefetch(kind)
        if trainer.data.mesh is None:
            early = EarlyChunk(trainer, run_grid, store)
    else:  # its programs are its own: a load `prefetch_early` started is not for it
        programs.drop_early()
    try:
        yield early
    finally:
        store.drop_prefetched(kind)
        if early is not None and early.running():
            _LEFT[:] = [*(left for left in _LEFT if left.running()), early]  # none kept once done


class Runner:
    """One process's run of a plan: `run()` compiles, trains the remaining chunks and returns
    the RunResult. The pieces the loop calls out to are its methods: `_train_chunk` (one chunk
    and its rows), `_roll_back_or_stop` (a non-finite chunk), `_log`, `_save` (a checkpoint),
    `_interrupted` (Ctrl-C, `_StopRequest`) and `_close`."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.config = plan.trainer.config
        self.options = plan.options
        self.name = f"{self.config.algo} {self.config.env}"
        self.state = plan.state
        self.history = list(plan.history)
        self.row = self.history[-1] if self.history else None
        self.train_seconds = 0.0
        self.reached = False  # the run ended at its stop_at_return target
        self.rollbacks = 0
        self.reporter = None
        self.loggers: list = []  # the run's own, then its members' (none where nothing is written)
        self.checkpoints = None

    def run(self) -> RunResult:
        try:
            self._start()
        except BaseException:  # a compile that failed or was interrupted: the bar stops
            self._close()
            raise
        config, options, stop = self.config, self.options, self.stop
        state_fn = self.plan.state_fn if self.primary else None
        try:
            with stop:
                index = len(self.history)
                if state_fn is not None:
                    state_fn(step_of(self.row) if self.row else 0, self.state)
                while index < config.total_chunks:
                    rows, metrics = self._train_chunk(index)
                    problem = chunk_problem(rows, metrics, config, index, self.plan.run_grid)
                    if problem:
                        self._roll_back_or_stop(problem)
                        index = len(self.history)
                        continue
                    row = self.row
                    self.history.append(row)
                    self._log(row, rows)
                    if state_fn is not None:
                        state_fn(step_of(row), self.state)
                    target = options.stop_at_return
                    reached = target is not None and row["eval_return"] >= target
                    self.reached = reached
                    last = index == config.total_chunks - 1 or reached
                    every = options.checkpoint_every
                    due = last or (every and (index + 1) % every == 0) or stop.requested
                    if due:
                        self._save(row)
                    if stop.requested and not last:
                        raise self._interrupted(row)
                    if reached:
                        self._say_reached(row, target)
                        break
                    index += 1
        finally:
            self._close()
        out_path = self.plan.out_path
        if out_path is not None and self.primary:
            write_summary(
                out_path,
                self.row,
                self.compile_seconds,
                self.reached,
                self.rollbacks,
                self.plan.run_grid,
            )
        return self._result()

    def _start(self) -> None:
        """Compiles the chunk program, writes config.json, opens the progress display, the
        loggers and the checkpoint manager."""
        plan, config = self.plan, self.config
        # Over several processes (jaxrl.sharding.initialize_distributed) every one computes the
        # same rows; process 0 alone reports and writes them, all take part in checkpoints.
        self.primary = primary = sharding.is_primary()
        out_path, history = plan.out_path, plan.history
        total = config.offline_chunks * config.offline_updates_per_chunk
        total += config.num_chunks * config.env_steps_per_chunk
        done = step_of(history[-1]) if history else 0
        progress, progress_fn = (plan.progress, plan.progress_fn) if primary else (None, None)
        warm_up = 0 if config.on_policy else config.learning_starts  # no ETA before it
        # Opened before the compile, so that its seconds to minutes are not a silent wait.
        self.reporter = logs.make_progress(
            progress, self.name, total, done, progress_fn, warm_up_until=warm_up
        )
        if self.reporter:
            rounded = rounding_note(config)
            if rounded:
                self.reporter.message(f"[{self.name}] {rounded}")
            costly = evaluation_note(config, plan.trainer.env.episode_length)
            if costly and not history:
                self.reporter.message(f"[{self.name}] {costly}")
            if _chunk_stored(plan):
                self.reporter.message(f"[{self.name}] loading the program an earlier run stored")
                self.reporter.status("loading")
            else:
                stored = plan.store.keeps  # the store keeps what compiles
                again = " (a re-run of these settings loads the stored program)" if stored else ""
                self.reporter.message(f"[{self.name}] compiling{again}")
                self.reporter.status("compiling")
        self.chunk = plan.early.take(plan.state) if plan.early is not None else None
        self.offline = None
        if len(history) < config.offline_chunks:  # the online chunk compiles when it is due
            self.offline = compile_offline_chunk(
                plan.trainer, plan.state, plan.dataset, plan.run_grid, plan.store
            )
            self.chunk = self.offline
        elif self.chunk is None:
            self.chunk = compile_online_chunk(
                plan.trainer, plan.state, plan.dataset, plan.run_grid, plan.store
            )
        self.compile_seconds = time.perf_counter() - plan.start
        if self.reporter:
            done_how = "loaded" if programs.loaded(self.chunk) else "compiled"
            self.reporter.message(f"[{self.name}] {done_how} in {self.compile_seconds:.1f}s")
            self.reporter.status("training")
        if out_path is not None and primary:
            # Written once the program compiled: input that fails in tracing or compilation
            # leaves no run folder behind (and a resume's new --steps only lands once it can run).
            out_path.mkdir(parents=True, exist_ok=True)
            if not history:
                shutil.rmtree(out_path / "tensorboard", ignore_errors=True)  # of a run with no rows
            write_atomically(
                out_path / "config.json", json.dumps(plan.saved, indent=2, default=str)
            )
        self.train_before = history[-1]["train_seconds"] if history else 0.0
        self.wall_before = history[-1]["wall_seconds"] if history else 0.0
        self.loggers = self._open_loggers(self.history)
        if self.loggers:  # TensorBoard's perf/compile_seconds, at the env steps it starts from
            self.loggers[0].add_scalar("compile_seconds", self.compile_seconds, done)
        if out_path is not None:
            self.checkpoints = checkpoint.manager(
                out_path / "checkpoints", keep=self.options.keep_checkpoints or None
            )
        self.meta = run_meta(plan.trainer, plan.run_grid)
        self.stop = _StopRequest(enabled=out_path is not None)

    def _open_loggers(self, history: list[dict]) -> list:
        """Loggers whose files hold exactly `history`'s rows (rewritten, as on a resume)."""
        out_path, run_grid, options = self.plan.out_path, self.plan.run_grid, self.options
        if out_path is None or not self.primary:
            return []
        opened = [
            logs.RunLogger(
                out_path,
                history=[without_seeds(r) for r in history],
                tensorboard=options.tensorboard,
                wandb_project=options.wandb,
                config=self.plan.saved,
            )
        ]
        for i, (setting, seed) in enumerate(run_grid.members if run_grid else ()):
            member_dir = out_path / run_grid.member_dir(setting, seed)
            member_dir.mkdir(parents=True, exist_ok=True)
            opened.append(
                logs.RunLogger(
                    member_dir,
                    history=[r["per_seed"][i] for r in history],
                    tensorboard=options.tensorboard,
                )
            )
        return opened

    def _train_chunk(self, index: int) -> tuple[list[dict], dict]:
        """Trains chunk `index`: its rows (one per member) and metrics; the run's row, the
        aggregate of a grid's, is `self.row`."""
        config, run_grid = self.config, self.plan.run_grid
        tick = time.perf_counter()
        if index < config.offline_chunks:
            self.state, metrics = self.offline(self.state, self.plan.dataset)
        else:
            if self.chunk is self.offline:
                self.chunk = compile_online_chunk(
                    self.plan.trainer, self.state, self.plan.dataset, run_grid, self.plan.store
                )
            if config.mixes_dataset:
                self.state, metrics = self.chunk(self.state, self.plan.dataset)
            else:
                self.state, metrics = self.chunk(self.state)
        metrics = jax.device_get(metrics)
        chunk_seconds = time.perf_counter() - tick
        self.train_seconds += chunk_seconds
        times = (
            chunk_seconds,
            self.train_before + self.train_seconds,
            self.wall_before + self.compile_seconds + self.train_seconds,
        )
        if run_grid is None:
            rows = [chunk_row(index, metrics, config, *times)]
            self.row = rows[0]
        else:
            rows = [
                chunk_row(index, jax.tree.map(lambda x, i=i: x[i], metrics), config, *times)
                for i in range(len(run_grid))
            ]
            self.row = {**grid_row(rows, run_grid), "per_seed": rows}
        return rows, metrics

    def _roll_back_or_stop(self, problem: str) -> None:
        """A chunk saw a non-finite value (`problem`): goes on from the newest checkpoint
        (RunOptions.on_nan "rollback", while rollbacks are left) or raises NonFiniteError."""
        options = self.options
        if options.on_nan != "rollback" or self.rollbacks >= options.max_rollbacks:
            raise NonFiniteError(stop_message(problem, self.rollbacks, options.on_nan))
        self.rollbacks += 1
        say = self.reporter.message if self.reporter else None
        self.state, self.history, where = roll_back(
            self.plan.out_path,
            self.plan.initial,
            self.rollbacks,
            self.plan.run_grid,
            self.meta,
            say,
        )
        for logger in self.loggers:
            logger.close()
        self.loggers = self._open_loggers(self.history)
        self.row = self.history[-1] if self.history else None
        if self.reporter:
            self.reporter.message(
                f"[{self.name}] {problem}: rolled back to {where} with a fresh key (rollback "
                f"{self.rollbacks} of {options.max_rollbacks})"
            )

    def _log(self, row: dict, rows: list[dict]) -> None:
        """Writes a chunk's row to the run's metrics (and each member's row to its own), and
        shows it."""
        loggers = self.loggers
        if loggers:
            loggers[0].write(without_seeds(row))
            for seed_logger, one in zip(loggers[1:], rows, strict=len(loggers) > 1):
                seed_logger.write(one)
        if self.reporter:
            self.reporter.chunk(row)

    def _save(self, row: dict) -> None:
        """A checkpoint of the whole run at `row`'s step (its env steps, plus its offline
        updates where it has some; where the run has a folder)."""
        if self.checkpoints is not None:
            checkpoint.save(
                self.checkpoints,
                self.state,
                step_of(row),
                self.history,
                self.meta,
                include_buffer=self.options.checkpoint_buffer,
            )

    def _say_reached(self, row: dict, target: float) -> None:
        if self.reporter:
            self.reporter.message(
                f"[{self.name}] eval return {row['eval_return']:.2f} "
                f">= stop_at_return {target:g}: run ended at {where(row)}"
            )

    def _interrupted(self, row: dict) -> Interrupted:
        return Interrupted(
            f"interrupted at {where(row)}; checkpoint saved. "
            f"Continue with: jaxrl train --resume {self.plan.out_path}",
            self._result(),
        )

    def _result(self) -> RunResult:
        stop = getattr(self, "stop", None)
        return RunResult(
            self.state,
            self.history,
            self.compile_seconds,
            self.train_seconds,
            self.plan.out_path,
            interrupted=bool(stop and stop.requested),
        )

    def _close(self) -> None:
        if self.reporter:
            self.reporter.close()
        for logger in self.loggers:
            logger.close()
        if self.checkpoints is not None:
            # After a failed save (disk full), closing may fail the same way: that first
            # error is the one to report.
            with contextlib.suppress(Exception):
                self.checkpoints.close()


class _StopRequest:
    """Ctrl-C (SIGINT) during training asks for a stop: the chunk under way finishes, a
    checkpoint is saved and `Interrupted` is raised. A second Ctrl-C stops at once (nothing is
    saved; the previous checkpoints stay). Only in the main thread, and only for runs that have
    a folder to save to."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nCtrl-C: finishing this chunk, then saving a checkpoint (Ctrl-C again to quit "
            "without saving)",
            file=sys.stderr,
            flush=True,
        )

    def __enter__(self):
        if self.enabled:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self.enabled:
            signal.signal(signal.SIGINT, self._previous)
        return False
