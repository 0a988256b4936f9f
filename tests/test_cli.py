import dataclasses
import json
import time

import pytest

from jaxrl import cli
from jaxrl.agents.sac import SACConfig
from jaxrl.config import ConfigError, TrainConfig, parsing, resolve


def _run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_preset_from_python_equals_the_command_line_s_and_takes_changes():
    """`jaxrl.preset(name)` gives the configs `jaxrl train --preset NAME` starts from, for
    every preset; changes go to whichever config has the field; bad names are refused."""
    from jaxrl.experiments.presets import PRESETS

    for name in PRESETS:
        train, agent, _ = resolve.build_configs(["--preset", name])
        assert resolve.preset(name) == (train, agent), name
    train, agent = resolve.preset("sac_pendulum", seed=3, actor_lr=1e-3)
    want_train, want_agent, _ = resolve.build_configs(
        ["--preset", "sac_pendulum", "--seed", "3", "--actor-lr", "1e-3"]
    )
    assert (train, agent) == (want_train, want_agent)
    with pytest.raises(ConfigError, match="no field named bogus in TrainConfig or SACConfig"):
        resolve.preset("sac_pendulum", bogus=1)
    with pytest.raises(ConfigError, match="Did you mean sac_pendulum"):
        resolve.preset("sac_pendlum")


def test_list_prints_algorithms_presets_and_envs(capsys):
    code, out, _ = _run(capsys, "list")
    assert code == 0
    for text in ("sac", "sac_pendulum", "classic/pendulum", "brax/ant", "playground/CheetahRun"):
        assert text in out
    presets = out.split("presets:\n")[1].split("environments:")[0].splitlines()
    columns = {line.index(" on ") - len(line.split()[1]) for line in presets}
    assert len(presets) > 20 and len(columns) == 1  # one column, the longest name's too
    code, out, _ = _run(capsys, "list", "classic")
    assert code == 0 and "brax/" not in out and "classic/pendulum" in out


def test_flags_override_preset_and_reach_both_configs():
    train, agent, _ = resolve.build_configs(
        [
            "--preset",
            "sac_pendulum",
            "--num-envs",
            "8",
            "--critic-hidden",
            "32,32",
            "--no-normalize-observations",
            "--episode-length",
            "100",
            "--env-option",
            "max_torque=1.5",
        ]
    )
    assert train.num_envs == 8 and train.total_steps == 20_000  # flag and preset
    assert agent.critic_hidden == (32, 32) and agent.actor_hidden == (64, 64)
    assert train.episode_length == 100 and train.env_options == {"max_torque": 1.5}
    assert train.normalize_observations is False


@pytest.mark.parametrize(
    "argv,message",
    [
        (["train", "--algo", "sacc"], "Unknown algorithm 'sacc'. Did you mean sac"),
        (["train", "--env", "classic/pendullum"], "Did you mean: classic/pendulum"),
        # The env's name before sizes checked against the run's length (issue 38).
        (["train", "--env", "classic/pendulm", "--steps", "5000"], "Did you mean: classic/pe"),
        (["train", "--critic-hidden", "64,,64"], "expected widths like 256,256, got '64,,64'"),
        (["train", "--actor-hidden", "64,"], "expected widths like 256,256, got '64,'"),
        (["train", "--preset", "sac_pendulm"], "Did you mean sac_pendulum"),
        (["train", "--num-envs", "0"], "--num-envs must be a positive integer"),
        (["train", "--steps", "-5"], "--steps must be a positive integer"),
        (["train", "--batch-size", "512", "--buffer-size", "100"], "larger than the replay buffer"),
        (["train", "--critic-lr", "0"], "--critic-lr must be > 0"),
        (
            ["train", "--env-option", "torque=2"],
            "Unknown option(s) ['torque'] for classic/pendulum",
        ),
        (
            ["train", "--env-option", "max_torque=abc"],
            "env option max_torque='abc' for classic/pendulum: max_torque takes a number",
        ),
        (
            ["train", "--env", "playground/CartpoleBalance", "--env-option", "ctrl_dt=fast"],
            "ctrl_dt='fast' for playground/CartpoleBalance: ctrl_dt takes a number",
        ),
        (
            ["train", "--env", "playground/CartpoleBalance", "--env-option", "action_repeat=1.5"],
            "action_repeat=1.5 for playground/CartpoleBalance: action_repeat takes an integer",
        ),
        (
            ["train", "--env", "brax/ant", "--env-option", "ctrl_cost_weight=x"],
            "ctrl_cost_weight='x' for brax/ant: ctrl_cost_weight takes a number",
        ),
        (["trian"], "Did you mean 'train'?"),
        (
            ["train", "--algo", "ppo", "--num-envs", "5", "--unroll-length", "7"],
            "a rollout of 35 samples (--num-envs x --unroll-length) does not split into "
            "num_minibatches=32",
        ),
        (
            ["train", "--algo", "pql", "--critic", "quantile"],
            "critic must be one of double_q, c51, got 'quantile'",
        ),
        (["train", "--algo", "fast_td3", "--actor-q", "max"], "--actor-q must be one of"),
        (["bench", "--suite", "smoke", "--only", "no-such-case"], "no case of suite 'smoke'"),
        # Run settings.
        (["train", "--seed", "-1"], "--seed must be an integer >= 0, got -1"),
        (["train", "--gamma", "1.5"], "--gamma must be in [0, 1], got 1.5"),
        (["train", "--replay-obs-dtype", "float64"], "--replay-obs-dtype must be one of float32"),
        (["train", "--tau", "0"], "--tau must be in (0, 1], got 0.0"),
        (["train", "--actor-lr", "-1"], "--actor-lr must be > 0, got -1.0"),
        (["train", "--learning-starts", "100000", "--steps", "1000"], "no gradient update would"),
        (["train", "--episode-length", "0"], "--episode-length must be a positive integer"),
        (["train", "--eval-envs", "0"], "--eval-envs must be a positive integer, got 0"),
        (
            ["train", "--eval-simulator", "shared", "--num-envs", "4", "--eval-envs", "8"],
            "fewer than --eval-envs (8)",
        ),
        (["train", "--eval-simulator", "shared", "--randomize", "mass"], "physics --randomize"),
        (["train", "--updates-per-step", "0"], "--updates-per-step must be a positive integer"),
        (["train", "--unroll-updates", "0"], "--unroll-updates must be a positive integer"),
        (["train", "--actor-hidden", "0"], "--actor-hidden must be a non-empty list of positive"),
        (["train", "--num-envs", "abc"], "--num-envs"),
        (["train", "--algo", "ppo", "--num-minibatches", "0"], "--num-minibatches must be >= 1"),
        (
            ["train", "--algo", "pql", "--split-every", "-1"],
            "--split-every must be an integer >= 0",
        ),
        (["train", "--devices", "8"], "devices 8 but this machine has 1 cpu device(s)"),
        (["train", "--env-option", "noequals"], "--env-option takes KEY=VALUE, got 'noequals'"),
        (["train", "--preset", "td3_pendulum", "--algo", "sac"], "preset 'td3_pendulum' is"),
        # Resources: before anything is allocated.
        (["train", "--buffer-size", "3000000000"], "beyond what the replay buffer indexes"),
        (["train", "--buffer-size", "2000000000", "--batch-size", "16"], "state needs"),
        # How the run is kept.
        (["train", "--checkpoint-every", "-1"], "--checkpoint-every must be an integer >= 0"),
        (["train", "--keep-checkpoints", "-2"], "--keep-checkpoints must be an integer >= 0"),
        (["train", "--on-nan", "ignore"], "invalid choice 'ignore' for argument '--on-nan'"),
        (["train", "--normalize-observations", "maybe"], "--normalize-observations takes True,"),
        (["train", "--max-rollbacks", "-1"], "--max-rollbacks must be an integer >= 0, got -1"),
        (["train", "--stop-at-return", "nan"], "--stop-at-return must be a finite number"),
        (["train", "--seeds", "0,0"], "--seeds '0,0': a seed is listed twice"),
        (["train", "--vmap", "actor_hidden=16,32"], "it shapes the compiled program"),
        # Folders.
        (["train", "--out", "{tmp}/afile"], "afile is a file, not a folder"),
        (["train", "--out", "{tmp}/held"], "held already holds a run (metrics.jsonl)"),
        (["train", "--out", "{tmp}/afile/run"], "afile/run cannot be made: "),
        (["train", "--resume", "{tmp}/nowhere"], "nowhere is not a run folder (no such folder)"),
        (["train", "--resume", "{tmp}/afile"], "afile is not a run folder (a file, not a folder)"),
        (["train", "--resume", "{tmp}/held", "--num-envs", "8"], "--num-envs cannot change on"),
        (["train", "--config", "{tmp}/nowhere"], "--config {tmp}/nowhere: no such file"),
        (["eval", "{tmp}/held"], "held is not a run folder: it has no config.json"),
        (["eval", "{tmp}/garbled"], 'garbled/config.json is not a run\'s config (no "train"'),
        (["train", "--resume", "{tmp}/binary"], "binary/config.json cannot be read ("),
    ],
)
def test_bad_input_fails_fast_with_a_named_problem(tmp_path, monkeypatch, capsys, argv, message):
    """Exit code 2, the input named in one paragraph, no traceback, before compiling, and
    nothing written: not to the run folder, not anywhere under the working directory."""
    (tmp_path / "afile").write_text("")
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "metrics.jsonl").write_text('{"env_steps": 128}\n')
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / "config.json").write_text("[1, 2]")
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "config.json").write_bytes(b"\xff\xfe\x00")
    monkeypatch.chdir(tmp_path)
    argv = [word.replace("{tmp}", str(tmp_path)) for word in argv]
    message = message.replace("{tmp}", str(tmp_path))
    if argv[0] == "train" and not {"--out", "--resume"} & set(argv):
        argv += ["--out", str(tmp_path / "run")]
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    start = time.perf_counter()
    try:
        code, _, err = _run(capsys, *argv)
        parsed = True
    except SystemExit as exit_info:  # tyro's own: a value that is not of the option's type
        code, err, parsed = exit_info.code, capsys.readouterr().err, False
    assert code == 2, err
    assert message in err, err
    assert "Traceback" not in err
    if parsed:
        assert err.startswith("jaxrl") and "\n\n" not in err.strip(), err  # one paragraph
    assert time.perf_counter() - start < 20  # nothing was compiled
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    "argv,said",
    [
        (("--criticlr", "1e-3"), "unknown flag --criticlr; did you mean --critic-lr"),
        (("--num-timesteps", "100000"), "unknown flag --num-timesteps; did you mean --steps?"),
        (("--discounting=0.97",), "unknown flag --discounting; did you mean --gamma?"),
        (
            ("--lr", "1e-3"),
            "unknown flag --lr; did you mean --actor-lr or --alpha-lr or --critic-lr?",
        ),
        (("--algo", "ppo", "--lr", "1e-3"), "unknown flag --lr; did you mean --learning-rate?"),
        (("--wibble", "3"), "unknown flag --wibble. (jaxrl train --algo sac --help lists"),
    ],
)
def test_an_unknown_flag_is_one_line_naming_it_and_the_closest(capsys, argv, said):
    """Not tyro's "Unrecognized options: --lr, 1e-3", which lists the value as an option: the
    flag alone, the closest flags, and this trainer's name for Brax's and SB3's flags."""
    code, _, err = _run(capsys, "train", *argv)
    assert code == 2 and said in err, err
    assert len(err.strip().splitlines()) == 1 and "1e-3" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv,said",
    [
        (("--steps", "-5"), "error: --steps must be a positive integer"),
        (("--steps", "100"), "error: --learning-starts 1000 >= --steps 100: no gradient update"),
        (("--actor-lr", "inf"), "error: --actor-lr must be a finite number, got inf"),
        (("--critic-lr", "nan"), "error: --critic-lr must be a finite number, got nan"),
        (("--gamma", "nan"), "error: --gamma must be a finite number, got nan"),
        (("--batch-size", "0"), "error: --batch-size must be a positive integer, got 0"),
    ],
)
def test_a_bad_value_is_named_by_its_flag_before_anything_compiles(capsys, tmp_path, argv, said):
    """The command line's errors speak of its flags (--steps, not total_steps); a non-finite
    learning rate is refused like `--gamma nan`, before compiling, with nothing written."""
    start = time.perf_counter()
    out = str(tmp_path / "run")
    code, _, err = _run(capsys, "train", "--preset", "sac_pendulum", "--out", out, *argv)
    assert code == 2 and said in err, err
    assert len(err.strip().splitlines()) == 1
    assert time.perf_counter() - start < 20 and not list(tmp_path.iterdir())


def test_as_flags_leaves_plain_words_alone():
    assert resolve.as_flags("total_steps 5 and num_envs 3; tau must be in (0, 1]") == (
        "--steps 5 and --num-envs 3; --tau must be in (0, 1]"
    )
    assert resolve.as_flags("an env object; the seed of an env") == (
        "an env object; the seed of an env"
    )
    # --vmap and --grid name fields as the user wrote them; paths stay paths.
    vmap = "--vmap actor_lr+critic_lr names actor_lr twice"
    assert resolve.as_flags(vmap) == vmap
    assert resolve.as_flags("runs/batch_size/config.json") == "runs/batch_size/config.json"


def test_env_option_values_are_literals_with_lowercase_booleans():
    assert parsing.parse_env_options(["a=2", "b=0.5", "c=true", "d=False", "e=mjx"]) == {
        "a": 2,
        "b": 0.5,
        "c": True,
        "d": False,
        "e": "mjx",
    }


def test_prefix_abbreviations_are_errors():
    with pytest.raises(ConfigError, match="unknown flag --num-env; did you mean --num-envs"):
        resolve.build_configs(["--num-env", "8"])


def test_a_flag_of_another_algorithm_names_it(capsys):
    code, _, err = _run(capsys, "train", "--algo", "td3", "--init-alpha", "0.5")
    assert code == 2
    assert "--init-alpha is an option of sac" in err and "not of td3" in err


def test_integers_in_scientific_notation_and_optional_booleans():
    train, agent, _ = resolve.build_configs(
        ["--steps", "2e6", "--buffer-size", "1_000_000", "--normalize-observations"]
    )
    assert train.total_steps == 2_000_000 and train.buffer_size == 1_000_000
    assert train.normalize_observations is True
    train, _, _ = resolve.build_configs(["--normalize-observations", "None", "--seed", "3"])
    assert train.normalize_observations is None and train.seed == 3
    for words, value in (
        (["--normalize-observations", "false"], False),  # any case: tyro takes "False" alone
        (["--normalize-observations=none"], None),
        (["--normalize-observations", "--seed", "3"], True),
        (["--no-normalize-observations"], False),
    ):
        assert resolve.build_configs(words)[0].normalize_observations is value, words
    with pytest.raises(SystemExit):
        resolve.build_configs(["--steps", "2.5"])


def test_help_shows_the_presets_values_and_each_fields_description(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")  # one column: wider, tyro sets sections side by side
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--preset", "sac_pendulum", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out

    def entry(flag):  # the flag's line and its description lines, up to the next flag
        lines = [line.strip("│ ") for line in out.splitlines()]
        start = next(i for i, line in enumerate(lines) if line.startswith(flag))
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("-")), len(lines)
        )
        return " ".join(lines[start:end])

    hidden = entry("--actor-hidden")
    assert "(default: 64,64)" in hidden  # the preset's, not SACConfig's 256,256
    assert "Hidden-layer widths" in hidden  # the field's docstring
    steps = entry("--steps")
    assert "20000" in steps and "env steps" in steps


def test_config_of_a_saved_run_is_the_starting_point(tmp_path):
    saved = {
        "train": dataclasses.asdict(TrainConfig(num_envs=8, seed=4)),
        "agent": dataclasses.asdict(SACConfig(actor_hidden=(32, 16))),
    }
    (tmp_path / "config.json").write_text(json.dumps(saved))
    train, agent, _ = resolve.build_configs(["--config", str(tmp_path), "--seed", "5"])
    assert train.num_envs == 8 and train.seed == 5 and agent.actor_hidden == (32, 16)
    with pytest.raises(ConfigError, match="pick one"):
        resolve.build_configs(["--config", str(tmp_path), "--preset", "sac_pendulum"])


def test_help_gives_one_line_per_flag(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    out = capsys.readouterr().out
    # The first line of each field's docstring, not the lines that explain it further.
    assert "Length of the run in env steps (transitions collected), all envs together." in out
    assert "Rounded up so that every evaluation chunk" not in out
    assert "Replay buffer capacity in transitions (off-policy only). (default: 1000000)" in out
    assert "Rounded down to a multiple of num_envs" not in out
    # Inherited docstrings reach subclasses that only change a default (REDQ's critics).
    with pytest.raises(SystemExit):
        cli.main(["train", "--algo", "redq", "--help"])
    assert "Critics in the ensemble; the target takes the min" in capsys.readouterr().out


def test_version(capsys):
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and out.startswith("jaxrl 0.")


def test_refuses_a_folder_that_holds_a_run(capsys, tmp_path):
    (tmp_path / "config.json").write_text('{"earlier": "run"}')
    (tmp_path / "metrics.jsonl").write_text('{"chunk": 0, "env_steps": 128}\n')
    code, _, err = _run(capsys, "train", "--out", str(tmp_path))
    assert code == 2 and "already holds a run" in err
    assert json.loads((tmp_path / "config.json").read_text()) == {"earlier": "run"}


def test_algo_flag_and_its_own_preset_together():
    train, agent, _ = resolve.build_configs(["--algo", "sac", "--preset", "sac_pendulum"])
    assert train.algo == "sac" and agent.actor_hidden == (64, 64)


def test_every_error_jaxrl_raises_derives_from_one_base():
    """The CLI's `main` catches one type, `JaxrlError` (exit 2, a message, no traceback): every
    exception class of the package and of its envs must derive from it, keeping its standard
    base. `Interrupted` is the one exception: a KeyboardInterrupt (exit 130)."""
    import importlib
    import inspect
    import pathlib

    from jaxrl.errors import Interrupted, JaxrlError

    # The package's modules by file (jaxrl/, and envs/ and experiments/ as installed under it):
    # pkgutil's walk loops on an editable install's path mapping.
    root = pathlib.Path(__file__).resolve().parents[1]
    names = []
    for folder, package in (("jaxrl", "jaxrl"), ("envs", "jaxrl.envs"),
                            ("experiments", "jaxrl.experiments")):  # fmt: skip
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            if parts[-1] in ("__init__", "__main__"):
                parts = parts[:-1]
            names.append(".".join((package, *parts)))
    assert "jaxrl.envs.registry" in names and "jaxrl.run.driver" in names
    errors = {}
    for name in names:
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == name:
                errors[f"{name}.{cls_name}"] = cls
    assert len(errors) >= 20
    strays = [
        n for n, c in errors.items() if c is not Interrupted and not issubclass(c, JaxrlError)
    ]
    assert not strays, f"not JaxrlErrors: {strays}"
    assert issubclass(errors["jaxrl.envs.registry.UnknownEnvError"], ValueError)


def test_output_cut_short_by_its_reader_ends_without_a_traceback():
    """`jaxrl list | head -1`: the pipe's reader leaves after a line; jaxrl ends quietly with
    the shell's code for it (141), not a BrokenPipeError traceback."""
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "jaxrl.cli", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    assert process.stdout.readline() == b"algorithms:\n"
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141 and "Traceback" not in err, err


def test_an_interrupt_that_says_more_is_printed_as_one_line(monkeypatch, capsys):
    """A KeyboardInterrupt carrying a message (a sweep's, naming `jaxrl sweep --resume`) is
    that one line; a bare one, the generic line."""

    def stopped(argv):
        raise KeyboardInterrupt("run 2 of 4 stopped; continue the sweep with: jaxrl sweep ...")

    monkeypatch.setitem(cli.COMMANDS, "sweep", (stopped, "sweep"))
    assert cli.main(["sweep"]) == 130
    err = capsys.readouterr().err
    assert err == "jaxrl sweep: run 2 of 4 stopped; continue the sweep with: jaxrl sweep ...\n"

    def bare(argv):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "sweep", (bare, "sweep"))
    assert cli.main(["sweep"]) == 130
    assert capsys.readouterr().err == (
        "jaxrl sweep: interrupted; nothing saved since its last checkpoint, if it has one.\n"
    )


def test_a_mujoco_gl_that_cannot_work_is_named_before_mujoco_is_imported(capsys, monkeypatch):
    """MuJoCo sets its OpenGL up on import, and every command but plot imports it: an unknown
    MUJOCO_GL, or a headless backend whose library is missing, was a traceback from inside
    MuJoCo for `jaxrl list` as much as for `jaxrl render`."""
    import ctypes.util

    monkeypatch.setenv("MUJOCO_GL", "bogus")
    assert cli.main(["list", "classic"]) == 2
    assert "MUJOCO_GL=bogus is not one of MuJoCo's OpenGL backends" in capsys.readouterr().err
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert cli.main(["list", "classic"]) == 2
    err = capsys.readouterr().err
    assert "MUJOCO_GL=osmesa, but its library (OSMesa) is not installed" in err
    assert "libosmesa6" in err and "MUJOCO_GL=egl" in err
    monkeypatch.setenv("MUJOCO_GL", "disable")  # MuJoCo without OpenGL: nothing to check
    assert cli.main(["list", "classic"]) == 0
