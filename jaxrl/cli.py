"""`jaxrl` command line: `jaxrl train ...`, `jaxrl list`.

Every field of TrainConfig and of the chosen algorithm's config is a flag (`--batch-size 512`,
`--critic-hidden 256,256`); a `--preset` supplies starting values that flags override.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import difflib
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from jaxrl import agents
from jaxrl.config import ConfigError, TrainConfig

# Train-config fields whose flag has a shorter, conventional name.
_ALIASES = {"total_steps": "--steps"}


class _Parser(argparse.ArgumentParser):
    """Names the closest known flag when an unknown one is given."""

    def error(self, message: str):
        if "unrecognized arguments" in message:
            known = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
            wrong = [w for w in message.split(":", 1)[1].split() if w.startswith("--")]
            hints = []
            for word in wrong:
                close = difflib.get_close_matches(word.split("=")[0], known, n=3, cutoff=0.6)
                if close:
                    hints.append(f"{word}: did you mean {' or '.join(close)}?")
            if hints:
                message += "\n  " + "\n  ".join(hints)
        super().error(message)


def _parse_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _widths(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.replace("x", ",").split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected widths like 256,256, got {text!r}") from None


def _optional(kind: type) -> Callable[[str], Any]:
    """A flag parser for an `X | None` field: "none" or "default" gives None."""

    def parse(text: str):
        return None if text.lower() in ("none", "default") else kind(text)

    parse.__name__ = kind.__name__  # argparse names the type in its error messages
    return parse


def _env_option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--env-option takes KEY=VALUE, got {text!r}")
    return key, _parse_value(value)


def _add_config_flags(group, cls: type, skip: tuple[str, ...] = ()) -> None:
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.name in skip:
            continue
        flag = _ALIASES.get(field.name, "--" + field.name.replace("_", "-"))
        kind = hints[field.name]
        default = field.default if field.default is not dataclasses.MISSING else None
        help_text = f"(default: {default})"
        kwargs: dict[str, Any] = {
            "dest": field.name,
            "default": argparse.SUPPRESS,
            "help": help_text,
        }
        optional = typing.get_origin(kind) in (typing.Union, types.UnionType)
        if optional:  # X | None: None means "the algorithm's or the task's own"
            kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
            if default is None:
                kwargs["help"] = "(default: the algorithm's or the task's own)"
        if kind is bool:
            group.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
        elif kind in (int, float, str):
            parse = _optional(kind) if optional else kind
            metavar = f"{kind.__name__.upper()}|none" if optional else None
            group.add_argument(flag, type=parse, metavar=metavar, **kwargs)
        elif typing.get_origin(kind) is tuple:
            group.add_argument(flag, type=_widths, metavar="W1,W2,...", **kwargs)
        else:
            raise TypeError(f"no flag type for {cls.__name__}.{field.name}: {kind}")


def _train_parser(algo: str) -> argparse.ArgumentParser:
    spec = agents.get(algo)
    parser = _Parser(prog="jaxrl train", description="Train an agent; every option has a flag.")
    parser.add_argument("--algo", default=argparse.SUPPRESS, choices=list(agents.ALGORITHMS))
    parser.add_argument(
        "--preset", default=None, help="start from a preset in experiments/presets.py"
    )
    parser.add_argument(
        "--out", default=None, help="run folder (default: runs/ALGO-ENV-sSEED-TIME)"
    )
    parser.add_argument(
        "--env-option",
        action="append",
        type=_env_option,
        default=[],
        metavar="KEY=VALUE",
        help="an option of the env family, e.g. backend=mjx for brax/*; repeatable",
    )
    parser.add_argument(
        "--checkpoint-every", type=int, default=0, help="chunks between checkpoints"
    )
    parser.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="turn off JAX's persistent compilation cache (~/.cache/jaxrl/xla)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    _add_config_flags(parser.add_argument_group("run"), TrainConfig, skip=("algo", "env_options"))
    _add_config_flags(parser.add_argument_group(f"{algo} agent"), spec.config_cls)
    return parser


def build_configs(argv: list[str]) -> tuple[TrainConfig, Any, argparse.Namespace]:
    """Resolves defaults < preset < flags into (TrainConfig, agent config, other options)."""
    from experiments.presets import PRESETS

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--algo", default=None)
    pre.add_argument("--preset", default=None)
    known, _ = pre.parse_known_args(argv)
    preset: dict[str, Any] = {}
    if known.preset is not None:
        if known.preset not in PRESETS:
            close = difflib.get_close_matches(known.preset, PRESETS, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"Unknown preset {known.preset!r}.{hint} Available: {', '.join(PRESETS)}."
            )
        preset = PRESETS[known.preset]
    algo = known.algo or preset.get("algo", "sac")
    if preset and known.algo and known.algo != preset["algo"]:
        raise ConfigError(f"preset {known.preset!r} is for {preset['algo']}, not {known.algo}")
    spec = agents.get(algo)
    args = _train_parser(algo).parse_args(argv)
    flags = vars(args)
    train_names = {f.name for f in dataclasses.fields(TrainConfig)}
    agent_names = {f.name for f in dataclasses.fields(spec.config_cls)}
    train_kwargs = {
        **preset.get("train", {}),
        **{k: v for k, v in flags.items() if k in train_names and k != "algo"},
    }
    env_options = {**train_kwargs.pop("env_options", {}), **dict(args.env_option)}
    train_config = TrainConfig(algo=algo, env_options=env_options, **train_kwargs)
    agent_kwargs = {
        **preset.get("agent", {}),
        **{k: v for k, v in flags.items() if k in agent_names},
    }
    try:
        agent_config = spec.config_cls(**agent_kwargs)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return train_config, agent_config, args


def cmd_train(argv: list[str]) -> int:
    import envs
    from jaxrl import driver

    train_config, agent_config, args = build_configs(argv)
    envs.check_name(train_config.env)
    out = args.out
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        env = train_config.env.replace("/", "-")
        out = f"runs/{train_config.algo}-{env}-s{train_config.seed}-{stamp}"
    result = driver.train(
        train_config,
        agent_config,
        out,
        progress=None if args.quiet else print,
        checkpoint_every=args.checkpoint_every,
        compile_cache=not args.no_compile_cache,
    )
    print(
        f"done: {result.history[-1]['env_steps']:,} env steps, eval return "
        f"{result.final_eval_return:.2f}, compile {result.compile_seconds:.1f}s, "
        f"train {result.train_seconds:.1f}s; run folder {result.out_dir}"
    )
    return 0


def cmd_list(argv: list[str]) -> int:
    import envs
    from experiments.presets import PRESETS

    parser = _Parser(prog="jaxrl list", description="List algorithms, presets and environments.")
    parser.add_argument("family", nargs="?", choices=envs.FAMILIES, help="only this env family")
    args = parser.parse_args(argv)
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
    from benchmarks import run

    return run.main(argv)


COMMANDS = {"train": cmd_train, "list": cmd_list, "bench": cmd_bench}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(
            "usage: jaxrl {train,list,bench} ...\n  train  train an agent (jaxrl train --help)\n"
            "  list   list algorithms, presets and environments\n"
            "  bench  run the wall-clock benchmark suite (jaxrl bench --help)"
        )
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
    import envs
    from jaxrl import driver

    try:
        return COMMANDS[command](rest)
    except (
        ConfigError,
        envs.UnknownEnvError,
        envs.EnvOptionError,
        agents.UnknownAlgorithmError,
        driver.RunDirError,
        driver.NonFiniteError,
    ) as error:
        print(f"jaxrl {command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
