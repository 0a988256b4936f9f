"""`jaxrl scale` (experiments/scale.py and its scale_plan, scale_train, scale_folder,
scale_report and scale_figures modules): reading and fitting hand-made scale folders whose curves
follow known laws, bad input refused before anything is built, and the command end to end on a
tiny grid, killed and run again."""

import itertools
import json
import math
import pathlib

import numpy as np
import pytest

from jaxrl import cli, plot
from jaxrl.config import ConfigError
from jaxrl.errors import Interrupted
from jaxrl.experiments import scale, scale_folder, scale_plan, scale_report, scale_train
from jaxrl.experiments import scale_fit as sf
from jaxrl.run.health import NonFiniteError
from jaxrl.run.plan import RunResult

# ---------------------------------------------------------------- hand-made scale folders

# The truth the hand-made runs follow: D_J(sigma) = D_MIN + (BETA / sigma)^ALPHA for the best
# (batch, lr) at each sigma, B*(sigma) = 128 sigma^-1/2, lr*(sigma) = 1e-3 sigma^-1/2; other
# configurations need more data. Grid values chosen so each best is on the grid.
D_MIN, ALPHA, BETA = 3000.0, 0.8, 5000.0 ** (1 / 0.8)
UTDS = (0.25, 1.0, 4.0)
BATCHES = (64, 128, 256)
LRS = (1e-3, 2e-3, 5e-4)  # the order of the vmap axis in config.json: not sorted
NUM_ENVS, EVAL_EVERY, STEPS, J = 4, 500, 40_000, -200.0


def _truth(sigma, batch, lr):
    best_batch, best_lr = 128 * sigma**-0.5, 1e-3 * sigma**-0.5
    penalty = 1 + 0.3 * abs(math.log2(batch / best_batch)) + 0.2 * abs(math.log2(lr / best_lr))
    return (D_MIN + (BETA / sigma) ** ALPHA) * penalty


def _write_rows(folder: pathlib.Path, rows):
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def make_scale_folder(
    root: pathlib.Path,
    utds=UTDS,
    batches=BATCHES,
    lrs=LRS,
    seeds=(0, 1),
    lr_field="critic_lr",
    widths=None,
    truth=None,
    steps=STEPS,
):
    """A scale folder as `jaxrl scale` leaves it, without training: scale_grid.json, and per
    (sigma, batch) a run folder (config.json, summary.json, each member's metrics.jsonl) whose
    seed-mean curve rises linearly through J at _truth's D_J. Each chunk's `updates` is
    sigma x its env steps, so a crossing read off the updates would be sigma x D_J. lr_field
    critic_lr: a folder as made before the tied default; actor_lr+critic_lr: as made now, each
    member's folder naming both fields. `widths` ({width: critic parameters}): a folder with a
    width axis, a run per (sigma, batch, width), D_J `truth(sigma, batch, lr, width)`."""
    runs = {}
    for sigma, batch, width in itertools.product(utds, batches, widths or [None]):
        name = scale_folder.run_name(sigma, batch, width)
        per_step = round(sigma * NUM_ENVS)
        runs[name] = {"utd": sigma, "batch_size": batch, "updates_per_step": per_step}
        if width is not None:
            runs[name].update(width=width, critic_params=widths[width])
        run = root / name
        run.mkdir(parents=True)
        saved = {
            "train": {"num_envs": NUM_ENVS, "updates_per_step": per_step, "batch_size": batch},
            "agent": {},
            "seeds": list(seeds),
            "vmap": {lr_field: list(lrs)},
        }
        (run / "config.json").write_text(json.dumps(saved))
        (run / "summary.json").write_text("{}")
        for lr in lrs:
            data = _truth(sigma, batch, lr) if width is None else truth(sigma, batch, lr, width)
            for i, seed in enumerate(seeds):
                offset = 50.0 * (1 if i % 2 else -1) * (len(seeds) > 1)
                rows = [
                    {
                        "env_steps": step,
                        "wall_seconds": step / 1000,
                        "eval_return": -1000.0 + 800.0 * step / data + offset,
                        "updates": sigma * EVAL_EVERY,
                    }
                    for step in range(EVAL_EVERY, steps + 1, EVAL_EVERY)
                ]
                setting = ",".join(f"{f}={lr:g}" for f in lr_field.split("+"))
                _write_rows(run / setting / f"seed_{seed}", rows)
    spec = {
        "algo": "sac",
        "env": "classic/pendulum",
        "target": J,
        "lr_field": lr_field,
        "lrs": sorted(lrs),
        "seeds": list(seeds),
        "train": {"num_envs": NUM_ENVS},
        "agent": {},
        "runs": runs,
    }
    if widths:
        spec["widths"] = sorted(widths)
    (root / scale_folder.GRID_FILE).write_text(json.dumps(spec))
    return root


@pytest.mark.parametrize("lr_field", ["critic_lr", "actor_lr+critic_lr"])
def test_crossings_are_read_in_env_steps_per_learning_rate(tmp_path, lr_field):
    """Every configuration's D_J is _truth's, to interpolation exactness, and its updates are
    sigma x D_J: the x axis is env steps (not updates), each lr its own member's curve; in a
    folder of one learning-rate field (as made before the tied default) or of the tied axis."""
    folder = make_scale_folder(tmp_path, lr_field=lr_field)
    _, members = scale_folder.read_scale_folder(folder)
    rows = scale_report.crossings(members, J, None)
    assert len(rows) == len(UTDS) * len(BATCHES) * len(LRS)
    for row in rows:
        data = _truth(row["utd"], row["batch_size"], row["lr"])
        assert row["env_steps"] == pytest.approx(data, rel=1e-9), row
        assert row["updates"] == pytest.approx(row["utd"] * data, rel=1e-9)
        assert row["compute"] == pytest.approx(row["utd"] * data, rel=1e-9)
        # Each seed alone is 50 above or below the mean: it crosses 50/800 of D_J earlier/later.
        early, late = row["seed_env_steps"][1], row["seed_env_steps"][0]
        assert early == pytest.approx(data * (1 - 50 / 800), rel=1e-9)
        assert late == pytest.approx(data * (1 + 50 / 800), rel=1e-9)


def test_fit_recovers_the_laws_and_predicts(tmp_path):
    folder = make_scale_folder(tmp_path)
    budgets = [scale.Budget(data=6000.0), scale.Budget(delta=100.0), scale.Budget(compute=2e4)]
    report = scale.fit(folder, budgets=budgets, bootstrap=20)
    fit = report["fit"]
    assert fit["d_min"]["value"] == pytest.approx(D_MIN, rel=1e-3)
    assert fit["alpha"]["value"] == pytest.approx(ALPHA, rel=1e-3)
    assert fit["beta"]["value"] == pytest.approx(BETA, rel=1e-3)
    assert fit["batch_exp"]["value"] == pytest.approx(-0.5, abs=1e-9)
    assert fit["batch_coef"]["value"] == pytest.approx(128.0, rel=1e-9)
    assert fit["lr_exp"]["value"] == pytest.approx(-0.5, abs=1e-9)
    assert fit["lr_coef"]["value"] == pytest.approx(1e-3, rel=1e-9)
    # Seeds differ only by a constant offset around the mean: a resample of (0, 0) or (1, 1)
    # moves each crossing by -/+ 1/16, so the intervals hold the truth and have width.
    low, high = fit["alpha"]["interval"]
    assert low <= ALPHA * 1.001 and high >= ALPHA * 0.999
    assert [b["sigma"] for b in report["best"]] == list(UTDS)
    assert [b["batch_size"] for b in report["best"]] == [256, 128, 64]
    assert [b["lr"] for b in report["best"]] == pytest.approx([2e-3, 1e-3, 5e-4])
    by_data, by_delta, by_compute = report["predictions"]
    sigma = BETA / (6000.0 - D_MIN) ** (1 / ALPHA)
    assert by_data["utd"] == pytest.approx(sigma, rel=1e-3)
    assert by_data["env_steps"] == pytest.approx(6000.0, rel=1e-6)
    assert by_data["batch_size"] == pytest.approx(128 * sigma**-0.5, rel=1e-3)
    assert by_data["lr"] == pytest.approx(1e-3 * sigma**-0.5, rel=1e-3)
    assert by_data["compute"] == pytest.approx(sigma * 6000.0, rel=1e-3)
    use = by_data["train_with"]
    assert use["updates_per_step"] == round(sigma * NUM_ENVS) and use["num_envs"] == NUM_ENVS
    lo, hi = by_data["interval"]["utd"]
    assert lo <= by_data["utd"] <= hi
    law = sf.DataLaw(D_MIN, BETA, ALPHA)
    assert by_delta["utd"] == pytest.approx(sf.optimal_sigma(law, 100.0), rel=1e-3)
    assert by_compute["compute"] == pytest.approx(2e4, rel=1e-6)
    saved = json.loads((folder / "scale.json").read_text())
    assert saved["fit"] == fit and len(saved["runs"]) == 27
    assert (folder / "scale.png").stat().st_size > 10_000


def test_fit_of_part_of_the_grid_and_another_target(tmp_path):
    """--from FOLDER --utd ... fits only those runs; a target that too few UTD ratios reach is
    no fit (exit 1), the crossings still written."""
    folder = make_scale_folder(tmp_path, utds=(0.25, 0.5, 1.0, 4.0))
    code = cli.main(["scale", "--from", str(folder), "--utd", "0.25,0.5,1", "--bootstrap", "0"])
    assert code == 0
    report = json.loads((folder / "scale.json").read_text())
    assert sorted({r["utd"] for r in report["runs"]}) == [0.25, 0.5, 1.0]
    # A return no curve reaches (they end below 3,000): no fit, exit 1, the crossings written.
    code = cli.main(["scale", "--from", str(folder), "--target", "1e5", "--name", "high"])
    assert code == 1
    high = json.loads((folder / "high.json").read_text())
    assert high["fit"] is None and "at least 3" in high["fit_error"]
    assert all(r["env_steps"] is None for r in high["runs"])


def test_the_docs_python_example_runs_on_a_scale_folder(tmp_path, monkeypatch, capsys):
    """docs/SCALE.md's Python block, on a hand-made folder where it expects scales/pendulum."""
    import re

    text = (pathlib.Path(__file__).parents[2] / "docs" / "SCALE.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    make_scale_folder(tmp_path / "scales" / "pendulum")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block, "docs/SCALE.md", "exec"), namespace)
    best = namespace["best"]
    assert best["env_steps"] == pytest.approx(8000.0, rel=1e-6) and best["interval"]["utd"]
    assert (tmp_path / "scales" / "pendulum" / "scale.png").is_file()
    assert capsys.readouterr().out.split()[0] == f"{best['utd']}"


def test_validation_predicts_a_held_back_utd_ratio(tmp_path, capsys):
    """experiments/scale_validate.py, without training: fitted on UTD 0.25, 1 and 4 of runs that
    follow the laws exactly, the prediction at the held-back UTD 16 is what the grid's own runs
    there measure, with the batch size and learning rate the laws give."""
    from jaxrl.experiments import scale_validate

    folder = make_scale_folder(
        tmp_path,
        utds=(0.25, 1.0, 4.0, 16.0),
        batches=(32, 64, 128, 256),
        lrs=(1e-3, 2e-3, 2.5e-4, 5e-4),
    )
    argv = [str(folder), "--fit-utd", "0.25,1,4", "--holdout-utd", "16", "--no-train"]
    assert scale_validate.main([*argv, "--bootstrap", "10"]) == 0
    result = json.loads((folder / "validate-utd=16.json").read_text())
    predicted, measured = result["predicted"], result["measured"]["grid"]
    assert predicted["env_steps"] == pytest.approx(D_MIN + (BETA / 16) ** ALPHA, rel=1e-6)
    assert predicted["batch_size"] == pytest.approx(32.0) and predicted["lr"] == pytest.approx(
        2.5e-4
    )
    assert measured["env_steps"] == pytest.approx(predicted["env_steps"], rel=1e-6)
    assert (measured["batch_size"], measured["lr"]) == (32, 2.5e-4)
    assert measured["inside_interval"] and "inside the interval" in capsys.readouterr().out
    assert scale_validate.main([*argv[:3], "--holdout-utd", "2", "--no-train"]) == 2
    assert "must be larger" in capsys.readouterr().err


# ---------------------------------------------------------------- bad input


TINY = [
    "--env",
    "classic/pendulum",
    "--num-envs",
    "4",
    "--buffer-size",
    "2048",
    "--learning-starts",
    "64",
    "--eval-envs",
    "2",
    "--actor-hidden",
    "16",
    "--critic-hidden",
    "16",
    "--eval-every",
    "128",
]
GRID = ["--utd", "0.25,0.5,1", "--batch-sizes", "16", "--lrs", "1e-3,3e-3", "--seeds", "2"]


@pytest.fixture
def no_training(monkeypatch):
    from jaxrl.run import driver

    def refuse(*args, **kwargs):
        raise AssertionError("trained on bad input")

    monkeypatch.setattr(driver, "train", refuse)
    monkeypatch.setattr(driver, "resume", refuse)


@pytest.mark.parametrize(
    "argv,message",
    [
        ([*TINY, *GRID], "needs the target return J: --target J"),
        (["--target", "-1000", *TINY, "--utd", "0.5", "--lrs", "1e-3"], "at least 3 UTD ratios"),
        (["--target", "-1000", *TINY, "--utd", "0.5,1"], "at least 3 UTD ratios"),
        (["--target", "-1000", "--algo", "ppo", *GRID[:2]], "ppo is on-policy"),
        (["--target", "-1000", *TINY, "--utd", "0.3,0.5,1"], "multiple of 1/4"),
        (["--target", "-1000", *TINY, *GRID, "--seed", "3"], "does not take --seed"),
        (["--target", "-1000", *TINY, *GRID, "--batch-size", "8"], "does not take --batch-size"),
        (["--target", "-1000", *TINY, *GRID, "--lr-field", "tau"], "--lr-field tau"),
        (["--target", "-1000", *TINY, *GRID, "--budget", "1e5", "--steps", "512"], "not both"),
        (["--target", "-1000", *TINY, "--utd", "0.25,0.5,1", "--lrs", "1e-3,0"], "> 0"),
        (["--target", "-1000", *TINY, *GRID, "--steps", "32"], "learning_starts"),
        (["--target", "-1000", "--env", "classic/pendulumm", *GRID], "pendulumm"),
    ],
)
def test_bad_input_exits_2_before_anything_is_built(capsys, tmp_path, no_training, argv, message):
    out = tmp_path / "grid"
    code = cli.main(["scale", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err, err
    assert not out.exists()


def test_from_a_folder_that_is_not_a_scale_folder(capsys, tmp_path):
    code = cli.main(["scale", "--from", str(tmp_path / "nothing")])
    assert code == 2 and "is not a scale folder" in capsys.readouterr().err
    folder = make_scale_folder(tmp_path / "grid")
    code = cli.main(["scale", "--from", str(folder), "--steps", "100"])
    assert code == 2 and "without training" in capsys.readouterr().err
    code = cli.main(["scale", "--from", str(folder), "--utd", "8"])
    assert code == 2 and "not in the grid" in capsys.readouterr().err


def test_a_folder_keeps_its_learning_rates_and_seeds(capsys, tmp_path, no_training):
    """Rerun into a folder that holds another grid's runs: refused, naming what differs."""
    from jaxrl.config.resolve import build_configs

    out = tmp_path / "grid"
    train, agent, _ = build_configs([*TINY, "--steps", "512"])
    grid = {"utds": (0.25, 0.5, 1), "batch_sizes": (16,), "lrs": (1e-3, 3e-3), "seeds": 2}
    the_plan = scale_plan.plan(train, agent, out, target=-1000.0, **grid)
    out.mkdir()
    (out / scale_folder.GRID_FILE).write_text(json.dumps(the_plan.spec))
    argv = ["scale", "--target", "-1000", *TINY, *GRID, "--steps", "512", "--out", str(out)]
    changed = [w if w != "1e-3,3e-3" else "1e-3,1e-2" for w in argv]
    assert cli.main(changed) == 2
    err = capsys.readouterr().err
    assert "holds a scale grid with other settings (lrs differ)" in err
    assert cli.main([*argv, "--tau", "0.01"]) == 2
    assert "agent.tau differ" in capsys.readouterr().err
    assert cli.main([*argv, "--dry-run"]) == 0  # the same grid: fine (and nothing trains)
    assert "3 new" in capsys.readouterr().out


def test_the_learning_rate_axis_ties_actor_and_critic_by_default(capsys, tmp_path, no_training):
    """The plan's learning-rate axis: actor_lr+critic_lr tied (each member both at its lr, the
    temperature's alpha_lr at its base value), or the fields named; the spec saved with it."""
    from jaxrl import grid
    from jaxrl.config.resolve import build_configs

    train, agent, _ = build_configs([*TINY, "--steps", "512", "--alpha-lr", "7e-4"])
    small = {"utds": (0.25, 0.5, 1), "batch_sizes": (16,), "lrs": (1e-3, 3e-3), "seeds": 2}
    the_plan = scale_plan.plan(train, agent, tmp_path / "grid", target=-1.0, **small)
    assert the_plan.lr_field == "actor_lr+critic_lr" and not the_plan.notes
    assert the_plan.spec["lr_field"] == "actor_lr+critic_lr" and the_plan.spec["lrs"] == [
        1e-3,
        3e-3,
    ]
    assert {"actor_lr", "critic_lr"}.isdisjoint(the_plan.spec["agent"])
    assert the_plan.spec["agent"]["alpha_lr"] == 7e-4
    # What each program trains: the vmap train_grid passes, as its members take it.
    axis = grid.parse_vmap({the_plan.lr_field: the_plan.lrs}, train, agent)
    members = [grid.member_configs(s, train, agent)[1] for s in grid.Grid((0,), axis).settings]
    assert [(m.actor_lr, m.critic_lr, m.alpha_lr) for m in members] == [
        (1e-3, 1e-3, 7e-4),
        (3e-3, 3e-3, 7e-4),
    ]
    # Named: one field alone, or alpha_lr tied in too; a bad part is named.
    one = scale_plan.plan(
        train, agent, tmp_path / "one", target=-1.0, lr_field="critic_lr", **small
    )
    assert one.lr_field == "critic_lr" and one.spec["agent"]["actor_lr"] == agent.actor_lr
    three = scale_plan.plan(
        train, agent, tmp_path / "3", target=-1.0, lr_field="actor_lr+critic_lr+alpha_lr", **small
    )
    assert "alpha_lr" not in three.spec["agent"]
    for bad, message in [
        ("actor_lr+tau", "--lr-field tau (in actor_lr+tau): not a learning rate of sac"),
        ("actor_lr+", "--lr-field actor_lr+: an empty field"),
        ("critic_lr+critic_lr", "--lr-field critic_lr+critic_lr: a field is named twice"),
    ]:
        with pytest.raises(ConfigError) as error:
            scale_plan.plan(train, agent, tmp_path / "bad", target=-1.0, lr_field=bad, **small)
        assert message in str(error.value)
    # Proposed learning rates: around the base value the tied fields share, else refused.
    proposed = scale_plan.plan(train, agent, tmp_path / "p", target=-1.0, utds=(0.25, 0.5, 1))
    assert proposed.lrs == (1e-4, 3e-4, 9e-4)  # actor_lr = critic_lr = 3e-4, x 1/3, 1, 3
    apart = build_configs([*TINY, "--actor-lr", "1e-4", "--critic-lr", "3e-4"])[:2]
    with pytest.raises(ConfigError, match="actor_lr 0.0001, critic_lr 0.0003: give the"):
        scale_plan.plan(*apart, tmp_path / "p2", target=-1.0, utds=(0.25, 0.5, 1))
    # The command prints the axis and its members.
    argv = ["scale", "--target", "-1000", *TINY, *GRID, "--steps", "512", "--dry-run"]
    assert cli.main([*argv, "--out", str(tmp_path / "cmd")]) == 0
    assert (
        "each actor_lr+critic_lr 0.001, 0.003 x seeds 0, 1 (4 members)" in capsys.readouterr().out
    )


def test_an_algorithm_without_both_learning_rates_falls_back_and_says_so(monkeypatch):
    fields = {"critic_lr": 1e-3, "alpha_lr": 1e-3}
    monkeypatch.setattr(scale_plan, "_lr_fields", lambda agent_config: list(fields.items()))
    field, note = scale_plan.default_lr_field(object())
    assert field == "critic_lr" and "lacks actor_lr: the learning-rate axis is critic_lr" in note
    fields = {"learning_rate": 1e-3}
    assert scale_plan.default_lr_field(object())[0] == "learning_rate"
    fields = {"policy_lr": 1e-3, "value_lr": 1e-3, "alpha_lr": 1e-3}
    field, note = scale_plan.default_lr_field(object())
    assert field == "policy_lr+value_lr" and "lacks actor_lr and critic_lr" in note
    fields = {}
    with pytest.raises(ConfigError, match="no learning rate"):
        scale_plan.default_lr_field(object())


def test_a_folder_made_with_one_learning_rate_field_goes_on_with_it(capsys, tmp_path, no_training):
    """A folder from before the tied default (lr_field critic_lr): the same command goes on with
    its axis and says so; another --lr-field is refused naming the folder's; --from refits it."""
    from jaxrl.config.resolve import build_configs

    out = tmp_path / "grid"
    train, agent, _ = build_configs([*TINY, "--steps", "512"])
    small = {"utds": (0.25, 0.5, 1), "batch_sizes": (16,), "lrs": (1e-3, 3e-3), "seeds": 2}
    old = scale_plan.plan(train, agent, out, target=-1000.0, lr_field="critic_lr", **small)
    out.mkdir()
    (out / scale_folder.GRID_FILE).write_text(json.dumps(old.spec))
    again = scale_plan.plan(train, agent, out, target=-1000.0, **small)
    assert again.lr_field == "critic_lr" and again.spec == old.spec
    assert "made with --lr-field critic_lr, not the default actor_lr+critic_lr" in again.notes[0]
    argv = ["scale", "--target", "-1000", *TINY, *GRID, "--steps", "512", "--out", str(out)]
    assert cli.main([*argv, "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("note: ") and "each critic_lr 0.001, 0.003" in printed
    assert cli.main([*argv, "--lr-field", "actor_lr+critic_lr", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "whose learning-rate axis is --lr-field critic_lr, not actor_lr+critic_lr" in err
    assert "--lr-field critic_lr, or use another --out" in err


def test_proposed_grid_budget_and_a_program_that_stops_on_a_nan(tmp_path, monkeypatch):
    """Axes left out are proposed around the base config; --budget sets the steps; a program
    stopped by a NaN is recorded and not retried (driver.train stubbed: nothing trains)."""
    from jaxrl.config.resolve import build_configs
    from jaxrl.run import driver

    train, agent, _ = build_configs([*TINY, "--updates-per-step", "4", "--critic-lr", "3e-4"])
    the_plan = scale_plan.plan(train, agent, tmp_path / "grid", target=-1000.0, budget=1e6)
    assert the_plan.utds == (0.25, 0.5, 1.0, 2.0, 4.0)  # UTD 1 (4 updates, 4 envs) x 1/4 .. 4
    assert the_plan.batch_sizes == (128, 256, 512) and the_plan.lrs == (1e-4, 3e-4, 9e-4)
    # The warm-up's steps run no update: the budget's steps come after them.
    warm_up = the_plan.config.learning_starts
    assert warm_up > 0 and the_plan.config.total_steps == warm_up + int(1e6 // (4 * 3 * 3 * 7.75))
    assert 0.99e6 <= the_plan.cost() <= 1e6 and not (tmp_path / "grid").exists()

    calls = []

    def fake_train(config, *args, **kwargs):
        calls.append(config.updates_per_step)
        if config.updates_per_step == 2:
            raise NonFiniteError("non-finite losses in chunk 3")
        return RunResult(None, [], 0.0, 0.0, None)

    monkeypatch.setattr(driver, "train", fake_train)
    small = {"utds": (0.25, 0.5, 1), "batch_sizes": (16,), "lrs": (1e-3,), "seeds": 2}
    out = tmp_path / "small"
    outcome = scale_train.train_grid(
        scale_plan.plan(train, agent, out, target=-1.0, **small), say=print
    )
    assert calls == [1, 2, 4] and outcome["utd=0.5-batch=16"] == "failed"
    assert "chunk 3" in (out / "utd=0.5-batch=16" / scale_folder.FAILED_FILE).read_text()
    again = scale_plan.plan(train, agent, out, target=-1.0, **small)
    assert [p.status for p in again.programs] == ["new", "failed", "new"]
    # Ctrl-C in a program's last chunk: that program finishes, the grid stops after it.
    calls.clear()
    monkeypatch.setattr(
        driver,
        "train",
        lambda config, *a, **k: (
            calls.append(config.updates_per_step)
            or RunResult(None, [], 0.0, 0.0, None, interrupted=True)
        ),
    )
    with pytest.raises(Interrupted, match=r"program 1 of 3 .* finished as Ctrl-C came; run the"):
        scale_train.train_grid(again, say=print)
    assert calls == [1]


def test_a_best_data_to_j_that_rises_with_the_utd_ratio_is_warned_of():
    """The data law can only fall as sigma grows: bests that rise (Brax's inverted pendulum,
    3 bimodal seeds: 18,856, 10,548, 14,103 env steps at UTD 0.125, 0.25, 0.5) get a warning
    naming where; bests that fall, or stay level, get none."""

    def best(*data):
        return [
            sf.Best(sigma, 64.0, 1e-3, d) for sigma, d in zip((0.125, 0.25, 0.5), data, strict=True)
        ]

    rising = scale_report._warnings([], best(18_856.0, 10_548.0, 14_103.0))
    assert len(rising) == 1 and "rises with the UTD ratio" in rising[0], rising
    assert "0.25 -> 0.5" in rising[0] and "0.125 -> 0.25" not in rising[0]
    assert scale_report._warnings([], best(17_186.0, 9_730.0, 5_815.0)) == []
    assert scale_report._warnings([], best(128.0, 128.0, 128.0)) == []


# ---------------------------------------------------------------- the width axis

CRITIC_PARAMS = {16: 738, 64: 9_090, 256: 133_122}  # made-up counts, each width its own


def _truth_by_width(sigma, batch, lr, width):
    """_truth with the best batch size growing with the critic: x width/64 (16: 32 sigma^-1/2,
    below the grid's batches, so its best on the grid is the smallest; 256: 512 sigma^-1/2,
    above it), and the data law scaled by (64/width)^0.25 (wider learns from less data)."""
    best_batch, best_lr = 128 * sigma**-0.5 * width / 64, 1e-3 * sigma**-0.5
    penalty = 1 + 0.3 * abs(math.log2(batch / best_batch)) + 0.2 * abs(math.log2(lr / best_lr))
    return (D_MIN + (BETA / sigma) ** ALPHA) * (64 / width) ** 0.25 * penalty


def test_a_width_axis_is_fitted_width_by_width_and_checked_for_td_overfitting(tmp_path, capsys):
    """Each width's runs give its own laws (width 64, whose bests lie on the grid, recovers
    _truth's exactly), compute counted in FLOPs from that width's critic parameters; each width's
    best batch size per UTD ratio; large batches hurt the small critic, not the large one."""
    folder = make_scale_folder(
        tmp_path / "grid", widths=CRITIC_PARAMS, truth=_truth_by_width, steps=2 * STEPS
    )
    report = scale.fit(folder, bootstrap=10)
    assert report["widths"] == [16, 64, 256] and report["fit"] is None
    middle = report["by_width"]["64"]["fit"]
    for name, value in [("d_min", D_MIN), ("alpha", ALPHA), ("beta", BETA)]:
        assert middle[name]["value"] == pytest.approx(value, rel=1e-3), name
    assert middle["batch_exp"]["value"] == pytest.approx(-0.5, abs=1e-9)
    assert middle["batch_coef"]["value"] == pytest.approx(128.0, rel=1e-9)
    assert all(report["by_width"][w]["fit"] is not None for w in ("16", "256"))
    assert len(report["runs"]) == 3 * 3 * 3 * 3
    for row in report["runs"]:
        data = _truth_by_width(row["utd"], row["batch_size"], row["lr"], row["width"])
        assert row["env_steps"] == pytest.approx(data, rel=1e-9)
        flops = 10 * CRITIC_PARAMS[row["width"]] * row["batch_size"] * row["utd"] * data
        assert row["compute"] == pytest.approx(flops, rel=1e-9), row
        assert row["critic_params"] == CRITIC_PARAMS[row["width"]]
    best = {w["width"]: [s["best_batch"] for s in w["utd"]] for w in report["batch_by_width"]}
    assert best == {16: [64, 64, 64], 64: [256, 128, 64], 256: [256, 256, 256]}
    check = report["td_overfitting"]
    assert check["seen"] is True and check["largest_batch"] == 256
    penalty = check["penalty"]
    assert penalty["256"] == 1.0 and penalty["16"] > penalty["64"] > 1.0
    # Width 16's best batch is 32 sigma^-1/2 (64, 32, 16): batch 256 over batch 64 is 1.6/1,
    # 1.9/1.3 and 2.2/1.6 at UTD 0.25, 1, 4 (_truth_by_width's penalties); the median 1.9/1.3.
    assert penalty["16"] == pytest.approx((1 + 0.3 * 3) / (1 + 0.3 * 1), rel=1e-9)
    for name in ("scale.png", "scale-width=16.png", "scale-width=64.png", "scale-width=256.png"):
        assert (folder / name).stat().st_size > 10_000, name
    saved = json.loads((folder / "scale.json").read_text())
    assert saved["td_overfitting"] == check and "_laws" not in saved["by_width"]["64"]
    # The command: a part of the widths, printed width by width; --model-size refused.
    assert cli.main(["scale", "--from", str(folder), "--widths", "16,256", "--name", "ends"]) == 0
    printed = capsys.readouterr().out
    assert "== critic width 16 (738 critic parameters)" in printed and "width 64" not in printed
    assert "TD overfitting (large batches hurting small critics): seen" in printed
    assert json.loads((folder / "ends.json").read_text())["widths"] == [16, 256]
    assert cli.main(["scale", "--from", str(folder), "--model-size", "1e4"]) == 2
    assert "counts each width's critic parameters" in capsys.readouterr().err
    from jaxrl.experiments import scale_validate

    with pytest.raises(ConfigError, match="has a width axis"):
        scale_validate.validate(folder, [0.25, 1.0], 4.0, train=False)


def test_without_td_overfitting_the_check_says_not_seen(tmp_path):
    """Every width with the same best batch sizes (_truth's): the largest batch's penalty is the
    same for every width, so the effect is not seen; a grid of one batch size is not checked."""

    def same(sigma, batch, lr, width):
        return _truth(sigma, batch, lr)

    folder = make_scale_folder(tmp_path / "a", widths=CRITIC_PARAMS, truth=same)
    check = scale.fit(folder, bootstrap=0, write=False)["td_overfitting"]
    assert check["seen"] is False and len(set(check["penalty"].values())) == 1
    one = make_scale_folder(tmp_path / "b", batches=(128,), widths=CRITIC_PARAMS, truth=same)
    check = scale.fit(one, bootstrap=0, write=False)["td_overfitting"]
    assert check["seen"] is None and "2 batch sizes" in check["why"]


def test_the_plan_of_a_width_axis_scales_the_critic_and_counts_its_parameters(
    capsys, tmp_path, monkeypatch
):
    """A program per (UTD, batch, width), the critic's sizes scaled from the base config's
    shape, each trained with its own agent config; N counted off the critic's parameters; the
    spec keeps the widths; a folder keeps having (or not having) the axis, widths may be added."""
    from jaxrl.config.resolve import build_configs
    from jaxrl.run import driver

    assert scale_plan.critic_sizes((256, 256), 64) == (64, 64)
    assert scale_plan.critic_sizes((1024, 512, 256), 256) == (256, 128, 64)
    train, agent, _ = build_configs([*TINY, "--steps", "512", "--critic-hidden", "16,8"])
    small = {"utds": (0.25, 0.5, 1), "batch_sizes": (16, 32), "lrs": (1e-3,), "seeds": 1}
    out = tmp_path / "grid"
    the_plan = scale_plan.plan(train, agent, out, target=-1.0, widths=(8, 4), **small)
    assert the_plan.widths == (4, 8) and len(the_plan.programs) == 3 * 2 * 2
    first = the_plan.programs[0]
    assert first.name == "utd=0.25-batch=16-width=4" and first.agent_config.critic_hidden == (4, 2)

    # SAC's two critics on the pendulum (3 observations, 1 action), hidden (w, w/2), one output.
    def count(w):
        return 2 * ((4 * w + w) + (w * (w // 2) + w // 2) + (w // 2 + 1))

    runs = the_plan.spec["runs"]
    assert runs["utd=1-batch=32-width=8"] == {
        "utd": 1.0,
        "batch_size": 32,
        "updates_per_step": 4,
        "width": 8,
        "critic_hidden": [8, 4],
        "critic_params": count(8),
    }
    assert runs["utd=1-batch=32-width=4"]["critic_params"] == count(4)
    assert the_plan.spec["widths"] == [4, 8] and "critic_hidden" not in the_plan.spec["agent"]
    trained = []

    def fake_train(config, agent_config, folder, **kwargs):
        trained.append((folder.name, config.batch_size, agent_config.critic_hidden))
        return RunResult(None, [], 0.0, 0.0, folder)

    monkeypatch.setattr(driver, "train", fake_train)
    scale_train.train_grid(the_plan, say=lambda line: None)
    assert trained[:2] == [
        ("utd=0.25-batch=16-width=4", 16, (4, 2)),
        ("utd=0.25-batch=16-width=8", 16, (8, 4)),
    ]
    assert len(trained) == 12
    # Widths added to the folder: kept with the old; a folder with the axis refuses to drop it.
    more = scale_plan.plan(train, agent, out, target=-1.0, widths=(16,), **small)
    assert more.spec["widths"] == [4, 8, 16] and len(more.spec["runs"]) == 18
    with pytest.raises(scale.ScaleError, match="made with a width axis"):
        scale_plan.plan(train, agent, out, target=-1.0, **small)
    argv = ["scale", "--target", "-1000", *TINY, *GRID, "--out", str(tmp_path / "x")]
    assert cli.main([*argv, "--widths", "8,0"]) == 2
    assert "--widths '8,0': every value must be a finite number > 0" in capsys.readouterr().err
    assert cli.main([*argv, "--widths", "8", "--model-size", "1e4"]) == 2
    assert "counts each width's critic parameters" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


# ---------------------------------------------------------------- end to end


def test_scale_trains_fits_and_goes_on_after_a_kill(capsys, tmp_path):
    """The command on a tiny grid (3 UTD ratios x 1 batch size, 2 learning rates x 2 seeds
    vmapped per program), then killed runs simulated: one finished run loses its summary.json
    (killed after its final checkpoint), one is cut back to its config.json (killed while
    compiling); the same command again resumes the first, retrains the second and leaves the
    third, finished, alone."""
    out = tmp_path / "grid"
    argv = ["scale", *TINY, *GRID, "--steps", "512", "--quiet", "--bootstrap", "10"]
    argv += ["--target", "-1e6", "--predict-delta", "1", "--out", str(out)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    first = capsys.readouterr().out
    assert first.count("training ->") == 3
    report = json.loads((out / "scale.json").read_text())
    assert len(report["runs"]) == 6 and report["fit"] is not None
    # J far below any return: every run crosses at its first evaluation, which is flagged.
    assert all(r["env_steps"] == 128 and r["at_first_evaluation"] for r in report["runs"])
    assert "upper bound" in report["warnings"][0]
    for r in report["runs"]:
        run = out / r["folder"]
        saved = json.loads((run / "config.json").read_text())
        assert saved["train"]["updates_per_step"] == round(r["utd"] * 4)
        # One learning rate for actor and critic (the tied default), alpha_lr at its base.
        assert saved["vmap"] == {"actor_lr+critic_lr": [0.001, 0.003]}
        assert saved["seeds"] == [0, 1]
        member = plot._grid_members(run, saved)[run / f"{_setting(r['lr'])}/seed_1"]
        assert member["agent"]["actor_lr"] == member["agent"]["critic_lr"] == r["lr"]
        assert member["agent"]["alpha_lr"] == saved["agent"]["alpha_lr"]
    # Refit at a real target: each crossing is the one computed here from the member's own
    # metrics file, found by its learning rate's folder name.
    returns = []
    for r in report["runs"]:
        for seed in (0, 1):
            rows = _rows(out / r["folder"] / _setting(r["lr"]) / f"seed_{seed}")
            returns.append([row["eval_return"] for row in rows])
    target = float(np.median(np.asarray(returns)[:, -1]))
    code = cli.main(["scale", "--from", str(out), "--target", str(target), "--name", "mid"])
    assert code in (0, 1)
    mid = json.loads((out / "mid.json").read_text())
    for r in mid["runs"]:
        member = out / r["folder"] / _setting(r["lr"])
        curves = [_rows(member / f"seed_{seed}") for seed in (0, 1)]
        steps = [row["env_steps"] for row in curves[0]]
        expected = sf.crossing(steps, [[row["eval_return"] for row in c] for c in curves], target)
        assert r["env_steps"] == expected
    capsys.readouterr()

    # Kill: the last run has finished but lost its summary; the second is back to config.json.
    done, cut, unfinished = (out / scale_folder.run_name(s, 16) for s in (0.25, 0.5, 1.0))
    (unfinished / "summary.json").unlink()
    kept = (done / _setting(0.001) / "seed_0" / "metrics.jsonl").stat().st_mtime_ns
    for path in sorted(cut.iterdir()):
        if path.name != "config.json":
            _remove(path)
    assert cli.main(argv) == 0, capsys.readouterr().err
    again = capsys.readouterr().out
    assert (
        "UTD 0.25 (updates_per_step 1), batch 16: 2 actor_lr+critic_lr x 2 seeds: done, skipped"
        in again
    )
    assert (
        "UTD 0.5 (updates_per_step 2), batch 16: 2 actor_lr+critic_lr x 2 seeds: resuming" in again
    )
    assert "UTD 1 (updates_per_step 4), batch 16: 2 actor_lr+critic_lr x 2 seeds: resuming" in again
    assert (done / _setting(0.001) / "seed_0" / "metrics.jsonl").stat().st_mtime_ns == kept
    assert (cut / "summary.json").is_file() and (unfinished / "summary.json").is_file()
    assert json.loads((out / "scale.json").read_text())["runs"] == report["runs"]


def _setting(lr: float) -> str:
    """A member's folder in a run of the tied default axis."""
    return f"actor_lr={lr:g},critic_lr={lr:g}"


def _rows(member: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in (member / "metrics.jsonl").read_text().splitlines()]


def _remove(path: pathlib.Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
