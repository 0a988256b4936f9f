"""Tied axes of a settings grid (`--vmap actor_lr+critic_lr=V1,V2`, jaxrl/grid.py): one axis
whose every value sets all the fields it names (not their product), its labels, member folders,
saved form (old grids without '+' still load), bad input refused by name, and a tiny vmapped
run with one: each member's fields equal in its config and in its optimiser states, summary,
plot and resume."""

import json
import pathlib
import shlex
import shutil

import jax
import numpy as np
import pytest

from jaxrl import ConfigError, checkpoint, cli, grid, plot
from jaxrl.agents.configs import SACConfig, TD3Config
from jaxrl.config import TrainConfig
from jaxrl.config.options import RunOptions
from jaxrl.run import driver

SAC = SACConfig(actor_hidden=(16,), critic_hidden=(16,))
RUN = TrainConfig(env="classic/pendulum", algo="sac")


def _axes(*spec, agent=SAC):
    return grid.parse_vmap(list(spec), RUN, agent)


def test_a_tied_axis_sets_every_field_it_names_to_each_value():
    axes = _axes("actor_lr+critic-lr=1e-4,3e-4", "gamma=0.9,0.99")
    assert axes == (("actor_lr+critic_lr", (1e-4, 3e-4)), ("gamma", (0.9, 0.99)))
    run_grid = grid.Grid((0, 2), axes)
    # One axis of 2 values times gamma's 2: 4 settings (a product of the fields would be 8).
    assert run_grid.settings == [
        {"actor_lr": 1e-4, "critic_lr": 1e-4, "gamma": 0.9},
        {"actor_lr": 1e-4, "critic_lr": 1e-4, "gamma": 0.99},
        {"actor_lr": 3e-4, "critic_lr": 3e-4, "gamma": 0.9},
        {"actor_lr": 3e-4, "critic_lr": 3e-4, "gamma": 0.99},
    ]
    assert len(run_grid) == 8 and grid.Grid.fields("actor_lr+critic_lr") == (
        "actor_lr",
        "critic_lr",
    )
    setting, seed = run_grid.members[5]
    assert run_grid.member_dir(setting, seed) == "actor_lr=0.0003,critic_lr=0.0003,gamma=0.9/seed_2"
    assert run_grid.describe(5) == "seed 2 of actor_lr=0.0003,critic_lr=0.0003,gamma=0.9"
    # Three tied, alpha_lr among them; a mapping's key may be the '+' name or a tuple.
    three = _axes("actor_lr+critic_lr+alpha_lr=1e-3")
    assert grid.Grid((0,), three).settings == [
        {"actor_lr": 1e-3, "critic_lr": 1e-3, "alpha_lr": 1e-3}
    ]
    assert grid.parse_vmap({("actor_lr", "critic_lr"): [1e-3]}, RUN, SAC) == (
        ("actor_lr+critic_lr", (1e-3,)),
    )
    # Each member's configs: both fields set, alpha_lr at its base value.
    agents = [grid.member_configs(s, RUN, SAC)[1] for s in run_grid.settings]
    assert [(a.actor_lr, a.critic_lr, a.alpha_lr) for a in agents[::2]] == [
        (1e-4, 1e-4, SAC.alpha_lr),
        (3e-4, 3e-4, SAC.alpha_lr),
    ]


def test_a_tied_grid_round_trips_and_old_saved_grids_still_load():
    run_grid = grid.Grid((1, 3), _axes("actor_lr+critic_lr=1e-4,3e-4", "tau=0.005"))
    saved = json.loads(json.dumps(run_grid.as_json()))  # as config.json keeps it
    assert saved == {"seeds": [1, 3], "vmap": {"actor_lr+critic_lr": [1e-4, 3e-4], "tau": [0.005]}}
    loaded = grid.Grid.from_json(saved)
    assert loaded == run_grid and loaded.members == run_grid.members
    # A grid saved before tied axes (no '+'): the same settings as ever.
    old = grid.Grid.from_json({"seeds": [0], "vmap": {"critic_lr": [1e-3, 3e-3]}})
    assert old.settings == [{"critic_lr": 1e-3}, {"critic_lr": 3e-3}]
    assert old.member_dir(old.settings[1], 0) == "critic_lr=0.003/seed_0"
    assert grid.Grid.from_json({"seeds": [0, 1]}).settings == [{}]


@pytest.mark.parametrize(
    "spec,message",
    [
        (["actor_lr+=1e-3"], "--vmap actor_lr+: a tied axis names its fields joined by '+'"),
        (["+critic_lr=1e-3"], "a tied axis names its fields"),
        (["actor_lr++critic_lr=1e-3"], "a tied axis names its fields"),
        (["actor_lr+batch_size=1e-3"], "--vmap batch_size (in actor_lr+batch_size): it shapes"),
        (["actor_lr+nope=1e-3"], "--vmap nope (in actor_lr+nope): no such field"),
        (["actor_lr+actor_lr=1e-3"], "--vmap actor_lr+actor_lr names actor_lr twice"),
        (
            ["actor_lr+critic_lr=1e-3", "critic_lr=3e-3"],
            "--vmap critic_lr is given twice (in actor_lr+critic_lr and critic_lr)",
        ),
        (
            ["tau+critic_lr=1e-3", "actor_lr+critic_lr=3e-3"],
            "--vmap critic_lr is given twice (in tau+critic_lr and actor_lr+critic_lr)",
        ),
        (["actor_lr=1e-3", "actor_lr=3e-3"], "--vmap actor_lr is given twice;"),
        (["actor_lr+critic_lr=fast"], "--vmap actor_lr+critic_lr=fast: the values must be"),
        (["actor_lr+critic_lr=1e-3,1e-3"], "a value is listed twice"),
        (["actor_lr+critic_lr"], "NAME=V1,V2"),
        (["=1e-3"], "NAME=V1,V2"),
    ],
)
def test_bad_tied_axes_are_refused_naming_the_bad_part(spec, message):
    with pytest.raises(ConfigError) as error:
        _axes(*spec)
    assert message in str(error.value)


def test_a_setting_of_a_tied_axis_is_checked_as_its_run_would_be():
    # TD3 has no alpha_lr; tau 2 of a tied axis is refused as a run with tau 2 would be.
    with pytest.raises(ConfigError, match="alpha_lr"):
        grid.parse_vmap(["actor_lr+alpha_lr=1e-3"], RUN, TD3Config())
    run_grid = grid.Grid((0,), _axes("tau+gamma=0.5,2"))
    with pytest.raises(ConfigError, match="--vmap setting tau=2,gamma=2: .* must be in"):
        [grid.member_configs(s, RUN, SAC) for s in run_grid.settings]


def test_the_docs_tied_vmap_example_parses_to_one_axis():
    """docs/SCALING.md's tied --vmap command: the axis it gives, on its preset's configs."""
    from jaxrl.config.resolve import build_configs

    text = (pathlib.Path(__file__).parents[1] / "docs" / "SCALING.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("jaxrl train") and "+" in ln]
    specs, rest = [], []
    words = iter(shlex.split(line.split("  #")[0])[2:])  # after `jaxrl train`
    for word in words:
        if word == "--vmap":
            specs.append(next(words))
        else:
            rest.append(word)
    train, agent, _ = build_configs(rest)
    (axis,) = grid.parse_vmap(specs, train, agent)
    assert axis == ("actor_lr+critic_lr", (1e-4, 3e-4, 1e-3))


# ---------------------------------------------------------------- a tiny run with a tied axis


def _learning_rates(learner) -> np.ndarray:
    """The learning rate(s) in an optimiser state (inject_hyperparams), per member."""
    found = [
        np.asarray(leaf)
        for path, leaf in jax.tree_util.tree_leaves_with_path(learner.opt_state)
        if "learning_rate" in jax.tree_util.keystr(path)
    ]
    assert found, "no learning_rate in the optimiser state"
    return found[0]


def test_a_tied_vmapped_run_trains_each_member_with_both_rates_and_resumes(tmp_path, capsys):
    config = TrainConfig(
        env="classic/pendulum",
        total_steps=256,
        num_envs=4,
        batch_size=16,
        updates_per_step=2,
        buffer_size=256,
        learning_starts=64,
        eval_every=128,
        eval_envs=2,
    )
    options = RunOptions(checkpoint_every=1, keep_checkpoints=0)
    out = tmp_path / "tied"
    vmap = ["actor_lr+critic_lr=1e-3,3e-3"]
    together = driver.train(
        config, SAC, out, vmap=vmap, seeds="0,1", options=options, progress=None
    )
    saved = json.loads((out / "config.json").read_text())
    assert saved["vmap"] == {"actor_lr+critic_lr": [1e-3, 3e-3]} and saved["seeds"] == [0, 1]
    # Setting-major members: both seeds of 1e-3, then both of 3e-3, in the states themselves.
    expected = np.asarray([1e-3, 1e-3, 3e-3, 3e-3])
    agent = together.state.agent
    np.testing.assert_allclose(_learning_rates(agent.actor), expected, rtol=1e-6)
    np.testing.assert_allclose(_learning_rates(agent.critic), expected, rtol=1e-6)
    np.testing.assert_allclose(_learning_rates(agent.log_alpha), SAC.alpha_lr, rtol=1e-6)
    # Each member's folder and config (as jaxrl plot reads them): both fields its value.
    members = plot._grid_members(out, saved)
    assert sorted(str(p.relative_to(out)) for p in members) == [
        f"actor_lr={lr},critic_lr={lr}/seed_{seed}" for lr in ("0.001", "0.003") for seed in (0, 1)
    ]
    for path, member in members.items():
        lr = float(path.parent.name.split(",")[0].split("=")[1])
        assert member["agent"]["actor_lr"] == member["agent"]["critic_lr"] == lr
        assert member["agent"]["alpha_lr"] == SAC.alpha_lr and "vmap" not in member
        assert (path / "metrics.jsonl").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["vmap"] == saved["vmap"] and len(summary["settings"]) == 2
    assert all(s["actor_lr"] == s["critic_lr"] for s in summary["settings"])
    assert summary["best_setting"] in {s["setting"] for s in summary["settings"]}
    # jaxrl plot of the run: one curve per setting.
    assert cli.main(["plot", str(out)]) == 0
    assert (out / "curves.png").stat().st_size > 10_000
    capsys.readouterr()
    # Killed after the first checkpoint: resume rebuilds the tied grid from config.json and
    # finishes bit-identical to the straight run.
    for step in checkpoint.steps(out / "checkpoints"):
        if step > 128:
            shutil.rmtree(out / "checkpoints" / str(step))
    (out / "summary.json").unlink()
    resumed = driver.resume(out, progress=None)
    jax.tree.map(np.testing.assert_array_equal, resumed.state, together.state)
    assert json.loads((out / "summary.json").read_text())["settings"] == summary["settings"]
