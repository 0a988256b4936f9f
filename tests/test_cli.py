import dataclasses
import json
import time

import pytest

from jaxrl import cli
from jaxrl.agents.sac import SACConfig
from jaxrl.config import ConfigError, TrainConfig


def _run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_prints_algorithms_presets_and_envs(capsys):
    code, out, _ = _run(capsys, "list")
    assert code == 0
    for text in ("sac", "sac_pendulum", "classic/pendulum", "brax/ant", "playground/CheetahRun"):
        assert text in out
    code, out, _ = _run(capsys, "list", "classic")
    assert code == 0 and "brax/" not in out and "classic/pendulum" in out


def test_flags_override_preset_and_reach_both_configs():
    train, agent, _ = cli.build_configs(
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
        (["train", "--preset", "sac_pendulm"], "Did you mean sac_pendulum"),
        (["train", "--num-envs", "0"], "num_envs must be a positive integer"),
        (["train", "--steps", "-5"], "total_steps must be a positive integer"),
        (["train", "--batch-size", "512", "--buffer-size", "100"], "larger than the replay buffer"),
        (["train", "--critic-lr", "0"], "critic_lr must be > 0"),
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
            "a rollout of 35 samples (num_envs x unroll_length) does not split into "
            "num_minibatches=32",
        ),
        (["train", "--algo", "pql", "--critic", "quantile"], "critic must be 'double_q' or"),
        (["train", "--algo", "fast_td3", "--actor-q", "max"], "actor_q must be one of"),
        (["bench", "--suite", "smoke", "--only", "no-such-case"], "no case of suite 'smoke'"),
    ],
)
def test_bad_input_fails_fast_with_a_named_problem(capsys, argv, message):
    start = time.perf_counter()
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert message in err
    assert time.perf_counter() - start < 20  # nothing was compiled


def test_unknown_flag_names_the_closest(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--criticlr", "1e-3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Unrecognized options: --criticlr" in err and "--critic-lr" in err


def test_env_option_values_are_literals_with_lowercase_booleans():
    assert cli.parse_env_options(["a=2", "b=0.5", "c=true", "d=False", "e=mjx"]) == {
        "a": 2,
        "b": 0.5,
        "c": True,
        "d": False,
        "e": "mjx",
    }


def test_prefix_abbreviations_are_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.build_configs(["--num-env", "8"])
    assert exit_info.value.code == 2
    assert "Unrecognized options: --num-env" in capsys.readouterr().err


def test_a_flag_of_another_algorithm_names_it(capsys):
    code, _, err = _run(capsys, "train", "--algo", "td3", "--init-alpha", "0.5")
    assert code == 2
    assert "--init-alpha is an option of sac" in err and "not of td3" in err


def test_integers_in_scientific_notation_and_optional_booleans():
    train, agent, _ = cli.build_configs(
        ["--steps", "2e6", "--buffer-size", "1_000_000", "--normalize-observations"]
    )
    assert train.total_steps == 2_000_000 and train.buffer_size == 1_000_000
    assert train.normalize_observations is True
    train, _, _ = cli.build_configs(["--normalize-observations", "None", "--seed", "3"])
    assert train.normalize_observations is None and train.seed == 3
    with pytest.raises(SystemExit):
        cli.build_configs(["--steps", "2.5"])


def test_help_shows_the_presets_values_and_each_fields_description(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
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
    train, agent, _ = cli.build_configs(["--config", str(tmp_path), "--seed", "5"])
    assert train.num_envs == 8 and train.seed == 5 and agent.actor_hidden == (32, 16)
    with pytest.raises(ConfigError, match="pick one"):
        cli.build_configs(["--config", str(tmp_path), "--preset", "sac_pendulum"])


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
    train, agent, _ = cli.build_configs(["--algo", "sac", "--preset", "sac_pendulum"])
    assert train.algo == "sac" and agent.actor_hidden == (64, 64)
