"""The `dmc_algos` suite: its cases are each algorithm's DM Control preset at CPU scale (the
preset's update-to-data ratio kept unless a departure is named), and its report's numbers
(area under the curve, returns at SAC's env steps and wall-clock) against numpy by hand."""

import numpy as np
import pytest

from jaxrl.benchmarks import dmc_algos
from jaxrl.benchmarks.case import jaxrl_argv
from jaxrl.benchmarks.suites import jaxrl_case
from jaxrl.config import resolve
from jaxrl.experiments.presets import PRESETS


def test_every_algorithm_runs_its_dmc_preset_on_every_task_with_five_seeds():
    cases = dmc_algos.cases(jaxrl_case)
    assert {(c.algo, c.env) for c in cases} == {
        (a, t) for a in dmc_algos.ALGORITHMS for t in dmc_algos.BUDGETS
    }
    for case in cases:
        assert case.preset in PRESETS and PRESETS[case.preset]["algo"] == case.algo
        assert case.seeds == 5
        train, _, _ = resolve.build_configs(jaxrl_argv(case))
        assert train.env == case.env and train.eval_envs == dmc_algos.EVAL_ENVS
        assert train.total_steps // train.eval_every == dmc_algos.EVALS
        if case.algo == "ppo":
            continue
        preset = PRESETS[case.preset]["train"]
        if "--updates-per-step" not in case.options:  # the preset's UTD ratio, scaled
            ratio = preset["updates_per_step"] / preset["num_envs"]
            assert train.updates_per_step / train.num_envs == pytest.approx(ratio)
        if "--batch-size" not in case.options:
            assert train.batch_size == preset["batch_size"]


def test_departures_are_only_those_named():
    for case in dmc_algos.cases(jaxrl_case):
        named = set(dmc_algos.CPU_DEPARTURES.get(case.algo, ())[::2])
        flags = {o for o in case.options if o.startswith("--")}
        assert flags - named <= {"--eval-every", "--eval-envs", "--buffer-size"}, case.name


def test_area_holds_the_first_evaluation_and_is_linear_between_them():
    steps = np.array([10.0, 20.0])
    returns = np.array([[1.0, 3.0], [0.0, 0.0]])
    # [0, 10] at 1, then 1 -> 3 over [10, 20]: 10 + 20 = 30, over 20 steps.
    np.testing.assert_allclose(dmc_algos.area(steps, returns, 20.0), [1.5, 0.0])
    np.testing.assert_allclose(dmc_algos.at(steps, returns, 15.0), [2.0, 0.0])
    np.testing.assert_allclose(dmc_algos.at(steps, returns, 99.0), [3.0, 0.0])


def _record(algo, env, steps, seconds, returns):
    evals = [
        {"env_steps": s, "wall_seconds": t, "eval_return": float(np.mean(r)), "eval_returns": r}
        for s, t, r in zip(steps, seconds, returns, strict=True)
    ]
    return {"case": f"jaxrl/{algo}/{env}", "algo": algo, "env": env, "evals": evals}


def test_section_sets_each_algorithm_against_sac_by_steps_and_by_time():
    env = "playground/CartpoleSwingup"
    sac = _record("sac", env, [100, 200], [10.0, 20.0], [[100, 110, 120], [200, 210, 220]])
    # Faster per env step but slower per second: at SAC's 20 s it stands at its first point.
    crossq = _record("crossq", env, [100, 200], [20.0, 40.0], [[150, 150, 150], [300, 300, 300]])
    lines = dmc_algos.section("dmc_algos-cpu", [sac, crossq, {"case": "x", "error": "boom\nE"}])
    row = next(line for line in lines if "| crossq |" in line).split(" | ")
    assert row[3].startswith("300 [300, 300]")  # final
    # AUC: 150 over [0, 100] (15,000) and 150 -> 300 over [100, 200] (22,500), over 200 steps.
    assert row[4].startswith("188 ")
    assert row[5].startswith("300 ") and row[6] == "yes"  # at SAC's 200 env steps
    assert row[7].startswith("150 ") and row[8] == "**no**"  # at SAC's 20 s, below [200, 220]
    assert any("failed: E" in line for line in lines)


def _stopped(algo, env, points, total=400):
    """A failed record as `run.failed_record` writes it for a case its timeout ended."""
    partial = [{"env_steps": s, "wall_seconds": t, **e} for s, t, e in points]
    return {
        "case": f"jaxrl/{algo}/{env}",
        "algo": algo,
        "env": env,
        "total_steps": total,
        "suite": "dmc_algos",
        "error": "...\ntimed out after 99 s",
        "partial_evals": partial,
    }


def test_a_stopped_run_shows_what_it_reached_against_sac():
    """A run its timeout ended is a row of what it had reached: where it stood of its budget,
    its last evaluation, whether that is at or above SAC's interval in fewer env steps than
    SAC's run, and its mean at SAC's time; the tally of tasks per algorithm marks it."""
    env, other = "playground/CartpoleSwingup", "playground/ReacherEasy"
    sac = _record("sac", env, [100, 200], [10.0, 20.0], [[100, 110, 120], [200, 210, 220]])
    sac_other = _record("sac", other, [100], [5.0], [[10, 20, 30]])
    # At 150 env steps (under SAC's 200) it stands at 205 [201, 209]: above SAC's low end.
    redq = _stopped(
        "redq",
        env,
        [
            (50, 12.0, {"eval_return": 100.0, "eval_return_std": 5.0}),
            (
                150,
                30.0,
                {"eval_return": 205.0, "eval_return_ci_low": 201.0, "eval_return_ci_high": 209.0},
            ),
        ],
    )
    # Past SAC's 100 env steps on the other task, below SAC's interval there.
    low = _stopped(
        "redq",
        other,
        [
            (80, 2.0, {"eval_return": 5.0, "eval_return_std": 1.0}),
            (120, 8.0, {"eval_return": 9.0, "eval_return_std": 2.0}),
        ],
    )
    gone = {"case": "x", "suite": "dmc_algos", "error": "boom\nE"}
    lines = dmc_algos.section("dmc_algos-cpu", [sac, sac_other, redq, low, gone])
    row = next(line for line in lines if f"| {env} | redq |" in line).split(" | ")
    assert row[2] == "150 of 400 (stopped)" and row[3] == "205 [201, 209]" and row[4] == "-"
    assert row[5] == "-" and row[6] == "yes, by 150"
    # At SAC's 20 s: between (12 s, 100) and (30 s, 205), 100 + 105 * 8 / 18.
    assert row[7] == f"{100 + 105 * 8 / 18:,.0f}" and row[8] == "**no**"
    assert row[9] == "30 (stopped) |"
    row = next(line for line in lines if f"| {other} | redq |" in line).split(" | ")
    assert row[3] == "9 ± 2" and row[5] == "7" and row[6] == "**no**"  # 5 + 4 * 20 / 40
    assert any("failed: E" in line for line in lines)
    assert not any("| jaxrl/redq" in line for line in lines)  # no failed row of a stopped run
    (tally,) = [line for line in lines if line.startswith("At or above")]
    assert tally.endswith(": redq 1 (CartpoleSwingup*).")
    # A run that finished replaces its stopped record's row.
    finished = _record("redq", env, [100, 200], [10.0, 20.0], [[300] * 3, [300] * 3])
    lines = dmc_algos.section("dmc_algos-cpu", [sac, redq, finished])
    (row,) = [line for line in lines if f"| {env} | redq |" in line]
    assert "(stopped)" not in row


def test_the_report_shows_a_stopped_run_in_its_table_and_curves(tmp_path):
    """report.write over a records folder: a stopped run's row in the table and its curve
    (dashed) on its task's plot, also where it is the task's only run."""
    import json

    from jaxrl.benchmarks import report

    env, alone = "playground/CartpoleSwingup", "playground/CheetahRun"
    common = {"system": "jaxrl", "num_envs": 16, "threshold": 0.0}
    sac = {**_record("sac", env, [100, 200], [10.0, 20.0], [[1, 2], [3, 4]]), **common}
    points = [(100, 9.0, {"eval_return": 5.0, "eval_return_std": 1.0})]
    redq = {**_stopped("redq", env, points), **common}
    only = {**_stopped("redq", alone, points), **common, "case": "jaxrl/redq/alone"}
    path = tmp_path / "dmc_algos-cpu.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (sac, redq, only)))
    text = report.write(tmp_path).read_text()
    assert f"| {env} | redq | 100 of 400 (stopped) |" in text
    assert f"| {alone} | redq | 100 of 400 (stopped) |" in text
    for task in (env, alone):
        assert (tmp_path / f"dmc_algos-cpu-{task.replace('/', '-')}.png").stat().st_size > 1000
