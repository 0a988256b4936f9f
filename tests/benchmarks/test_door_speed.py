"""The `door` suite (issue 71, item 10): Brax's arguments through Brax's trainer, through
`jaxrl.brax`'s door and as `jaxrl train` flags, side by side; its report's ratios by hand."""

import os

import pytest

from jaxrl.benchmarks import door_speed, peers
from jaxrl.benchmarks.suites import SUITES


def test_each_brax_case_has_a_door_twin_and_a_jaxrl_case():
    cases = SUITES["door"]()
    tasks = {(algo, env) for algo, envs in door_speed.TASKS.items() for env in envs}
    assert {(c.algo, c.env) for c in cases} == tasks
    for algo, env in tasks:
        mine = {c.system: c for c in cases if (c.algo, c.env) == (algo, env)}
        assert set(mine) == set(door_speed.SYSTEMS)
        assert mine["door"].peer == mine["brax"].peer and mine["door"].seed == 0
        assert mine["door"].total_steps == mine["brax"].total_steps == mine["jaxrl"].total_steps


def test_a_door_case_calls_the_door_with_the_brax_case_s_arguments(monkeypatch):
    from jaxrl.brax import ppo

    case = next(c for c in SUITES["door"]() if c.system == "door" and c.algo == "ppo")
    given = {}

    def door(**kwargs):
        given.update(kwargs)
        kwargs["progress_fn"](case.total_steps, {"eval/episode_reward": 1.0})

    monkeypatch.setattr(ppo, "train", door)
    monkeypatch.setenv("JAXRL_COMPILE_CACHE", "1")
    evals, _, extra = peers.run(case)
    assert os.environ["JAXRL_COMPILE_CACHE"] == "0"  # cold, as the other two systems
    assert evals[0]["eval_return"] == 1.0 and given["num_timesteps"] == case.total_steps
    assert {k: given[k] for k in extra["peer_settings"]} == extra["peer_settings"]
    assert set(dict(case.peer)) - {"policy_hidden_layer_sizes", "value_hidden_layer_sizes"} <= set(
        given
    )


def _record(system: str, wall: float, algo: str = "ppo") -> dict:
    return {
        "case": f"{system}/{algo}", "system": system, "algo": algo,
        "env": "brax/inverted_pendulum", "env_steps": 1000, "evals": [{}],
        "total_seconds": wall, "compile_total_seconds": wall / 2,
        "env_steps_per_second": 100.0, "final_return": 5.0,
    }  # fmt: skip


@pytest.mark.parametrize(
    "walls, verdicts",
    [
        ((100.0, 60.0, 60.0), ("0.60x | met (< 1x)", "1.00x | met (<= 1.05x)")),
        ((100.0, 70.0, 60.0), ("0.70x | met (< 1x)", "1.17x | missed (<= 1.05x)")),
        ((50.0, 60.0, 60.0), ("1.20x | missed (< 1x)", "1.00x | met (<= 1.05x)")),
    ],
)
def test_the_report_sets_the_door_s_wall_against_brax_and_jaxrl(walls, verdicts):
    records = [_record(s, w) for s, w in zip(door_speed.SYSTEMS, walls, strict=True)]
    lines = door_speed.section("door-cpu", records)
    brax = next(line for line in lines if "| brax |" in line)
    jaxrl = next(line for line in lines if "| jaxrl |" in line)
    assert brax.endswith(f"| {verdicts[0]} |") and jaxrl.endswith(f"| {verdicts[1]} |")
    door = next(line for line in lines if "| door |" in line)
    assert door.endswith("|  |  |")


def test_the_gpu_door_suite_is_gpu_parity_s_ppo_with_a_door_twin_per_brax_case():
    """Issue 74 item 4: Playground's brax_ppo_config through Brax and through the door, with
    jaxrl's own run of the same settings, the gpu-parity suite's seeds."""
    cases = SUITES["gpu-door"]()
    brax = [c for c in cases if c.system == "brax"]
    doors = [c for c in cases if c.system == "door"]
    assert {c.env for c in brax} == {"playground/CartpoleBalance", "playground/CheetahRun"}
    assert [(c.env, c.seed, c.peer) for c in doors] == [(c.env, c.seed, c.peer) for c in brax]
    assert {c.system for c in cases} == {"brax", "door", "jaxrl"}
