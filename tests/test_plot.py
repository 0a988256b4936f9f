"""`jaxrl plot`: the bootstrap band, grouping run folders by setting, and the PNG it writes,
on synthetic run folders (no training)."""

import json

import numpy as np
import pytest

from jaxrl import plot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _make_run(
    path, *, seed=0, actor_lr=3e-4, algo="sac", rows=5, steps_per_row=1000, agent=None, **train
):
    """A run folder as the trainer writes it: config.json and one metrics row per chunk."""
    path.mkdir(parents=True)
    saved = {
        "train": {
            "env": "classic/pendulum",
            "algo": algo,
            "seed": seed,
            "total_steps": 5000,
            "num_envs": 4,
            "batch_size": 256,
            **train,
        },
        "agent": agent if agent is not None else {"actor_lr": actor_lr, "critic_hidden": [64, 64]},
        "run": {"checkpoint_every": 0, "tensorboard": True},
        "env_info": {"observation_size": 3, "action_size": 1, "num_chunks": rows},
        "versions": {"jax": "0.10.2", "devices": f"[CpuDevice(id={seed})]"},
    }
    (path / "config.json").write_text(json.dumps(saved, indent=2))
    rng = np.random.default_rng(seed)
    lines = []
    for chunk in range(rows):
        lines.append(
            json.dumps(
                {
                    "chunk": chunk,
                    "env_steps": (chunk + 1) * steps_per_row,
                    "eval_return": float(-1000 + 100 * chunk + rng.normal(0, 20)),
                    "eval_return_std": 5.0,
                    "train_seconds": 1.5 * (chunk + 1),
                    "wall_seconds": 3.0 + 1.5 * (chunk + 1) + seed,
                }
            )
        )
    (path / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
    return path


def _reference_band(values, confidence, resamples, seed):
    """A straightforward percentile bootstrap of the mean over axis 0."""
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    means = np.stack([values[rng.integers(0, n, n)].mean(axis=0) for _ in range(resamples)])
    tail = 100 * (1 - confidence) / 2
    return np.percentile(means, tail, axis=0), np.percentile(means, 100 - tail, axis=0)


# -- bootstrap_band -------------------------------------------------------------------------


def test_bootstrap_band_mean_and_containment():
    values = np.random.default_rng(0).normal(size=(5, 7)) * np.arange(1, 8)
    mean, low, high = plot.bootstrap_band(values)
    np.testing.assert_array_equal(mean, values.mean(axis=0))
    assert mean.shape == low.shape == high.shape == (7,)
    assert np.all(low <= mean) and np.all(mean <= high)
    assert np.all(low < high)


def test_bootstrap_band_matches_a_plain_numpy_bootstrap():
    values = np.random.default_rng(1).normal(loc=3.0, scale=2.0, size=(8, 6))
    for confidence in (0.95, 0.8):
        _, low, high = plot.bootstrap_band(values, confidence=confidence, resamples=20_000)
        ref_low, ref_high = _reference_band(values, confidence, 20_000, seed=7)
        width = ref_high - ref_low
        # Different random resamples: equal up to Monte Carlo error (about 2% of the width).
        assert np.all(np.abs(low - ref_low) <= 0.05 * width)
        assert np.all(np.abs(high - ref_high) <= 0.05 * width)


def test_bootstrap_band_is_narrower_for_less_spread_data():
    noise = np.random.default_rng(2).normal(size=(4, 10))
    _, low_wide, high_wide = plot.bootstrap_band(10.0 + noise)
    _, low_narrow, high_narrow = plot.bootstrap_band(10.0 + 0.1 * noise)
    assert np.all(high_narrow - low_narrow < high_wide - low_wide)


def test_bootstrap_band_collapses_for_identical_seeds_and_for_one_seed():
    values = np.tile(np.array([0.1, -3.7, 1e6]), (3, 1))
    for array in (values, values[:1]):
        mean, low, high = plot.bootstrap_band(array)
        np.testing.assert_array_equal(low, mean)
        np.testing.assert_array_equal(high, mean)
    # A point where the seeds agree collapses; one where they differ does not.
    mixed = np.array([[1.0, 0.0], [1.0, 5.0], [1.0, 9.0]])
    mean, low, high = plot.bootstrap_band(mixed)
    assert low[0] == high[0] == mean[0] and low[1] < mean[1] < high[1]


def test_bootstrap_band_is_deterministic_per_seed():
    values = np.random.default_rng(3).normal(size=(6, 20))  # 3 seeds: few resamples
    first = plot.bootstrap_band(values, seed=5)
    again = plot.bootstrap_band(values, seed=5)
    other = plot.bootstrap_band(values, seed=6)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[1], other[1])


# -- group_runs -----------------------------------------------------------------------------


def _two_settings(tmp_path):
    runs = [_make_run(tmp_path / f"lr3e-4_s{s}", seed=s, actor_lr=3e-4) for s in range(3)]
    runs += [_make_run(tmp_path / f"lr1e-3_s{s}", seed=s, actor_lr=1e-3) for s in range(2)]
    return runs


def test_group_runs_by_setting_labelled_by_what_differs(tmp_path):
    runs = _two_settings(tmp_path)
    groups = plot.group_runs(runs)
    assert groups == {"actor_lr=0.0003": runs[:3], "actor_lr=0.001": runs[3:]}


def test_a_resumed_seed_groups_with_the_others_but_another_cadence_does_not(tmp_path):
    """`--resume --steps` writes the chunk's env steps into eval_every and `--devices` changes
    devices: neither makes a run another setting. A run evaluated at another cadence is."""
    chunk = {"env_steps_per_chunk": 5008}
    runs = [_make_run(tmp_path / f"s{s}", seed=s, eval_every=5000, devices=0) for s in range(3)]
    for run in runs:
        saved = json.loads((run / "config.json").read_text())
        saved["env_info"].update(chunk)
        (run / "config.json").write_text(json.dumps(saved))
    resumed = json.loads((runs[1] / "config.json").read_text())
    resumed["train"].update(eval_every=5008, devices=2)
    resumed["env_info"]["num_chunks"] = 9
    (runs[1] / "config.json").write_text(json.dumps(resumed))
    assert list(plot.group_runs(runs).values()) == [runs]
    resumed["env_info"]["env_steps_per_chunk"] = 10_016
    (runs[1] / "config.json").write_text(json.dumps(resumed))
    groups = plot.group_runs(runs)
    assert sorted(groups.values(), key=len) == [[runs[1]], [runs[0], runs[2]]], groups


def test_group_runs_labels_algorithms_without_their_own_defaults(tmp_path):
    runs = [
        _make_run(tmp_path / "sac_a", actor_lr=3e-4),
        _make_run(tmp_path / "sac_b", actor_lr=1e-3),
        # Another algorithm: other agent keys, and its own loop defaults in "train".
        _make_run(tmp_path / "ppo", algo="ppo", agent={"clip_eps": 0.2}, batch_size=1024),
    ]
    assert list(plot.group_runs(runs)) == [
        "algo=sac actor_lr=0.0003",
        "algo=sac actor_lr=0.001",
        "algo=ppo",
    ]


def test_group_runs_names_one_setting_by_its_folder(tmp_path):
    sweep = [_make_run(tmp_path / "base" / f"s{s}", seed=s) for s in range(2)]
    assert plot.group_runs(sweep) == {"base": sweep}
    single = _make_run(tmp_path / "my_run")
    assert plot.group_runs([single, single]) == {"my_run": [single]}


def test_group_runs_needs_config_json(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(plot.PlotError, match="empty.*no config.json"):
        plot.group_runs([tmp_path / "empty"])
    with pytest.raises(plot.PlotError, match="nowhere.*does not exist"):
        plot.group_runs([tmp_path / "nowhere"])


# -- main -----------------------------------------------------------------------------------


def test_main_writes_a_png_of_all_settings(tmp_path, capsys):
    runs = _two_settings(tmp_path)
    out = tmp_path / "new" / "folder" / "curves.png"
    code = plot.main([*map(str, runs), "--out", str(out), "--title", "lr sweep"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip() == f"wrote {out} (2 settings, 5 runs)"
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1024


def test_main_with_a_missing_folder_writes_nothing(tmp_path, capsys):
    run = _make_run(tmp_path / "ok")
    out = tmp_path / "plots" / "curves.png"
    code = plot.main([str(run), str(tmp_path / "missing"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("jaxrl plot: error: ") and "missing" in err and err.count("\n") == 1
    assert not (tmp_path / "plots").exists()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda run: (run / "metrics.jsonl").unlink(), "has no metrics.jsonl"),
        (lambda run: (run / "metrics.jsonl").write_text(""), "has no rows"),
        (lambda run: (run / "config.json").unlink(), "has no config.json"),
        (lambda run: (run / "metrics.jsonl").write_text('{"chunk": 0}\n'), "has no env_steps"),
    ],
)
def test_main_names_the_folder_and_what_is_missing(tmp_path, capsys, damage, message):
    run = _make_run(tmp_path / "broken")
    damage(run)
    code = plot.main([str(run), "--out", str(tmp_path / "curves.png")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "broken" in err
    assert not (tmp_path / "curves.png").exists()


def test_runs_of_unequal_length_use_their_common_steps(tmp_path, capsys):
    # Seed 1 stopped after 3 of its chunks: the same setting, fewer rows.
    runs = [
        _make_run(tmp_path / "s0", seed=0, rows=5, total_steps=5000),
        # Seed 1 was resumed with --steps 7000 too: still a seed of the same setting.
        _make_run(tmp_path / "s1", seed=1, rows=3, total_steps=7000),
    ]
    # A killed run's last line can be cut short: it is skipped.
    with open(runs[1] / "metrics.jsonl", "a") as file:
        file.write('{"chunk": 3, "env_st')
    out = tmp_path / "curves.png"
    assert plot.main([*map(str, runs), "--out", str(out)]) == 0
    assert "(1 setting, 2 runs)" in capsys.readouterr().out
    assert out.read_bytes().startswith(PNG_MAGIC)

    metrics = {run: plot.read_metrics(run) for run in runs}
    steps, wall, returns = plot._curve("one", runs, metrics)
    np.testing.assert_array_equal(steps, [1000, 2000, 3000])
    np.testing.assert_allclose(wall, [3.0 + 1.5 * k + 0.5 for k in (1, 2, 3)])  # seeds 0 and 1
    assert returns.shape == (2, 3)


def test_main_usage(tmp_path, capsys):
    run = _make_run(tmp_path / "run")
    assert plot.main(["--help"]) == 0
    assert "jaxrl plot" in capsys.readouterr().out
    assert plot.main([str(run), "--ou", str(tmp_path / "x.png")]) == 2  # no abbreviations
    assert plot.main([]) == 2
    assert plot.main([str(run), "--out", str(tmp_path / "curves.pdf")]) == 2
    assert "must be a .png" in capsys.readouterr().err


# -- jaxrl's own runs of several seeds, sweeps, and where the figure goes -------------------


def _make_seeds_run(path, seeds=(0, 1), vmap=None, rows=4):
    """A run of several seeds (`jaxrl train --seeds`, `--vmap`) as the trainer lays it out:
    config.json with "seeds" and "vmap", the run's own rows (the mean over members, one
    `eval_return`), and each member's rows under seed_N/ (or SETTING/seed_N/), no config.json."""
    from jaxrl.grid import Grid

    _make_run(path, rows=rows)
    saved = json.loads((path / "config.json").read_text())
    run_grid = Grid(tuple(seeds), tuple((k, tuple(v)) for k, v in (vmap or {}).items()))
    saved.update(run_grid.as_json())
    (path / "config.json").write_text(json.dumps(saved, indent=2))
    members = []
    for index, (setting, seed) in enumerate(run_grid.members):
        member = path / run_grid.member_dir(setting, seed)
        member.mkdir(parents=True)
        lines = [
            json.dumps(
                {
                    "chunk": chunk,
                    "env_steps": (chunk + 1) * 1000,
                    "eval_return": float(-1000 + 100 * chunk + 50 * index),
                    "eval_return_std": 5.0,
                    "wall_seconds": 3.0 + chunk,
                }
            )
            for chunk in range(rows)
        ]
        (member / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
        members.append(member)
    return members


def _drawn(monkeypatch, argv):
    """`jaxrl plot` run with `argv`: (exit status, the figure it drew, kept open)."""
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    code = plot.main([str(a) for a in argv])
    return code, (figures[0] if figures else None)


def _curves(figure):
    """{legend label: has a band} of the figure's first panel."""
    ax = figure.axes[0]
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    bands = len(ax.collections)  # fill_between: one PolyCollection per banded curve
    return labels, bands


def test_a_run_of_several_seeds_is_drawn_from_its_seed_folders(tmp_path, monkeypatch, capsys):
    run = tmp_path / "runs" / "pendulum"
    members = _make_seeds_run(run, seeds=(0, 3))
    assert plot.group_runs([run]) == {"pendulum": members}
    code, figure = _drawn(monkeypatch, [run])
    assert code == 0, capsys.readouterr().err
    # The mean over the two seeds with its band, labelled with the seed count.
    assert _curves(figure) == (["pendulum (2 seeds)"], 1)
    mean = figure.axes[0].lines[0].get_ydata()
    np.testing.assert_allclose(mean, [-1000 + 100 * k + 25 for k in range(4)])
    # The figure goes into the run folder, not the current one.
    assert capsys.readouterr().out.strip() == f"wrote {run / 'curves.png'} (1 setting, 2 runs)"
    assert (run / "curves.png").read_bytes().startswith(PNG_MAGIC)


def test_seed_folders_can_be_given_one_by_one(tmp_path, monkeypatch, capsys):
    run = tmp_path / "pendulum"
    members = _make_seeds_run(run, seeds=(0, 1, 2))
    code, figure = _drawn(monkeypatch, members[:2])  # jaxrl plot RUN/seed_0 RUN/seed_1
    assert code == 0, capsys.readouterr().err
    assert _curves(figure) == (["pendulum (2 seeds)"], 1)
    assert (run / "curves.png").is_file()
    # Given with the run itself, each seed counts once.
    assert plot.group_runs([run, *members]) == {"pendulum": members}
    # A folder of the run that is not one of its seeds is still refused.
    (run / "seed_9").mkdir()
    with pytest.raises(plot.PlotError, match="seed_9 is not a run folder"):
        plot.group_runs([run / "seed_9"])


def test_a_run_of_several_settings_is_one_curve_per_setting(tmp_path, monkeypatch, capsys):
    run = tmp_path / "grid"
    members = _make_seeds_run(run, seeds=(0, 1), vmap={"actor_lr": [1e-4, 3e-4]})
    groups = plot.group_runs([run])
    assert groups == {"actor_lr=0.0001": members[:2], "actor_lr=0.0003": members[2:]}
    code, figure = _drawn(monkeypatch, [run])
    assert code == 0, capsys.readouterr().err
    assert _curves(figure) == (["actor_lr=0.0001 (2 seeds)", "actor_lr=0.0003 (2 seeds)"], 2)


def _make_sweep(path, settings=("actor_lr=0.0001", "actor_lr=0.0003"), seeds=(0, 1)):
    """A sweep folder as `jaxrl sweep` writes it: SWEEP/SETTING/sSEED run folders, summary.*."""
    runs = {}
    for setting in settings:
        lr = float(setting.split("=")[1])
        runs[setting] = [
            _make_run(path / setting / f"s{seed}", seed=seed, actor_lr=lr) for seed in seeds
        ]
    (path / "summary.json").write_text(json.dumps([{"setting": s} for s in settings]))
    (path / "summary.md").write_text("| setting |\n")
    return runs


def test_a_sweep_folder_is_one_curve_per_setting(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweeps" / "pendulum-lr"
    runs = _make_sweep(sweep)
    assert plot.group_runs([sweep]) == runs
    code, figure = _drawn(monkeypatch, [sweep])
    assert code == 0, capsys.readouterr().err
    assert _curves(figure) == (["actor_lr=0.0001 (2 seeds)", "actor_lr=0.0003 (2 seeds)"], 2)
    out = capsys.readouterr().out.strip()
    assert out == f"wrote {sweep / 'curves.png'} (2 settings, 4 runs)"
    # Its runs given one by one: the figure still goes into the sweep folder.
    (sweep / "curves.png").unlink()
    assert plot.main([str(p) for group in runs.values() for p in group]) == 0
    assert (sweep / "curves.png").is_file()


def test_a_sweep_under_way_is_drawn_without_its_runs_not_logged_yet(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    runs = _make_sweep(sweep)
    begun = [group[-1] for group in runs.values()]
    (begun[0] / "metrics.jsonl").write_text("")  # compiling: config.json and no row
    (begun[1] / "metrics.jsonl").unlink()
    code, figure = _drawn(monkeypatch, [sweep])
    assert code == 0, capsys.readouterr().err
    assert _curves(figure) == (["actor_lr=0.0001 (1 seed)", "actor_lr=0.0003 (1 seed)"], 0)
    out = capsys.readouterr().out
    assert f"left out 2 runs not logged yet: {begun[0]}, {begun[1]}" in out
    # Given by name, such a run is an error; so is a sweep where none has logged yet.
    assert plot.main([str(begun[0])]) == 2
    assert "has no rows in metrics.jsonl" in capsys.readouterr().err
    for group in runs.values():
        for run in group:
            (run / "metrics.jsonl").write_text("")
    assert plot.main([str(sweep)]) == 2
    assert f"no run under {sweep} has logged yet" in capsys.readouterr().err
    # A garbled file is not taken for one not logged yet.
    (runs["actor_lr=0.0001"][0] / "metrics.jsonl").write_text("{oops\n")
    assert plot.main([str(sweep)]) == 2
    assert "metrics.jsonl:1 is not a JSON row" in capsys.readouterr().err


def test_out_goes_where_it_is_told_and_defaults_into_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run = _make_run(tmp_path / "runs" / "one")
    assert plot.main(["runs/one"]) == 0
    assert capsys.readouterr().out.startswith("wrote runs/one/curves.png ")
    assert (run / "curves.png").is_file() and not (tmp_path / "curves.png").exists()
    assert plot.main(["runs/one", "--out", "elsewhere.png"]) == 0
    assert (tmp_path / "elsewhere.png").is_file()
    # Runs in different folders: the folder that holds them.
    _make_run(tmp_path / "runs" / "two", seed=1)
    assert plot.main(["runs/one", "runs/two"]) == 0
    assert (tmp_path / "runs" / "curves.png").is_file()


@pytest.mark.slow
def test_a_trained_run_of_two_seeds_is_drawn_with_its_band(tmp_path, monkeypatch, capsys):
    """jaxrl's own `--seeds 2` run folder (tiny SAC on classic/pendulum), as written."""
    from jaxrl.run import driver
    from tests import tiny

    driver.train(tiny.off_policy(), tiny.SAC, tmp_path / "run", seeds=2, progress=None)
    code, figure = _drawn(monkeypatch, [tmp_path / "run"])
    assert code == 0, capsys.readouterr().err
    assert _curves(figure) == (["run (2 seeds)"], 1)
    assert (tmp_path / "run" / "curves.png").is_file()
