"""Formatting shared by the benchmark reports (`report`, `parity_report`): numbers, means
and a record's system and final returns, as RESULTS.md's tables print them."""

from __future__ import annotations

import numpy as np


def fmt(value, spec=",.1f", none="-"):
    """`value` formatted by `spec`; `none` where it is missing."""
    return none if value is None else format(value, spec)


def mean_or_none(values: list) -> float | None:
    """The mean, or None where any value is missing (records from before a field existed)."""
    return None if not values or None in values else float(np.mean(values))


def system_of(record: dict) -> str:
    """A record's system and algorithm, "jaxrl/sac": a row's name in the tables."""
    return f"{record['system']}/{record['algo']}"


def mean_std(values: list[float]) -> str:
    """The values as mean ± std; "-" where there are none."""
    if not values:
        return "-"
    return f"{np.mean(values):,.1f} ± {np.std(values):,.1f}"


def final_returns(run: dict) -> list[float]:
    """Final returns of a record: each seed's where it trained several (Case.seeds)."""
    return run.get("final_returns") or [run["final_return"]]


def stopped(records: list[dict]) -> list[dict]:
    """The failed records of runs that had printed evaluations (`report.load(failed=True)`): runs a
    timeout stopped, shown for what they reached."""
    return [r for r in records if "error" in r and r.get("partial_evals") and r.get("env")]


def failures(records: list[dict]) -> list[str]:
    """A line per failed case of `records` (those with an "error"), naming its last line."""
    return [
        f"\n- {r['case']} failed: {r['error'].strip().splitlines()[-1]}"
        for r in records
        if "error" in r
    ]
