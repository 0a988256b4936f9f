"""The offline validation's own arithmetic: which checkpoint is the medium policy, and the
largest dip after the switch to online, against numbers worked by hand."""

import pytest

from jaxrl.benchmarks import offline_validate


def test_the_medium_policy_is_the_evaluation_nearest_halfway_from_the_worst_to_the_last():
    # worst -1,200, last -150: halfway -675; -700 at 4,000 is nearest (the last is not a medium)
    curve = [(2000, -1200.0), (4000, -700.0), (6000, -300.0), (8000, -160.0), (10000, -150.0)]
    assert offline_validate.pick_medium(curve) == 4000
    # the worst need not be the first evaluation
    curve = [(2000, -900.0), (4000, -1300.0), (6000, -600.0), (8000, -100.0)]
    assert offline_validate.pick_medium(curve) == 6000  # halfway -700


def test_the_dip_is_measured_from_the_last_offline_evaluation():
    phases = ["offline", "offline", "online", "online", "online"]
    means = [-400.0, -200.0, -260.0, -180.0, -150.0]
    assert offline_validate.largest_dip(phases, means) == (-200.0, pytest.approx(-60.0))
    # no online evaluation below the offline one: no dip
    assert offline_validate.largest_dip(phases, [-400.0, -200.0, -190.0, -150.0, -120.0]) == (
        -200.0,
        0.0,
    )
    assert offline_validate.largest_dip(["offline", "offline"], [-400.0, -200.0]) == (-200.0, None)


@pytest.mark.slow
def test_the_pipeline_runs_end_to_end_on_the_smoke_task(tmp_path):
    """Expert, three datasets, an offline run per algorithm and the two online runs, at the
    smoke task's tiny budgets: every record written, with the fields the note reads."""
    import json

    out = tmp_path / "records.jsonl"
    argv = ["--task", "smoke", "--work", str(tmp_path / "work"), "--seeds", "2", "--out", str(out)]
    assert offline_validate.main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = [(r["kind"], r.get("algo"), r["quality"]) for r in rows]
    assert kinds == (
        [("dataset", None, q) for q in offline_validate.QUALITIES]
        + [("offline", a, q) for q in offline_validate.QUALITIES for a in offline_validate.OFFLINE]
        + [("online", "e2o", "medium"), ("online", "sac_scratch", "medium")]
    )
    datasets = {r["quality"]: r for r in rows if r["kind"] == "dataset"}
    assert datasets["replay"]["checkpoint"] == datasets["medium"]["checkpoint"]
    for r in rows:
        if r["kind"] == "offline":
            assert len(r["curve"][-1]) == 2 and r["score"]["low"] <= r["score"]["mean"]
    e2o = rows[-2]
    assert e2o["phases"][0] == "offline" and e2o["phases"][-1] == "online"
    assert e2o["largest_dip"] is not None and e2o["largest_dip"] <= 0


def _records():
    interval = {"mean": 40.0, "low": 30.0, "high": 50.0}
    base = {"task": "t", "env": "classic/pendulum"}
    return [
        {**base, "kind": "dataset", "quality": "medium", "episodes": 12,
         "random_return": -1200.0, "behaviour_return": -700.0, "ref_max_score": -150.0},
        {**base, "kind": "offline", "quality": "medium", "algo": "td3_bc", "seeds": 2,
         "score": {"mean": 1.0, "low": 0.0, "high": 2.0}, "of_behaviour": {"mean": 1.0},
         "offline_updates": 100, "curve": [[-900.0, -800.0], [-700.0, -600.0]]},
        # the same run again: it replaces the first
        {**base, "kind": "offline", "quality": "medium", "algo": "td3_bc", "seeds": 2,
         "score": interval, "of_behaviour": {"mean": 88.4}, "offline_updates": 100,
         "curve": [[-900.0, -800.0], [-700.0, -600.0]]},
        # a replay buffer cut before any episode ended: no behaviour return
        {**base, "kind": "dataset", "quality": "replay", "episodes": 8,
         "random_return": -1200.0, "behaviour_return": None, "ref_max_score": -150.0},
        {**base, "kind": "offline", "quality": "replay", "algo": "td3_bc", "seeds": 2,
         "score": interval, "of_behaviour": None, "offline_updates": 100,
         "curve": [[-900.0, -800.0], [-700.0, -600.0]]},
        {**base, "kind": "online", "quality": "medium", "algo": "e2o", "seeds": 2,
         "phases": ["offline", "online"], "env_steps": [0, 500],
         "curve": [[-700.0] * 2, [-200.0] * 2],
         "final_return": {"mean": -200.0, "low": -210.0, "high": -190.0},
         "offline_return": -700.0, "largest_dip": 0.0, "seconds": 61.4},
    ]  # fmt: skip


def test_the_results_tables_show_the_latest_run_of_each_algorithm_and_dataset(tmp_path):
    import json

    path = tmp_path / "offline-validate-cpu.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    records = offline_validate.latest(path)
    assert len(records) == 5
    lines = offline_validate.section(records)
    assert "| medium | 12 | -1,200 | -700 | -150 |" in lines
    assert "| replay | 8 | -1,200 | - (no episode ended) | -150 |" in lines
    assert "| td3_bc | 40 [30, 50] (88% of data) | 40 [30, 50] |" in lines
    assert "| e2o | -200 [-210, -190] | -700 | 0 | 61 |" in lines
    (png,) = offline_validate.plot(records, tmp_path, path.stem)
    assert png.name == "offline-validate-cpu-t.png" and png.stat().st_size > 0
    from jaxrl.benchmarks import report

    summary = report.write(tmp_path).read_text()  # RESULTS.md takes the section and its plot
    assert "| td3_bc | 40 [30, 50] (88% of data) | 40 [30, 50] |" in summary
    assert "![offline-validate-cpu-t](offline-validate-cpu-t.png)" in summary
