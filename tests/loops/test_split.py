"""PQL's actor/learner split (`jaxrl.loops.split`) on this CPU split into 4 devices.

Each case runs in a fresh process (the XLA flag that splits the CPU must be set before JAX
starts); tests/split_worker.py holds the checks:
- the schedule, pinned by a probe agent whose actions record the parameter version that chose
  them: the actor of exchange r acts with the learners' parameters of the end of exchange
  r - 1, the learners of exchange r learn from the data of exchanges before r (so learning
  starts exactly when that data reaches learning_starts), the last exchange's data is kept;
- where everything lives over 3 devices (actor on one, learners data-parallel on two), and
  the same numbers whether the programs compile ahead or at their first call;
- checkpoint and resume equal the run made in one go, and the checkpoint goes on on one device;
- settings a split cannot take are refused before compiling;
- PQL learns the pendulum from the CLI over 2 devices.
"""

import json

import pytest

from jaxrl import cli
from jaxrl.config import ConfigError, TrainConfig
from tests.devices import run_on_four_devices as _run


def test_split(tmp_path):
    """The schedule, the layout over 3 devices, the refusals, resume equality and resuming
    on one device (tests/split_worker.py), in one process over 4 CPU devices."""
    out = _run("-m", "tests.split_worker", "all", str(tmp_path / "run"))
    for case in ("schedule", "layout", "refused", "resume", "alone"):
        assert f"{case} ok" in out, out


def test_pql_learns_with_actor_and_learners_on_two_devices(tmp_path):
    run = tmp_path / "run"
    argv = ["-m", "jaxrl.cli", "train", "--preset", "pql_pendulum", "--devices", "2"]
    _run(*argv, "--stop-at-return", "-250", "--out", str(run), "--quiet")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["eval_return"] >= -250 > rows[0]["eval_return"], rows
    saved = json.loads((run / "config.json").read_text())["train"]
    assert (saved["devices"], saved["split_every"]) == (2, 8)
    # Chunks of whole exchanges: 2,000 env steps of 16 envs is 125 iterations, made 128 (after
    # the untrained policy's evaluation at step 0).
    assert rows[0]["env_steps"] == 0 and rows[1]["env_steps"] == 128 * 16


def test_split_every_is_checked():
    with pytest.raises(ConfigError, match="split_every must be an integer >= 0"):
        TrainConfig(algo="pql", split_every=-1)
    # One device: no split, whatever split_every says (PQL's default is 8).
    assert not TrainConfig(algo="pql", split_every=8).split
    assert not TrainConfig(algo="ppo", split_every=8, devices=1).split


def test_split_on_more_devices_than_the_machine_has_is_refused():
    from jaxrl.agents import pql
    from jaxrl.loops import make_train

    with pytest.raises(ConfigError, match="devices 2 but this machine has 1 cpu device"):
        make_train(TrainConfig(algo="pql", devices=2), pql.make())


def test_split_every_bad_value_exits_2_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "run"
    code = cli.main(["train", "--algo", "pql", "--split-every", "-2", "--out", str(out)])
    assert code == 2
    assert "--split-every must be an integer >= 0" in capsys.readouterr().err
    assert not out.exists()
