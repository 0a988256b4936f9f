"""The GPU speed suite's measures (benchmarks/speed.py), on this CPU at tiny sizes: product FLOPs
counted from a jaxpr against hand counts, an update's FLOPs linear in its batch, and the memory
line in the env count."""

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import pytest

from jaxrl import agents
from jaxrl.benchmarks import speed
from jaxrl.config import resolve
from jaxrl.loops import make_train

PENDULUM = ["--preset", "sac_pendulum", "--num-envs", "4"]


def _mlp_loss(widths):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for w in widths[1:-1]:
                x = nn.relu(nn.Dense(w)(x))
            return nn.Dense(widths[-1])(x)

    return MLP()


def test_product_flops_of_a_scanned_vmapped_gradient_equal_the_hand_count():
    """Two critics (vmap) trained on 3 minibatches (scan), each of 5 rows: forward 2 B in out
    per layer, backward the weights' products again and the inputs' for every layer but the
    first (its input, the data, needs no gradient)."""
    widths, batch, minibatches, critics = (3, 8, 8, 1), 5, 3, 2
    model = _mlp_loss(widths)
    x = jnp.ones((minibatches, batch, widths[0]))
    params = jax.vmap(lambda k: model.init(k, x[0]))(jax.random.split(jax.random.PRNGKey(0), 2))

    def loss(p, xb):
        return (model.apply(p, xb) ** 2).mean()

    def update(params, x):
        def body(params, xb):
            grads = jax.vmap(jax.grad(loss), in_axes=(0, None))(params, xb)
            return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), None

        return jax.lax.scan(body, params, x)[0]

    layers = list(zip(widths[:-1], widths[1:], strict=True))
    forward = sum(2 * batch * i * o for i, o in layers)
    backward = forward + sum(2 * batch * i * o for i, o in layers[1:])
    expected = minibatches * critics * (forward + backward)
    assert speed.matmul_flops(update, params, x) == {"flops": expected, "while_loops": 0}


def test_a_cond_counts_its_costlier_branch_and_a_while_loop_is_flagged():
    a = jnp.ones((4, 6))
    b = jnp.ones((6, 5))

    def branches(flag):
        return jax.lax.cond(flag, lambda: (a @ b).sum(), lambda: (a @ b @ b.T).sum())

    assert speed.matmul_flops(branches, True)["flops"] == 2 * 4 * 6 * 5 + 2 * 4 * 5 * 6

    def loop(x):
        return jax.lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] @ b @ b.T, c[1] + 1), (x, 0))

    assert speed.matmul_flops(loop, a) == {"flops": 2 * (2 * 4 * 6 * 5), "while_loops": 1}


def _nested_scans(inner: int, outer: int) -> dict:
    def f(x):
        def step(c, _):
            def inner_step(c, _):
                return jnp.tanh(c @ c) + 1, c.sum()

            c, sums = jax.lax.scan(inner_step, c, None, length=inner)
            return c, sums.sum()

        return jax.lax.scan(step, x, None, length=outer)

    return speed.kernel_counts(jax.jit(f).lower(jnp.ones((8, 8))).compile().as_text())


def test_kernels_count_loop_bodies_times_their_trips():
    """One more inner trip adds the inner body's kernels once per outer trip; one more outer
    trip adds a whole outer body; the inner loop is the heaviest that holds no other, run
    inner x outer times per call."""
    base, longer_inner, longer_outer = (
        _nested_scans(4, 3),
        _nested_scans(5, 3),
        _nested_scans(4, 4),
    )
    inner = speed.heaviest_inner_loop(base)
    (outer,) = [loop for loop in base["loops"] if not loop["innermost"]]
    assert (inner["trips"], inner["trips_per_call"], outer["trips"]) == (4, 12, 3)
    assert inner["kernels_per_trip"] > 1 and base["unknown_trips"] == 0
    sources = dict(inner["sources"])  # the inner body's own kernels, by jax op name
    assert any(name.endswith("dot_general") for name in sources)
    assert sum(sources.values()) < inner["kernels_per_trip"]  # the condition's are not its own
    assert outer["kernels_per_trip"] > 4 * inner["kernels_per_trip"]
    assert longer_inner["per_call"] - base["per_call"] == 3 * inner["kernels_per_trip"]
    assert longer_outer["per_call"] - base["per_call"] == outer["kernels_per_trip"]
    assert base["per_call"] > 3 * outer["kernels_per_trip"]


def test_kernels_take_a_conds_costlier_branch_and_leave_fusions_whole():
    x = jnp.ones((8, 8))

    def kernels(fn, *args):
        return speed.kernel_counts(jax.jit(fn).lower(*args).compile().as_text())["per_call"]

    assert kernels(lambda v: jnp.tanh(v) + 1, x) == 1  # tanh and add in one fusion

    def costly(v):
        return jnp.tanh(v @ v) @ v

    def cond(other):
        return kernels(lambda f, v: jax.lax.cond(f, lambda: costly(v), lambda: other(v)), True, x)

    # The costlier branch counts, whatever the other one costs below it.
    cheap, dearer = (lambda v: v + 1), (lambda v: jnp.tanh(v @ v))
    assert kernels(cheap, x) < kernels(dearer, x) < kernels(costly, x)
    assert cond(cheap) == cond(dearer) >= kernels(costly, x)


# A loop of 5 known trips whose body holds a fusion and a conditional: one branch a fusion and
# a product, the other two copies (a pass-through, as XLA's copy insertion makes them).
_HLO = """HloModule m

%reset (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %f = f32[8]{0} fusion(%p), kind=kLoop, calls=%fused
  ROOT %d = f32[8]{0} custom-call(%f), custom_call_target="__cublas$gemm"
}

%keep (q: f32[8]) -> f32[8] {
  %q = f32[8]{0} parameter(0)
  %c1 = f32[8]{0} copy(%q)
  ROOT %c2 = f32[8]{0} copy(%c1)
}

%bd (t: (s32[], f32[8])) -> (s32[], f32[8]) {
  %t = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %x = f32[8]{0} get-tuple-element(%t), index=1
  %g = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused, metadata={op_name="jit(f)/step/tanh"}
  %b = pred[] fusion(%g), kind=kLoop, calls=%fused2
  %y = f32[8]{0} conditional(%b, %g, %g), true_computation=%reset, false_computation=%keep
  ROOT %r = (s32[], f32[8]{0}) tuple(%i, %y)
}

%cn (u: (s32[], f32[8])) -> pred[] {
  %u = (s32[], f32[8]{0}) parameter(0)
  ROOT %lt = pred[] fusion(%u), kind=kLoop, calls=%fused3
}

ENTRY %main (a: f32[8]) -> f32[8] {
  %a = f32[8]{0} parameter(0)
  %z = s32[] constant(0)
  %s = (s32[], f32[8]{0}) tuple(%z, %a)
  %w = (s32[],f32[8]) while(%s),condition=%cn,body=%bd,backend_config={"known_trip_count":{"n":"5"}}
  %o = f32[8]{0} get-tuple-element(%w), index=1
  ROOT %e = f32[8]{0} copy(%o)
}
"""


def test_kernels_count_copies_and_either_branch_of_a_cond():
    """Per trip: the body's 2 fusions, the condition's 1, and the branch taken: 2 kernels
    either way here, a tie that the copies break (the costliest branch is the copying one, the
    cheapest the other); made unequal, each policy takes its own branch, copies and all."""
    costliest = speed.kernel_counts(_HLO)
    cheapest = speed.kernel_counts(_HLO, branch="cheapest")
    for counts in (costliest, cheapest):
        (loop,) = counts["loops"]
        assert (loop["trips"], loop["trips_per_call"], loop["kernels_per_trip"]) == (5, 5, 5)
        assert counts["per_call"] == 5 * 5 + 1  # and the entry's copy
        assert loop["sources"] == [("step/tanh", 1), ("?", 1)]
        assert loop["conditionals"] == [[(2, 0), (2, 2)]]  # (kernels, copies) of each branch
    assert (costliest["loops"][0]["copies_per_trip"], costliest["copies_per_call"]) == (2, 11)
    assert (cheapest["loops"][0]["copies_per_trip"], cheapest["copies_per_call"]) == (0, 1)
    # Made unequal: the reset branch one kernel dearer, so each policy picks its own branch.
    dearer = _HLO.replace(
        '  ROOT %d = f32[8]{0} custom-call(%f), custom_call_target="__cublas$gemm"',
        '  %d = f32[8]{0} custom-call(%f), custom_call_target="__cublas$gemm"\n'
        "  ROOT %h = f32[8]{0} fusion(%d), kind=kLoop, calls=%fused",
    )
    costliest = speed.kernel_counts(dearer)
    cheapest = speed.kernel_counts(dearer, branch="cheapest")
    assert (costliest["loops"][0]["kernels_per_trip"], costliest["copies_per_call"]) == (6, 1)
    assert (cheapest["loops"][0]["kernels_per_trip"], cheapest["copies_per_call"]) == (5, 11)
    with pytest.raises(ValueError, match="cheapest"):
        speed.kernel_counts(_HLO, branch="first")


def _trainer(*flags):
    train_config, agent_config, _ = resolve.build_configs([*PENDULUM, *flags])
    return make_train(train_config, agents.get(train_config.algo).make(agent_config))


def test_an_updates_flops_grow_with_its_batch_and_it_runs():
    small = speed.update_speed(_trainer("--batch-size", "64"), repeats=1)
    large = speed.update_speed(_trainer("--batch-size", "128"), repeats=1)
    assert large["flops_per_update"] == 2 * small["flops_per_update"] > 0
    assert small["while_loops"] == 0 and small["seconds_per_update"] > 0


def test_memory_per_env_is_the_replay_line_and_sizes_the_env_count():
    """sac_pendulum's replay (buffer_size rows) is fixed; the envs' states and observations
    grow with the env count, an update's batch (batch_size rows) does not."""
    estimate = speed.memory_per_env(PENDULUM, budget_bytes=1e9, counts=(4, 8))
    at4, at8 = estimate["at"]["4"], estimate["at"]["8"]
    grown = at8["state_bytes"] - at4["state_bytes"]
    assert estimate["bytes_per_env"] == pytest.approx(grown / 4) and grown > 0
    assert at4["data_bytes"] == at8["data_bytes"]  # a batch of batch_size rows, whatever the envs
    fits = estimate["largest_num_envs"]
    used = estimate["fixed_bytes"] + estimate["bytes_per_env"] * fits
    assert used <= 1e9 < used + estimate["bytes_per_env"]


def test_a_speed_case_records_and_reports_its_update_against_the_matmul_peak():
    from jaxrl.benchmarks import case, report
    from jaxrl.benchmarks.suites import SUITES, jaxrl_case

    pendulum = jaxrl_case("sac", "classic/pendulum", "sac_pendulum", 0.0, num_envs=4)
    # The device's peak is the process's: it is read after the update, before the yardstick's
    # products (larger arrays) run, and no later reading replaces it.
    readings = iter(range(100))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(case, "memory", lambda: {"peak_device_mb": next(readings)})
        peaks = case._matmul_peaks
        patch.setattr(case, "_matmul_peaks", lambda: (next(readings), peaks())[1])
        record = case.run(dataclasses.replace(pendulum, system="speed"))
    assert record["peak_device_mb"] == 0
    assert record["speed"]["flops_per_update"] > 0
    assert set(record["matmul_peak"]) == {"bfloat16", "float32"}
    assert record["memory_estimate"]["largest_num_envs"] > 1000
    line = report.one_line(record)
    assert "GFLOP" in line and "of the float32 matmul peak" in line
    kernels = record["speed"]["kernels_per_update"]
    assert kernels > 0 and f"{kernels:,} kernels" in line
    seconds = record["speed"]["seconds_per_update"]
    assert record["speed"]["seconds_per_kernel"] == pytest.approx(seconds / kernels)
    for precision in ("bfloat16", "mixed"):  # bfloat16 products: against that peak
        config = [*record["config"], "--matmul-precision", precision]
        assert "of the bfloat16 matmul peak" in report.speed_line({**record, "config": config})
    assert report.speeds([record])[0] == "### Updates against the hardware"
    names = [c.name for c in SUITES["gpu-speed"]()]
    assert "speed/ppo+bf16/playground/CartpoleBalance/2048/s0" in names
    assert "brax/ppo/playground/CartpoleBalance/2048/s0" in names
    mixed = [c.name for c in SUITES["gpu-mixed"]()]
    assert "speed/ppo+mixed/playground/CartpoleBalance/2048/s0" in mixed
    assert "jaxrl/ppo+mixed/playground/CartpoleBalance/2048/seeds3" in mixed
    assert "jaxrl/ppo+mixed+own-eval/playground/CartpoleBalance/2048/s0" in mixed
    assert "speed/ppo+mixed+assoc/playground/CartpoleBalance/2048/s0" in mixed


def test_braxs_ppo_update_is_timed_on_the_same_products_as_jaxrls():
    """A `brax-speed` case times Brax's PPO update alone (`speed.brax_ppo_update`; that it is
    Brax's training step less the rollout is test_ppo_brax_parity's). At the same settings
    its products are jaxrl's with the parity flags, FLOP for FLOP, so the two times compare the
    same arithmetic; the report names it Brax's."""
    from jaxrl.benchmarks import case, report
    from jaxrl.benchmarks.brax_parity import ppo_parity_flags
    from jaxrl.benchmarks.suites import SUITES, Case, brax_case

    settings = {"num_envs": 4, "batch_size": 4, "num_minibatches": 2, "unroll_length": 5,
                "num_updates_per_batch": 2, "learning_rate": 1e-3, "entropy_cost": 1e-2,
                "discounting": 0.97, "reward_scaling": 1.0, "normalize_observations": True,
                "episode_length": 100, "action_repeat": 1}  # fmt: skip
    env, steps = "brax/inverted_pendulum", 4 * 2 * 5
    peer = dataclasses.replace(brax_case("ppo", env, settings, 0.0, steps, 1), system="brax-speed")
    ours = Case("speed", "ppo", env, 4, 0.0, steps, options=ppo_parity_flags(settings, steps, 1))
    brax, jaxrl = case.run(peer), case.run(ours)
    assert brax["speed"]["flops_per_update"] == jaxrl["speed"]["flops_per_update"] > 0
    assert brax["speed"]["seconds_per_update"] > 0 and brax["speed"]["kernels_per_update"] > 0
    assert "of the float32 matmul peak" in report.one_line(brax)
    assert "envs in 60 GB" not in report.one_line(brax)  # no jaxrl state to size
    lines = report.speeds([jaxrl, brax])
    assert any(line.startswith("- Brax's ppo on brax/inverted_pendulum") for line in lines)
    ratio = jaxrl["speed"]["seconds_per_update"] / brax["speed"]["seconds_per_update"]
    assert f"- jaxrl's ppo update on brax/inverted_pendulum: {ratio:.2f}x Brax's time" in lines[-2]
    # A labelled variant is set beside Brax's too; jaxrl's time over Brax's, not the inverse.
    timed = lambda r, s, k: {**r, "speed": {**r["speed"], "seconds_per_update": s,
                                            "kernels_per_update": k}}  # fmt: skip
    variant = timed({**jaxrl, "algo": "ppo+mixed"}, 0.003, 300)
    assert report.against_brax_update([variant, timed(brax, 0.002, 400)]) == [
        "- jaxrl's ppo+mixed update on brax/inverted_pendulum: 1.50x Brax's time (3.0 against "
        "2.0 ms, 300 kernels against 400).",
        "",
    ]
    assert report.against_brax_update([jaxrl]) == []  # no Brax record, no line
    mixed = [c.name for c in SUITES["gpu-mixed"]()]
    assert "brax-speed/ppo/playground/CartpoleBalance/2048/s0" in mixed
