"""The offline speed benchmark: its looped critics are the vmapped ones run in turn (the same
values from the same state, so the comparison is of the same work), the paper's sizes are in
its cases, and it runs end to end at a tiny size."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from jaxrl.benchmarks import offline_speed
from jaxrl.networks import QEnsemble


@pytest.mark.parametrize("stacked", [False, True])
def test_looped_critics_compute_what_the_vmapped_ones_do_from_the_same_parameters(stacked):
    sizes = dict(hidden=(8, 8), num_critics=3, layer_norm=True)
    key = jax.random.PRNGKey(0)
    obs, action = jax.random.normal(key, (5, 4)), jax.random.normal(key, (5, 2))
    actions = jax.random.normal(jax.random.PRNGKey(1), (3, 5, 2)) if stacked else action
    vmapped, looped = QEnsemble(**sizes), offline_speed.LoopedQEnsemble(**sizes)
    params = vmapped.init(key, obs, action)
    # One layout: the looped module takes the vmapped one's parameters as they are.
    looped_params = looped.init(key, obs, action)
    assert jax.tree.structure(params) == jax.tree.structure(looped_params)
    assert jax.tree.map(np.shape, params) == jax.tree.map(np.shape, looped_params)
    want = vmapped.apply(params, obs, actions, stacked=stacked)
    got = looped.apply(params, obs, actions, stacked=stacked)
    assert got.shape == (3, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # and each critic is its own (not one critic's values three times)
    assert not np.allclose(want[0], want[1])


def test_agents_built_with_looped_critics_hold_the_looped_module_and_the_same_state():
    case = next(c for c in offline_speed.CASES if c.name == "edac")
    case = dataclasses.replace(case, agent={**case.agent, "num_critics": 3})
    vmapped, looped = offline_speed.make_agent(case), offline_speed.make_agent(case, looped=True)
    key = jax.random.PRNGKey(0)
    a, b = vmapped.init(key, 3, 2), looped.init(key, 3, 2)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    assert jax.tree.map(np.shape, a) == jax.tree.map(np.shape, b)


def test_the_cases_hold_the_published_sizes():
    cases = {c.name: c for c in offline_speed.CASES}
    assert cases["lb_sac"].batch_size == 10_000 and cases["lb_sac"].agent["num_critics"] == 10
    assert cases["edac"].agent == {"num_critics": 10, "eta": 1.0}
    assert (
        cases["edac"].batch_size == cases["sac_n"].batch_size == cases["td3_bc"].batch_size == 256
    )
    assert cases["rebrac"].batch_size == 1024


def test_the_benchmark_runs_end_to_end_at_a_tiny_size(monkeypatch, tmp_path, capsys):
    tiny = tuple(
        dataclasses.replace(c, batch_size=16, iterations=1, agent={**c.agent, "num_critics": 2})
        if "num_critics" in c.agent
        else dataclasses.replace(c, batch_size=16, iterations=1)
        for c in offline_speed.CASES
        if c.name in ("edac", "td3_bc")
    )
    monkeypatch.setattr(offline_speed, "CASES", tiny)
    out = tmp_path / "speed.jsonl"
    code = offline_speed.main(["--seeds", "2", "--repeats", "1", "--rows", "64", "--out", str(out)])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["case"], r["variant"], r["seeds"]) for r in rows] == [
        (name, variant, seeds)
        for name in ("edac", "td3_bc")
        for variant, seeds in (("vmapped", 1), ("looped", 1), ("seeds", 2))
    ]
    for r in rows:
        assert r["updates_per_call"] == 8  # one iteration of the loop's 8 updates
        assert r["seed_updates_per_second"] == pytest.approx(
            r["updates_per_second"] * r["seeds"], rel=1e-3
        )
        assert r["published_hours"] > 0


def test_an_unknown_case_is_refused_by_name():
    with pytest.raises(SystemExit) as exit_info:
        offline_speed.main(["--only", "cql"])
    assert exit_info.value.code == 2
