"""The chunk loop of a run, from the `Plan` that `train` and `resume` build: takes its chunk
program from the plan's `chunks` (`jaxrl.run.chunks`: compiled or loaded, it need not know),
runs the chunks after the plan's history, and between chunks only logs, checks for non-finite
values (rolling back or stopping), checkpoints and answers Ctrl-C. Nothing here runs per
environment step."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import threading
import time

import jax

from jaxrl import checkpoint, logs, sharding
from jaxrl.errors import Interrupted
from jaxrl.files import write_atomically
from jaxrl.run.folder import run_meta, write_summary
from jaxrl.run.health import NonFiniteError, chunk_problem, roll_back, stop_message
from jaxrl.run.plan import Plan, RunResult
from jaxrl.run.rows import (
    chunk_row,
    evaluation_note,
    grid_row,
    member_metrics,
    rounding_note,
    start_row,
    step_of,
    where,
    without_seeds,
)


def execute(plan: Plan) -> RunResult:
    """Takes the chunk program and runs the chunks after `plan.history`'s last one.
    `plan.run_grid`: `plan.state` holds its members stacked, trained together by the vmapped
    chunk; each gets its own metrics (under seed_<seed>/, or SETTING/seed_<seed>/) and the run's
    rows summarise them (`_seeds_row`, `grid_row`)."""
    return Runner(plan).run()


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
        # The evaluation before the first chunk, and whether the metrics files hold it (an
        # earlier process of the run logged it: a resume's, from its checkpoint).
        self.start_row = plan.start_row
        self.start_logged = plan.start_row is not None
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
            if plan.chunks.stored(plan.state):
                self.reporter.message(f"[{self.name}] loading the program an earlier run stored")
                self.reporter.status("loading")
            else:
                stored = plan.chunks.keeps  # the store keeps what compiles
                again = " (a re-run of these settings loads the stored program)" if stored else ""
                self.reporter.message(f"[{self.name}] compiling{again}")
                self.reporter.status("compiling")
        if self.options.eval_at_start and not history and self.start_row is None:
            # Here, where the first chunk compiles on a thread of its own (`EarlyChunk`), so
            # that the two compile side by side.
            self._evaluate_start()
        self.offline = None
        if len(history) < config.offline_chunks:  # the online chunk compiles when it is due
            self.offline = plan.chunks.offline(plan.state, plan.dataset)
            self.chunk = self.offline
        else:
            self.chunk = plan.chunks.online(plan.state, plan.dataset)
        self.compile_seconds = time.perf_counter() - plan.start
        if self.reporter:
            done_how = "loaded" if plan.chunks.loaded(self.chunk) else "compiled"
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
        if self.start_row is not None and not self.start_logged:
            self._write(self.start_row)
            self.start_logged = True
        if self.loggers:  # TensorBoard's perf/compile_seconds, at the env steps it starts from
            self.loggers[0].add_scalar("compile_seconds", self.compile_seconds, done)
        if out_path is not None:
            self.checkpoints = checkpoint.manager(
                out_path / "checkpoints", keep=self.options.keep_checkpoints or None
            )
        self.meta = run_meta(plan.trainer, plan.run_grid)
        self.stop = _StopRequest(enabled=out_path is not None)

    def _evaluate_start(self) -> None:
        """The evaluation of the run's first state before its first chunk (`start_row`),
        reported at once; the files get it once they are opened."""
        plan, config, run_grid = self.plan, self.config, self.plan.run_grid
        tick = time.perf_counter()
        program = plan.chunks.start_evaluation(self.state)
        metrics = jax.device_get(program(self.state))
        now = time.perf_counter()
        times = (now - tick, now - plan.start)
        if run_grid is None:
            self.start_row = start_row(metrics, config, *times)
        else:
            rows = [start_row(member_metrics(metrics, i), config, *times)
                    for i in range(len(run_grid))]  # fmt: skip
            row = {**grid_row(rows, run_grid), "eval_seconds": rows[0]["eval_seconds"]}
            self.start_row = {**row, "per_seed": rows}
        if self.reporter:
            self.reporter.chunk(self.start_row)

    def _open_loggers(self, history: list[dict]) -> list:
        """Loggers whose files hold exactly `history`'s rows (rewritten, as on a resume), after
        the evaluation before the first chunk where they held it."""
        out_path, run_grid, options = self.plan.out_path, self.plan.run_grid, self.options
        if out_path is None or not self.primary:
            return []
        if self.start_logged:
            history = [self.start_row, *history]
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
                self.chunk = self.plan.chunks.online(self.state, self.plan.dataset)
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
        self._write(row, rows)
        if self.reporter:
            self.reporter.chunk(row)

    def _write(self, row: dict, rows: list[dict] | None = None) -> None:
        """`row` to the run's metrics, and each member's (`rows`, else `row`'s own) to its."""
        loggers = self.loggers
        if loggers:
            loggers[0].write(without_seeds(row))
            members = row.get("per_seed", []) if rows is None else rows
            for seed_logger, one in zip(loggers[1:], members, strict=len(loggers) > 1):
                seed_logger.write(one)

    def _save(self, row: dict) -> None:
        """A checkpoint of the whole run at `row`'s step (its env steps, plus its offline
        updates where it has some; where the run has a folder)."""
        if self.checkpoints is not None:
            meta = self.meta  # with the evaluation before the first chunk, for a resume's files
            if self.start_row is not None:
                meta = {**meta, "start_row": self.start_row}
            checkpoint.save(
                self.checkpoints,
                self.state,
                step_of(row),
                self.history,
                meta,
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
            start_row=self.start_row,
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
