"""RESULTS.md's sections of learning parity (`parity_section`: jaxrl configured as Brax's
trainer, final returns against Brax's seed interval) and of speed at identical settings
(`identical_section`: throughput and compile, jaxrl over Brax)."""

from __future__ import annotations

import numpy as np

from jaxrl.benchmarks.tables import failures, final_returns, fmt, mean_or_none, mean_std, system_of


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
    from jaxrl.run.rows import seed_summary

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
                      for f in final_returns(r)]  # fmt: skip
            summary = seed_summary(finals)
            brax[algo] = (summary["eval_return_ci_low"], summary["eval_return_ci_high"])
        for system in sorted({system_of(r) for r in ok if r["env"] == env}):
            runs = sorted(
                (r for r in ok if r["env"] == env and system_of(r) == system),
                key=lambda r: r["seed"],
            )
            finals = [f for r in runs for f in final_returns(r)]
            rates = [r["env_steps_per_second"] for r in runs if r["env_steps_per_second"]]
            base = runs[0]["algo"].split("+")[0]
            versus = "-"
            if runs[0]["system"] == "jaxrl" and base in brax:
                low, high = brax[base]
                above = np.mean(finals) >= low
                versus = f"{'at or above' if above else 'BELOW'} [{low:.0f}, {high:.0f}]"
            lines.append(
                f"| {env} | {system} | {runs[0]['env_steps']:,} | {mean_std(finals)} "
                f"| {', '.join(f'{f:.0f}' for f in finals)} | {versus} "
                f"| {np.mean([r['total_seconds'] for r in runs]):,.1f} "
                f"| {np.mean([r['compile_seconds'] for r in runs]):,.1f} "
                f"| {fmt(np.mean(rates) if rates else None, ',.0f')} |"
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
        " early, that is most of the throughput ratio (where the time goes:"
        " benchmarks/notes/2026-11-25-identical-cpu.md). Against Brax's training alone:"
        " jaxrl's rate (its evaluations included) over Brax's with the seconds its Evaluator"
        " reports taken out, over the window's evaluation intervals with no compilation in"
        " them (`parity_report.rate_without_evaluations`; records from before the peer kept"
        " them: -)."
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
                alone[system] = mean_or_none([rate_without_evaluations(r["evals"]) for r in runs])
                lines.append(
                    f"| {algo} | {env} | {system} | {len(runs)} | {runs[0]['env_steps']:,} "
                    f"| {mean_std([r['env_steps_per_second'] for r in runs])} "
                    f"| {mean_std([r.get('compile_total_seconds', 0.0) for r in runs])} "
                    f"| {mean_std([r['total_seconds'] for r in runs])} "
                    f"| {fmt(mean(runs, 'peak_rss_mb'), ',.0f')} "
                    f"| {mean_std([r['final_return'] for r in runs])} |"
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
                f"| {algo} | {env} | {fmt(throughput, '.2f')}x "
                f"| {fmt(against_training, '.2f', '-')}{'x' if against_training else ''} "
                f"| {fmt(compile_, '.2f')}x "
                f"| {fmt(ratios.get('total_seconds'), '.2f')}x | {', '.join(verdict)} |"
            )
    lines += ["", "Ratios:", "", *ratio_lines]
    lines += failures(records)
    return lines + [""]
