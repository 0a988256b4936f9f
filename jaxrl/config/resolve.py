"""The run's config resolved from the command line: the algorithm's defaults, then a preset
(experiments/presets.py) or a saved run's config.json, then the flags, into (TrainConfig, the
agent's config, TrainOptions). `jaxrl train` and `jaxrl sweep` call it, and so do the
benchmarks, to run exactly what a command line would.

Flags come from the config classes' fields with tyro, in the sections of
`jaxrl.config.train.SECTIONS` (run, env, collection, on-policy, evaluation, normalisation,
devices), then the algorithm's own; each flag's description is the first sentence of the
field's docstring, and docs/FLAGS.md (`python -m jaxrl.config.flagdoc`) gives them whole.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import difflib
import functools
import inspect
import json
import pathlib
import re
import textwrap
import types
import typing
from typing import Annotated, Any

import tyro

from jaxrl import agents
from jaxrl.config.choices import Choices, field_choices, type_hints
from jaxrl.config.options import TrainOptions
from jaxrl.config.parsing import parse_env_options, parser_registry
from jaxrl.config.train import SECTIONS, TrainConfig, section_members
from jaxrl.errors import ConfigError

# -- jaxrl train ----------------------------------------------------------------------------


_GROUP = (tyro.conf.OmitArgPrefixes,)


@functools.cache
def field_docstrings(cls: type) -> dict[str, str]:
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


_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "cf.", "vs.", "al.", "approx.")


def first_sentence(text: str) -> str:
    """A docstring's first sentence, as the flag's description in --help: its first paragraph
    joined into one line, up to the first ". " that ends a sentence (not "e.g. ") or the end."""
    paragraph = " ".join(text.split("\n\n", 1)[0].split()) if text else ""
    start = 0
    while (stop := paragraph.find(". ", start)) != -1:
        if paragraph[: stop + 1].rsplit(" ", 1)[-1].lstrip("(").lower() not in _ABBREVIATIONS:
            return paragraph[: stop + 1]
        start = stop + 2
    return paragraph


_ARG_CONFIG = type(tyro.conf.arg())  # what tyro.conf.arg(...) marks a field with
_PLAIN_METAVARS = {str: "STR", int: "INT", float: "FLOAT"}


def field_metavar(cls: type, name: str, hint: Any) -> str | None:
    """The metavar of a field's flag where tyro's own is not the one to show: the choices of a
    `str` field marked with `Choices`, and STR/INT/FLOAT for an optional one (not {None}|STR:
    None, the default, is written "None")."""
    choices = field_choices(cls, name)
    if choices is not None:
        return choices.metavar
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and rest[0] in _PLAIN_METAVARS:
            return _PLAIN_METAVARS[rest[0]]
    return None


def _mirror_field(cls: type, field: dataclasses.Field) -> tuple[str, Any, Any]:
    """(name, type, default) of `field` for a help mirror: its tyro markers, with the
    description (first sentence of the docstring) and the metavar of `field_metavar`."""
    hint, extras = type_hints(cls)[field.name], ()
    if typing.get_origin(hint) is Annotated:
        hint, *extras = typing.get_args(hint)
    line = first_sentence(field_docstrings(cls).get(field.name, ""))
    configs = [e for e in extras if isinstance(e, _ARG_CONFIG)]
    others = [e for e in extras if not isinstance(e, (_ARG_CONFIG, Choices))]
    arg = dataclasses.replace(configs[0], help=line) if configs else tyro.conf.arg(help=line)
    metavar = field_metavar(cls, field.name, hint)
    if metavar is not None and arg.metavar is None:
        arg = dataclasses.replace(arg, metavar=metavar)
    default = (
        dataclasses.field(default_factory=field.default_factory)
        if field.default_factory is not dataclasses.MISSING
        else dataclasses.field(default=field.default)
    )
    return field.name, Annotated[(hint, *others, arg)], default


def section_fields(algo: str) -> dict[str, list[tuple[type, dataclasses.Field]]]:
    """The flags' sections, in order, each a list of (config class, field): those of
    `jaxrl.config.train.SECTIONS` (run, env, collection, ...), then the algorithm's own (keyed
    by its name)."""
    sections = {name: list(members) for name, members in section_members().items()}
    config_cls = agents.get(algo).config_cls
    sections[algo] = [(config_cls, field) for field in dataclasses.fields(config_cls)]
    return sections


def section_title(algo: str, name: str) -> str:
    if name in SECTIONS:
        return SECTIONS[name].title
    return f"{name.upper()}'s own flags ({agents.get(algo).config_cls.__name__})."


@functools.cache
def _command_class(algo: str) -> type:
    """The dataclass tyro parses: one nested dataclass per section (each a group of --help,
    titled by its name), whose fields keep their flag names (no prefix)."""
    groups = []
    for name, members in section_fields(algo).items():
        mirror = dataclasses.make_dataclass(
            f"{name.title().replace('_', '')}Flags",
            [_mirror_field(cls, field) for cls, field in members],
        )
        arg = tyro.conf.arg(help=section_title(algo, name))
        groups.append((name, Annotated[mirror, *_GROUP, arg]))
    return dataclasses.make_dataclass("TrainCommand", groups)


def _to_command(algo: str, options: TrainOptions, train: TrainConfig, agent: Any) -> Any:
    """The command-class instance holding these configs' values (tyro's defaults)."""
    cls = _command_class(algo)
    values = {TrainOptions: options, TrainConfig: train, type(agent): agent}
    groups = {}
    for name, members in section_fields(algo).items():
        group_cls = typing.get_type_hints(cls, include_extras=True)[name]
        group_cls = typing.get_args(group_cls)[0]
        groups[name] = group_cls(
            **{field.name: getattr(values[owner], field.name) for owner, field in members}
        )
    return cls(**groups)


def _from_command(algo: str, command: Any, cls: type) -> Any:
    """The `cls` config (TrainOptions, TrainConfig or the agent's) of a parsed command; its
    own checks run here."""
    kwargs = {}
    for name, members in section_fields(algo).items():
        group = getattr(command, name)
        kwargs.update(
            {field.name: getattr(group, field.name) for owner, field in members if owner is cls}
        )
    return cls(**kwargs)


def field_flags(cls: type, field: dataclasses.Field) -> list[str]:
    """A config field's flags as --help lists them: its tyro aliases first, then its name (or
    tyro's `name=`) as --kebab-case; [] for a field without a flag (env_options: --env-option
    sets it). Booleans also take --no-X (listed by `train_flags`, not here)."""
    hint = type_hints(cls)[field.name]
    extras: tuple = ()
    if typing.get_origin(hint) is Annotated:
        hint, *extras = typing.get_args(hint)
    if typing.get_origin(hint) is dict:
        return []
    configs = [e for e in extras if isinstance(e, _ARG_CONFIG)]
    name = configs[0].name if configs and configs[0].name else field.name
    aliases = list(configs[0].aliases) if configs and configs[0].aliases else []
    return aliases + ["--" + name.replace("_", "-")]


@functools.cache
def train_flags(algo: str) -> frozenset[str]:
    """Every flag `jaxrl train --algo ALGO` takes."""
    flags = {"-h", "--help"}
    for members in section_fields(algo).values():
        for cls, field in members:
            names = field_flags(cls, field)
            flags.update(names)
            if type_hints(cls, include_extras=False)[field.name] in (bool, bool | None):
                flags.update("--no-" + name[2:] for name in names)
    return frozenset(flags)


@functools.cache
def _field_flags_by_name() -> dict[str, str]:
    """{config field name: its flag} over the run's options, TrainConfig and every agent."""
    classes = [TrainOptions, TrainConfig, *(spec.config_cls for spec in agents.ALGORITHMS.values())]
    out = {}
    for cls in classes:
        for field in dataclasses.fields(cls):
            flags = field_flags(cls, field)
            if flags:
                out.setdefault(field.name, flags[0])
    return out


def as_flags(message: str) -> str:
    """A config check's message in the command line's words: each config field it names
    becomes its flag (total_steps -> --steps). A field of several words is replaced wherever
    it stands but before "=" (`--vmap NAME=...` names fields); a one-word field only before
    "must" (so "an env object" stays as it is)."""
    if "--vmap" in message or "--grid" in message:  # these name fields, as the user wrote them
        return message
    for name, flag in sorted(_field_flags_by_name().items(), key=lambda kv: -len(kv[0])):
        if "_" in name:
            message = re.sub(rf"(?<![\w/+-]){re.escape(name)}(?![\w=/+-])", flag, message)
        else:
            message = re.sub(rf"(?<![\w-]){re.escape(name)}(?= must\b)", flag, message)
    return message


# Flags of other trainers (Brax, Stable-Baselines3, CleanRL) that a newcomer types first.
_OTHER_TRAINERS = {
    "--num-timesteps": ("--steps",),
    "--total-timesteps": ("--steps",),
    "--timesteps": ("--steps",),
    "--discounting": ("--gamma",),
    "--num-eval-envs": ("--eval-envs",),
}


def check_flags(argv: list[str], algo: str) -> None:
    """Every --flag of `argv` is one `jaxrl train --algo ALGO` takes: a flag of another
    algorithm names it; an unknown one gets the closest flags (or this trainer's name for a
    flag of Brax or SB3) in one line, before tyro, whose own error lists the flag's value as
    one more unrecognised option."""
    own = train_flags(algo)
    for word in argv:
        flag = word.split("=", 1)[0]
        if not flag.startswith("--") or flag == "--" or flag.replace("_", "-") in own:
            continue
        owners = [
            name
            for name, spec in agents.ALGORITHMS.items()
            if name != algo and flag in train_flags(name)
        ]
        if owners:
            raise ConfigError(
                f"{flag} is an option of {', '.join(owners)}, not of {algo}; pass --algo "
                f"{owners[0]} (or a preset of it) to use it."
            )
        close = list(_OTHER_TRAINERS.get(flag, ()))
        if flag in ("--lr", "--learning-rate"):
            close = sorted(f for f in own if f.endswith("-lr") or f == "--learning-rate")
        close = close or difflib.get_close_matches(flag, sorted(own), n=3, cutoff=0.7)
        hint = f"; did you mean {' or '.join(close)}?" if close else "."
        raise ConfigError(
            f"unknown flag {flag}{hint} (jaxrl train --algo {algo} --help lists its flags)"
        )


def flag_names(cls: type) -> set[str]:
    names = set()
    hints = type_hints(cls, include_extras=False)
    for field in dataclasses.fields(cls):
        flag = "--" + field.name.replace("_", "-")
        names.add(flag)
        if hints[field.name] in (bool, bool | None):
            names.add("--no-" + field.name.replace("_", "-"))
    return names


def _optional_bool_flags(argv: list[str], classes: tuple[type, ...]) -> list[str]:
    """`X: bool | None` fields (None: the algorithm's own choice) take tyro's --x {None,True,
    False} (any case, or as --x=VALUE); --x and --no-x, as for plain booleans, are accepted too.
    A value other than those three is a ConfigError naming the flag."""
    fields = {
        "--" + f.name.replace("_", "-")
        for cls in classes
        for f in dataclasses.fields(cls)
        if type_hints(cls, include_extras=False)[f.name] == bool | None
    }
    spellings = {"none": "None", "true": "True", "false": "False"}  # tyro takes these alone
    out, index = [], 0
    while index < len(argv):
        word = argv[index]
        index += 1
        flag, equals, value = word.partition("=")
        if flag in fields:
            if not equals and index < len(argv) and not argv[index].startswith("-"):
                value, index = argv[index], index + 1
            elif not equals:
                value = "True"
            if value.lower() not in spellings:  # tyro: "Unrecognized options: maybe"
                raise ConfigError(
                    f"{flag} takes True, False or None (the algorithm's own choice), or no "
                    f"value (True); got {value!r}"
                )
            out += [flag, spellings[value.lower()]]
        elif word.startswith("--no-") and "--" + word[5:] in fields:
            out += ["--" + word[5:], "False"]
        else:
            out.append(word)
    return out


PLAYGROUND = "playground"  # --preset playground: Playground's own config of the --env task


def _preset(name: str) -> dict:
    from jaxrl.experiments.presets import PRESETS

    if name not in PRESETS:
        close = difflib.get_close_matches(name, PRESETS, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(
            f"Unknown preset {name!r}.{hint} Available: {', '.join(PRESETS)}, and playground "
            "(Playground's own config of the --env task)."
        )
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
        from jaxrl.run import runs

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
    if known.preset == PLAYGROUND and not known.help:
        from jaxrl.brax import playground

        env_options = parse_env_options(known.env_option or ())  # the task as the run makes it
        train, agent = playground.configs(known.algo or "ppo", known.env, env_options)
        return train, agent, {}
    if known.preset == PLAYGROUND:  # --help imports no JAX, so Playground's config is not read
        algo = known.algo or "ppo"
        return TrainConfig(algo=algo), agents.get(algo).config_cls(), {}
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


def preset(name: str, **changes: Any) -> tuple[TrainConfig, Any]:
    """A preset's configs, as `jaxrl train --preset NAME` starts from them: (TrainConfig, the
    algorithm's config). `changes` replace fields of either by name, e.g.
    `jaxrl.preset("sac_pendulum", seed=3, actor_lr=1e-3)`; a name both have is refused (replace
    it on the config you mean with dataclasses.replace)."""
    if name == PLAYGROUND:
        raise ConfigError(
            "preset 'playground' takes its task from --env: in Python, "
            "jaxrl.brax.playground.configs(algo, 'playground/TASK') gives its configs"
        )
    values = _preset(name)
    train = TrainConfig(algo=values["algo"], **values.get("train", {}))
    agent_cls = agents.get(values["algo"]).config_cls
    train_names = {f.name for f in dataclasses.fields(TrainConfig)}
    agent_names = {f.name for f in dataclasses.fields(agent_cls)}
    unknown = sorted(set(changes) - train_names - agent_names)
    both = sorted(set(changes) & train_names & agent_names)
    if unknown or both:
        problem = (
            f"no field named {', '.join(unknown)} in TrainConfig or {agent_cls.__name__}"
            if unknown
            else f"{', '.join(both)} is a field of both TrainConfig and {agent_cls.__name__}"
        )
        raise ConfigError(f"preset {name!r}: {problem}")
    try:
        train = dataclasses.replace(train, **{k: v for k, v in changes.items() if k in train_names})
        agent = agent_cls(
            **{**values.get("agent", {}), **{k: v for k, v in changes.items() if k in agent_names}}
        )
    except ValueError as error:
        raise ConfigError(f"preset {name!r}: {error}") from None
    return train, agent


def pre_parse(argv: list[str]) -> argparse.Namespace:
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--algo", "--preset", "--config", "--resume", "--env"):
        pre.add_argument(flag, default=None)
    pre.add_argument("--env-option", action="append", default=None)
    pre.add_argument("-h", "--help", action="store_true")
    known, _ = pre.parse_known_args(argv)
    return known


_DESCRIPTION = (
    "Train an agent. Every option has a flag; defaults shown are the preset's or saved "
    "config's where one is given."
)
_PLAYGROUND_HELP = (
    " With --preset playground they are jaxrl's own: Playground's config of the --env task is "
    "read when the run starts, as help imports no JAX."
)


def build_configs(argv: list[str]) -> tuple[TrainConfig, Any, TrainOptions]:
    """Resolves defaults < preset (or saved config) < flags into (TrainConfig, agent config,
    train options). Bad input raises ConfigError (or exits 2 from tyro for bad flags)."""
    return configs_of(parse(argv))


@dataclasses.dataclass(frozen=True)
class Parsed:
    """A `jaxrl train` command line parsed (`parse`): every flag known and of its type, its
    values not yet checked against one another nor the env's name against the registry."""

    algo: str
    command: Any  # the tyro command class's instance
    agent_type: type


def parse(argv: list[str]) -> Parsed:
    """`argv` parsed against the defaults < preset (or saved config) < flags, importing no
    JAX and no simulator (a tenth of a second): what `jaxrl train` does before anything
    else, so that a bad flag stops it before any work starts. `configs_of` finishes it."""
    known = pre_parse(argv)
    train, agent, run_options = _starting_configs(known)
    check_flags(argv, train.algo)
    cls = _command_class(train.algo)
    argv = _optional_bool_flags(argv, (TrainConfig, agents.get(train.algo).config_cls))
    try:
        command = tyro.cli(
            cls,
            prog="jaxrl train",
            description=_DESCRIPTION + (_PLAYGROUND_HELP if known.preset == PLAYGROUND else ""),
            args=argv,
            default=_to_command(
                train.algo,
                TrainOptions(preset=known.preset, config=known.config, **run_options),
                train,
                agent,
            ),
            registry=parser_registry(),
        )
    except ValueError as error:  # a config's own check, raised while tyro builds it
        raise ConfigError(str(error)) from None
    return Parsed(train.algo, command, type(agent))


def configs_of(parsed: Parsed) -> tuple[TrainConfig, Any, TrainOptions]:
    """(TrainConfig, agent config, train options) of a parsed command line, every value
    checked (ConfigError where one is bad); the env's name is checked against the registry,
    which imports its family (Brax, Playground: about a second)."""
    algo, command = parsed.algo, parsed.command
    # Back to the real classes, whose own checks (__post_init__) run here. The env's name
    # first: a typo in it is the likelier slip, and sizes checked against the run's length
    # (learning_starts, batch sizes) would otherwise be reported instead.
    options = _from_command(algo, command, TrainOptions)
    _check_env_first(algo, command)
    try:
        train = _from_command(algo, command, TrainConfig)
        agent = _from_command(algo, command, parsed.agent_type)
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


def _check_env_first(algo: str, command: Any) -> None:
    from jaxrl import envs

    values = {}
    for name, members in section_fields(algo).items():
        group = getattr(command, name)
        for owner, field in members:
            if owner is TrainConfig and field.name in ("env", "env_imports"):
                values[field.name] = getattr(group, field.name)
    if values.get("env_imports"):  # the user's own envs: checked once their modules import
        return
    envs.check_name(values["env"])


agent_algo = agents.algorithm_of  # the name the CLI's checks have used


def default_out(train: TrainConfig) -> str:
    """A new run's folder when --out is not given: runs/ALGO-ENV-sSEED-TIME."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"runs/{train.algo}-{train.env.replace('/', '-')}-s{train.seed}-{stamp}"
