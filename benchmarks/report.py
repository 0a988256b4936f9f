"""The markdown summary (RESULTS.md) and plots from the suite's JSON records."""

from __future__ import annotations

import json
import os
import pathlib
from collections import defaultdict

import numpy as np


def load(path: pathlib.Path) -> list[dict]:
    """Suite records of one file; a case run again replaces its earlier record. Records of
    the stand-alone scripts beside them (`pql_split.py`, `robots.py`, `gpu_kernels.py`: no
    "case", or a "case" but no "system") are theirs to report, and skipped."""
    latest: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if "case" in record and "system" in record:
                latest[record["case"]] = record
    return list(latest.values())


SPEED_SYSTEMS = ("speed", "brax-speed")  # an update alone (`benchmarks/speed.py`)


def one_line(record: dict) -> str:
    if "error" in record:
        return "error"
    if record["system"] == "limit":
        return f"limit {record['env_steps_per_second']:,.0f} env-steps/s"
    if record["system"] == "profile":
        compile_s, run_s = record["profile"]["compile"], record["profile"]["run"]
        return (
            f"chunk compiles in {compile_s['chunk']['compile_seconds']:.1f} s, "
            f"runs in {run_s['chunk']:.2f} s"
        )
    if record["system"] in SPEED_SYSTEMS:
        return speed_line(record)
    hit = record["seconds_to_threshold"]
    reached = f"threshold at {hit:.1f} s" if hit is not None else "threshold not reached"
    return f"{reached}, final return {record['final_return']:.1f}"


def speed_line(record: dict) -> str:
    """An update's cost and rate against the device's measured matmul peak in the precision
    it ran (bfloat16 where --matmul-precision bfloat16 or mixed), and the env count its state
    fits."""
    speed = record["speed"]
    config = record.get("config", ())
    dtype = "bfloat16" if "bfloat16" in config or "mixed" in config else "float32"
    peak = record["matmul_peak"][dtype]["flops_per_second"]
    rate = speed["flops_per_second"]
    # Brax's update (brax-speed) has no jaxrl state to size
    estimate = record.get("memory_estimate")
    fits = (
        f"; state and batch fit {estimate['largest_num_envs']:,} envs in 60 GB" if estimate else ""
    )
    kernels = ""
    if speed.get("kernels_per_update"):  # records from before kernels were counted have none
        kernels = (
            f"; {speed['kernels_per_update']:,} kernels, "
            f"{speed['seconds_per_kernel'] * 1e6:,.2f} us each"
        )
        inner = speed.get("heaviest_inner_loop")
        if inner:
            kernels += f" ({inner['kernels_per_trip']:,} per trip of its inner loop)"
    return (
        f"update {speed['flops_per_update'] / 1e9:,.1f} GFLOP in "
        f"{speed['seconds_per_update'] * 1e3:,.1f} ms: {rate / 1e12:.2f} TFLOP/s, "
        f"{rate / peak:.1%} of the {dtype} matmul peak ({peak / 1e12:.1f} TFLOP/s)"
        f"{kernels}{fits}"
    )


def _fmt(value, spec=",.1f", none="-"):
    return none if value is None else format(value, spec)


def _mean_or_none(values: list) -> float | None:
    """The mean, or None where any value is missing (records from before a field existed)."""
    return None if not values or None in values else float(np.mean(values))


def _system(record: dict) -> str:
    return f"{record['system']}/{record['algo']}"


def _compile_target(head: str, base: float, seconds: dict[str, float]) -> str:
    """One line of the compile target (<= 0.5x Brax SAC's `base`): each system's ratio, lowest
    first, and how many meet it; `head` is formatted with `base`."""
    ratios = sorted(((k, v / base) for k, v in seconds.items()), key=lambda kv: kv[1])
    met = sum(v <= 0.5 for _, v in ratios)
    listed = ", ".join(f"{k} {v:.2f}" for k, v in ratios)
    return f"{head.format(base)}{listed}; met by {met} of {len(ratios)}."


def targets(records: list[dict]) -> list[str]:
    """The issue's targets, where the records hold both sides (means over seeds)."""
    lines = []
    ip = [r for r in records if r.get("env") == "brax/inverted_pendulum" and "error" not in r]
    by = {}  # one entry per system: means over its seeds (time to threshold: if all reached)
    for name in sorted({_system(r) for r in ip if r["system"] in ("jaxrl", "brax")}):
        runs = [r for r in ip if _system(r) == name]
        hits = [r["seconds_to_threshold"] for r in runs]
        by[name] = {
            "system": runs[0]["system"],
            "algo": runs[0]["algo"],
            "seeds": len(runs),
            "seconds_to_threshold": None if None in hits else float(np.mean(hits)),
            "compile_seconds": float(np.mean([r["compile_seconds"] for r in runs])),
            "compile_events": _mean_or_none([r.get("compile_total_seconds") for r in runs]),
        }
    brax_sac, brax_ppo = by.get("brax/sac"), by.get("brax/ppo")
    ours = [r for k, r in by.items() if k.startswith("jaxrl/") and r["seconds_to_threshold"]]
    if brax_sac and ours:
        best = min(ours, key=lambda r: r["seconds_to_threshold"])
        if brax_sac["seconds_to_threshold"]:
            ratio = best["seconds_to_threshold"] / brax_sac["seconds_to_threshold"]
            verdict = "met" if ratio <= 0.25 else f"missed by {ratio / 0.25:.1f}x"
            lines.append(
                f"- Best jaxrl ({_system(best)}) to threshold on brax/inverted_pendulum: "
                f"{best['seconds_to_threshold']:.1f} s vs Brax SAC "
                f"{brax_sac['seconds_to_threshold']:.1f} s = {ratio:.2f} of it "
                f"(target <= 0.25): {verdict}."
            )
        else:
            lines.append("- Brax SAC did not reach the threshold: the 1/4 target has no base.")
    if brax_sac:
        jaxrl_runs = {_system(r): r for r in by.values() if r["system"] == "jaxrl"}
        lines.append(
            _compile_target(
                "- Compile (to the first finished chunk) against Brax SAC's {:.1f} s, target "
                "<= 0.5: ",
                brax_sac["compile_seconds"],
                {k: r["compile_seconds"] for k, r in jaxrl_runs.items()},
            )
        )
        events = {k: r["compile_events"] for k, r in jaxrl_runs.items()}
        if brax_sac["compile_events"] and events and None not in events.values():
            # The identical suite's clock: the first chunk's run is not in it, and Brax's
            # programs compiled after its first evaluation are.
            lines.append(
                _compile_target(
                    "- Compile by JAX's compile events (tracing, lowering and XLA of every "
                    "program in the process) against Brax SAC's {:.1f} s: ",
                    brax_sac["compile_events"],
                    events,
                )
            )
        for r in records:
            if r.get("system") == "profile" and r["env"] == "brax/inverted_pendulum":
                pieces = r["profile"]["compile"]
                parts = sorted(PIECES, key=lambda k: -pieces[k]["compile_seconds"])
                lines.append(
                    f"  - jaxrl/{r['algo']} compile pieces on their own (profile): "
                    + ", ".join(f"{k} {pieces[k]['compile_seconds']:.1f} s" for k in parts)
                    + f"; the whole chunk {pieces['chunk']['compile_seconds']:.1f} s "
                    f"(+{pieces['chunk']['trace_seconds']:.1f} s trace)."
                )
    lines += throughput_target(records)
    ppo = by.get("jaxrl/ppo")
    if ppo and brax_ppo:
        a, b = ppo["seconds_to_threshold"], brax_ppo["seconds_to_threshold"]
        if a and b:
            lines.append(
                f"- jaxrl PPO to threshold {a:.1f} s vs Brax PPO {b:.1f} s: "
                f"{'met' if a <= b else f'missed by {a / b:.2f}x'}."
            )
        else:
            lines.append(f"- PPO to threshold: jaxrl {_fmt(a)} s, Brax {_fmt(b)} s.")
    return lines


def throughput_target(records: list[dict]) -> list[str]:
    """On a GPU, jaxrl PPO's training rate at 4096 envs against the simulator limit (target:
    at least 50%), with where a profile says its chunk's time goes."""
    lines = []
    limits = {
        (r["env"], r["num_envs"]): r["env_steps_per_second"]
        for r in records
        if r.get("system") == "limit" and "error" not in r
    }
    for r in records:
        if not (
            r.get("system") == "jaxrl"
            and r["algo"] == "ppo"
            and r["num_envs"] >= 4096
            and r["machine"]["backend"] == "gpu"
            and "error" not in r
        ):
            continue
        limit, sps = limits.get((r["env"], r["num_envs"])), r["env_steps_per_second"]
        if not (limit and sps):
            continue
        fraction = sps / limit
        line = (
            f"- GPU throughput, jaxrl PPO on {r['env']} at {r['num_envs']} envs: "
            f"{fraction:.0%} of the simulator limit (target >= 50%): "
            f"{'met' if fraction >= 0.5 else f'missed by {0.5 - fraction:.0%} of the limit'}."
        )
        for p in records:
            if p.get("system") == "profile" and (p["env"], p["algo"]) == (r["env"], "ppo"):
                run = p["profile"]["run"]
                line += " Per chunk (profile): " + ", ".join(
                    f"{k} {run[k] / run['chunk']:.0%}"
                    for k in ("simulate", "learn", "evaluate", "other")
                )
                line += "."
        lines.append(line)
    return lines


def section(name: str, records: list[dict]) -> list[str]:
    lines = [f"## {name}", ""]
    machines = {json.dumps(r["machine"], sort_keys=True) for r in records if "machine" in r}
    for m in sorted(machines):
        facts = json.loads(m)
        lines.append(
            f"Machine: {facts['cpu']} ({facts['cores']} cores), {facts['backend']} "
            f"{', '.join(facts['devices'])} x{facts['device_count']}; jax {facts['jax']}, "
            f"brax {facts['brax']}, mujoco {facts['mujoco']}."
        )
    lines.append("")
    limits = {
        (r["env"], r["num_envs"]): r["env_steps_per_second"]
        for r in records
        if r.get("system") == "limit" and "error" not in r
    }
    for env in sorted({r["env"] for r in records if "env" in r}):
        runs = [r for r in records if r.get("env") == env and r["system"] in ("jaxrl", "brax")]
        ok = [r for r in runs if "error" not in r]
        peers = [r["seconds_to_threshold"] for r in ok if r["system"] == "brax"]
        best_peer = min([p for p in peers if p], default=None)
        threshold = ok[0]["threshold"] if ok else None
        lines += [
            f"### {env} (threshold {_fmt(threshold, ',.0f')})",
            "",
            "| system | envs | seed | to threshold (s) | env steps to it | ratio to best peer "
            "| compile (s) | env-steps/s | of limit | updates/s | final return | peak RSS (MB) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in sorted(
            ok, key=lambda r: (r["seconds_to_threshold"] is None, r["seconds_to_threshold"] or 0)
        ):
            limit = limits.get((env, r["num_envs"]))
            sps = r["env_steps_per_second"]
            hit = r["seconds_to_threshold"]
            lines.append(
                f"| {_system(r)} | {r['num_envs']} | {r['seed']} | {_fmt(hit)} "
                f"| {_fmt(r['steps_to_threshold'], ',d')} "
                f"| {_fmt(hit / best_peer if hit and best_peer else None, '.2f')} "
                f"| {_fmt(r['compile_seconds'])} | {_fmt(sps, ',.0f')} "
                f"| {_fmt(sps / limit if sps and limit else None, '.0%')} "
                f"| {_fmt(r['updates_per_second'], ',.0f')} | {_fmt(r['final_return'])} "
                f"| {_fmt(r['peak_rss_mb'], ',.0f')} |"
            )
        for r in runs:
            if "error" in r:
                lines.append(f"| {r['case']} | failed: {r['error'].strip().splitlines()[-1]} |")
        env_limits = sorted((n, v) for (e, n), v in limits.items() if e == env)
        if env_limits:
            lines.append("")
            lines.append(
                "Simulator limit (random actions, one compiled scan): "
                + ", ".join(f"{v:,.0f} env-steps/s at {n} envs" for n, v in env_limits)
                + "."
            )
        lines.append("")
    target_lines = targets(records)
    if target_lines:
        lines += ["### Targets", "", *target_lines, ""]
    lines += profiles(records)
    lines += speeds(records)
    return lines


def speeds(records: list[dict]) -> list[str]:
    """The speed cases (`benchmarks/speed.py`): each algorithm's update against the matmul peak."""
    done = [r for r in records if r.get("system") in SPEED_SYSTEMS and "error" not in r]
    if not done:
        return []
    lines = [
        "### Updates against the hardware",
        "",
        "Speed cases (`benchmarks/speed.py`): one update compiled alone at the run's sizes on "
        "made-up data; its matrix-product FLOPs counted from the jaxpr (scan bodies times their "
        "length), divided by its median seconds, against the device's measured rate on one "
        "large square product in the same precision; and the env count whose state and "
        "learning data (`jax.eval_shape`, XLA's temporaries not counted) fit 60 GB, an 80 GB "
        "card under JAX's default 75% preallocation. Brax's PPO update (`brax-speed`): its own "
        "loss, gradients and optimiser in the epochs and minibatches of its training step.",
        "",
    ]
    for r in sorted(done, key=lambda r: (r["env"], r["algo"], r["system"])):
        who = "Brax's " if r["system"] == "brax-speed" else ""
        lines.append(f"- {who}{r['algo']} on {r['env']} ({r['num_envs']} envs): {speed_line(r)}.")
    return lines + [""] + against_brax_update(done)


def against_brax_update(records: list[dict]) -> list[str]:
    """Each jaxrl update's time over Brax's (a `brax-speed` record at the same task and env
    count, in the same run), with their kernels per update: whether jaxrl's update, or the rest
    of its loop, is what stands between it and Brax's rate."""
    lines = []
    for brax in (r for r in records if r["system"] == "brax-speed"):
        theirs = brax["speed"]
        setting = (brax["env"], brax["num_envs"], brax["algo"])
        for r in records:
            if (
                r["system"] != "speed"
                or (r["env"], r["num_envs"], r["algo"].split("+")[0]) != setting
            ):
                continue
            ours = r["speed"]
            ratio = ours["seconds_per_update"] / theirs["seconds_per_update"]
            kernels = ""
            if ours.get("kernels_per_update") and theirs.get("kernels_per_update"):
                kernels = (
                    f", {ours['kernels_per_update']:,} kernels against "
                    f"{theirs['kernels_per_update']:,}"
                )
            lines.append(
                f"- jaxrl's {r['algo']} update on {r['env']}: {ratio:.2f}x Brax's time "
                f"({ours['seconds_per_update'] * 1e3:,.1f} against "
                f"{theirs['seconds_per_update'] * 1e3:,.1f} ms{kernels})."
            )
    return lines + [""] if lines else []


PIECES = ("init", "env_step", "evaluate", "update")


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{np.mean(values):,.1f} ± {np.std(values):,.1f}"


def _finals(run: dict) -> list[float]:
    """Final returns of a record: each seed's where it trained several (Case.seeds)."""
    return run.get("final_returns") or [run["final_return"]]


def _eval_envs(record: dict) -> int:
    """The evaluation envs of a jaxrl record: its `--eval-envs` option, else the default 128
    (the same on Brax's side: the suites give both systems one count)."""
    options = list(record.get("options") or [])
    if "--eval-envs" in options[:-1]:
        return int(options[options.index("--eval-envs") + 1])
    return 128


def parity_section(name: str, records: list[dict]) -> list[str]:
    """Learning parity: jaxrl configured exactly as Brax's trainer; per task and system, the
    final greedy evaluation (equal env steps) and wall-clock, each seed and the mean, and
    whether jaxrl's mean is at or above the low end of the 95% bootstrap interval of the
    mean of Brax's seeds (the trainer of the same algorithm, on the same task)."""
    from jaxrl.driver import seed_summary

    lines = [f"## {name}: learning parity at identical settings", ""]
    counts = sorted({_eval_envs(r) for r in records if r.get("system") == "jaxrl"}) or [128]
    lines.append(
        "jaxrl and Brax's own trainer with the same hyperparameters (see `benchmarks/suites.py`),"
        f" the same env steps, both evaluated greedily on {' or '.join(map(str, counts))} envs."
        " Return: the final evaluation,"
        " mean ± std over seeds (each seed in brackets); wall-clock: start of training to the"
        " final evaluation, compilation included. `vs Brax`: jaxrl's mean against the 95%"
        " bootstrap interval of the mean of Brax's seeds."
    )
    shared = {r["concurrent_jobs"] for r in records if r.get("concurrent_jobs", 1) > 1}
    if shared:
        lines += [
            "",
            f"These cases ran {max(shared)} at a time on one machine (`--jobs`): their returns "
            "are what one case alone gives, their times are not comparable.",
        ]
    machines = sorted({d for r in records for d in r.get("machine", {}).get("devices") or []})
    if machines:
        lines += ["", f"Device: {', '.join(machines)}."]
    lines.append("")
    lines += [
        "| task | system | env steps | final return | seeds | vs Brax | wall-clock (s) "
        "| compile (s) | env-steps/s |",
        "| --- | --- | ---: | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    ok = [r for r in records if "error" not in r and r.get("evals")]
    for env in sorted({r["env"] for r in ok}):
        brax = {}  # algo: 95% interval of the mean of Brax's seeds
        for algo in {r["algo"] for r in ok if r["env"] == env and r["system"] == "brax"}:
            finals = [f for r in ok if (r["env"], r["system"], r["algo"]) == (env, "brax", algo)
                      for f in _finals(r)]  # fmt: skip
            summary = seed_summary(finals)
            brax[algo] = (summary["eval_return_ci_low"], summary["eval_return_ci_high"])
        for system in sorted({_system(r) for r in ok if r["env"] == env}):
            runs = sorted(
                (r for r in ok if r["env"] == env and _system(r) == system),
                key=lambda r: r["seed"],
            )
            finals = [f for r in runs for f in _finals(r)]
            rates = [r["env_steps_per_second"] for r in runs if r["env_steps_per_second"]]
            base = runs[0]["algo"].split("+")[0]
            versus = "-"
            if runs[0]["system"] == "jaxrl" and base in brax:
                low, high = brax[base]
                above = np.mean(finals) >= low
                versus = f"{'at or above' if above else 'BELOW'} [{low:.0f}, {high:.0f}]"
            lines.append(
                f"| {env} | {system} | {runs[0]['env_steps']:,} | {_mean_std(finals)} "
                f"| {', '.join(f'{f:.0f}' for f in finals)} | {versus} "
                f"| {np.mean([r['total_seconds'] for r in runs]):,.1f} "
                f"| {np.mean([r['compile_seconds'] for r in runs]):,.1f} "
                f"| {_fmt(np.mean(rates) if rates else None, ',.0f')} |"
            )
    for r in records:
        if "error" in r:
            lines.append(f"| {r['case']} | failed: {r['error'].strip().splitlines()[-1]} |")
    return lines + [""]


SPEED_TARGETS = {"throughput": 2.0, "compile": 0.5}  # jaxrl / Brax on CPU (issue 19)


def rate_without_evaluations(evals: list[dict]) -> float | None:
    """Training env-steps/s with the evaluations' own seconds taken out, where the system times
    them (Brax's Evaluator: `eval_seconds`; None for jaxrl, whose evaluation runs inside its
    chunk program). Over the part of the steady window with no compilation in it: Brax's SAC
    compiled at each of its first three evaluations in the identical suite (9 to 15 s each,
    inside the seconds its Evaluator reports), which the window's own rate leaves out already
    by the compile clock; taking them out twice would inflate Brax's rate."""
    trained = [e for e in evals if e["env_steps"] > 0]
    if not trained:
        return None
    last = trained[-1]
    settled = [
        e
        for e in trained
        if e.get("compile_seconds_before", 0.0) == last.get("compile_seconds_before", 0.0)
    ]
    inside = [e.get("eval_seconds") for e in settled[1:]]
    if not inside or None in inside:
        return None
    seconds = last["wall_seconds"] - settled[0]["wall_seconds"] - sum(inside)
    return (last["env_steps"] - settled[0]["env_steps"]) / seconds if seconds > 0 else None


def identical_section(name: str, records: list[dict]) -> list[str]:
    """Speed at identical settings: jaxrl configured exactly as Brax's trainer, the same fixed
    env steps; per task and algorithm each system's mean over seeds and jaxrl / Brax ratios."""
    lines = [f"## {name}: speed at identical settings (the implementation, not the presets)", ""]
    lines.append(
        "jaxrl configured exactly as Brax's own trainer (networks, envs, batch, updates per step,"
        " evaluation envs and cadence, normalisation: `benchmarks/suites.py`, `identical`), the"
        " same fixed env steps, each seed its own process, all in one run. Unlike the tuned"
        " presets' tables, these rows compare implementations. Training env-steps/s: the steady"
        " rate between the first and the last evaluation after training began (evaluations"
        " included, the same number for both; compilation in between left out); compile:"
        " seconds JAX spent tracing, lowering and compiling every program of the process"
        " (its monitoring events, the same clock for both systems); wall: start of training"
        " to the fixed step count, compile included. Mean ± std over seeds; ratios jaxrl /"
        " Brax of the means. Targets on CPU:"
        f" throughput >= {SPEED_TARGETS['throughput']:g}x Brax's, compile <="
        f" {SPEED_TARGETS['compile']:g}x. jaxrl's evaluation stops once every episode has"
        " ended, Brax's runs the whole episode length: on Brax's envs, whose episodes end"
        " early, that is most of the throughput ratio (benchmarks/README.md, where the time"
        " goes). Against Brax's training alone: jaxrl's rate (its evaluations included) over"
        " Brax's with the seconds its Evaluator reports taken out, over the window's evaluation"
        " intervals with no compilation in them (`report.rate_without_evaluations`; records from"
        " before the peer kept them: -)."
    )
    lines.append("")
    lines += [
        "| algo | task | system | seeds | env steps | train env-steps/s | compile (s) "
        "| wall (s) | peak RSS (MB) | final return |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    ok = [r for r in records if "error" not in r and r.get("evals")]
    ratio_lines = [
        "| algo | task | throughput (jaxrl / Brax) | against Brax's training alone | compile "
        "| wall | targets |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]

    def mean(runs, key):
        values = [r[key] for r in runs if r.get(key) is not None]
        return float(np.mean(values)) if values else None

    for algo in sorted({r["algo"] for r in ok}):
        for env in sorted({r["env"] for r in ok if r["algo"] == algo}):
            means, alone = {}, {}
            for system in ("jaxrl", "brax"):
                runs = [r for r in ok if (r["algo"], r["env"], r["system"]) == (algo, env, system)]
                if not runs:
                    continue
                keys = ("env_steps_per_second", "compile_total_seconds", "total_seconds")
                means[system] = {k: mean(runs, k) for k in keys}
                alone[system] = _mean_or_none([rate_without_evaluations(r["evals"]) for r in runs])
                lines.append(
                    f"| {algo} | {env} | {system} | {len(runs)} | {runs[0]['env_steps']:,} "
                    f"| {_mean_std([r['env_steps_per_second'] for r in runs])} "
                    f"| {_mean_std([r.get('compile_total_seconds', 0.0) for r in runs])} "
                    f"| {_mean_std([r['total_seconds'] for r in runs])} "
                    f"| {_fmt(mean(runs, 'peak_rss_mb'), ',.0f')} "
                    f"| {_mean_std([r['final_return'] for r in runs])} |"
                )
            if len(means) < 2:
                continue
            ratios = {
                k: means["jaxrl"][k] / means["brax"][k]
                for k in means["jaxrl"]
                if means["jaxrl"][k] and means["brax"][k]
            }
            throughput = ratios.get("env_steps_per_second")
            compile_ = ratios.get("compile_total_seconds")
            ours = means["jaxrl"]["env_steps_per_second"]
            against_training = ours / alone["brax"] if ours and alone["brax"] else None
            verdict = []
            if throughput is not None:
                met = throughput >= SPEED_TARGETS["throughput"]
                verdict.append(f"throughput {'met' if met else 'missed'}")
            if compile_ is not None:
                met = compile_ <= SPEED_TARGETS["compile"]
                verdict.append(f"compile {'met' if met else 'missed'}")
            ratio_lines.append(
                f"| {algo} | {env} | {_fmt(throughput, '.2f')}x "
                f"| {_fmt(against_training, '.2f', '-')}{'x' if against_training else ''} "
                f"| {_fmt(compile_, '.2f')}x "
                f"| {_fmt(ratios.get('total_seconds'), '.2f')}x | {', '.join(verdict)} |"
            )
    lines += ["", "Ratios:", "", *ratio_lines]
    for r in records:
        if "error" in r:
            lines.append(f"\n- {r['case']} failed: {r['error'].strip().splitlines()[-1]}")
    return lines + [""]


def profiles(records: list[dict]) -> list[str]:
    """The profile cases: compile and run seconds of each piece of the chunk program."""
    done = [r for r in records if r.get("system") == "profile" and "error" not in r]
    if not done:
        return []
    lines = [
        "### Where the time goes",
        "",
        "Profile cases (`benchmarks/profile.py`), cache off. Compile: XLA seconds of each piece "
        "compiled on its own (init: env reset, agent and buffer init; env step: the training "
        "envs' step with auto-reset; evaluate: reset and episodes of the evaluation envs; "
        "update: one chunk's gradient updates; chunk: the whole program, which holds all but "
        "init, and its Python trace). Run: seconds per chunk and their split: learn (the chunk "
        "minus the same chunk with updates that do nothing), simulate (the chunk's env steps "
        "with random actions, apart), evaluate (apart, trained agent) and other (the rest: "
        "acting, replay, statistics; slightly negative where the pieces apart ran slower).",
        "",
        "| system | env | envs | compile: init | env step | evaluate | update | chunk (+trace) "
        "| run/chunk: simulate | learn | evaluate | other | chunk |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |",
    ]
    for r in sorted(done, key=lambda r: (r["env"], r["algo"])):
        c, t = r["profile"]["compile"], r["profile"]["run"]
        chunk = t["chunk"]

        def share(k, chunk=chunk, t=t):
            return f"{t[k]:.2f} ({t[k] / chunk:.0%})"

        lines.append(
            f"| jaxrl/{r['algo']} | {r['env']} | {r['num_envs']} "
            + "".join(f"| {c[k]['compile_seconds']:.1f} " for k in PIECES)
            + f"| {c['chunk']['compile_seconds']:.1f} (+{c['chunk']['trace_seconds']:.1f}) "
            + "".join(f"| {share(k)} " for k in ("simulate", "learn", "evaluate", "other"))
            + f"| {chunk:.2f} |"
        )
    return lines + [""]


def plot(name: str, records: list[dict], folder: pathlib.Path) -> list[pathlib.Path]:
    """Eval return against wall-clock and against env steps, one PNG per env: mean over seeds
    with the min-max spread where the seeds share evaluation points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    runs = [r for r in records if r.get("evals") and "error" not in r]
    for env in sorted({r["env"] for r in runs}):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        groups = defaultdict(list)
        for r in runs:
            if r["env"] == env:
                groups[f"{_system(r)} ({r['num_envs']} envs)"].append(r)
        for label, group in sorted(groups.items()):
            for ax, key in zip(axes, ("wall_seconds", "env_steps"), strict=True):
                xs = [np.array([e[key] for e in r["evals"]], float) for r in group]
                ys = [np.array([e["eval_return"] for e in r["evals"]], float) for r in group]
                n = min(len(x) for x in xs)
                x = np.mean([x[:n] for x in xs], axis=0)
                y = np.array([y[:n] for y in ys])
                (line,) = ax.plot(x, y.mean(0), label=label)
                if len(group) > 1:
                    ax.fill_between(x, y.min(0), y.max(0), alpha=0.2, color=line.get_color())
        threshold = groups and next(iter(groups.values()))[0]["threshold"]
        for ax, xlabel in zip(
            axes, ("wall-clock seconds (compile included)", "env steps"), strict=True
        ):
            ax.axhline(threshold, color="grey", linestyle=":", linewidth=1)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("eval return")
            ax.grid(alpha=0.3)
        axes[1].set_xscale("symlog", linthresh=1000)  # runs differ by 100x in env steps
        axes[1].set_xlim(left=0)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{env} ({name})")
        fig.tight_layout()
        path = folder / f"{name}-{env.replace('/', '-')}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def write(results: pathlib.Path, summary: pathlib.Path | None = None) -> pathlib.Path:
    """The markdown summary of every records file in the folder `results`, with its plots
    written there too; the summary goes to `summary` (default: RESULTS.md in that folder; the
    repository keeps it beside the folder, benchmarks/RESULTS.md over benchmarks/results/)."""
    summary = summary or results / "RESULTS.md"
    where = pathlib.Path(os.path.relpath(results, summary.parent)).as_posix()
    records_in = "this folder" if where == "." else f"`{where}/`"
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `jaxrl bench` from the JSON records in {records_in}; every case ran in its",
        "own process. Time to threshold is wall-clock from the start of training, compilation",
        "included; compile is the time to the first finished chunk (Brax: its first evaluation",
        "after training began); env-steps/s is the steady rate after it, evaluations included",
        "and compilation between the points left out (Brax compiles some programs late);",
        "`of limit` divides it by the simulator's random-action rate at the same env count.",
        "",
    ]
    # Speed at identical settings first: the implementation's comparison, apart from the
    # tuned presets' tables.
    paths = sorted(results.glob("*.jsonl"), key=lambda p: (not p.stem.startswith("identical"), p))
    for path in paths:
        records = load(path)
        if not records:
            continue
        if path.stem.startswith("identical"):
            writer = identical_section
        elif path.stem.startswith("dmc_algos"):
            from jaxrl.benchmarks import dmc_algos

            writer = dmc_algos.section
        else:
            writer = parity_section if "parity" in path.stem else section
        lines += writer(path.stem, records)
        if writer is identical_section:  # short fixed budgets: a speed table, not curves
            continue
        for png in plot(path.stem, records, results):
            link = pathlib.Path(os.path.relpath(png, summary.parent)).as_posix()
            lines += [f"![{png.stem}]({link})", ""]
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text("\n".join(lines))
    return summary
