"""`jaxrl` command line: train (and resume), eval, render, collect, export, plot, sweep, scale,
list, bench.

Each command parses its arguments and hands them on. `jaxrl train`'s flags are resolved into
configs by `jaxrl.config.resolve` (every field of TrainConfig and of the chosen algorithm's
config is a flag; a `--preset` or a saved run's `--config` supplies the starting values);
`jaxrl sweep` and `jaxrl scale` are `jaxrl.experiments.sweep` and `.scale`; every jaxrl error
ends as one message and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import json
import os
import pathlib
import re
import signal
import sys
import threading
import time
from typing import Any

# Only the standard library and jaxrl's import-free modules (gl, errors, version) here:
# everything heavy (tyro, jax, flax, Brax, MuJoCo, ...) is imported inside the commands, so
# `jaxrl --help` and `--version` are quick and Ctrl-C during those imports is caught by `main`
# (exit 130).
from jaxrl import gl
from jaxrl.errors import ConfigError, Interrupted, JaxrlError
from jaxrl.version import version

_ARGS = ("ResumeArgs", "EvalArgs", "RenderArgs", "CollectArgs", "ExportArgs")


def __getattr__(name: str):
    """`cli.ResumeArgs`, `cli.EvalArgs`, `cli.RenderArgs`: jaxrl.cli_args's, imported (with
    tyro) on first use."""
    if name in _ARGS:
        from jaxrl import cli_args

        return getattr(cli_args, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parse(cls: type, prog: str, description: str, argv: list[str]) -> Any:
    """A command's arguments: tyro over `cls`, with jaxrl's number and width parsing."""
    import tyro

    from jaxrl.config.parsing import parser_registry

    return tyro.cli(cls, prog=prog, description=description, args=argv, registry=parser_registry())


def cmd_resume(argv: list[str]) -> int:
    from jaxrl.cli_args import ResumeArgs
    from jaxrl.config.resolve import flag_names

    allowed = flag_names(ResumeArgs) | {"--total-steps", "-h", "--help"}
    others = [
        w.split("=", 1)[0] for w in argv if w.startswith("--") and w.split("=", 1)[0] not in allowed
    ]
    if others:
        raise ConfigError(
            f"--resume continues the run with its saved config; {', '.join(others)} cannot "
            "change on resume (only --steps and --devices can). To train with other settings, "
            "start a new run from this one's: jaxrl train --config RUN/config.json ..."
        )
    args = _parse(
        ResumeArgs,
        "jaxrl train --resume RUN",
        "Continue a run from its newest checkpoint with its saved config.",
        argv,
    )
    from jaxrl import sharding
    from jaxrl.run import driver

    sharding.initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    result = driver.resume(
        args.resume,
        total_steps=args.steps,
        devices=args.devices,
        progress=None if args.quiet else "auto",
        compile_cache=args.compile_cache,
        wandb=args.wandb,
    )
    _done(result)
    return 0


def _done(result) -> None:
    last = result.history[-1]
    seeds = ""
    if "seeds" in last:  # several seeds: the mean, its summary and the best seed
        count = len(last["seeds"])
        seeds = (
            f" (mean of {count} seed{'s' if count != 1 else ''}; "
            f"IQM {last['eval_return_iqm']:.2f}, 95% CI "
            f"[{last['eval_return_ci_low']:.2f}, {last['eval_return_ci_high']:.2f}], best seed "
            f"{last['best_seed']}: {max(last['eval_returns']):.2f})"
        )
    if "best_setting" in last:  # a settings grid: the best setting's mean and summary
        seeds = f" of the best setting {last['best_setting']}{seeds}"
    # A resumed run: its rows count every process's training; the result, this one's.
    train = f"train {result.train_seconds:.1f}s"
    whole = last.get("train_seconds", result.train_seconds)
    if whole - result.train_seconds > 1e-3:  # rows keep 4 decimals; a chunk takes far longer
        train = f"train {whole:.1f}s ({result.train_seconds:.1f}s of it in this process)"
    print(
        f"done: {last['env_steps']:,} env steps, eval return "
        f"{result.final_eval_return:.2f}{seeds}, compile {result.compile_seconds:.1f}s, "
        f"{train}; run folder {result.out_dir}"
    )


def cmd_train(argv: list[str]) -> int:
    from jaxrl.config import resolve

    if resolve.pre_parse(argv).resume is not None:
        return cmd_resume(argv)
    parsed = resolve.parse(argv)  # --help exits here; a bad flag stops before any work
    from jaxrl.run import programs

    # The chunk the last run of this command line ran starts loading now, beside the
    # simulator's imports and the rest of the start-up (a re-run with another seed: about 1 s
    # sooner than its own `prefetch`).
    programs.prefetch_early(argv)
    try:
        return _train(*resolve.configs_of(parsed))
    finally:  # a later run in this process is not this command line's (its load: `_ended`'s)
        programs.command_ended()


def _train(train_config, agent_config, options) -> int:
    from jaxrl import envs, sharding
    from jaxrl.config.resolve import default_out
    from jaxrl.run import driver

    envs.import_modules(train_config.env_imports)
    envs.check_name(train_config.env)
    if sharding.initialize_distributed(
        options.coordinator, options.num_processes, options.process_id
    ):
        if options.out is None:  # each process would stamp its own default folder
            raise ConfigError("a run over several processes needs --out, the same for all")
    result = driver.train(
        train_config,
        agent_config,
        options.out or default_out(train_config),
        progress=None if options.quiet else "auto",
        options=options.kept(),
        compile_cache=options.compile_cache,
        seeds=options.seeds,
        vmap=list(options.vmap) or None,
    )
    _done(result)
    return 0


# -- jaxrl eval / render / plot -------------------------------------------------------------


def cmd_eval(argv: list[str]) -> int:
    from jaxrl.cli_args import EvalArgs
    from jaxrl.run import runs

    args = _parse(
        EvalArgs,
        "jaxrl eval",
        "Return of a saved policy's greedy episodes: mean, std, standard error.",
        argv,
    )
    report = runs.evaluate_run(
        args.run, args.episodes, args.checkpoint, args.seed, member=args.member
    )
    if args.json:
        print(json.dumps(report))
    else:
        member = f" ({report['member']})" if report["member"] else ""
        print(
            f"{args.run}{member} @ {report['checkpoint']:,} env steps: return {report['mean']:.2f} "
            f"± {report['stderr']:.2f} (std {report['std']:.2f}, {report['episodes']} greedy "
            f"episodes, mean length {report['mean_length']:.0f})"
        )
    return 0


def cmd_render(argv: list[str]) -> int:
    from jaxrl import envs, render
    from jaxrl.cli_args import RenderArgs
    from jaxrl.run import runs

    args = _parse(
        RenderArgs, "jaxrl render", "Render a greedy episode of a saved policy to a video.", argv
    )
    runs.check_env_given(runs.read_config_json(args.run), None, pathlib.Path(args.run))
    policy = runs.load_policy(args.run, args.checkpoint)
    config = policy.config
    envs.import_modules(config.env_imports)
    camera = args.camera
    if camera is not None and re.fullmatch(r"-?\d+", camera):
        camera = int(camera)  # an index (-1: the free camera), else a camera's name
    info = render.render_policy(
        config.env,
        config.env_options,
        policy,
        args.out if args.out is not None else pathlib.Path(args.run) / "policy.mp4",
        max_steps=args.steps,
        width=args.width,
        height=args.height,
        camera=camera,
        seed=args.seed,
        episode_length=config.episode_length,
        action_repeat=config.action_repeat,
        joint_limit_actions=config.joint_limit_actions,
    )
    print(
        f"wrote {info['path']}: {info['frames']} frames of {info['width']}x{info['height']} at "
        f"{info['fps']:.0f} fps, {info['bytes']:,} bytes; episode return {info['return']:.2f}"
    )
    return 0


def _behaviour(value: float | None) -> str:
    """The dataset's whole episodes' mean return, or why there is none."""
    return "- (no episode ended in the data)" if value is None else f"{value:.2f}"


def cmd_collect(argv: list[str]) -> int:
    from jaxrl.cli_args import CollectArgs
    from jaxrl.data import collect

    args = _parse(
        CollectArgs,
        "jaxrl collect",
        "Play a saved policy with Gaussian action noise in its run's envs; write a Minari dataset.",
        argv,
    )
    fields = dataclasses.fields(collect.CollectSettings)
    settings = collect.CollectSettings(**{f.name: getattr(args, f.name) for f in fields})
    report = collect.collect(settings, log=lambda line: None if args.json else print(line))
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"wrote {report['dataset_id']} ({report['path']}): {report['steps']:,} steps, "
            f"{report['episodes']} episodes ({report['cut_episodes']} cut at the end); returns: "
            f"behaviour {_behaviour(report['behaviour_return'])}, "
            f"policy {report['policy_return']:.2f}, "
            f"random {report['random_return']:.2f}"
        )
    return 0


def cmd_export(argv: list[str]) -> int:
    from jaxrl.cli_args import ExportArgs
    from jaxrl.export import sources

    args = _parse(
        ExportArgs,
        "jaxrl export",
        "Write a saved policy (jaxrl run, .policy file or Brax checkpoint) as an ONNX model: "
        "raw observations in, greedy actions out.",
        argv,
    )
    report = sources.export(args.source, args.out, args.checkpoint_step, args.member, args.opset)
    if args.json:
        print(json.dumps(report))
    else:
        inputs = ", ".join(f"{k} [batch, {v}]" for k, v in report["inputs"].items())
        outputs = ", ".join(f"{k} [batch, {v}]" for k, v in report["outputs"].items())
        print(
            f"wrote {report['path']} ({report['bytes']:,} bytes, opset {report['opset']}): "
            f"{report['algorithm']} policy, {inputs} -> {outputs}"
        )
    return 0


def cmd_plot(argv: list[str]) -> int:
    from jaxrl import plot

    return plot.main(argv)


def cmd_sweep(argv: list[str]) -> int:
    """jaxrl sweep [train flags] --grid NAME=V1,V2 ... --seeds 0,1,2 --out FOLDER"""
    from jaxrl.experiments import sweep

    return sweep.main(argv)


def cmd_scale(argv: list[str]) -> int:
    """jaxrl scale [train flags] --target J --utd ... --batch-sizes ... --lrs ... --out FOLDER"""
    from jaxrl.experiments import scale

    return scale.main(argv)


# -- jaxrl list / bench ---------------------------------------------------------------------


def cmd_list(argv: list[str]) -> int:
    from jaxrl import agents, envs
    from jaxrl.experiments.presets import PRESETS

    parser = argparse.ArgumentParser(
        prog="jaxrl list",
        description="List algorithms, presets and environments.",
        allow_abbrev=False,
    )
    parser.add_argument("family", nargs="?", help="only this env family")
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import a module that registers envs first (repeatable)",
    )
    args = parser.parse_args(argv)
    envs.import_modules(args.imports)
    if args.family is not None and args.family not in envs.families():
        raise ConfigError(f"no env family {args.family!r}; families: {', '.join(envs.families())}")
    if args.family is None:
        print("algorithms:")
        width = max(map(len, agents.ALGORITHMS))
        for name, spec in agents.ALGORITHMS.items():
            print(f"  {name:<{width}}  {spec.description}")
        print("presets:")
        width = max(map(len, PRESETS))
        for name, preset in PRESETS.items():
            # a preset without an env (lb_sac: a recipe for any dataset) takes --env's
            env = preset["train"].get("env", "the --env given")
            print(f"  {name:<{width}}  {preset['algo']} on {env}")
    print("environments:")
    for name in envs.list_envs(args.family):
        print(f"  {name}")
    return 0


def cmd_bench(argv: list[str]) -> int:
    from jaxrl.benchmarks import run

    return run.main(argv)


COMMANDS = {
    "train": (cmd_train, "train an agent, or continue a run (jaxrl train --help)"),
    "eval": (cmd_eval, "greedy return of a saved policy"),
    "render": (cmd_render, "a video of a saved policy"),
    "collect": (cmd_collect, "a Minari dataset of a saved policy's (noisy) episodes"),
    "export": (cmd_export, "a saved policy as an ONNX model, to run without JAX"),
    "plot": (cmd_plot, "learning curves of runs, seeds as mean and 95% band"),
    "sweep": (cmd_sweep, "train a grid of settings x seeds, summarise final returns"),
    "scale": (cmd_scale, "fit data and compute to a return against the UTD ratio; predict"),
    "list": (cmd_list, "list algorithms, presets and environments"),
    "bench": (cmd_bench, "run the wall-clock benchmark suite (jaxrl bench --help)"),
}


# The commands that write checkpoints (a run, a sweep's runs, a scale grid's programs).
SAVING_COMMANDS = ("train", "sweep", "scale")


def main(argv: list[str] | None = None) -> int:
    """The `jaxrl` console script (pyproject.toml's [project.scripts]). Ctrl-C at any point
    ends it with one line on stderr and exit 130, never a traceback: the heavy imports happen
    inside the commands, so inside this try. During training the driver's own handler takes
    over: the chunk finishes and a checkpoint is saved first (`Interrupted` says so)."""
    command = None
    whole_process = argv is None
    ctrl_c = _CtrlC(whole_process=whole_process)
    try:
        ctrl_c.install()
        argv = sys.argv[1:] if argv is None else list(argv)
        command = argv[0] if argv and argv[0] in COMMANDS else None
        return _ended(_main(argv), whole_process)
    except SystemExit as stop:  # tyro's exit on a flag it cannot parse, say
        if isinstance(stop.code, int):
            _ended(stop.code, whole_process)
        raise
    except Interrupted as stop:
        ctrl_c.done = True
        print(f"jaxrl {command}: {stop}", file=sys.stderr)
        return 130
    except KeyboardInterrupt as stop:
        ctrl_c.done = True
        prefix = f"jaxrl {command}" if command else "jaxrl"
        saves = command in SAVING_COMMANDS  # eval, render, plot, list: they save nothing
        what = "; nothing saved since its last checkpoint, if it has one" if saves else ""
        said = stop.args[0] if stop.args and isinstance(stop.args[0], str) else None
        print(f"{prefix}: {said or f'interrupted{what}.'}", file=sys.stderr)  # a sweep says more
        return _ended(130, whole_process, interrupted=True)
    except BrokenPipeError:  # the reader of the output left (jaxrl list | head): no traceback
        if not whole_process:  # a caller's own stdout (a test, a notebook): theirs to handle
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor at exit's flush
        return _ended(141, whole_process)  # 128 + SIGPIPE, as a shell reports it
    finally:
        ctrl_c.uninstall()


def _ended(code: int, whole_process: bool, interrupted: bool = False) -> int:
    """`code`; but in a `jaxrl` process of its own, the process ends here, at once, where a
    thread a run started beside its work (`jaxrl.run.background`) still runs: a stored chunk
    still loading for a run that never took it (the command stopped first: bad input, an --out
    folder in use, Ctrl-C during the imports), or a chunk still compiling beside a first state
    that failed or was interrupted (`chunks.EarlyChunk`). Python would wait for that load (up
    to 3 s) or compile (up to minutes) before exiting; and a run that never took its chunk has
    written nothing to flush. Likewise after a Ctrl-C that main caught (`interrupted`), once
    the exception has unwound every `with` and `finally` on its way: Python's shutdown
    restores SIGINT's default action, so a redelivery the watchdog had already sent killed the
    process by the signal (exit -2), and one landing in native code at exit aborted it (-6),
    once in 24 Ctrl-Cs during start-up here."""
    from jaxrl.run import background  # imports no JAX

    # A command that succeeded took what it needed; a load it dropped unfinished (a resume
    # with nothing left to train) is waited for, as Python's shutdown is not skipped then.
    left = code != 0 and background.left_running()
    if whole_process and (interrupted or left):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _quit_130(signum, frame) -> None:
    """A Ctrl-C after main has answered one (JAX's exit hooks still running) ends the process
    at once, with main's exit code. Not SIG_DFL: a redelivery the watchdog made just before main
    caught the first one can still be pending in the main thread (blocked while in native code),
    and it would then end the process by the signal (-2), not with 130."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(130)


class _CtrlC:
    """Ctrl-C outside training raises KeyboardInterrupt, as Python's own handler does, but is
    never lost. Python's handler runs at the next bytecode of the main thread, and where that
    is a garbage-collector callback (JAX registers one), a `__del__` or Python code called from
    C++ (JAX's tracing and compiling), the exception is swallowed: seen here, a Ctrl-C during
    set-up was dropped and the run trained on to its end. So until `main` has caught it, a
    watchdog thread raises it again every half second; once the driver's handler has replaced
    this one (training began), the signal goes to it once more, a stop request (chunk
    finished, checkpoint saved), and the watchdog ends. KeyboardInterrupts that Python reports
    as swallowed ("Exception ignored in ...") are not printed."""

    RETRY_SECONDS = 0.5

    def __init__(self, whole_process: bool):
        # The console script (main() reading sys.argv): after a Ctrl-C, a second one while
        # Python shuts down (JAX's exit hooks) ends the process at once, quietly (_quit_130).
        self.whole_process = whole_process
        self.done = False  # main caught it (or returned): no more KeyboardInterrupts
        self._lock = threading.Lock()
        self._watchdog: threading.Thread | None = None
        self._previous_handler = None
        self._previous_hook = None

    def install(self) -> None:
        self._previous_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGINT, self._handle)

    def uninstall(self) -> None:
        self.done = True
        with self._lock:  # no redelivery after this; one under way is handled (ignored) here
            pass
        sys.unraisablehook = self._previous_hook
        if self._previous_handler is not None and signal.getsignal(signal.SIGINT) == self._handle:
            interrupted = self._watchdog is not None
            quit_at_once = interrupted and self.whole_process
            signal.signal(signal.SIGINT, _quit_130 if quit_at_once else self._previous_handler)

    def _handle(self, signum, frame):
        if self.done:
            return
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._redeliver, daemon=True)
            self._watchdog.start()
        raise KeyboardInterrupt

    def _redeliver(self) -> None:
        while True:
            time.sleep(self.RETRY_SECONDS)
            with self._lock:
                if self.done:
                    return
                if self._unwinding():
                    continue  # not lost: on its way up (a finally or __exit__ still running)
                ours = signal.getsignal(signal.SIGINT) == self._handle
                # A real signal, not _thread.interrupt_main: it also wakes a sleeping or
                # waiting main thread (interrupt_main waits for it to run Python again).
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            if not ours:
                return

    @staticmethod
    def _unwinding() -> bool:
        """Whether the main thread is handling a KeyboardInterrupt: in an except or finally
        block or a context manager's __exit__ on its way up to main (e.g. a checkpoint write
        finishing), which a second one must not cut short."""
        active = sys._current_exceptions().get(threading.main_thread().ident)
        if isinstance(active, tuple):  # Python < 3.12: (type, value, traceback)
            active = active[1]
        return isinstance(active, KeyboardInterrupt)

    def _unraisable(self, unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            return  # the watchdog raises it again
        self._previous_hook(unraisable)


def _main(argv: list[str]) -> int:
    if argv and argv[0] in ("-V", "--version"):
        print(f"jaxrl {version()}")
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: jaxrl {" + ",".join(COMMANDS) + "} ...  (jaxrl --version)")
        for name, (_, text) in COMMANDS.items():
            print(f"  {name:<7} {text}")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        close = difflib.get_close_matches(command, COMMANDS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        print(
            f"jaxrl: unknown command {command!r}.{hint} Commands: {', '.join(COMMANDS)}.",
            file=sys.stderr,
        )
        return 2
    problem = gl.problem() if command != "plot" else None  # plot imports no MuJoCo
    if problem:
        print(f"jaxrl {command}: error: {problem}", file=sys.stderr)
        return 2
    try:
        return COMMANDS[command][0](rest)
    except JaxrlError as error:
        message = str(error)
        if command in _TRAIN_FLAG_COMMANDS and type(error) is ConfigError:
            from jaxrl.config.resolve import as_flags

            message = as_flags(message)  # the flag the user typed, not the config's field
        print(f"jaxrl {command}: error: {message}", file=sys.stderr)
        return 2


# The commands whose config errors are told in flags: sweep's and scale's --grid name fields.
_TRAIN_FLAG_COMMANDS = ("train",)


if __name__ == "__main__":
    sys.exit(main())
