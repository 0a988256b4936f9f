"""The Brax-choices ablation's cases (`jaxrl bench --suite ppo_choices`, issue 71 item 12): each
variant's settings are "own"'s but for exactly the choice it names, "brax" is the parity
suite's, and the report sets each variant against "own"."""

from __future__ import annotations

import dataclasses

import pytest

from jaxrl.benchmarks import ppo_choices, suites
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


@pytest.mark.parametrize(
    "suite, envs, steps, evals, eval_envs",
    [("ppo_choices", 256, 983_040, 1, 128), ("ppo_choices_16", 64, 491_520, 4, 32)],
)
def test_each_variant_is_own_but_for_its_one_brax_choice(suite, envs, steps, evals, eval_envs):
    cases = [c for c in ppo_choices.cases(Case, suite) if c.env == "playground/CartpoleSwingup"]
    by_label = {c.label: c for c in cases}
    assert set(by_label) == {"brax", "own", *(f"own-{name}" for name in FIELDS)}
    assert all(c.seeds == 5 and c.num_envs == envs and c.total_steps == steps for c in cases)
    settings = {**playground_ppo("CartpoleSwingup"), **ppo_choices.SCALES[suite].settings}
    assert by_label["brax"].options == ppo_parity_flags(settings, steps, evals, True, eval_envs)
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

    records = [
        record("own", [200.0, 220.0, 240.0]),
        record("brax", [150.0, 170.0, 190.0]),
        record("own-vtrace", [100.0, 140.0, 300.0]),
        record("own-gae-horizon", [1.0]),
    ]
    lines = ppo_choices.section("ppo_choices-cpu", records)
    rows = [line for line in lines if line.startswith("| playground/")]
    labels = [row.split(" | ")[1] for row in rows]
    assert labels == ["brax", "own", "own-gae-horizon", "own-vtrace"]
    # Seed by seed: brax is own less 50 on every seed, so its interval is that point.
    assert rows[0].endswith("| -50 [-50, -50] |") and rows[1].endswith("|  |")
    # own-vtrace's differences -100, -80, +60: mean -40, its bootstrap interval within them.
    change = rows[3].split(" | ")[-1].removesuffix(" |")
    mean, interval = change.split(" [")
    low, high = (float(x) for x in interval.rstrip("]").split(", "))
    assert mean == "-40" and -100 <= low < -40 < high <= 60
    assert rows[3].split(" | ")[2].startswith("180 [")
    assert rows[2].endswith("| -219 |")  # one seed against three: the means' difference


def test_the_16_update_scale_is_parity_dmc_s():
    """ppo_choices_16 keeps parity_dmc's PPO as numbers (no import cycle): the same numbers, so
    that its "brax" variant is the run parity_dmc set beside Brax's own."""
    scale = ppo_choices.SCALES["ppo_choices_16"]
    assert scale.settings == suites.PARITY_DMC_SCALE
    assert (scale.updates, scale.evals) == suites.PARITY_DMC_PPO
    assert (ppo_choices.SEEDS, scale.eval_envs) == (
        suites.PARITY_DMC_SEEDS,
        suites.PARITY_DMC_EVAL_ENVS,
    )


@pytest.mark.parametrize("jaxrl_choices, label", [(False, "brax"), (True, "own-lecun-uniform")])
def test_the_door_trains_as_the_variant_its_figures_come_from(jaxrl_choices, label):
    """docs/BRAX.md's figures for `jaxrl.brax.ppo.train(..., jaxrl_choices=True)` are the
    ablation's own-lecun-uniform variant (jaxrl's choices, the factory's Brax initialiser), and
    without it the door is the brax variant: the same six choices, from the same Playground
    settings through the door's translation and through the CLI's flags."""
    from mujoco_playground import registry
    from mujoco_playground.config import dm_control_suite_params

    from jaxrl.brax import ppo

    scale = ppo_choices.SCALES["ppo_choices_16"]
    case = next(
        c
        for c in ppo_choices.cases(Case, "ppo_choices_16")
        if c.env == "playground/CartpoleSwingup" and c.label == label
    )
    config = dm_control_suite_params.brax_ppo_config("CartpoleSwingup").to_dict()
    config.update(scale.settings, num_timesteps=case.total_steps, num_evals=scale.evals + 1)
    env = registry.load("CartpoleSwingup", config_overrides={"impl": "jax"})
    plan = ppo.make_plan(
        {**_door_defaults(ppo), **config, "environment": env, "jaxrl_choices": jaxrl_choices}
    )
    door = {**dataclasses.asdict(plan.config), **dataclasses.asdict(plan.agent_config)}
    cli = _settings(case)
    every = set().union(*FIELDS.values())
    assert {k: door[k] for k in every} == {k: cli[k] for k in every}


def _door_defaults(ppo) -> dict:
    import inspect

    return {
        name: p.default
        for name, p in inspect.signature(ppo.train).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
