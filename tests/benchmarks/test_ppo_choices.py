"""The Brax-choices ablation's cases (`jaxrl bench --suite ppo_choices`, issue 71 item 12): each
variant's settings are "own"'s but for exactly the choice it names, "brax" is the parity
suite's, and the report sets each variant against "own"."""

from __future__ import annotations

import dataclasses

from jaxrl.benchmarks import ppo_choices
from jaxrl.benchmarks.brax_parity import playground_ppo, ppo_parity_flags
from jaxrl.benchmarks.case import jaxrl_argv
from jaxrl.benchmarks.suites import Case
from jaxrl.config import resolve

# The fields each choice sets (TrainConfig's and PPOConfig's).
FIELDS = {
    "advantage-in-loss": {"advantage_in_loss", "gae_horizon"},
    "gae-horizon": {"gae_horizon"},
    "vtrace": {"advantage_estimator"},
    "truncation-mask": {"truncation"},
    "autoreset-first": {"autoreset"},
    "lecun-uniform": {"kernel_init"},
}


def _settings(case) -> dict:
    train, agent, _ = resolve.build_configs(jaxrl_argv(case))
    return {**dataclasses.asdict(train), **dataclasses.asdict(agent)}


def test_each_variant_is_own_but_for_its_one_brax_choice():
    cases = [c for c in ppo_choices.cases(Case) if c.env == "playground/CartpoleSwingup"]
    by_label = {c.label: c for c in cases}
    assert set(by_label) == {"brax", "own", *(f"own-{name}" for name in FIELDS)}
    assert all(c.seeds == 5 and c.num_envs == 256 and c.total_steps == 983_040 for c in cases)
    settings = {**playground_ppo("CartpoleSwingup"), **ppo_choices.SCALE}
    assert by_label["brax"].options == ppo_parity_flags(settings, 983_040, 1, True, 128)
    own, brax = _settings(by_label["own"]), _settings(by_label["brax"])
    every = set().union(*FIELDS.values())
    assert {k for k in own if own[k] != brax[k]} == every  # the six, and nothing else
    for name, fields in FIELDS.items():
        one = _settings(by_label[f"own-{name}"])
        assert {k for k in one if one[k] != own[k]} == fields, name
        assert all(one[k] == brax[k] for k in fields), name


def test_the_report_gives_each_variant_against_own():
    def record(label, returns):
        return {"case": label, "env": "playground/CartpoleSwingup", "label": label,
                "final_returns": returns}  # fmt: skip

    records = [record("own", [200.0, 220.0]), record("brax", [150.0, 170.0]),
               record("own-vtrace", [100.0, 140.0])]  # fmt: skip
    lines = ppo_choices.section("ppo_choices-cpu", records)
    rows = [line for line in lines if line.startswith("| playground/")]
    assert [row.split(" | ")[1] for row in rows] == ["brax", "own", "own-vtrace"]
    assert rows[0].endswith("| -50 |") and rows[1].endswith("|  |")
    assert rows[2].endswith("| -90 |") and "| 120 [100, 140] |" in rows[2]
