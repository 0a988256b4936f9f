"""The benchmark suites: which systems run on which env, with how many envs and steps, and the
return threshold that counts as solved.

Systems: "jaxrl" (an algorithm with its preset), "brax" (Brax's own `sac` or `ppo` trainer
with the hyperparameters its docs or MuJoCo Playground give), "limit" (the simulator with
random actions, no learning), "profile" (where a jaxrl preset's compile and run time goes,
`benchmarks.profile`), "speed" (a jaxrl update alone, `benchmarks.speed`) and "brax-speed"
(Brax's PPO update alone).

Here: `Case`, the case builders (`jaxrl_case`, `brax_case`, ...) and `SUITES`, each suite's
cases; Brax's settings and the flags that give them to jaxrl are in `benchmarks.brax_parity`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from jaxrl.benchmarks.brax_parity import (
    BRAX_PPO_DMC,
    BRAX_PPO_INVERTED_PENDULUM,
    BRAX_SAC,
    PARITY_EVALS,
    PARITY_PPO_LONG_TASKS,
    PARITY_PPO_TASKS,
    PARITY_SAC_TASKS,
    SPEED_PPO_EVALS,
    SPEED_PPO_TASKS,
    SPEED_SAC_EVALS,
    SPEED_SAC_TASKS,
    playground_ppo,
    playground_sac,
    ppo_parity_flags,
    ppo_update_steps,
    sac_parity_flags,
)

PENDULUM, INVERTED_PENDULUM = -250.0, 900.0


@dataclasses.dataclass(frozen=True)
class Case:
    # "jaxrl", "brax", "door" (Brax's arguments through `jaxrl.brax`), "limit", "profile",
    # "speed" (jaxrl's update alone, `benchmarks.speed`) or "brax-speed" (Brax's PPO update
    # alone at a brax case's settings)
    system: str
    algo: str  # jaxrl algorithm, Brax trainer ("sac", "ppo"), or "random" for the limit
    env: str
    num_envs: int
    threshold: float = 0.0
    total_steps: int = 0
    seed: int = 0
    preset: str | None = None  # jaxrl preset
    options: tuple[str, ...] = ()  # extra `jaxrl train` flags
    peer: tuple[tuple[str, Any], ...] = ()  # keyword arguments of Brax's train()
    # A variant of the same algorithm and preset (e.g. "bf16": --matmul-precision bfloat16),
    # named apart: in the case's name and, as algo+label, in the report's rows.
    label: str = ""
    # jaxrl only: seeds seed..seed+seeds-1 trained together in one program (`--seeds`), one
    # record with each seed's returns; 0: the one seed `seed`.
    seeds: int = 0

    @property
    def variant(self) -> str:
        """The algorithm as the case's name and the report's rows give it: algo+label."""
        return f"{self.algo}+{self.label}" if self.label else self.algo

    @property
    def name(self) -> str:
        seeds = f"s{self.seed}"
        if self.seeds:  # seeds from `seed` on: seeds5 (0 to 4), seeds5-9 (5 to 9)
            last = self.seed + self.seeds - 1
            seeds = f"seeds{self.seed}-{last}" if self.seed else f"seeds{self.seeds}"
        return f"{self.system}/{self.variant}/{self.env}/{self.num_envs}/{seeds}"

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Case:
        fields = json.loads(text)
        fields["options"] = tuple(fields["options"])
        fields["peer"] = tuple(
            (k, tuple(v) if isinstance(v, list) else v) for k, v in fields["peer"]
        )
        return cls(**fields)


def jaxrl_case(algo: str, env: str, preset: str, threshold: float, **kw) -> Case:
    from jaxrl.experiments.presets import PRESETS

    train = PRESETS[preset]["train"]
    kw.setdefault("num_envs", train["num_envs"])
    kw.setdefault("total_steps", train["total_steps"])
    return Case("jaxrl", algo, env, threshold=threshold, preset=preset, **kw)


def profile_case(case: Case) -> Case:
    """The profile of a jaxrl case: same algorithm, preset and sizes."""
    return dataclasses.replace(case, system="profile")


def brax_case(algo: str, env: str, settings: dict, threshold: float, total_steps: int, evals: int):
    peer = {k: v for k, v in settings.items() if k != "num_envs"}
    peer["num_evals"] = evals
    return Case(
        "brax",
        algo,
        env,
        settings["num_envs"],
        threshold=threshold,
        total_steps=total_steps,
        peer=tuple(sorted(peer.items())),
    )


def _smoke() -> list[Case]:
    ip = "brax/inverted_pendulum"
    cases = [
        jaxrl_case("sac", "classic/pendulum", "sac_pendulum", PENDULUM),
        jaxrl_case("crossq", "classic/pendulum", "crossq_pendulum", PENDULUM),
    ]
    cases += [
        jaxrl_case(algo, ip, f"{algo}_inverted_pendulum", INVERTED_PENDULUM)
        for algo in ("sac", "crossq", "fast_td3", "ppo")
    ]
    cases += [
        brax_case("sac", ip, BRAX_SAC, INVERTED_PENDULUM, 307_200, 60),
        brax_case("ppo", ip, BRAX_PPO_INVERTED_PENDULUM, INVERTED_PENDULUM, 2_000_000, 20),
    ]
    return _with_limits(cases)


def _with_limits(cases: list[Case]) -> list[Case]:
    """The simulator limit for every (env, num_envs) the cases use, first."""
    limits = sorted({(c.env, c.num_envs) for c in cases})
    return [Case("limit", "random", env, n) for env, n in limits] + cases


def _cpu() -> list[Case]:
    """The longer CPU comparison: the smoke cases over 3 seeds, and a Playground task."""
    cases = [
        dataclasses.replace(c, seed=seed)
        for c in _smoke()
        if c.system != "limit"
        for seed in (0, 1, 2)
    ]
    cases.append(jaxrl_case("ppo", "playground/CartpoleBalance", "ppo_cartpole_balance", 900.0))
    # Where the time goes, for the compile target on brax/inverted_pendulum.
    profiles = [
        profile_case(c)
        for c in cases
        if c.system == "jaxrl" and c.env == "brax/inverted_pendulum" and c.seed == 0
    ]
    return _with_limits(cases) + profiles


def _gpu() -> list[Case]:
    """MJX DM Control at thousands of envs (thresholds: eval returns the Playground paper's
    PPO reaches on each task well within its budget)."""
    cases = []
    for env, threshold in (("playground/CheetahRun", 500.0), ("playground/WalkerRun", 500.0)):
        cases += [
            jaxrl_case("ppo", env, "ppo_dmc", threshold, num_envs=4096, total_steps=60_000_000),
            jaxrl_case("sac", env, "sac_dmc", threshold, total_steps=5_000_000),
            jaxrl_case("fast_td3", env, "fast_td3_playground", threshold, total_steps=20_000_000),
            brax_case("ppo", env, BRAX_PPO_DMC, threshold, 60_000_000, 10),
        ]
        # Mixed precision (bfloat16 matmuls, float32 sums) beside the float32 runs above.
        bf16 = dict(options=("--matmul-precision", "bfloat16"), label="bf16")
        cases += [
            jaxrl_case("sac", env, "sac_dmc", threshold, total_steps=5_000_000, **bf16),
            jaxrl_case(
                "fast_td3", env, "fast_td3_playground", threshold, total_steps=20_000_000, **bf16
            ),
        ]
    # Where PPO's time goes at 4096 envs, for the throughput target (50% of the limit).
    profiles = [profile_case(c) for c in cases if c.algo == "ppo" and c.system == "jaxrl"]
    return _with_limits(cases) + profiles


def _tiny() -> list[Case]:
    """What the suite's own test runs: seconds per case."""
    cases = [
        Case("limit", "random", "classic/pendulum", 4),
        jaxrl_case(
            "sac",
            "classic/pendulum",
            "sac_pendulum",
            PENDULUM,
            num_envs=4,
            total_steps=800,
            options=("--learning-starts", "200", "--eval-every", "400", "--eval-envs", "2"),
        ),
    ]
    return cases + [profile_case(cases[1])]


# --- Learning parity: jaxrl configured exactly as Brax's trainer, side by side. ---------------
# Brax's settings, the task tables and the flags that give them to jaxrl: `brax_parity`.


def _greedy_peer(settings: dict, eval_envs: int) -> dict:
    """Brax's trainer at `settings`, evaluating greedily on `eval_envs` envs, as jaxrl does
    (Brax's trainers sample their evaluation actions by default)."""
    return {**settings, "num_eval_envs": eval_envs, "deterministic_eval": True}


def _parity_case(algo: str, env: str, settings: dict, steps: int, flags, **fields) -> Case:
    """jaxrl's run of `algo` with the parity `flags` for Brax's `settings`, `steps` long;
    `fields`: the Case's others (seed, seeds, label)."""
    return Case("jaxrl", algo, env, settings["num_envs"], total_steps=steps, options=flags,
                **fields)  # fmt: skip


def _sac_parity(tasks: dict, evals: int = PARITY_EVALS) -> list[Case]:
    cases = []
    for env, (settings, steps) in tasks.items():
        settings = settings or playground_sac(env.split("/")[1])
        peer = _greedy_peer(settings, 128)
        flags = sac_parity_flags(settings, steps, evals)
        for seed in (0, 1, 2):
            cases.append(_parity_case("sac", env, settings, steps, flags, seed=seed))
            cases.append(
                dataclasses.replace(brax_case("sac", env, peer, 0.0, steps, evals + 1), seed=seed)
            )
    return cases


def _ppo_parity(tasks: dict, evals: int = PARITY_EVALS) -> list[Case]:
    cases = []
    for env, (settings, budget) in tasks.items():
        settings = settings or playground_ppo(env.split("/")[1])
        peer = _greedy_peer(settings, 128)
        # Whole Brax updates between evaluations, so both systems stop at the same step.
        per_update = ppo_update_steps(settings) * evals
        steps = per_update * max(1, round(budget / per_update))
        flags = ppo_parity_flags(settings, steps, evals)
        for seed in (0, 1, 2):
            cases.append(_parity_case("ppo", env, settings, steps, flags, seed=seed))
            cases.append(
                dataclasses.replace(brax_case("ppo", env, peer, 0.0, steps, evals + 1), seed=seed)
            )
    return cases


def _parity() -> list[Case]:
    return _sac_parity(PARITY_SAC_TASKS) + _ppo_parity(PARITY_PPO_TASKS)


def _parity_long() -> list[Case]:
    return _ppo_parity(PARITY_PPO_LONG_TASKS)


# --- Speed at identical settings (issue 19): the parity cases' exact settings, a short fixed
# budget (`brax_parity.SPEED_SAC_TASKS`, `SPEED_PPO_TASKS`).
def _identical() -> list[Case]:
    return _sac_parity(SPEED_SAC_TASKS, SPEED_SAC_EVALS) + _ppo_parity(
        SPEED_PPO_TASKS, SPEED_PPO_EVALS
    )


# --- Learning parity on this CPU (issue 36): Playground's own settings for three DM Control
# tasks, 5 paired seeds, both trainers in one run (jaxrl's seeds in one program, Brax's one
# process each), evaluated greedily on 32 envs (128 at Playground's; evaluation only, the same
# on both sides). PPO: brax_ppo_config with only the env count and the minibatch size cut (2048
# -> 64 envs, batch 1024 -> 32 unrolls), so each update still takes 16 unrolls of 30 steps of
# every env and 16 epochs x 32 minibatches of gradient steps: 16 updates, 491,520 env steps.
# One update costs about 10 s per seed here (61.5 s compile, 21.3 s for two updates with an
# evaluation each, one seed; 32 updates of 5 seeds did not end in 3,600 s beside a test run).
# SAC: brax_sac_config unchanged (128 envs, batch 512, 8 updates per step), its budget cut.
PARITY_DMC_SCALE = {"num_envs": 64, "batch_size": 32}
PARITY_DMC_TASKS = ("playground/CartpoleBalance", "playground/CartpoleSwingup",
                    "playground/ReacherEasy")  # fmt: skip
PARITY_DMC_PPO = (16, 4)  # updates, evaluations after the start
PARITY_DMC_SAC_STEPS = {  # 784 iterations of 128 envs; CartpoleSwingup twice that (at 100k
    # steps, both trainers are still near 0 there: results/parity-cpu.jsonl)
    "playground/CartpoleBalance": 100_352,
    "playground/CartpoleSwingup": 200_704,
    "playground/ReacherEasy": 100_352,
}
PARITY_DMC_SEEDS, PARITY_DMC_EVAL_ENVS = 5, 32


def _seeded_ppo_parity(
    tasks: dict,
    seeds: int,
    scale: dict | None = None,
    own: bool = False,
    eval_envs: int = 128,
    first: int = 0,
):
    """PPO beside Brax at Playground's settings (`scale` overriding some), per task
    (updates, evaluations after the start): jaxrl's seeds (from `first` on) in one program
    with every Brax choice (and, with `own`, with its own choices too, labelled "own"), Brax's
    one process each."""
    cases = []
    variants = ((True, ""), (False, "own")) if own else ((True, ""),)
    for env, (updates, evals) in tasks.items():
        settings = {**playground_ppo(env.split("/")[1]), **(scale or {})}
        steps = updates * ppo_update_steps(settings)
        peer = _greedy_peer(settings, eval_envs)
        for brax_mode, label in variants:
            flags = ppo_parity_flags(settings, steps, evals, brax_mode, eval_envs)
            cases.append(
                _parity_case("ppo", env, settings, steps, flags, seed=first, seeds=seeds,
                             label=label)
            )  # fmt: skip
        brax = brax_case("ppo", env, peer, 0.0, steps, evals + 1)
        cases += [dataclasses.replace(brax, seed=seed) for seed in range(first, first + seeds)]
    return cases


def _seeded_sac_parity(
    tasks: dict, seeds: int, evals: int = PARITY_EVALS, eval_envs: int = 128, first: int = 0
):
    """SAC beside Brax at Playground's settings, per task its env steps: jaxrl's seeds (from
    `first` on) in one program with every Brax choice, Brax's one process each."""
    cases = []
    for env, steps in tasks.items():
        settings = playground_sac(env.split("/")[1])
        peer = _greedy_peer(settings, eval_envs)
        flags = sac_parity_flags(settings, steps, evals, eval_envs)
        cases.append(_parity_case("sac", env, settings, steps, flags, seed=first, seeds=seeds))
        brax = brax_case("sac", env, peer, 0.0, steps, evals + 1)
        cases += [dataclasses.replace(brax, seed=seed) for seed in range(first, first + seeds)]
    return cases


def _parity_dmc() -> list[Case]:
    """SAC first (about a minute a run here), then PPO (about 10 s per update and seed)."""
    sac = _seeded_sac_parity(PARITY_DMC_SAC_STEPS, PARITY_DMC_SEEDS, eval_envs=PARITY_DMC_EVAL_ENVS)
    ppo = _seeded_ppo_parity(
        dict.fromkeys(PARITY_DMC_TASKS, PARITY_DMC_PPO),
        PARITY_DMC_SEEDS,
        PARITY_DMC_SCALE,
        eval_envs=PARITY_DMC_EVAL_ENVS,
    )
    return sac + ppo


# The extra SAC ReacherEasy seeds of `parity_dmc_more` (first, count): seeds 5 to 9 ran on
# 2026-11-26, seeds 10 to 14 and 15 to 19 on 2026-11-27, seeds 20 to 24 on 2026-11-27 (a
# later session; benchmarks/notes/2026-11-27-parity-dmc-more-seeds.md).
PARITY_DMC_MORE = (20, 5)


def _parity_dmc_more() -> list[Case]:
    """More seeds of the SAC ReacherEasy parity case, both systems (`PARITY_DMC_MORE`): its gap
    came with every computation proven equal, so more seeds decided it (over seeds 0 to 24:
    jaxrl 549, Brax 585 [529, 637], one-sided permutation p = 0.18). Records go beside
    parity_dmc's (`--out`), whose report pools every record of a task and system."""
    task = "playground/ReacherEasy"
    steps = {task: PARITY_DMC_SAC_STEPS[task]}
    first, count = PARITY_DMC_MORE
    return _seeded_sac_parity(steps, count, eval_envs=PARITY_DMC_EVAL_ENVS, first=first)


# The extra PPO CartpoleBalance seeds of `parity_dmc_ppo_more` (first, count). Both trainers'
# final returns there fall in two groups, near 500 and near 1000; over seeds 0 to 4 here and
# on an H200, 4 of Brax's 10 reached the upper one and 1 of jaxrl's 10.
PARITY_DMC_PPO_MORE = (5, 5)


def _parity_dmc_ppo_more() -> list[Case]:
    """More seeds of the PPO CartpoleBalance parity case, both systems (`PARITY_DMC_PPO_MORE`),
    at parity_dmc's settings: does jaxrl reach the upper group less often? Its loop and its
    evaluation are proven equal to Brax's (tests/loops/test_ppo_loop_brax_parity.py,
    tests/loops/test_eval_brax_parity.py). Records go beside parity_dmc's (`--out`)."""
    task = "playground/CartpoleBalance"
    first, count = PARITY_DMC_PPO_MORE
    return _seeded_ppo_parity(
        {task: PARITY_DMC_PPO},
        count,
        PARITY_DMC_SCALE,
        eval_envs=PARITY_DMC_EVAL_ENVS,
        first=first,
    )


# --- Learning parity on a GPU (issue 36): MuJoCo Playground's own settings for its DM Control
# tasks, both systems in one run (jaxrl's seeds in one program, `--seeds N`; Brax's one process
# each). PPO: Playground's brax_ppo_config (2048 envs, batch 1024 x 32 minibatches, unroll 30,
# 16 epochs, ...) with its budget cut to whole updates, and its num_resets_per_eval left at
# Brax's default 0 (Playground's 10 resets every env after every update at this budget); jaxrl
# with Brax's choices and, on CartpoleBalance, with its own. SAC: Playground's brax_sac_config
# with the budget cut. FastTD3: the fast_td3_playground preset on CheetahRun (its published
# settings), one seed. Made for 10 minutes of a GPU with every case at once (`--jobs 18`):
# on an H200 with 14 cases at once, 10 CheetahRun updates did not finish in 480 s, so it has 4.
GPU_PARITY_PPO_TASKS = {  # task: (updates, evaluations after the start, seeds, with own)
    "playground/CartpoleBalance": (6, 3, 5, True),  # 5,898,240 env steps, the budget issue 36 ran
    "playground/CheetahRun": (4, 4, 3, False),  # 3,932,160 env steps
}
GPU_PARITY_SAC_TASKS = {"playground/CartpoleBalance": (200_704, 5)}  # 1,568 iterations of 128 envs
GPU_PARITY_FAST_TD3 = {"playground/CheetahRun": 1_003_520}


def _gpu_parity() -> list[Case]:
    cases = []
    for env, (updates, evals, seeds, own) in GPU_PARITY_PPO_TASKS.items():
        cases += _seeded_ppo_parity({env: (updates, evals)}, seeds, own=own)
    for env, (steps, seeds) in GPU_PARITY_SAC_TASKS.items():
        cases += _seeded_sac_parity({env: steps}, seeds)
    for env, steps in GPU_PARITY_FAST_TD3.items():
        cases.append(jaxrl_case("fast_td3", env, "fast_td3_playground", 0.0, total_steps=steps))
    return cases


# Issue 39's GPU speed suite: PPO at Playground's CartpoleBalance settings (every Brax choice)
# in float32 and bfloat16 beside Brax's PPO, one seed each for throughput, bfloat16 over 3 seeds
# in one program for its learning (float32's 5 seeds are gpu-parity's); and every algorithm's
# update compiled alone (`speed` cases: product FLOPs, FLOP/s, the card's measured matmul peak,
# and the env count whose state fits 80 GB). Made for at most 10 minutes of an H100's time, one
# case at a time (`--jobs 1`: the timings are the point); per-case timeout 240 s.
GPU_SPEED_PPO = ("playground/CartpoleBalance", 6, 3)  # task, updates (5,898,240 steps), evals
BF16 = ("--matmul-precision", "bfloat16")


def gpu_speed_ppo() -> tuple[Case, Case]:
    """jaxrl's PPO with every Brax choice and Brax's PPO, at GPU_SPEED_PPO's settings."""
    env, updates, evals = GPU_SPEED_PPO
    settings = playground_ppo(env.split("/")[1])
    steps = updates * ppo_update_steps(settings)
    ppo = _parity_case(
        "ppo", env, settings, steps, ppo_parity_flags(settings, steps, evals, True, 128)
    )
    peer = _greedy_peer(settings, 128)
    return ppo, brax_case("ppo", env, peer, 0.0, steps, evals + 1)


def _variant(case: Case, label: str, options: tuple[str, ...]) -> Case:
    """`case` with `options` added, named apart by `label`."""
    return dataclasses.replace(case, options=case.options + options, label=label)


def _speed_cases(case: Case, *variants: tuple[str, tuple[str, ...]]) -> list[Case]:
    """The update alone at `case`'s settings (a `speed` case), then once per (label, options)
    variant."""
    speed = dataclasses.replace(case, system="speed")
    return [speed] + [_variant(speed, label, options) for label, options in variants]


def _gpu_speed() -> list[Case]:
    ppo, brax = gpu_speed_ppo()
    ppo_bf16 = _variant(ppo, "bf16", BF16)
    sac_settings = playground_sac("CartpoleBalance")
    sac_steps = 200_704
    sac = _parity_case("sac", ppo.env, sac_settings, sac_steps,
                       sac_parity_flags(sac_settings, sac_steps))  # fmt: skip
    fast_td3 = jaxrl_case("fast_td3", "playground/CheetahRun", "fast_td3_playground", 0.0)
    speeds = [c for case in (ppo, sac, fast_td3) for c in _speed_cases(case, ("bf16", BF16))]
    return speeds + [ppo, ppo_bf16, brax, dataclasses.replace(ppo_bf16, seeds=3)]


# Issue 39's follow-up on an H200 (2026-11-27, benchmarks/notes/2026-11-27-gpu-speed-h200.md):
# at GPU_SPEED_PPO's settings jaxrl's PPO ran at 822,878 env-steps/s against Brax's 1,208,630,
# while its update alone took 0.57 s of its 1.19 s per iteration. This suite splits the rest:
# the same run with the evaluation in the chunk's own scan ("shared", what "auto" picks on a
# GPU) and with its own envs ("own"), Brax beside them, and both chunks profiled
# (`benchmarks/profile.py`: simulate, learn, evaluate, other), then the update alone (a `speed`
# case). About 9 minutes of an H200, one case at a time.
OWN_EVAL = ("--eval-simulator", "own")


def _gpu_split() -> list[Case]:
    ppo, brax = gpu_speed_ppo()
    own = _variant(ppo, "own-eval", OWN_EVAL)
    profiles = [profile_case(case) for case in (ppo, own)]
    # The update alone, against gpu-speed's 570 ms before its advantage loop was written out.
    return [ppo, own, brax, *profiles, dataclasses.replace(ppo, system="speed")]


# Issue 39's third GPU question (2026-11-28): is the PPO update bound by the bytes its
# elementwise work moves? "bfloat16" (bf16 products, float32 activations) did not speed it up
# on the H200; "mixed" keeps the hidden activations in bfloat16 too (`networks.dense`). The
# update alone in float32, bfloat16 and mixed (PPO and FastTD3: `speed` cases, about 45 s
# each), then the PPO run in float32 and mixed beside Brax's, and mixed over 3 seeds for its
# learning (float32's 3 seeds are gpu-parity's). Run on an H200
# (benchmarks/notes/2026-11-28-gpu-mixed-h200.md): mixed took a quarter off PPO's update, but the
# run reached only 0.81x Brax's rate, its rollout and shared evaluation weighing as much as the
# update; so mixed with the evaluation's own simulator (`gpu-split` found it 0.2 s an iteration
# cheaper in float32) follows Brax's run.
# About 10 minutes of an H200, one case at a time (`--jobs 1`).
MIXED = ("--matmul-precision", "mixed")


def _gpu_mixed() -> list[Case]:
    """Most telling first, so that a call cut short keeps them: PPO's update alone in the
    three precisions and mixed with the parallel advantage scan, Brax's PPO update alone,
    PPO's runs beside Brax's (mixed also with its own evaluation), mixed's seeds, then
    FastTD3's updates."""
    ppo, brax = gpu_speed_ppo()
    fast_td3 = jaxrl_case("fast_td3", "playground/CheetahRun", "fast_td3_playground", 0.0)
    precisions = (("bf16", BF16), ("mixed", MIXED))
    mixed = _variant(ppo, "mixed", MIXED)
    own = _variant(ppo, "mixed+own-eval", MIXED + OWN_EVAL)
    runs = [ppo, mixed, brax, own, dataclasses.replace(mixed, seeds=3)]
    # Fewer kernels per gradient step: the advantage recursion as a parallel scan.
    parallel = ("mixed+assoc", MIXED + ("--gae-scan", "associative"))
    # Brax's own update alone at the same settings: is jaxrl's update, or its loop, behind?
    updates = [
        *_speed_cases(ppo, *precisions, parallel),
        dataclasses.replace(brax, system="brax-speed"),
    ]
    return updates + runs + _speed_cases(fast_td3, *precisions)


# Issue 39, FastTD3 on a GPU: counted without one (benchmarks/gpu_kernels.py), XLA:GPU copied
# the agent's state on every trip of the loop over an iteration's updates while a conditional
# held that loop (207 of the learning branch's 483 kernels per env step); written out
# (--unroll-updates 2) 259 kernels, 1 copy, but the update compiled twice. Since 4aba609 the
# condition sits inside each update, and the loop's learning trip is 134 kernels, no copies.
# The preset on CheetahRun for 1,003,520 env steps, both ways, one case at a time: compile and
# env-steps/s (about 4 minutes of an H200).
def _gpu_unroll() -> list[Case]:
    fast_td3 = jaxrl_case(
        "fast_td3", "playground/CheetahRun", "fast_td3_playground", 0.0, total_steps=1_003_520
    )
    return [fast_td3, _variant(fast_td3, "unroll2", ("--unroll-updates", "2"))]


def _dmc_algos() -> list[Case]:
    from jaxrl.benchmarks import dmc_algos  # its own module: the table of cases and its report

    return dmc_algos.cases(jaxrl_case)


def _door() -> list[Case]:
    from jaxrl.benchmarks import door_speed  # its own module: its cases and its report

    return door_speed.cases(_identical())


def _ppo_choices() -> list[Case]:
    from jaxrl.benchmarks import ppo_choices  # its own module: its cases and its report

    return ppo_choices.cases(Case)


def _ppo_choices_16() -> list[Case]:
    from jaxrl.benchmarks import ppo_choices

    return ppo_choices.cases(Case, "ppo_choices_16")


def _gpu_door() -> list[Case]:
    from jaxrl.benchmarks import door_speed

    return door_speed.gpu_cases(_gpu_parity())


SUITES = {
    "smoke": _smoke,
    "cpu": _cpu,
    "gpu": _gpu,
    "tiny": _tiny,
    "parity": _parity,
    "parity_long": _parity_long,
    "identical": _identical,
    "gpu-parity": _gpu_parity,
    "parity_dmc": _parity_dmc,
    "parity_dmc_more": _parity_dmc_more,
    "parity_dmc_ppo_more": _parity_dmc_ppo_more,
    "gpu-speed": _gpu_speed,
    "gpu-split": _gpu_split,
    "gpu-mixed": _gpu_mixed,
    "gpu-unroll": _gpu_unroll,
    "dmc_algos": _dmc_algos,
    "door": _door,
    "ppo_choices": _ppo_choices,
    "ppo_choices_16": _ppo_choices_16,
    "gpu-door": _gpu_door,
}
