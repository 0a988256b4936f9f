import json
import time

import pytest

from jaxrl import cli


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
        (["trian"], "Did you mean 'train'?"),
        (
            ["train", "--algo", "ppo", "--num-envs", "5", "--unroll-length", "7"],
            "a rollout of 35 samples (num_envs x unroll_length) does not split into "
            "num_minibatches=32",
        ),
        (["train", "--algo", "dsac_t", "--critic", "quantile"], "critic must be 'mse' or"),
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
    assert "did you mean --critic-lr" in capsys.readouterr().err


def test_refuses_a_folder_that_holds_a_run(capsys, tmp_path):
    (tmp_path / "config.json").write_text('{"earlier": "run"}')
    code, _, err = _run(capsys, "train", "--out", str(tmp_path))
    assert code == 2 and "already holds a run" in err
    assert json.loads((tmp_path / "config.json").read_text()) == {"earlier": "run"}


def test_algo_flag_and_its_own_preset_together():
    train, agent, _ = cli.build_configs(["--algo", "sac", "--preset", "sac_pendulum"])
    assert train.algo == "sac" and agent.actor_hidden == (64, 64)
