"""`jaxrl` command line: train (and resume), eval, render, plot, sweep, list, bench.

`jaxrl train` is tyro over the config dataclasses: every field of TrainConfig and of the chosen
algorithm's config is a flag (`--batch-size 512`, `--critic-hidden 256,256`), its help taken
from the field's docstring; a `--preset` or a saved run's `--config` supplies the starting
values (shown as the defaults in `--help`) that flags override.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import difflib
import functools
import inspect
import itertools
import json
import math
import pathlib
import re
import sys
import textwrap
import typing
from typing import Annotated, Any, Literal

import tyro

from jaxrl import agents
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.errors import Interrupted, JaxrlError
from jaxrl.version import version

# -- Parsing values -------------------------------------------------------------------------


def parse_int(text: str) -> int:
    """An integer, also written as 2e6 or 1_000_000 (step counts and sizes)."""
    try:
        return int(text.replace("_", ""))
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None
    if not math.isfinite(value) or value != int(value):
        raise ValueError(f"expected an integer, got {text!r}")
    return int(value)


def parse_widths(text: str) -> tuple[int, ...]:
    """Layer widths: 256,256 (or 256x256)."""
    try:
        widths = tuple(int(part) for part in text.replace("x", ",").split(",") if part)
    except ValueError:
        raise ValueError(f"expected widths like 256,256, got {text!r}") from None
    if not widths:
        raise ValueError(f"expected widths like 256,256, got {text!r}")
    return widths


def _registry() -> tyro.constructors.ConstructorRegistry:
    """tyro's parsing, with integers written as 2e6 and widths written as 256,256."""
    registry = tyro.constructors.ConstructorRegistry()
    spec = tyro.constructors.PrimitiveConstructorSpec

    @registry.primitive_rule
    def integers(info):
        if info.type is not int:
            return None
        return spec(
            nargs=1,
            metavar="INT",
            instance_from_str=lambda args: parse_int(args[0]),
            is_instance=lambda x: isinstance(x, int) and not isinstance(x, bool),
            str_from_instance=lambda x: [str(x)],
        )

    @registry.primitive_rule
    def widths(info):
        if typing.get_origin(info.type) is not tuple or typing.get_args(info.type) != (int, ...):
            return None
        return spec(
            nargs=1,
            metavar="W1,W2,...",
            instance_from_str=lambda args: parse_widths(args[0]),
            is_instance=lambda x: isinstance(x, tuple),
            str_from_instance=lambda x: [",".join(map(str, x))],
        )

    return registry


def _literal(text: str) -> Any:
    """A Python literal (2, 0.5, True, "name"), with true/false as booleans too; else the
    text itself."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_env_options(items: typing.Iterable[str]) -> dict[str, Any]:
    options = {}
    for text in items:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env-option takes KEY=VALUE, got {text!r}")
        options[key] = _literal(value)
    return options


# -- jaxrl train ----------------------------------------------------------------------------


@dataclasses.dataclass
class TrainOptions:
    """How the run starts and is kept (apart from what it learns)."""

    preset: str | None = None
    """Start from a preset of experiments/presets.py (`jaxrl list` names them)."""
    config: str | None = None
    """Start from a saved run's config.json (or its run folder); flags override it."""
    resume: str | None = None
    """Continue the run in this folder from its newest checkpoint (only --steps may change)."""
    out: str | None = None
    """Run folder (default: runs/ALGO-ENV-sSEED-TIME); it must not hold a run already."""
    env_option: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """An option of the env family as KEY=VALUE, e.g. backend=mjx for brax/*; repeatable."""
    checkpoint_every: int = 0
    """Chunks (evaluations) between checkpoints; 0: only the final one (and on Ctrl-C)."""
    keep_checkpoints: int = 3
    """The newest K checkpoints stay on disk; 0 keeps all."""
    checkpoint_buffer: bool = True
    """Checkpoints hold the replay buffer, so a resumed run is exactly the uninterrupted one."""
    tensorboard: bool = True
    """Write TensorBoard event files under RUN/tensorboard."""
    wandb: str | None = None
    """Also log to this Weights & Biases project (optional: pip install wandb)."""
    stop_at_return: float | None = None
    """End the run (final checkpoint saved) at the first evaluation returning at least this."""
    on_nan: Literal["stop", "rollback"] = "stop"
    """A chunk that saw a NaN or infinity (losses, parameters, observations, rewards): stop the
    run (checkpoints and metrics before it kept), or roll back to the newest checkpoint and go
    on with a fresh key."""
    max_rollbacks: int = 3
    """With --on-nan rollback: stop after this many rollbacks in one process."""
    seeds: str | None = None
    """Train several seeds in one compiled program: a count (8: seeds 0-7) or a list (0,3,7).
    Each seed's metrics go to RUN/seed_<seed>/; the run's rows give their mean, IQM and 95%
    bootstrap interval. --seed is then ignored."""
    vmap: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """A settings grid trained in the same one program: NAME=V1,V2 (repeatable; the product of
    all, times --seeds). Only fields that are data: learning rates, tau, gamma, scales, noise
    (an error lists them). Metrics per member under RUN/SETTING/seed_<seed>/; rows and
    summary.json name the best setting."""
    compile_cache: bool = True
    """JAX's persistent compilation cache (~/.cache/jaxrl/xla): re-runs skip compilation."""
    quiet: bool = False
    """No progress display."""
    coordinator: str | None = None
    """Several hosts: HOST:PORT of process 0, the same for every process (or JAXRL_COORDINATOR).
    With --num-processes and --process-id; every process runs the same command."""
    num_processes: int | None = None
    """Several hosts: how many processes take part (or JAXRL_NUM_PROCESSES)."""
    process_id: int | None = None
    """Several hosts: this process's index, 0 to num_processes - 1 (or JAXRL_PROCESS_ID)."""


_GROUP = (tyro.conf.OmitArgPrefixes,)


@functools.cache
def _field_docstrings(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal below it), the nearest class of the MRO that
    documents the field giving it. Read with ast: tyro reads them too, but only whole."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for statement, following in zip(body, body[1:], strict=False):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _one_line(text: str) -> str:
    """A docstring's first line, as the flag's description in --help."""
    return text.splitlines()[0].strip() if text else ""


_ARG_CONFIG = type(tyro.conf.arg())  # what tyro.conf.arg(...) marks a field with


@functools.cache
def _help_mirror(cls: type) -> type:
    """A dataclass with `cls`'s fields whose --help shows one line per flag (the first line of
    the field's docstring); `_from_mirror` turns a parsed one back into `cls`, which runs
    `cls`'s own checks."""
    hints = typing.get_type_hints(cls, include_extras=True)
    docs = _field_docstrings(cls)
    fields = []
    for field in dataclasses.fields(cls):
        hint, extras = hints[field.name], ()
        if typing.get_origin(hint) is Annotated:
            hint, *extras = typing.get_args(hint)
        line = _one_line(docs.get(field.name, ""))
        configs = [e for e in extras if isinstance(e, _ARG_CONFIG)]
        others = [e for e in extras if not isinstance(e, _ARG_CONFIG)]
        arg = dataclasses.replace(configs[0], help=line) if configs else tyro.conf.arg(help=line)
        default = (
            dataclasses.field(default_factory=field.default_factory)
            if field.default_factory is not dataclasses.MISSING
            else dataclasses.field(default=field.default)
        )
        fields.append((field.name, Annotated[(hint, *others, arg)], default))
    return dataclasses.make_dataclass(cls.__name__, fields)


def _to_mirror(value: Any) -> Any:
    cls = _help_mirror(type(value))
    return cls(**{f.name: getattr(value, f.name) for f in dataclasses.fields(value)})


def _from_mirror(value: Any, cls: type) -> Any:
    return cls(**{f.name: getattr(value, f.name) for f in dataclasses.fields(value)})


def _command_class(algo: str) -> type:
    spec = agents.get(algo)
    return dataclasses.make_dataclass(
        "TrainCommand",
        [
            ("options", Annotated[_help_mirror(TrainOptions), *_GROUP, tyro.conf.arg(name="")]),
            ("run", Annotated[_help_mirror(TrainConfig), *_GROUP, tyro.conf.arg(name="")]),
            (
                "agent",
                Annotated[_help_mirror(spec.config_cls), *_GROUP, tyro.conf.arg(name="")],
            ),
        ],
    )


def _flags(cls: type) -> set[str]:
    names = set()
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        flag = "--" + field.name.replace("_", "-")
        names.add(flag)
        if hints[field.name] in (bool, bool | None):
            names.add("--no-" + field.name.replace("_", "-"))
    return names


def _optional_bool_flags(argv: list[str], classes: tuple[type, ...]) -> list[str]:
    """`X: bool | None` fields (None: the algorithm's own choice) take tyro's --x {None,True,
    False}; --x and --no-x, as for plain booleans, are accepted too."""
    fields = {
        "--" + f.name.replace("_", "-")
        for cls in classes
        for f in dataclasses.fields(cls)
        if typing.get_type_hints(cls)[f.name] == bool | None
    }
    out = []
    for index, word in enumerate(argv):
        following = argv[index + 1].lower() if index + 1 < len(argv) else ""
        if word in fields and following not in ("none", "true", "false"):
            out += [word, "True"]
        elif word.startswith("--no-") and "--" + word[5:] in fields:
            out += ["--" + word[5:], "False"]
        else:
            out.append(word)
    return out


def _check_foreign_flags(argv: list[str], algo: str) -> None:
    """A flag of another algorithm's config names that algorithm (tyro would only say it is
    unrecognised)."""
    own = _flags(TrainConfig) | _flags(TrainOptions) | _flags(agents.get(algo).config_cls)
    own |= {"--steps", "--algo", "-h", "--help"}
    for word in argv:
        flag = word.split("=", 1)[0]
        if not flag.startswith("--") or flag in own:
            continue
        owners = [
            name
            for name, spec in agents.ALGORITHMS.items()
            if name != algo and flag in _flags(spec.config_cls)
        ]
        if owners:
            raise ConfigError(
                f"{flag} is an option of {', '.join(owners)}, not of {algo}; pass --algo "
                f"{owners[0]} (or a preset of it) to use it."
            )


def _preset(name: str) -> dict:
    from jaxrl.experiments.presets import PRESETS

    if name not in PRESETS:
        close = difflib.get_close_matches(name, PRESETS, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"Unknown preset {name!r}.{hint} Available: {', '.join(PRESETS)}.")
    return PRESETS[name]


def _config_path(text: str) -> pathlib.Path:
    path = pathlib.Path(text)
    return path / "config.json" if path.is_dir() else path


def _starting_configs(known: argparse.Namespace) -> tuple[TrainConfig, Any, dict]:
    """The defaults the flags override: the algorithm's own, a preset's or a saved run's (with
    the saved run's options: checkpoint cadence, loggers, ...)."""
    if known.preset and known.config:
        raise ConfigError("--preset and --config both set the starting values; pick one.")
    if known.config:
        from jaxrl import runs

        path = _config_path(known.config)
        if not path.is_file():
            raise ConfigError(f"--config {known.config}: no such file (nor a run folder)")
        try:
            saved = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ConfigError(f"--config {path} is not valid JSON ({error})") from None
        train, agent = runs.configs_from_json(saved)
        if known.algo and known.algo != train.algo:
            raise ConfigError(
                f"--config {path} is a {train.algo} run; --algo {known.algo} does not apply"
            )
        option_names = {f.name for f in dataclasses.fields(TrainOptions)}
        run_options = {k: v for k, v in saved.get("run", {}).items() if k in option_names}
        return train, agent, run_options
    preset = _preset(known.preset) if known.preset else {}
    algo = known.algo or preset.get("algo", "sac")
    if preset and known.algo and known.algo != preset["algo"]:
        raise ConfigError(f"preset {known.preset!r} is for {preset['algo']}, not {known.algo}")
    spec = agents.get(algo)
    train = TrainConfig(algo=algo, **preset.get("train", {}))
    try:
        agent = spec.config_cls(**preset.get("agent", {}))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return train, agent, {}


def _pre_parse(argv: list[str]) -> argparse.Namespace:
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--algo", "--preset", "--config", "--resume"):
        pre.add_argument(flag, default=None)
    known, _ = pre.parse_known_args(argv)
    return known


def build_configs(argv: list[str]) -> tuple[TrainConfig, Any, TrainOptions]:
    """Resolves defaults < preset (or saved config) < flags into (TrainConfig, agent config,
    train options). Bad input raises ConfigError (or exits 2 from tyro for bad flags)."""
    known = _pre_parse(argv)
    train, agent, run_options = _starting_configs(known)
    _check_foreign_flags(argv, train.algo)
    cls = _command_class(train.algo)
    argv = _optional_bool_flags(argv, (TrainConfig, agents.get(train.algo).config_cls))
    try:
        command = tyro.cli(
            cls,
            prog="jaxrl train",
            description="Train an agent. Every option has a flag; defaults shown are the "
            "preset's or saved config's where one is given.",
            args=argv,
            default=cls(
                _to_mirror(TrainOptions(preset=known.preset, config=known.config, **run_options)),
                _to_mirror(train),
                _to_mirror(agent),
            ),
            registry=_registry(),
        )
    except ValueError as error:  # a config's own check, raised while tyro builds it
        raise ConfigError(str(error)) from None
    # Back to the real classes, whose own checks (__post_init__) run here.
    options = _from_mirror(command.options, TrainOptions)
    try:
        train = _from_mirror(command.run, TrainConfig)
        agent = _from_mirror(command.agent, type(agent))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if train.algo != agent_algo(agent):
        raise ConfigError(
            f"--algo {train.algo} does not match the starting config's algorithm "
            f"{agent_algo(agent)}; pass --algo before choosing a preset"
        )
    env_options = {**train.env_options, **parse_env_options(options.env_option)}
    train = dataclasses.replace(train, env_options=env_options)
    return train, agent, options


def agent_algo(agent_config: Any) -> str:
    for name, spec in agents.ALGORITHMS.items():
        if type(agent_config) is spec.config_cls:
            return name
    raise ConfigError(f"no algorithm takes a {type(agent_config).__name__}")


def _run_options(options: TrainOptions):
    from jaxrl import driver

    return driver.RunOptions(
        checkpoint_every=options.checkpoint_every,
        keep_checkpoints=options.keep_checkpoints,
        checkpoint_buffer=options.checkpoint_buffer,
        tensorboard=options.tensorboard,
        wandb=options.wandb,
        stop_at_return=options.stop_at_return,
        on_nan=options.on_nan,
        max_rollbacks=options.max_rollbacks,
    )


def default_out(train: TrainConfig) -> str:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"runs/{train.algo}-{train.env.replace('/', '-')}-s{train.seed}-{stamp}"


@dataclasses.dataclass
class ResumeArgs:
    resume: str
    """The run folder to continue."""
    steps: Annotated[int | None, tyro.conf.arg(aliases=("--total-steps",))] = None
    """Train on to this many env steps in all (rounded up to whole chunks)."""
    devices: int | Literal["all"] | None = None
    """Continue on this many devices (0: the default one alone) instead of the run's own:
    the state does not depend on the device count (a run of 8 GPUs goes on on one)."""
    compile_cache: bool = True
    """JAX's persistent compilation cache."""
    quiet: bool = False
    """No progress display."""
    wandb: bool = True
    """Go on logging to the run's W&B project, if it has one (--no-wandb: without it)."""
    coordinator: str | None = None
    """Several hosts: HOST:PORT of process 0 (as for jaxrl train)."""
    num_processes: int | None = None
    """Several hosts: how many processes take part."""
    process_id: int | None = None
    """Several hosts: this process's index."""


def _parse(cls: type, prog: str, description: str, argv: list[str]) -> Any:
    """A command's arguments: tyro over `cls`, with jaxrl's number and width parsing."""
    return tyro.cli(cls, prog=prog, description=description, args=argv, registry=_registry())


def cmd_resume(argv: list[str]) -> int:
    from jaxrl import driver

    allowed = _flags(ResumeArgs) | {"--total-steps", "-h", "--help"}
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
        seeds = (
            f" (mean of {len(last['seeds'])} seeds; IQM {last['eval_return_iqm']:.2f}, 95% CI "
            f"[{last['eval_return_ci_low']:.2f}, {last['eval_return_ci_high']:.2f}], best seed "
            f"{last['best_seed']}: {max(last['eval_returns']):.2f})"
        )
    if "best_setting" in last:  # a settings grid: the best setting's mean and summary
        seeds = f" of the best setting {last['best_setting']}{seeds}"
    print(
        f"done: {last['env_steps']:,} env steps, eval return "
        f"{result.final_eval_return:.2f}{seeds}, compile {result.compile_seconds:.1f}s, "
        f"train {result.train_seconds:.1f}s; run folder {result.out_dir}"
    )


def cmd_train(argv: list[str]) -> int:
    from jaxrl import driver, envs, sharding

    if _pre_parse(argv).resume is not None:
        return cmd_resume(argv)
    train_config, agent_config, options = build_configs(argv)
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
        options=_run_options(options),
        compile_cache=options.compile_cache,
        seeds=options.seeds,
        vmap=list(options.vmap) or None,
    )
    _done(result)
    return 0


# -- jaxrl eval / render / plot -------------------------------------------------------------


@dataclasses.dataclass
class EvalArgs:
    run: Annotated[str, tyro.conf.Positional]
    """The run folder."""
    episodes: int = 10
    """Greedy episodes to play (in parallel, one env each)."""
    checkpoint: int | None = None
    """The checkpoint's env steps (default: the newest)."""
    seed: int = 0
    """Seed of the episodes' initial states."""
    json: bool = False
    """Print the result as JSON."""
    member: int | None = None
    """Of a run of several seeds or settings: the member (index, as summary.json lists
    final_eval_returns); default: the one with the best eval return at the checkpoint."""


def cmd_eval(argv: list[str]) -> int:
    from jaxrl import runs

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


@dataclasses.dataclass
class RenderArgs:
    run: Annotated[str, tyro.conf.Positional]
    """The run folder."""
    out: str = "policy.mp4"
    """Video file to write (.mp4 or .gif)."""
    checkpoint: int | None = None
    """The checkpoint's env steps (default: the newest)."""
    steps: int | None = None
    """At most this many control steps (default: one whole episode)."""
    width: int = 320
    """Frame width in pixels."""
    height: int = 240
    """Frame height in pixels."""
    camera: str | None = None
    """A camera of the model, by name or index (default: the free camera)."""
    seed: int = 0
    """Seed of the episode's initial state."""


def cmd_render(argv: list[str]) -> int:
    from jaxrl import envs, render, runs

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
        args.out,
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


def cmd_plot(argv: list[str]) -> int:
    from jaxrl import plot

    return plot.main(argv)


# -- jaxrl sweep ----------------------------------------------------------------------------


def _grid_value(cls: type, name: str, text: str) -> Any:
    kind = typing.get_type_hints(cls)[name]
    if typing.get_origin(kind) in (typing.Union, __import__("types").UnionType):
        if text.lower() == "none":
            return None
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"--grid {name}: expected true or false, got {text!r}")
        return text.lower() == "true"
    if kind is int:
        return parse_int(text)
    if kind is float:
        return float(text)
    if typing.get_origin(kind) is tuple:
        return parse_widths(text)
    return text


def parse_grid(items: list[str], train: TrainConfig, agent: Any) -> list[dict[str, Any]]:
    """--grid NAME=V1,V2 (repeatable) as the list of settings of their product; widths are
    separated by x in a grid (critic_hidden=64x64,256x256)."""
    axes = []
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip().lstrip("-").replace("-", "_")
        if not sep or not values:
            raise ConfigError(f"--grid takes NAME=V1,V2,..., got {item!r}")
        owner = next(
            (c for c in (train, agent) if name in {f.name for f in dataclasses.fields(c)}), None
        )
        if owner is None or name in ("algo", "seed", "env_options"):
            raise ConfigError(
                f"--grid {name}: not a field of the run or {train.algo} config (seeds: --seeds)"
            )
        parsed = [_grid_value(type(owner), name, v) for v in values.split(",")]
        axes.append([(name, value) for value in parsed])
    return [dict(point) for point in itertools.product(*axes)]


def _setting_label(point: dict[str, Any]) -> str:
    def text(v):
        return "x".join(map(str, v)) if isinstance(v, tuple) else str(v)

    return "-".join(f"{k}={text(v)}" for k, v in point.items()) or "base"


def plan_sweep(argv: list[str]) -> tuple[pathlib.Path, list, list[int], TrainOptions] | None:
    """The sweep's folder, its runs (setting, seed, run config, agent config), the seeds and the
    train options; every run's config checked. None for --help (printed)."""
    from jaxrl import driver

    parser = argparse.ArgumentParser(prog="jaxrl sweep", add_help=False, allow_abbrev=False)
    parser.add_argument("--grid", action="append", default=[])
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--out", default=None)
    parser.add_argument("-h", "--help", action="store_true")
    args, rest = parser.parse_known_args(argv)
    if args.help:
        print(
            "usage: jaxrl sweep [TRAIN FLAGS] --grid NAME=V1,V2 [--grid ...] [--seeds 0,1,2] "
            "[--out FOLDER]\n\nTrains every combination of the grid's values for every seed, "
            "one after another, one run folder each (FOLDER/SETTING/sSEED), then prints and "
            "writes (FOLDER/summary.md, summary.json) the final eval return per setting: mean, "
            "std and each seed's. TRAIN FLAGS are those of jaxrl train (--preset, --algo, "
            "--env, ...); widths in a grid are written 64x64."
        )
        return None
    if "--resume" in rest:
        raise ConfigError("jaxrl sweep does not take --resume; resume its runs one by one")
    if any(w == "--seed" or w.startswith("--seed=") for w in rest):
        raise ConfigError(
            "jaxrl sweep takes --seeds 0,1,2 (the seeds of every setting), not --seed"
        )
    try:
        seeds = [parse_int(s) for s in args.seeds.split(",") if s]
    except ValueError as error:
        raise ConfigError(f"--seeds: {error}") from None
    if not seeds:
        raise ConfigError("--seeds needs at least one seed, e.g. --seeds 0,1,2")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds repeats a seed: {args.seeds}")
    train, agent, options = build_configs(rest)
    points = parse_grid(args.grid, train, agent)
    out = pathlib.Path(args.out or default_out(train).replace("runs/", "sweeps/", 1))
    driver.check_run_dir(out)
    if (out / "summary.json").exists():
        raise driver.RunDirError(f"{out} already holds a sweep; pick another --out")
    # Every run's config is built and checked before the first one trains.
    plan = []
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    for point in points:
        run_kwargs = {k: v for k, v in point.items() if k in train_fields}
        agent_kwargs = {k: v for k, v in point.items() if k not in train_fields}
        try:
            agent_config = dataclasses.replace(agent, **agent_kwargs)
            for seed in seeds:
                config = dataclasses.replace(train, seed=seed, **run_kwargs)
                plan.append((point, seed, config, agent_config))
            # The checks jaxrl train makes before compiling (env name and options, sizes the
            # agent needs of the run, the algorithm's loop defaults), once per setting.
            driver.check_setting(config, agent_config)
        except ValueError as error:
            raise ConfigError(f"grid setting {_setting_label(point)}: {error}") from None
        for seed in seeds:
            driver.check_run_dir(out / _setting_label(point) / f"s{seed}")
    return out, plan, seeds, options


def cmd_sweep(argv: list[str]) -> int:
    """jaxrl sweep [train flags] --grid NAME=V1,V2 ... --seeds 0,1,2 --out FOLDER"""
    from jaxrl import driver

    planned = plan_sweep(argv)
    if planned is None:
        return 0
    out, plan, seeds, options = planned
    finals: dict[str, list[float]] = {}
    for index, (point, seed, config, agent_config) in enumerate(plan):
        label = _setting_label(point)
        run_dir = out / label / f"s{seed}"
        print(f"[sweep {index + 1}/{len(plan)}] {label} seed {seed} -> {run_dir}")
        result = driver.train(
            config,
            agent_config,
            run_dir,
            progress=None if options.quiet else "auto",
            options=_run_options(options),
            compile_cache=options.compile_cache,
        )
        finals.setdefault(label, []).append(result.final_eval_return)
    _write_sweep_summary(out, finals, seeds)
    return 0


def _write_sweep_summary(out: pathlib.Path, finals: dict[str, list[float]], seeds) -> None:
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    rows = []
    for label, values in finals.items():
        values_array = np.asarray(values)
        std = float(values_array.std(ddof=1)) if len(values) > 1 else 0.0
        rows.append(
            {
                "setting": label,
                "mean": float(values_array.mean()),
                "std": std,
                "stderr": std / math.sqrt(len(values)),
                "returns": [float(v) for v in values],
                "seeds": list(seeds),
            }
        )
    rows.sort(key=lambda r: -r["mean"])
    (out / "summary.json").write_text(json.dumps(rows, indent=2))
    lines = ["| setting | mean | std | stderr | per seed |", "| --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        per_seed = ", ".join(f"{v:.1f}" for v in r["returns"])
        lines.append(
            f"| {r['setting']} | {r['mean']:.2f} | {r['std']:.2f} | {r['stderr']:.2f} "
            f"| {per_seed} |"
        )
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    table = Table(title=f"final eval return, seeds {', '.join(map(str, seeds))}")
    for column in ("setting", "mean", "std", "stderr", "per seed"):
        table.add_column(column, justify="left" if column == "setting" else "right")
    for r in rows:
        per_seed = ", ".join(f"{v:.1f}" for v in r["returns"])
        stats = (f"{r['mean']:.2f}", f"{r['std']:.2f}", f"{r['stderr']:.2f}")
        table.add_row(r["setting"], *stats, per_seed)
    Console().print(table)
    print(f"summary: {out / 'summary.md'}")


# -- jaxrl list / bench ---------------------------------------------------------------------


def cmd_list(argv: list[str]) -> int:
    from jaxrl import envs
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
        for name, spec in agents.ALGORITHMS.items():
            print(f"  {name:<12} {spec.description}")
        print("presets:")
        for name, preset in PRESETS.items():
            print(f"  {name:<24} {preset['algo']} on {preset['train']['env']}")
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
    "plot": (cmd_plot, "learning curves of runs, seeds as mean and 95% band"),
    "sweep": (cmd_sweep, "train a grid of settings x seeds, summarise final returns"),
    "list": (cmd_list, "list algorithms, presets and environments"),
    "bench": (cmd_bench, "run the wall-clock benchmark suite (jaxrl bench --help)"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
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
    try:
        return COMMANDS[command][0](rest)
    except Interrupted as stop:
        print(f"jaxrl {command}: {stop}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(f"jaxrl {command}: interrupted; nothing saved since the last checkpoint.")
        return 130
    except JaxrlError as error:
        print(f"jaxrl {command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
