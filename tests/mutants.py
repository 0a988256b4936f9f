"""Mutation self-check: does the fast test suite catch realistic bugs?

    python -m tests.mutants                 # every mutant; writes tests/MUTANTS.md
    python -m tests.mutants --only sac,loop # mutants whose name contains a filter
    python -m tests.mutants --list          # names and descriptions only
    python -m tests.mutants --report        # rewrites tests/MUTANTS.md, running nothing

Each mutant is one small, plausible slip of the kind a refactor makes (the online parameters
where the target ones belong, `done` where `terminated` belongs, a statistic computed slightly
wrong...). For each, a scratch copy of the working tree gets that one edit, and the fast tests
(`-m "not slow"`) run there: first the tests that should catch it, then, if those pass, the
whole fast suite. A mutant is caught when some test fails; a mutant that breaks collection or
imports instead (exit code other than 1) is reported as invalid, since it proves nothing.

tests/MUTANTS.md lists every mutant with the result of the last run that checked it (a run
with --only updates those it checks and keeps the others'); a result holds for the mutant's
definition as it was (file, text, edit: its `id`), so a mutant edited since, or never run, is
"not run". tests/test_structure.py checks that the file is what `--report` writes.

Our own script rather than mutmut/cosmic-ray: those generate operator-level mutants by the
thousand (most equivalent or trivially caught, hours on 2 cores with JAX compiles); the slips
that matter here are a few dozen targeted, semantic ones, and each must be caught.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import NamedTuple

ROOT = pathlib.Path(__file__).resolve().parents[1]
REPORT = ROOT / "tests" / "MUTANTS.md"


class Mutant(NamedTuple):
    name: str
    path: str  # file in the repository
    old: str  # text that must occur exactly once in it
    new: str
    description: str
    tests: tuple[str, ...]  # where it should be caught; run first


def m(name, path, old, new, description, *tests):
    return Mutant(name, path, old, new, description, tests)


SAC_REF = "tests/agents/test_sac_update_reference.py"
HYPER = "tests/agents/test_hyperparameters.py"
PRECISION = "tests/agents/test_matmul_precision.py"
TD3_REF = "tests/agents/test_td3_update_reference.py"
CROSSQ_REF = "tests/agents/test_crossq_update_reference.py"
DSAC_REF = "tests/agents/test_dsac_t_update_reference.py"
FAST_SAC_REF = "tests/agents/test_fast_sac_update_reference.py"
FAST_SAC = "tests/agents/test_fast_sac.py"
PPO_REF = "tests/agents/test_ppo_update_reference.py"
BRAX_PPO = "tests/agents/test_ppo_brax_parity.py"
SAC_BRAX = "tests/agents/test_sac_brax_parity.py"
SAC_LOOP_BRAX = "tests/loops/test_sac_loop_brax_parity.py"
WIRING = "tests/loops/test_wiring.py"
SCALE = "tests/experiments/test_scale.py"
STORE = "tests/run/test_program_store.py"
RUNS = "tests/run/test_runs.py"
OWN_ENV = "tests/envs/test_own_env.py"
RANDOMIZATION = "tests/envs/test_randomization.py"
SPLIT = "tests/loops/test_split.py"
PROPERTIES = "tests/test_properties.py"
FAULTS = "tests/run/test_faults.py"
STARTUP = "tests/test_startup.py"
NARROW_BAR = RUNS + "::test_progress_bar_keeps_its_graphic_and_every_column_in_80_columns"

# offpolicy._learned's call of the iteration's updates, each under its conditions
_LEARN_CALL = (
    "    agent_state, update_metrics = parts.learn(\n"
    "        *args, ready=ready, training=training, dataset=dataset\n"
    "    )\n"
)

# QEnsemble.__call__ from its vmap's in_axes to its return (the mutant below reverts both ends)
_Q_ENSEMBLE_CALL = (
    "            in_axes=(0, 0, None),\n"
    "            out_axes=0,\n"
    "            axis_size=self.num_critics,\n"
    "        )\n"
    "        critics = ensemble(\n"
    "            self.hidden,\n"
    "            self.layer_norm,\n"
    "            self.dropout,\n"
    "            self.outputs,\n"
    "            self.residual,\n"
    "            self.norm_after_relu,\n"
    "            self.matmul_precision,\n"
    "            self.kernel_init,\n"
    "            self.activation,\n"
    '            name="critics",\n'
    "        )\n"
    "        each = functools.partial(_along_ensemble, size=self.num_critics)\n"
    "        return critics(each(obs), action if stacked else each(action), train)\n"
)

MUTANTS = [
    # --- Agents. ---------------------------------------------------------------------------
    m(
        "sac-target-from-online-critic",
        "jaxrl/agents/sac_family.py",
        "state.target_critic_params, next_critic_obs, next_action",
        "state.critic.params, next_critic_obs, next_action",
        "SAC bootstraps from the online critics instead of the target critics",
        SAC_REF,
    ),
    m(
        "sac-next-action-from-obs",
        "jaxrl/agents/sac_family.py",
        "nets.actor(state.actor.params, batch.next_obs, state.action_size)",
        "nets.actor(state.actor.params, batch.obs, state.action_size)",
        "SAC samples the bootstrap action at s instead of s'",
        SAC_REF,
    ),
    m(
        "sac-actor-against-old-critic",
        "jaxrl/agents/sac.py",
        "critic.params if config.actor_uses_updated_critic else state.critic.params",
        "state.critic.params",
        "SAC's actor is trained against the critics before this update",
        SAC_REF,
    ),
    m(
        "sac-actor-order-option-ignored",
        "jaxrl/agents/sac.py",
        "critic.params if config.actor_uses_updated_critic else state.critic.params",
        "critic.params",
        "actor_uses_updated_critic=False (Brax's order) still reads the updated critics",
        SAC_REF,
    ),
    m(
        "sac-entropy-sign-in-target",
        "jaxrl/agents/sac_family.py",
        "bonus = -alpha * next_log_prob",
        "bonus = alpha * next_log_prob",
        "the soft target adds the log-probability instead of subtracting it",
        SAC_REF,
    ),
    m(
        "crossq-entropy-sign-in-target",
        "jaxrl/agents/crossq.py",
        "bonus = -alpha * next_log_prob",
        "bonus = alpha * next_log_prob",
        "CrossQ's soft bonus in the head's target adds the log-probability instead of "
        "subtracting it",
        CROSSQ_REF,
    ),
    m(
        "crossq-actor-reads-raw-critic-outputs",
        "jaxrl/agents/crossq.py",
        "q_pi = head.values(out, state.hp)",
        "q_pi = out",
        "CrossQ's actor climbs the critics' raw outputs (C51 logits) instead of the head's values",
        CROSSQ_REF,
    ),
    m(
        "crossq-joint-pass-split-on-the-last-axis",
        "jaxrl/agents/crossq.py",
        "online, next_out = jnp.split(out, 2, axis=1)",
        "online, next_out = jnp.split(out, 2, axis=-1)",
        "the joint pass is split back on the last axis (a C51 critic's atoms), not the batch",
        CROSSQ_REF,
    ),
    m(
        "sac-target-entropy-sign",
        "jaxrl/agents/sac.py",
        'target_entropy = -state.hp["target_entropy_scale"] * state.action_size',
        'target_entropy = state.hp["target_entropy_scale"] * state.action_size',
        "the target entropy is +|A| instead of -|A|",
        SAC_REF,
    ),
    m(
        "redq-no-target-subset",
        "jaxrl/agents/sac_family.py",
        "next_out = target_subset(keys.target_subset, next_out, config.num_target_critics)",
        "next_out = next_out",
        "REDQ takes the min over all critics instead of a random subset",
        SAC_REF,
    ),
    m(
        "sac-same-key-for-both-samples",
        "jaxrl/agents/sac_family.py",
        "distributions.tanh_gaussian_sample(keys.policy_action, mean, log_std)",
        "distributions.tanh_gaussian_sample(keys.next_action, mean, log_std)",
        "the actor's sample reuses the bootstrap action's noise",
        SAC_REF,
    ),
    m(
        "bootstrap-ignores-termination",
        "jaxrl/heads.py",
        "return reward + discount * (1.0 - terminated) * next_value",
        "return reward + discount * next_value",
        "value targets bootstrap through terminal states",
        SAC_REF,
        TD3_REF,
    ),
    m(
        "td3-unclipped-smoothing-noise",
        "jaxrl/agents/td3.py",
        "eps = jnp.clip(noise * jax.random.normal(key, next_action.shape), -noise_clip, "
        "noise_clip)",
        "eps = noise * jax.random.normal(key, next_action.shape)",
        "TD3's target policy smoothing noise is not clipped",
        TD3_REF,
    ),
    m(
        "td3-target-actor-polyak-from-old-actor",
        "jaxrl/agents/td3.py",
        'polyak(state.target_actor_params, actor.params, hp["tau"])',
        'polyak(state.target_actor_params, state.actor.params, hp["tau"])',
        "the target actor moves towards the actor before its update",
        TD3_REF,
    ),
    m(
        "pql-bootstraps-from-target-actor",
        "jaxrl/agents/td3.py",
        "target_policy = state.target_actor_params if config.target_actor else state.actor.params",
        "target_policy = state.target_actor_params",
        "PQL (no target actor) bootstraps from a target actor anyway",
        TD3_REF,
    ),
    m(
        "c51-picks-higher-critic",
        "jaxrl/heads.py",
        "pick = jnp.argmin(next_values, axis=0)",
        "pick = jnp.argmax(next_values, axis=0)",
        "FastTD3's clipped double Q picks the critic with the higher expected value",
        TD3_REF,
    ),
    m(
        "fast-td3-no-weight-decay",
        "jaxrl/agents/td3.py",
        "adam(config.critic_lr, config.weight_decay)",
        "adam(config.critic_lr)",
        "FastTD3's critic AdamW loses its weight decay",
        TD3_REF,
    ),
    m(
        "crossq-actor-reads-stale-critic-stats",
        "jaxrl/agents/crossq.py",
        'variables = {"params": critic_params, "batch_stats": critic_stats}',
        'variables = {"params": critic_params, "batch_stats": state.critic_stats}',
        "CrossQ's actor evaluates the critic with the statistics before the joint pass",
        CROSSQ_REF,
    ),
    m(
        "crossq-split-swapped",
        "jaxrl/agents/crossq.py",
        "online, next_out = jnp.split(out, 2, axis=1)",
        "next_out, online = jnp.split(out, 2, axis=1)",
        "CrossQ's joint pass is split back in the wrong order",
        CROSSQ_REF,
    ),
    m(
        "dsac-t-picks-higher-mean",
        "jaxrl/heads.py",
        "pick = jnp.argmin(next_mean, axis=0)[None]",
        "pick = jnp.argmax(next_mean, axis=0)[None]",
        "DSAC-T's twin targets come from the critic with the higher mean",
        DSAC_REF,
    ),
    m(
        "dsac-t-unclipped-return-noise",
        "jaxrl/heads.py",
        "noise = jnp.clip(jax.random.normal(key, reward.shape), -3.0, 3.0)",
        "noise = jax.random.normal(key, reward.shape)",
        "DSAC-T's sampled return target is drawn with unclipped noise",
        DSAC_REF,
    ),
    m(
        "fast-sac-clipped-double-q",
        "jaxrl/agents/configs/sac.py",
        "return heads.Categorical(self.num_atoms, clipped_double_q=False)",
        "return heads.Categorical(self.num_atoms)",
        "FastSAC's critics all learn the lower target critic's projection (FastTD3's head)",
        FAST_SAC_REF,
    ),
    m(
        "fast-sac-actor-reads-old-temperature",
        "jaxrl/agents/fast_sac.py",
        "after = state.replace(log_alpha=log_alpha)",
        "after = state",
        "FastSAC's actor weighs its entropy by the temperature before this update's step",
        FAST_SAC_REF,
    ),
    m(
        "fast-sac-target-entropy-sign",
        "jaxrl/agents/fast_sac.py",
        'target_entropy = -state.hp["target_entropy_scale"] * state.action_size',
        'target_entropy = state.hp["target_entropy_scale"] * state.action_size',
        "FastSAC's temperature tracks +scale |A| instead of -scale |A|",
        FAST_SAC_REF,
    ),
    m(
        "fast-sac-policy-head-drawn",
        "jaxrl/agents/sac_family.py",
        "        zero_head=config.zero_policy_head,\n",
        "",
        "FastSAC's policy head is drawn at random instead of starting at zero",
        FAST_SAC,
    ),
    m(
        "fast-sac-critics-relu",
        "jaxrl/agents/sac_family.py",
        "        kernel_init=config.kernel_init,\n        activation=config.activation,\n",
        "        kernel_init=config.kernel_init,\n",
        "FastSAC's critics keep ReLU when SiLU (activation swish) is asked for",
        FAST_SAC_REF,
    ),
    m(
        "ppo-value-net-ignores-activation",
        "jaxrl/agents/ppo.py",
        "        out=1,\n        activation=config.activation,\n        matmul_precision",
        "        out=1,\n        matmul_precision",
        "PPO's value network keeps ReLU when swish (Brax's networks) is asked for",
        PPO_REF,
    ),
    m(
        "rollout-renormalization-ignored",
        "jaxrl/loops/onpolicy.py",
        "seen = stats if config.renormalize_rollout else state.obs_stats",
        "seen = state.obs_stats",
        "renormalize_rollout (Brax's order) still trains on the statistics it acted with",
        WIRING,
    ),
    m(
        "ppo-gae-horizon-ignored",
        "jaxrl/agents/ppo.py",
        "cut = jnp.maximum(done, boundary.reshape((-1,) + (1,) * (done.ndim - 1)))",
        "cut = done",
        "the advantage recursion runs across unroll boundaries when a horizon is set",
        PPO_REF,
    ),
    m(
        "ppo-gae-loop-kept-over-an-unroll",
        "jaxrl/agents/ppo.py",
        "unroll=steps if steps <= GAE_UNROLL_MAX else 1,",
        "unroll=1,",
        "the in-loss advantage keeps its while loop, stepped trip by trip on a GPU",
        "tests/agents/test_ppo.py",
    ),
    m(
        "ppo-unrolls-permuted-with-the-gradient-key",
        "jaxrl/agents/ppo.py",
        "order = jax.random.permutation(perm_key, unrolls)",
        "order = jax.random.permutation(grad_key, unrolls)",
        "the shared permutation of the unrolls drawn from the wrong one of Brax's epoch keys",
        BRAX_PPO,
    ),
    m(
        "ppo-minibatches-left-unroll-first",
        "jaxrl/agents/ppo.py",
        "        shuffled = jax.vmap(time_major)(shuffled)",
        "",
        "the in-loss minibatches reach the time-first loss as [B, H]: its advantages run over "
        "the unrolls, not along them",
        "tests/agents/test_ppo.py",
        BRAX_PPO,
    ),
    m(
        "ppo-minibatches-swapped-twice",
        "jaxrl/agents/ppo.py",
        "            learner.loss_fns.unroll_time_major, params, opt_state, batch, loss_key, hp,",
        "            learner.loss_fns.unroll, params, opt_state, batch, loss_key, hp,",
        "the update lays its minibatches out time first and the loss swaps them back",
        "tests/agents/test_ppo.py",
        BRAX_PPO,
    ),
    m(
        "kernel-counts-always-costliest",
        "benchmarks/speed.py",
        '    pick = max if branch == "costliest" else min',
        "    pick = max",
        "kernel_counts ignores branch='cheapest': an auto-reset step is counted with its reset",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "kernel-counts-copies-miscounted",
        "benchmarks/speed.py",
        '                copies += op == "copy"',
        '                copies += op == "copy-start"',
        "kernel_counts counts no copies (XLA:GPU's copy is `copy`, not `copy-start`)",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "unroll-updates-ignored",
        "jaxrl/loops/offpolicy.py",
        "            one_update, agent_state, (batches, keys), unroll=config.unroll_updates",
        "            one_update, agent_state, (batches, keys), unroll=1",
        "--unroll-updates is accepted and ignored: the updates stay in their loop",
        "tests/loops/test_offpolicy.py",
    ),
    m(
        "q-ensemble-inputs-shared",
        "jaxrl/networks.py",
        _Q_ENSEMBLE_CALL,
        _Q_ENSEMBLE_CALL.replace("in_axes=(0, 0, None)", "in_axes=None").replace(
            "critics(each(obs), each(action), train)", "critics(obs, action, train)"
        ),
        "the critics share their inputs (in_axes=None, no broadcast), as before: the first "
        "layer's product is unbatched on its input and XLA transposes its activations",
        "tests/agents/test_redq_droq.py",
    ),
    m(
        "q-ensemble-inputs-not-broadcast",
        "jaxrl/networks.py",
        "        return critics(each(obs), action if stacked else each(action), train)",
        "        return critics(obs, action, train)",
        "the inputs are not broadcast along the ensemble axis (each critic would see a slice)",
        "tests/agents/test_redq_droq.py",
    ),
    m(
        "ppo-vtrace-with-lambda",
        "jaxrl/agents/ppo.py",
        "advantage = delta + discount * (1.0 - cut) * following",
        "advantage = delta + discount * config_lambda * (1.0 - cut) * following".replace(
            "config_lambda", "lam"
        ),
        "Brax's advantage weighs the next lambda-return by gamma lambda (it is plain GAE)",
        PPO_REF,
    ),
    m(
        "ppo-gae-stops-at-terminations-only",
        "jaxrl/agents/ppo.py",
        "    cut = done\n",
        "    cut = terminated\n",
        "GAE lets advantages flow across a truncation into the next episode",
        PPO_REF,
        WIRING,
    ),
    m(
        "ppo-delta-cut-at-truncation",
        "jaxrl/agents/ppo.py",
        "delta = reward + discount * (1.0 - terminated) * next_value - value",
        "delta = reward + discount * (1.0 - done) * next_value - value",
        "PPO stops bootstrapping at time-limit truncations",
        PPO_REF,
        WIRING,
    ),
    m(
        "ppo-next-value-of-obs",
        "jaxrl/agents/ppo.py",
        "rollout_values(state.params, next_value_obs)",
        "rollout_values(state.params, value_obs)",
        "PPO's bootstrap value is V(s) instead of V(s')",
        PPO_REF,
    ),
    m(
        "ppo-ratio-inverted",
        "jaxrl/agents/ppo.py",
        'log_ratio = log_prob - batch["log_prob"]',
        'log_ratio = batch["log_prob"] - log_prob',
        "PPO's probability ratio is old over new",
        PPO_REF,
    ),
    m(
        "ppo-unnormalised-advantages",
        "jaxrl/agents/ppo.py",
        "advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)",
        "advantage = advantage - advantage.mean()",
        "PPO centres advantages but forgets to scale them",
        PPO_REF,
    ),
    m(
        "tanh-correction-sign",
        "jaxrl/distributions.py",
        "return gaussian_log_prob(u, mean, log_std) - jnp.sum(_log_abs_det_tanh(u), axis=-1)",
        "return gaussian_log_prob(u, mean, log_std) + jnp.sum(_log_abs_det_tanh(u), axis=-1)",
        "the tanh change of variables is added instead of subtracted",
        SAC_REF,
    ),
    # --- Off-policy loop. ------------------------------------------------------------------
    m(
        "loop-stores-done-as-terminated",
        "jaxrl/loops/offpolicy.py",
        'terminated = env_state.done * (1.0 - info["truncation"])',
        "terminated = env_state.done",
        "the replay loop stores truncations as terminations",
        WIRING,
    ),
    m(
        "loop-next-obs-after-reset",
        "jaxrl/loops/offpolicy.py",
        'next_obs = view(info["final_obs"])\n        transition',
        "next_obs = view(env_state.obs)\n        transition",
        "stored next_obs is the next episode's first observation where an episode ended",
        WIRING,
    ),
    m(
        "loop-raw-next-obs-in-batch",
        "jaxrl/loops/offpolicy.py",
        "next_obs=observe(stats, as_float32(batches.next_obs)),",
        "next_obs=as_float32(batches.next_obs),",
        "the update reads a normalised obs beside an unnormalised next_obs",
        WIRING,
    ),
    m(
        "loop-stats-from-reset-obs",
        "jaxrl/loops/offpolicy.py",
        "seen = obs if config.renormalize_rollout else next_obs",
        "seen = obs",
        "observation statistics absorb post-reset observations instead of reached ones",
        WIRING,
    ),
    m(
        "onpolicy-stats-seeded-with-resets",
        "jaxrl/loops/onpolicy.py",
        "        stats = normalization.init(view.sizes)\n",
        "        stats = normalization.init(view.sizes)\n"
        "        if config.normalize_observations:\n"
        "            stats = normalization.update(stats, view(env_state.obs))\n",
        "PPO's observation statistics start from the narrow reset states",
        WIRING,
    ),
    m(
        "loop-constant-discount",
        "jaxrl/loops/offpolicy.py",
        "jnp.full_like(rows.reward, gamma)",
        "jnp.full_like(rows.reward, 0.99)",
        "1-step batches carry a hard-coded discount instead of config.gamma",
        WIRING,
    ),
    m(
        "loop-ignores-noise-scales",
        "jaxrl/loops/offpolicy.py",
        "agent.act(acting, actor_obs, act_key, noise_scale)",
        "agent.act(acting, actor_obs, act_key, 1.0)",
        "per-env exploration noise scales never reach act",
        WIRING,
    ),
    m(
        "loop-redraws-every-noise-scale",
        "jaxrl/loops/offpolicy.py",
        "noise_scale = jnp.where(env_state.done > 0, fresh, noise_scale)",
        "noise_scale = fresh",
        "uniform noise scales are redrawn every step instead of at each env's reset",
        WIRING,
    ),
    m(
        "eval-not-greedy",
        "jaxrl/loops/base.py",
        "            step_key, noise = act_key, 0.0",
        "            step_key, noise = act_key, 1.0",
        "evaluation acts with exploration noise",
        WIRING,
    ),
    m(
        "eval-unnormalised",
        "jaxrl/loops/base.py",
        "action = agent.act(agent_state, observe(actor_part(stats), obs), step_key, noise)",
        "action = agent.act(agent_state, obs, step_key, noise)",
        "evaluation feeds raw observations to a policy trained on normalised ones",
        WIRING,
    ),
    # --- PPO's Brax options (docs/PARITY.md). ---------------------------------------------
    m(
        "ppo-mask-keeps-truncated-delta",
        "jaxrl/agents/ppo.py",
        "        delta = delta * kept\n",
        "        delta = delta\n",
        "truncation='mask' leaves a truncated step's TD error in its advantage and target",
        BRAX_PPO,
    ),
    m(
        "ppo-in-loss-bootstrap-from-own-row",
        "jaxrl/agents/ppo.py",
        "next_values = jnp.concatenate([values[1:], last[None]])",
        "next_values = jnp.concatenate([values[1:], values[-1:]])",
        "an unroll's last step bootstraps from its own value, not its next observation's",
        BRAX_PPO,
    ),
    m(
        "ppo-in-loss-unrolls-env-major",
        "jaxrl/agents/ppo.py",
        "return jnp.swapaxes(x, 1, 2).reshape((-1, horizon) + x.shape[3:])",
        "return jnp.moveaxis(x, 2, 0).reshape((-1, horizon) + x.shape[3:])",
        "the rollout's unrolls in env-major order, not Brax's unroll-major one",
        BRAX_PPO,
    ),
    m(
        "ppo-in-loss-advantages-not-stopped",
        "jaxrl/agents/ppo.py",
        "advantage, target = jax.lax.stop_gradient((advantage, target))",
        "advantage, target = advantage, target",
        "the in-loss advantages and value targets carry gradients (Brax stops them)",
        BRAX_PPO,
    ),
    m(
        "ppo-in-loss-one-key-for-all-steps",
        "jaxrl/agents/ppo.py",
        "        key, loss_key = jax.random.split(key)\n",
        "        loss_key = key\n",
        "every gradient step of an epoch draws its entropy noise from one key",
        BRAX_PPO,
    ),
    m(
        "td3-critic-targets-wait-for-the-actor",
        "jaxrl/agents/td3.py",
        "moved_critics if config.critic_target_every_update else state.target_critic_params",
        "state.target_critic_params",
        "critic_target_every_update (FastTD3's code) still moves the target critics only with "
        "the actor",
        TD3_REF,
    ),
    m(
        "sac-temperature-loss-form-ignored",
        "jaxrl/agents/sac_family.py",
        """    if form == "alpha":
        return (jnp.exp(log_alpha) * -gap).mean()
""",
        "",
        "temperature_loss='alpha' (Brax's) still takes the log-alpha form",
        SAC_REF,
    ),
    m(
        "sac-temperature-draw-own-ignored",
        "jaxrl/agents/sac_family.py",
        """        if config.temperature_draw == "own":""",
        """        if config.temperature_draw == "separate":""",
        "temperature_draw='own' (Brax's SAC) still reads the actor's draw",
        SAC_REF,
    ),
    m(
        "sac-temperature-draw-online-key",
        "jaxrl/agents/sac_family.py",
        "keys.temperature_action, sg(mean), sg(log_std)",
        "keys.policy_action, sg(mean), sg(log_std)",
        "the temperature's own draw reuses the actor's key (the same action)",
        SAC_REF,
    ),
    m(
        "sac-truncation-mask-ignored",
        "jaxrl/agents/sac_family.py",
        """    if truncation == "mask" and batch.truncated is not None:""",
        """    if truncation == "masked" and batch.truncated is not None:""",
        "truncation='mask' (Brax's SAC) still keeps truncated rows in the critic loss",
        SAC_BRAX,
    ),
    m(
        "row-mean-drops-masked-rows",
        "jaxrl/heads.py",
        "    return (x if weight is None else x * weight).mean(axis=-1)",
        "    return (x if weight is None else x * weight).sum(-1) / jnp.maximum(weight.sum(), 1)",
        "masked rows leave the critic loss's mean (Brax counts them, as zeros)",
        SAC_BRAX,
    ),
    m(
        "offpolicy-learns-before-insert",
        "jaxrl/loops/offpolicy.py",
        'args = (state.agent, buffer, stats, learn_key, state.hp["gamma"])',
        'args = (state.agent, state.buffer, stats, learn_key, state.hp["gamma"])',
        "an iteration learns from the buffer before its own rows are inserted (Brax samples "
        "after inserting them)",
        SAC_LOOP_BRAX,
    ),
    m(
        "offpolicy-batch-normalised-with-old-stats",
        "jaxrl/loops/offpolicy.py",
        'args = (state.agent, buffer, stats, learn_key, state.hp["gamma"])',
        'args = (state.agent, buffer, state.obs_stats, learn_key, state.hp["gamma"])',
        "the update's batch is normalised with the statistics from before this step's update "
        "(Brax's gradient steps read the updated ones)",
        SAC_LOOP_BRAX,
    ),
    m(
        "replay-draws-skip-newest-rows",
        "jaxrl/replay.py",
        "index = _draws(key, shards, batch_shape, 0, jnp.maximum(buffer.size, 1) * per_shard)",
        "index = _draws(key, shards, batch_shape, 0, jnp.maximum(buffer.size - 1, 1) * per_shard)",
        "replay draws leave out the newest step's rows (Brax draws over every filled row)",
        SAC_LOOP_BRAX,
    ),
    m(
        "replay-truncated-is-done",
        "jaxrl/loops/offpolicy.py",
        "            truncated=rows.done - rows.terminated,",
        "            truncated=rows.done,",
        "replayed rows call every ended episode truncated, terminations too",
        WIRING,
    ),
    m(
        "n-step-truncated-from-first-step",
        "jaxrl/replay.py",
        "        truncated=_gather(data.done, last, env, shards) - terminated,",
        "        truncated=_gather(data.done, first, env, shards) - terminated,",
        "an n-step window's truncation read at its first step, not its last",
        WIRING,
    ),
    m(
        "offpolicy-renormalize-ignored",
        "jaxrl/loops/offpolicy.py",
        "obs if config.renormalize_rollout else next_obs",
        "next_obs",
        "renormalize_rollout (Brax's SAC order) still feeds the statistics the observations "
        "reached, not those acted on",
        WIRING,
    ),
    m(
        "kernel-init-ignored",
        "jaxrl/networks.py",
        "            x = dense(width, self.matmul_precision, self.kernel_init)(x)\n",
        "            x = dense(width, self.matmul_precision)(x)\n",
        "hidden layers keep flax's initialiser whatever kernel_init says",
        "tests/agents/test_ppo.py",
    ),
    m(
        "critic-kernel-init-ignored",
        "jaxrl/networks.py",
        "            self.matmul_precision,\n            self.kernel_init,\n",
        "            self.matmul_precision,\n",
        "SAC's critics keep flax's initialiser whatever kernel_init says (Brax's is uniform)",
        "tests/agents/test_ppo.py",
    ),
    m(
        "autoreset-first-draws-fresh",
        "envs/wrappers.py",
        "                reset_key = key\n",
        "                reset_key = jax.random.fold_in(key, 1)\n",
        "autoreset='first' restarts finished envs from fresh states, not their first ones",
        "tests/envs/test_registry.py",
        "tests/loops/test_onpolicy.py",
    ),
    m(
        "shared-eval-wrong-start-keys",
        "jaxrl/loops/base.py",
        "keys = jax.random.split(env_key, count)  #",
        "keys = jax.random.split(act_key, count)  #",
        "the shared evaluation starts its episodes from other states than the own eval envs",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "shared-eval-start-keys-ignored",
        "envs/wrappers.py",
        "fresh = self.env.reset_each(jnp.where(restart.force, restart.keys, keys))",
        "fresh = self.env.reset_each(keys)",
        "a forced restart (the shared evaluation's start) draws from the auto-reset's keys",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "env-reset-traced-per-use",
        "envs/wrappers.py",
        "        self._reset_each = jax.jit(jax.vmap(env.reset))",
        "        self._reset_each = jax.vmap(env.reset)",
        "the batched reset is traced again at every use (the chunk's auto-reset, its shared "
        "evaluation's restarts), not taken from the initial state's trace",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "shared-eval-trips-write-replay",
        "jaxrl/loops/offpolicy.py",
        "    buffer = replay.add(state.buffer, transition, training)",
        "    buffer = replay.add(state.buffer, transition)",
        "the shared chunk's evaluation trips write their steps into the replay buffer",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "shared-eval-trips-count-iterations",
        "jaxrl/loops/offpolicy.py",
        "iteration=state.iteration + training.astype(state.iteration.dtype)",
        "iteration=state.iteration + 1",
        "the shared chunk's evaluation trips count as loop iterations",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "learn-conditioned-around-the-loop",
        "jaxrl/loops/offpolicy.py",
        _LEARN_CALL,
        "    learn = functools.partial(parts.learn, training=training, dataset=dataset)\n"
        "    agent_state, update_metrics = learn_if(ready, learn, *args)\n",
        "the condition to learn wraps the iteration's loop of updates again (XLA:GPU then copies "
        "the agent's state on every update)",
        "tests/loops/test_offpolicy.py",
    ),
    m(
        "learn-ignores-ready",
        "jaxrl/loops/offpolicy.py",
        _LEARN_CALL,
        "    agent_state, update_metrics = parts.learn(\n"
        "        *args, training=training, dataset=dataset\n"
        "    )\n",
        "the updates run in every iteration, from a buffer that is not ready (the warm-up's)",
        "tests/loops/test_offpolicy.py",
    ),
    m(
        "shared-learn-conditioned-around-the-loop",
        "jaxrl/loops/offpolicy.py",
        _LEARN_CALL,
        "    learn = functools.partial(parts.learn, ready=ready, dataset=dataset)\n"
        "    agent_state, update_metrics = (\n"
        "        learn(*args) if training is None else learn_if(training, learn, *args)\n"
        "    )\n",
        "the shared chunk's training condition wraps the iteration's loop of updates again",
        "tests/loops/test_offpolicy.py",
    ),
    m(
        "shared-eval-trips-update-under-vmap",
        "jaxrl/loops/offpolicy.py",
        _LEARN_CALL,
        "    both = ready if training is None else training & ready\n"
        "    agent_state, update_metrics = parts.learn(*args, ready=both, dataset=dataset)\n",
        "under vmap the shared chunk's evaluation trips run the update (a select, not a cond)",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "grid-reset-moves-idle-members-key",
        "envs/wrappers.py",
        "return _with_own_keys(nxt, stepped, jnp.where(own, new_key, key))",
        "return _with_own_keys(nxt, stepped, new_key)",
        "a grid member none of whose envs finished still draws a reset key (not as alone)",
        "tests/envs/test_registry.py",
    ),
    m(
        "grid-reset-condition-per-member",
        "envs/wrappers.py",
        "        return jax.lax.psum(condition.astype(jnp.int32), GRID_AXIS) > 0\n",
        "        return condition\n",
        "under a grid's vmap the auto-reset runs as a select, its reset on every step",
        "tests/envs/test_registry.py",
    ),
    m(
        "grid-axis-unnamed",
        "jaxrl/run/chunks.py",
        "jax.vmap(trainer.chunk, axis_name=GRID_AXIS)",
        "jax.vmap(trainer.chunk)",
        "the grid's chunk binds no axis name, so envs cannot reduce their conditions over it",
        "tests/envs/test_registry.py",
    ),
    m(
        "shared-ppo-update-in-eval-phases",
        "jaxrl/loops/onpolicy.py",
        "            training, update, learner, state, *rollout, update_key\n",
        "            p >= 0, update, learner, state, *rollout, update_key\n",
        "the shared PPO chunk also updates after each phase of its evaluation's trips",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "shared-ppo-eval-phases-rounded-down",
        "jaxrl/loops/onpolicy.py",
        "eval_phases = -(-(1 + shared.steps) // unroll)",
        "eval_phases = (1 + shared.steps) // unroll",
        "the shared PPO chunk's evaluation stops before its episodes end (phases rounded down)",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "shared-ppo-phase-trips-restart-at-zero",
        "jaxrl/loops/onpolicy.py",
        "first = jnp.where(training, p * unroll, steps + (p - iterations) * unroll)",
        "first = jnp.where(training, p * unroll, steps + (p - iterations - 1) * unroll)",
        "the shared PPO chunk's evaluation phases number their trips one phase back",
        "tests/loops/test_shared_eval.py",
    ),
    m(
        "reset-every-off-by-one",
        "jaxrl/loops/onpolicy.py",
        "env_state = hard_reset(env_state, state.iteration + 1, reset_key)",
        "env_state = hard_reset(env_state, state.iteration, reset_key)",
        "the hard resets come one iteration early (after the 1st, 3rd, ... of reset_every=2)",
        "tests/loops/test_onpolicy.py",
    ),
    m(
        "renormalize-takes-reached-obs",
        "jaxrl/loops/onpolicy.py",
        "seen_obs = raw_obs if config.renormalize_rollout else final_obs",
        "seen_obs = final_obs",
        "Brax's order takes in the observations reached, not those acted on",
        "tests/loops/test_onpolicy.py",
    ),
    m(
        "shared-ppo-hard-reset-off-by-one",
        "jaxrl/loops/onpolicy.py",
        "reset = lambda: hard_reset(env_state, state.iteration + 1, reset_key)",
        "reset = lambda: hard_reset(env_state, state.iteration, reset_key)",
        "the shared PPO chunk's hard resets come one update early (the GPU's default chunk)",
        "tests/loops/test_ppo_loop_brax_parity.py",
    ),
    m(
        "renormalize-update-reads-old-stats",
        "jaxrl/loops/onpolicy.py",
        "seen = stats if config.renormalize_rollout else state.obs_stats",
        "seen = state.obs_stats",
        "Brax's order feeds the statistics the rollout, but the update reads it with the old ones",
        "tests/loops/test_ppo_loop_brax_parity.py",
    ),
    m(
        "eval-counts-after-the-end",
        "jaxrl/loops/base.py",
        "episode_return = episode_return + jnp.where(alive > 0, env_state.reward, 0.0)",
        "episode_return = episode_return + env_state.reward",
        "the evaluation keeps adding rewards after an episode has ended",
        "tests/loops/test_eval_brax_parity.py",
    ),
    m(
        "eval-one-step-short",
        "jaxrl/loops/base.py",
        "return jnp.any(alive > 0) & (t < eval_env.episode_length)",
        "return jnp.any(alive > 0) & (t < eval_env.episode_length - 1)",
        "the evaluation stops one step before the time limit",
        "tests/loops/test_eval_brax_parity.py",
    ),
    m(
        "autoreset-first-forgets-its-reset-key",
        "envs/wrappers.py",
        "        if self.first:  # the key the next resets remake this state from\n"
        "            key = reset_key\n",
        "",
        "with autoreset first, finished envs restart from other states than the reset made",
        "tests/envs/test_registry.py",
    ),
    m(
        "store-reserialises-a-cached-program",
        "jaxrl/run/executables.py",
        "        if cached is None:\n            return serialize_executable.serialize(compiled)\n",
        "        if True:\n            return serialize_executable.serialize(compiled)\n",
        "a program JAX's cache gave is stored re-serialised (without its code on XLA:CPU)",
        "tests/run/test_compile_cache.py",
    ),
    m(
        "store-drops-the-cache-bytes",
        "jaxrl/run/executables.py",
        "cached = unpacked[0] if hits and len(unpacked) == 1 else None",
        "cached = None",
        "a program JAX's cache gave is never stored (every re-run traces it again)",
        "tests/run/test_compile_cache.py",
    ),
    m(
        "store-keeps-in-memory-programs",
        "jaxrl/run/programs.py",
        '    if source == "memory":\n        return noted(',
        '    if source == "memory" and False:\n        return noted(',
        "a program jax's in-process cache gave is stored re-serialised (without its code)",
        "tests/run/test_compile_cache.py",
    ),
    m(
        "ppo-loop-skips-the-last-hard-reset",
        "jaxrl/loops/onpolicy.py",
        "        due = iteration % config.reset_every == 0\n",
        "        due = (iteration % config.reset_every == 0) & (iteration < config.num_chunks"
        " * config.iterations_per_chunk)\n",
        "the hard reset due after the run's last update is skipped",
        "tests/loops/test_ppo_loop_brax_parity.py",
    ),
    # --- On-policy loop. -------------------------------------------------------------------
    m(
        "onpolicy-raw-next-obs",
        "jaxrl/loops/onpolicy.py",
        "next_obs=observe(seen, final_obs),",
        "next_obs=final_obs,",
        "PPO's rollout bootstraps from unnormalised final observations",
        WIRING,
    ),
    m(
        "onpolicy-done-as-terminated",
        "jaxrl/loops/onpolicy.py",
        'terminated = env_state.done * (1.0 - info["truncation"])',
        "terminated = env_state.done",
        "the rollout marks truncations as terminations",
        WIRING,
    ),
    m(
        "onpolicy-next-obs-after-reset",
        "jaxrl/loops/onpolicy.py",
        'final_obs = view(info["final_obs"])',
        "final_obs = view(env_state.obs)",
        "the rollout's next_obs is the reset observation where an episode ended",
        WIRING,
    ),
    # --- Replay. ---------------------------------------------------------------------------
    m(
        "replay-samples-below-position",
        "jaxrl/replay.py",
        "index = _draws(key, shards, batch_shape, 0, jnp.maximum(buffer.size, 1) * per_shard)",
        "index = _draws(key, shards, batch_shape, 0, jnp.maximum(buffer.position, 1) * per_shard)",
        "after the ring buffer wraps, sampling only reaches slots below the write position",
        "tests/test_replay.py",
    ),
    m(
        "n-step-stops-at-terminations-only",
        "jaxrl/replay.py",
        "reward, done = steps_of(data.reward), steps_of(data.done)",
        "reward, done = steps_of(data.reward), steps_of(data.terminated)",
        "n-step returns run across truncations into the next episode",
        "tests/test_replay.py",
        WIRING,
    ),
    m(
        "replay-update-batch-from-one-shard",
        "jaxrl/replay.py",
        "return jnp.moveaxis(x, 0, len(lead)).reshape((*lead, last) + x.shape[len(lead) + 2 :])",
        "return x.reshape((*lead, last) + x.shape[len(lead) + 2 :])",
        "over several devices, each update's batch comes from one device's envs alone",
        "tests/test_replay.py",
    ),
    m(
        "replay-n-step-env-counted-globally",
        "jaxrl/replay.py",
        "env = per_shard - 1 - age % per_shard",
        "env = buffer.num_envs - 1 - age % buffer.num_envs",
        "a shard's n-step draw indexes envs of the whole buffer, past its own",
        "tests/test_replay.py",
    ),
    m(
        "sharding-buffer-split-over-time",
        "jaxrl/sharding.py",
        'replace["buffer"] = shardings.buffer.replace(data=env_part(state.buffer.data, 1))',
        'replace["buffer"] = shardings.buffer.replace(data=env_part(state.buffer.data, 0))',
        "the replay buffer is split along time, so each device samples rows of other devices",
        "tests/test_sharding.py",
    ),
    # --- Normalisation. --------------------------------------------------------------------
    m(
        "stats-variance-misses-mean-shift",
        "jaxrl/normalization.py",
        "m2 = stats.var * stats.count + batch_var * n + delta**2 * stats.count * n / total",
        "m2 = stats.var * stats.count + batch_var * n",
        "merged variance drops the between-batch term",
        "tests/test_normalization.py",
    ),
    m(
        "normalize-by-variance",
        "jaxrl/normalization.py",
        "normalized = (obs - stats.mean) / jnp.sqrt(stats.var + (1e-8 + std_eps))",
        "normalized = (obs - stats.mean) / (stats.var + (1e-8 + std_eps))",
        "observations divided by the variance instead of the standard deviation",
        "tests/test_normalization.py",
    ),
    # --- Networks. -------------------------------------------------------------------------
    m(
        "batchrenorm-momentum-swapped",
        "jaxrl/networks.py",
        "running_var.value = m * running_var.value + (1 - m) * jax.lax.stop_gradient(",
        "running_var.value = (1 - m) * running_var.value + m * jax.lax.stop_gradient(",
        "BatchRenorm's running variance moves by momentum instead of 1 - momentum",
        CROSSQ_REF,
    ),
    m(
        "batchrenorm-r-inverted",
        "jaxrl/networks.py",
        "r = jax.lax.stop_gradient(jnp.clip(batch_std / running_std, 1 / self.r_max, self.r_max))",
        "r = jax.lax.stop_gradient(jnp.clip(running_std / batch_std, 1 / self.r_max, self.r_max))",
        "BatchRenorm's correction r is inverted",
        CROSSQ_REF,
    ),
    m(
        "layer-norm-after-relu",
        "jaxrl/networks.py",
        "if self.layer_norm and not self.norm_after_relu:",
        "if self.layer_norm and self.norm_after_relu:",
        "hidden layers apply LayerNorm after the ReLU where it belongs before",
        SAC_REF,
    ),
    m(
        "norm-after-relu-ignored",
        "jaxrl/networks.py",
        "if self.layer_norm and not self.norm_after_relu:",
        "if self.layer_norm:",
        "norm_after_relu (Brax's order) still puts the LayerNorm before the ReLU",
        SAC_REF,
    ),
    m(
        "normalize-clip-zero-clips-everything",
        "jaxrl/normalization.py",
        "return jnp.clip(normalized, -clip, clip) if clip else normalized",
        "return jnp.clip(normalized, -clip, clip)",
        "obs_clip 0 (no clipping) clips every normalised observation to 0",
        "tests/test_normalization.py",
    ),
    m(
        "loop-ignores-obs-clip",
        "jaxrl/loops/base.py",
        "return normalization.normalize(stats, obs, config.obs_clip, config.obs_std_eps)",
        "return normalization.normalize(stats, obs, std_eps=config.obs_std_eps)",
        "the loop clips normalised observations to +-10 whatever obs_clip says",
        WIRING,
    ),
    m(
        "policy-warmup-ignored",
        "jaxrl/loops/offpolicy.py",
        'if config.warmup_actions == "uniform" and not config.pretrained:',
        "if True:",
        'warmup_actions="policy" still warms up with uniform random actions',
        WIRING,
    ),
    # --- Env wrappers. ---------------------------------------------------------------------
    m(
        "truncation-flag-on-terminal-steps",
        "envs/wrappers.py",
        "truncated = (1.0 - terminated) * (length >= self.episode_length)",
        "truncated = (length >= self.episode_length) * 1.0",
        "a step that terminates at the time limit is flagged as a truncation too",
        WIRING,
    ),
    m(
        "time-limit-off-by-one",
        "envs/wrappers.py",
        "truncated = (1.0 - terminated) * (length >= self.episode_length)",
        "truncated = (1.0 - terminated) * (length > self.episode_length)",
        "episodes run one step past the time limit",
        WIRING,
    ),
    m(
        "autoreset-final-obs-after-reset",
        "envs/wrappers.py",
        "return _with_own_keys(nxt, stepped, jnp.where(own, new_key, key))",
        "return _with_own_keys(nxt, nxt, jnp.where(own, new_key, key))",
        "auto-reset reports the reset observation as the episode's final one",
        WIRING,
    ),
    # --- Driver. ---------------------------------------------------------------------------
    m(
        "restore-returns-template",
        "jaxrl/checkpoint.py",
        "    return like.replace(\n        agent=_put_back_empty(",
        "    return like\n    return like.replace(\n        agent=_put_back_empty(",
        "restoring a checkpoint returns the template instead of what the file holds",
        "tests/loops/test_offpolicy.py",
        RUNS,
    ),
    m(
        "resume-key-not-restored",
        "jaxrl/checkpoint.py",
        '    loop = dict(restored["loop"])\n',
        '    loop = dict(restored["loop"], key=like.key)\n',
        "a resumed run starts from the seed's fresh RNG key, not the saved one",
        RUNS,
    ),
    m(
        "resume-buffer-not-saved",
        "jaxrl/run/runner.py",
        "include_buffer=self.options.checkpoint_buffer,",
        "include_buffer=False,",
        "checkpoints leave out the replay buffer even when --checkpoint-buffer is on",
        RUNS,
    ),
    m(
        "resume-steps-counted-from-zero",
        "jaxrl/run/runner.py",
        "    done = step_of(history[-1]) if history else 0\n",
        "    done = 0\n",
        "a resumed run's progress bar starts from zero env steps again",
        RUNS,
        "tests/test_commands.py",
    ),
    m(
        "resume-log-appends",
        "jaxrl/logs.py",
        'self._jsonl = open(out_path / "metrics.jsonl", "w")',
        'self._jsonl = open(out_path / "metrics.jsonl", "a")',
        "a resumed run appends to metrics.jsonl: rows logged after the last checkpoint twice",
        RUNS,
        "tests/test_commands.py",
    ),
    m(
        "chunk-rate-running-average",
        "jaxrl/run/rows.py",
        "config.env_steps_per_chunk / max(chunk_seconds, 1e-9) if online else 0.0",
        "env_steps / max(wall_seconds, 1e-9) if online else 0.0",
        "the progress rate (and ETA) is a running average that counts compilation and warm-up",
        RUNS,
    ),
    m(
        "loaded-policy-not-normalised",
        "jaxrl/run/runs.py",
        "    apply = jax.jit(make_policy(config, agent))",
        "    apply = jax.jit(\n"
        "        make_policy(dataclasses.replace(config, normalize_observations=False), agent)\n"
        "    )",
        "load_policy feeds raw observations to an agent trained on normalised ones",
        RUNS,
    ),
    m(
        "policy-not-greedy",
        "jaxrl/loops/base.py",
        "action = agent.act(agent_state, observe(actor_part(obs_stats), batch), key, 0.0)",
        "action = agent.act(agent_state, observe(actor_part(obs_stats), batch), key, 1.0)",
        "the exported policy samples exploration noise instead of acting greedily",
        RUNS,
    ),
    m(
        "checkpoint-keeps-zero-size-arrays",
        "jaxrl/checkpoint.py",
        "[None if leaf.size == 0 else leaf for leaf in leaves]",
        "leaves",
        "checkpoints hand orbax the zero-size arrays of MJX states (orbax refuses to write them)",
        RUNS,
    ),
    m(
        "stop-at-return-ignored",
        "jaxrl/run/runner.py",
        'reached = target is not None and row["eval_return"] >= target',
        "reached = False",
        "--stop-at-return never ends the run",
        RUNS,
    ),
    m(
        "resume-keeps-reached-target",
        "jaxrl/run/driver.py",
        "        if reached:\n"
        "            options = dataclasses.replace(options, stop_at_return=None)\n",
        "",
        "resume --steps of a run that reached its target stops again after one chunk",
        RUNS,
    ),
    m(
        "wandb-id-from-folder-name",
        "jaxrl/logs.py",
        "        id=run_id,",
        "        id=out_path.name,",
        "W&B runs are identified by their folder's name: sweep runs s0, s1 of every setting clash",
        RUNS,
    ),
    m(
        "help-shows-first-lines",
        "jaxrl/config/resolve.py",
        '    line = first_sentence(field_docstrings(cls).get(field.name, ""))',
        '    line = field_docstrings(cls).get(field.name, "").split("\\n")[0]',
        "--help cuts each description at the docstring's first line, mid-sentence",
        "tests/config/test_help.py",
    ),
    m(
        "atomic-write-shared-temporary",
        "jaxrl/files.py",
        """    with tempfile.NamedTemporaryFile(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    ) as file:
        temporary = pathlib.Path(file.name)
""",
        "    temporary = path.with_name(path.name + '.tmp')\n",
        "every writer of a file writes it through PATH.tmp, so two at once move each other's",
        "tests/run/test_faults.py",
    ),
    m(
        "atomic-write-leaves-temporary",
        "jaxrl/files.py",
        "        temporary.unlink(missing_ok=True)\n",
        "        pass\n",
        "a write that fails (a full disk) leaves its temporary file beside the old one",
        "tests/run/test_faults.py",
    ),
    m(
        "sweep-resume-trusts-the-folders",
        "experiments/sweep.py",
        "_check_same_run(_run_dir(out, point, seed),",
        "(lambda *_: None)(_run_dir(out, point, seed),",
        "jaxrl sweep --resume goes on with a run folder holding another setting's run",
        "tests/test_commands.py",
    ),
    m(
        "sweep-resume-trains-the-run-under-way-anew",
        "experiments/sweep.py",
        'elif (run_dir / "config.json").exists():  # under way',
        "elif False:  # under way",
        "jaxrl sweep --resume starts the interrupted run over instead of resuming it",
        "tests/test_commands.py",
    ),
    m(
        "sweep-resume-checks-only-the-seed",
        "experiments/sweep.py",
        '    planned = {"seed": seed, **point}\n',
        '    planned = {"seed": seed}\n',
        "a run folder of another setting (same seed) passes for the sweep's own",
        "tests/test_commands.py",
    ),
    m(
        "progress-bar-reads-markup",
        "jaxrl/logs.py",
        "self._bar.console.print(text, markup=False)",
        "self._bar.console.print(text)",
        "on a terminal, rich takes each line's '[sac brax/ant]' for a style tag and drops it",
        "tests/run/test_runs.py",
    ),
    m(
        "progress-silent-while-compiling",
        "jaxrl/run/runner.py",
        """                self.reporter.message(f"[{self.name}] compiling{again}")\n""",
        "                pass\n",
        "nothing is shown while the program compiles (tens of seconds for an MJX preset)",
        "tests/run/test_runs.py",
    ),
    m(
        "resume-done-line-this-process-only",
        "jaxrl/cli.py",
        "    if whole - result.train_seconds > 1e-3:",
        "    if False:",
        "a resumed run's last line gives only this process's training time as the run's",
        "tests/test_commands.py",
    ),
    m(
        "store-out-of-memory-fails-the-entry",
        "jaxrl/run/programs.py",
        '            if "RESOURCE_EXHAUSTED" not in str(error):\n',
        "            if True:\n",
        "a loaded program's first call that ran out of GPU memory bars its entry for good",
        "tests/run/test_program_store.py",
    ),
    m(
        "sweep-goes-on-after-ctrl-c-in-a-last-chunk",
        "experiments/sweep.py",
        "            if result.interrupted:",
        "            if False:",
        "Ctrl-C in a sweep run's last chunk finishes that run and the sweep trains on",
        "tests/test_commands.py",
    ),
    m(
        "sweep-grid-value-twice",
        "experiments/sweep.py",
        "        if repeated:\n",
        "        if False:\n",
        "--grid actor_lr=1e-3,0.001 trains one setting and counts it as two seeds' worth",
        "tests/test_commands.py",
    ),
    m(
        "sweep-resume-from-the-wrong-folder",
        "experiments/sweep.py",
        "with contextlib.chdir(cwd) if cwd.is_dir() else contextlib.nullcontext():",
        "with contextlib.nullcontext():",
        "a sweep resumed from another folder reads its relative --config from there",
        "tests/test_commands.py",
    ),
    m(
        "run-into-a-sweep-setting-folder",
        "jaxrl/run/folder.py",
        "    if inner:\n",
        "    if False:\n",
        "jaxrl train --out SWEEP/SETTING trains beside the setting's seed folders",
        "tests/test_commands.py",
    ),
    m(
        "resume-rounds-silently",
        "jaxrl/run/driver.py",
        "    if say and total_steps is not None and total != total_steps:",
        "    if False:",
        "train --resume --steps 500 trains to 512 without saying so",
        "tests/run/test_runs.py",
    ),
    m(
        "progress-says-compiling-a-loaded-program",
        "jaxrl/run/runner.py",
        "            if plan.chunks.stored(plan.state):\n",
        "            if False:\n",
        "a re-run that loads its stored program says it is compiling",
        STORE,
    ),
    m(
        "broken-pipe-traceback",
        "jaxrl/cli.py",
        "    except BrokenPipeError:",
        "    except NotADirectoryError:",
        "jaxrl list | head ends in a BrokenPipeError traceback",
        "tests/test_cli.py",
    ),
    m(
        "store-serialize-without-the-lock",
        "jaxrl/run/executables.py",
        "    with _PATCHING:\n        if cached is None:",
        "    if True:\n        if cached is None:",
        "a program stored without cache bytes is pickled while another thread's swap is in place",
        STORE,
    ),
    m(
        "atomic-write-private-mode",
        "jaxrl/files.py",
        "        os.chmod(temporary, _MODE)\n",
        "",
        "config.json and summaries come out 0600, unreadable to others sharing the folder",
        "tests/run/test_faults.py",
    ),
    m(
        "sweep-resume-compares-raw-values",
        "experiments/sweep.py",
        "            name: getattr(trainer.config if name in train_fields else agent_config, name)",
        "            name: point[name]",
        "--resume refuses a sweep's own run whose grid value the algorithm resolved (None)",
        "tests/test_commands.py",
    ),
    m(
        "sweep-over-another-sweep",
        "experiments/sweep.py",
        "            _check_same_sweep(out, argv)\n",
        "            pass\n",
        "a new sweep into a folder of another sweep's begun runs overwrites its sweep.json",
        "tests/test_commands.py",
    ),
    m(
        "scale-goes-on-after-ctrl-c-in-a-last-chunk",
        "experiments/scale_train.py",
        "        if result.interrupted:",
        "        if False:",
        "Ctrl-C in a scale program's last chunk finishes it and the grid trains on",
        "tests/experiments/test_scale.py",
    ),
    m(
        "sweep-settings-unchecked",
        "experiments/sweep.py",
        "            trainer = driver.check_setting(config, agent_config)\n",
        "            trainer = argparse.Namespace(config=config)\n",
        "a sweep trains its first settings before finding that a later one names no env",
        "tests/test_commands.py",
    ),
    m(
        "driver-writes-unresolved-config",
        "jaxrl/run/driver.py",
        "    config = trainer.config  # with the algorithm's own loop defaults filled in\n",
        "",
        "config.json records None for the settings the algorithm chose",
        "tests/loops/test_offpolicy.py",
    ),
    m(
        "algorithm-loop-defaults-dropped",
        "jaxrl/config/train.py",
        "defaults = {**LOOP_DEFAULTS, **(agent_defaults or {})}",
        "defaults = dict(LOOP_DEFAULTS)",
        "FastTD3 and PQL without a preset explore with noise std 1 (their own defaults lost)",
        WIRING,
        "tests/loops/test_offpolicy.py",
    ),
    # --- Your own envs, Menagerie, domain randomization (issue 16). --------------------------
    m(
        "registered-episode-length-ignored",
        "envs/registry.py",
        "        if default is not None and getattr(env, attribute, None) is None:",
        "        if False:",
        "register(..., episode_length=N) is not applied to an env without the attribute",
        OWN_ENV,
    ),
    m(
        "import-ignores-current-folder",
        "envs/registry.py",
        "        sys.path.append(os.getcwd())",
        "        pass",
        "--import does not search the current folder, as a console script does not",
        OWN_ENV,
    ),
    m(
        "env-object-run-resumes-without-it",
        "jaxrl/run/runs.py",
        "    if made_from and env is None:",
        "    if False:",
        "a run trained on an env object resumes on whatever env its label names",
        OWN_ENV,
    ),
    m(
        "menagerie-path-not-passed-on",
        "envs/menagerie.py",
        "    mjx_env.MENAGERIE_PATH = folder",
        "    pass",
        "--env-option menagerie_path is checked but never given to Playground",
        OWN_ENV,
    ),
    m(
        "randomized-envs-share-one-model",
        "envs/randomization.py",
        "        return jax.vmap(one, in_axes=(self.in_axes, 0, 0))(self.models, state, action)",
        "        return jax.vmap(one, in_axes=(None, 0, 0))(self.models, state, action)",
        "every env steps with one set of physics (the batched models read unbatched)",
        RANDOMIZATION,
    ),
    m(
        "randomization-scales-first-entry-only",
        "envs/randomization.py",
        "                    k, getattr(model, name).shape, minval=1 - scale, maxval=1 + scale",
        "                    k, (), minval=1 - scale, maxval=1 + scale",
        "one factor per env for all bodies instead of one per body",
        RANDOMIZATION,
    ),
    m(
        "eval-envs-always-randomized",
        "jaxrl/loops/base.py",
        "        eval_dr = (randomization_fn, eval_key) if config.randomize_eval else None",
        "        eval_dr = (randomization_fn, eval_key)",
        "evaluation runs on randomized physics although randomize_eval is off",
        RANDOMIZATION,
    ),
    m(
        "randomization-key-not-from-seed",
        "jaxrl/loops/base.py",
        "        key = jax.random.fold_in(jax.random.PRNGKey(config.seed), RANDOMIZATION_STREAM)",
        "        key = jax.random.PRNGKey(RANDOMIZATION_STREAM)",
        "every seed trains on the same randomized physics",
        RANDOMIZATION,
    ),
    # --- Dict observations, asymmetric actor-critic (issue 16). -----------------------------
    m(
        "sac-critic-inputs-swapped",
        "jaxrl/agents/sac_family.py",
        "critic_obs, next_critic_obs = batch.critic_inputs",
        "next_critic_obs, critic_obs = batch.critic_inputs",
        "SAC's asymmetric critic reads s' where s belongs and s where s' belongs",
        SAC_REF,
    ),
    m(
        "td3-target-critic-reads-current-critic-obs",
        "jaxrl/agents/td3.py",
        "critic_net.apply(state.target_critic_params, next_critic_obs, next_action)",
        "critic_net.apply(state.target_critic_params, critic_obs, next_action)",
        "TD3's target critic bootstraps from the critic's observation of s, not s'",
        TD3_REF,
    ),
    m(
        "crossq-joint-pass-without-next-critic-obs",
        "jaxrl/agents/crossq.py",
        "apply, critic_obs, batch.action, next_critic_obs, next_action",
        "apply, critic_obs, batch.action, critic_obs, next_action",
        "CrossQ's joint pass pairs the next action with the critic's current observation",
        CROSSQ_REF,
    ),
    m(
        "ppo-value-inputs-swapped",
        "jaxrl/agents/ppo.py",
        "value_obs, next_value_obs = rollout.critic_inputs  # obs / next_obs unless asymmetric",
        "next_value_obs, value_obs = rollout.critic_inputs  # obs / next_obs unless asymmetric",
        "PPO's asymmetric value function reads s' for V(s) and s for V(s')",
        PPO_REF,
    ),
    m(
        "split-next-critic-obs-from-obs",
        "jaxrl/observations.py",
        "next_critic_obs=batch.next_obs[CRITIC],",
        "next_critic_obs=batch.obs[CRITIC],",
        "the batch's next critic observation is the current one",
        WIRING,
    ),
    m(
        "policy-reads-critic-entry",
        "jaxrl/loops/base.py",
        "obs = obs[config.actor_obs or observations.DEFAULT_KEY]",
        "obs = obs[config.critic_obs or observations.DEFAULT_KEY]",
        "the exported policy reads the critic's entry of a dict observation",
        WIRING,
    ),
    m(
        "joint-limits-one-sided",
        "envs/wrappers.py",
        "scaled = jnp.where(action >= 0.0, action * self.high, -action * self.low)",
        "scaled = action * self.high",
        "joint-limit actions scale negative actions by the upper limit's bound",
        OWN_ENV,
    ),
    m(
        "joint-limits-times-scale",
        "envs/robots.py",
        "low = np.where(limited, np.minimum((lower - q0) / s, 0.0), -1.0)",
        "low = np.where(limited, np.minimum((lower - q0) * s, 0.0), -1.0)",
        "the lower joint-limit bound multiplies by action_scale instead of dividing",
        OWN_ENV,
    ),
    # --- Several seeds in one program (issue 17). ---------------------------------------------
    m(
        "seeds-rows-all-of-the-first-seed",
        "jaxrl/run/runner.py",
        "chunk_row(index, jax.tree.map(lambda x, i=i: x[i], metrics), config, *times)",
        "chunk_row(index, jax.tree.map(lambda x, i=i: x[0], metrics), config, *times)",
        "every seed's metrics files get the first seed's rows",
        RUNS,
    ),
    m(
        "seeds-init-from-one-key",
        "jaxrl/run/state.py",
        "key = jnp.stack([jax.random.PRNGKey(seed) for seed in run_grid.seeds])",
        "key = jnp.stack([jax.random.PRNGKey(run_grid.seeds[0]) for seed in run_grid.seeds])",
        "every seed of a vmapped run starts from the first seed's key",
        RUNS,
    ),
    # --- Hyperparameters as data, settings grids (issue 17). ---------------------------------
    m(
        "hp-sac-tau-a-constant",
        "jaxrl/agents/sac.py",
        '            state,\n            state.hp["tau"],\n',
        "            state,\n            config.tau,\n",
        "SAC's Polyak rate is closed over as a constant, not read from the state",
        HYPER,
    ),
    m(
        "hp-td3-acting-noise-a-constant",
        "jaxrl/agents/td3.py",
        'noise = state.hp["exploration_noise"] * scale',
        "noise = config.exploration_noise * scale",
        "TD3's acting noise is closed over as a constant",
        HYPER,
    ),
    m(
        "hp-ppo-learning-rate-a-constant",
        "jaxrl/agents/ppo.py",
        "optax.adam(learning_rate))",
        "optax.adam(config.learning_rate))",
        "PPO's Adam takes the config's learning rate, not the injected one",
        HYPER,
    ),
    m(
        "hp-onpolicy-gamma-a-constant",
        "jaxrl/loops/onpolicy.py",
        'discount=jnp.full_like(reward, state.hp["gamma"]),',
        "discount=jnp.full_like(reward, config.gamma),",
        "the on-policy loop's discount is closed over as a constant",
        HYPER,
    ),
    m(
        "grid-every-setting-starts-as-the-first",
        "jaxrl/run/state.py",
        "jax.vmap(lambda k, e, m=member: trainer.init(k, m, e))(keys, env_state)",
        "jax.vmap(lambda k, e, m=members[0]: trainer.init(k, m, e))(keys, env_state)",
        "every setting of a grid starts from the first setting's state",
        RUNS,
    ),
    m(
        "grid-best-setting-is-the-worst",
        "jaxrl/run/rows.py",
        'best_setting, best = max(settings, key=lambda item: item[1]["eval_return"])',
        'best_setting, best = min(settings, key=lambda item: item[1]["eval_return"])',
        "a grid's rows name the worst setting as the best",
        RUNS,
    ),
    m(
        "grid-policy-default-member-the-worst",
        "jaxrl/run/runs.py",
        'member = int(np.argmax(history[-1]["eval_returns"]))',
        'member = int(np.argmin(history[-1]["eval_returns"]))',
        "eval of a grid or seeds run picks the worst member by default",
        RUNS,
    ),
    m(
        "delayed-actor-wrong-phase",
        "jaxrl/agents/base.py",
        "return jax.lax.cond(step % period == 0, update, hold)",
        "return jax.lax.cond(step % period == 1, update, hold)",
        "the shared delayed actor step updates on the wrong updates of each period",
        TD3_REF,
        CROSSQ_REF,
    ),
    m(
        "sac-soft-bonus-sign",
        "jaxrl/agents/sac_family.py",
        "        bonus = -alpha * next_log_prob\n",
        "        bonus = alpha * next_log_prob\n",
        "SAC hands the critic head +alpha log pi as the soft bonus",
        SAC_REF,
        DSAC_REF,
    ),
    m(
        "dsac-t-mean-std-restarts",
        "jaxrl/heads.py",
        'mean_std = update_mean_std(state, std, hp["std_tau"], first)',
        'mean_std = update_mean_std(state, std, hp["std_tau"], True)',
        "DSAC-T's running std restarts from each batch instead of averaging",
        DSAC_REF,
    ),
    m(
        "crossq-actor-stats-move-while-held",
        "jaxrl/agents/sac_family.py",
        "        a_loss, (log_prob, _) = objective(actor.params)",
        "        a_loss, (log_prob, held) = objective(actor.params)",
        "the held actor step keeps the objective's batch statistics (CrossQ's actor drifts)",
        CROSSQ_REF,
    ),
    m(
        "td3-actor-q-ignored",
        "jaxrl/agents/td3.py",
        "return actor_loss(head.values(out, hp), config.actor_q)",
        "return actor_loss(head.values(out, hp))",
        "FastTD3's (and PQL-D's) actor follows the first critic, not the lower expected value",
        TD3_REF,
    ),
    m(
        "onpolicy-progress-per-chunk",
        "jaxrl/loops/onpolicy.py",
        "progress=state.iteration / total_iterations,",
        "progress=state.iteration / config.iterations_per_chunk,",
        "PPO's schedule reads progress as a fraction of one chunk, not of the run",
        WIRING,
    ),
    m(
        "checkpoint-drops-iteration",
        "jaxrl/checkpoint.py",
        "        if field.name not in POLICY_ITEMS\n",
        '        if field.name not in (*POLICY_ITEMS, "iteration")\n',
        "checkpoints leave out the loop's iteration counter",
        "tests/loops/test_offpolicy.py",
    ),
    # --- PQL's actor/learner split (jaxrl/loops/split.py). ---------------------------------
    m(
        "split-actor-never-refreshed",
        "jaxrl/loops/split.py",
        "        acting_agent = jax.device_put(agent_state, on_actor)\n",
        "",
        "the actor keeps acting with the chunk's first parameters, never the learners' new ones",
        SPLIT,
    ),
    m(
        "split-learners-see-this-exchange",
        "jaxrl/loops/split.py",
        """        agent_state, learn_key, metrics = programs["learn"](
            agent_state, buffer, stats_learners, learn_key, hp_learners
        )
        buffer = programs["insert"](buffer, jax.device_put(transitions, by_env))
""",
        """        buffer = programs["insert"](buffer, jax.device_put(transitions, by_env))
        agent_state, learn_key, metrics = programs["learn"](
            agent_state, buffer, stats_learners, learn_key, hp_learners
        )
""",
        "the learners wait for the actor's data of the same exchange (no overlap, no lag)",
        SPLIT,
    ),
    m(
        "split-last-exchange-dropped",
        "jaxrl/loops/split.py",
        """    for _ in range(exchanges):""",
        """    for _ in range(exchanges - 1):""",
        "a chunk runs one exchange fewer than it reports",
        SPLIT,
    ),
    m(
        "split-learners-keep-first-statistics",
        "jaxrl/loops/split.py",
        "        stats_learners = jax.device_put(actor[1], on_learners)\n",
        "",
        "the learners normalise every batch with the chunk's first observation statistics",
        SPLIT,
    ),
    m(
        "split-updates-miscounted",
        "jaxrl/loops/split.py",
        "            every * config.updates_per_step,\n            iteration,",
        "            config.updates_per_step,\n            iteration,",
        "the chunk's update count counts one iteration's updates per exchange",
        SPLIT,
    ),
    # --- Replay and normaliser properties (tests/test_properties.py, hypothesis). ------------
    m(
        "replay-n-step-ignores-episode-ends",
        "jaxrl/replay.py",
        "before = jnp.concatenate([jnp.ones_like(done[..., :1]), 1.0 - done[..., :-1]], -1)",
        "before = jnp.ones_like(done)",
        "n-step returns sum past the step that ended the episode",
        PROPERTIES,
    ),
    m(
        "replay-samples-unwritten-slots",
        "jaxrl/replay.py",
        "index = _draws(key, shards, batch_shape, 0, jnp.maximum(buffer.size, 1) * per_shard)",
        "index = _draws(key, shards, batch_shape, 0, buffer.capacity * per_shard)",
        "sampling draws from the whole capacity, zeros of unwritten slots included",
        PROPERTIES,
    ),
    m(
        "replay-n-step-starts-too-new",
        "jaxrl/replay.py",
        "age = _draws(key, shards, batch_shape, reach, written)",
        "age = _draws(key, shards, batch_shape, 0, written)",
        "n-step starts drawn where fewer than n steps are written after them",
        PROPERTIES,
    ),
    m(
        "nan-first-row-off-by-one",
        "jaxrl/loops/base.py",
        "first = iteration - (rows - 1 - jnp.argmax(bad)) * iterations_per_row",
        "first = iteration - (rows - jnp.argmax(bad)) * iterations_per_row",
        "the step a NaN first appeared named one row too early",
        FAULTS,
    ),
    m(
        "nan-parameters-unchecked",
        "jaxrl/loops/base.py",
        "broken = _count_nonfinite(agent_state) > 0",
        "broken = _count_nonfinite(agent_state) < 0",
        "NaN parameters never reported",
        FAULTS,
    ),
    m(
        "nan-observations-unchecked",
        "jaxrl/loops/offpolicy.py",
        "**nonfinite(observation=(obs, next_obs), reward=env_state.reward),",
        "**nonfinite(reward=env_state.reward),",
        "NaN observations of off-policy runs not looked for",
        FAULTS,
    ),
    m(
        "rollback-same-key",
        "jaxrl/run/health.py",
        "fold = lambda key: jax.random.fold_in(key, rollbacks)",
        "fold = lambda key: key",
        "a rollback goes on with the key it had, repeating what it did",
        FAULTS,
    ),
    m(
        "rollback-keeps-later-rows",
        "jaxrl/run/runner.py",
        """for logger in self.loggers:
            logger.close()
        self.loggers = self._open_loggers(self.history)""",
        "pass",
        "a rollback leaves the metric rows written after its checkpoint in the files",
        FAULTS,
    ),
    m(
        "resume-appends-rows",
        "jaxrl/logs.py",
        'self._jsonl = open(out_path / "metrics.jsonl", "w")',
        'self._jsonl = open(out_path / "metrics.jsonl", "a")',
        "a resumed run appends to metrics.jsonl: a killed process's rows past its checkpoint stay",
        FAULTS,
        RUNS,
    ),
    m(
        "out-parent-unchecked",
        "jaxrl/run/folder.py",
        "    if not existing.is_dir():",
        "    if False:",
        "an --out whose parent is a file passes the checks and fails after compiling",
        "tests/test_cli.py",
    ),
    m(
        "damaged-checkpoint-not-set-aside",
        "jaxrl/run/folder.py",
        "        except checkpoint.DamagedCheckpointError as error:",
        "        except checkpoint.CheckpointWriteError as error:",
        "a resume stops at a damaged newest checkpoint instead of going on from the one before",
        FAULTS,
    ),
    m(
        "foreign-arrays-unchecked",
        "jaxrl/checkpoint.py",
        "            if have == want:\n                continue",
        "            continue",
        "a checkpoint of another network size is taken for a damaged one and set aside",
        FAULTS,
    ),
    m(
        "seed-of-the-process",
        "jaxrl/run/state.py",
        "init, key = trainer.init, jax.random.PRNGKey(trainer.config.seed)",
        "init, key = trainer.init, "
        "jax.random.PRNGKey(trainer.config.seed + __import__('os').getpid())",
        "the first key depends on the process (as a seed from the clock or the PID would)",
        FAULTS,
    ),
    # --- Speed (issue 19). ---------------------------------------------------------------
    m(
        "steady-rate-counts-compilation",
        "benchmarks/case.py",
        'seconds = last["wall_seconds"] - first["wall_seconds"] - compiling',
        'seconds = last["wall_seconds"] - first["wall_seconds"]',
        "a peer's late compilation is counted as training time in its steady rate",
        "tests/benchmarks/test_bench.py",
    ),
    m(
        "speed-ratio-inverted",
        "benchmarks/parity_report.py",
        'k: means["jaxrl"][k] / means["brax"][k]',
        'k: means["brax"][k] / means["jaxrl"][k]',
        "the identical-settings ratios are Brax over jaxrl",
        "tests/benchmarks/test_bench.py",
    ),
    m(
        "run-once-swallows-errors",
        "jaxrl/run/state.py",
        '            if "option" not in str(error).lower():\n                raise',
        "            pass",
        "any failure to compile the initial state is hidden by a second compile",
        FAULTS,
    ),
    m(
        "ppo-rollout-values-at-once",
        "jaxrl/agents/ppo.py",
        "return jax.lax.map(lambda o: value(params, o), obs)",
        "return value(params, obs)",
        "the rollout's values in one pass: every hidden layer of every sample held at once",
        "tests/agents/test_ppo.py",
    ),
    m(
        "replay-obs-always-float32",
        "jaxrl/loops/offpolicy.py",
        "x.astype(config.replay_obs_dtype)",
        "x.astype(jnp.float32)",
        "--replay-obs-dtype is accepted but the buffer stores float32",
        "tests/loops/test_offpolicy.py",
    ),
    m(
        "bytes-per-transition-counts-envs",
        "jaxrl/replay.py",
        "math.prod(x.shape[2:])",
        "math.prod(x.shape[1:])",
        "bytes per transition counts one time slot of every env",
        "tests/test_replay.py",
    ),
    m(
        "brax-observation-size-eager",
        "envs/registry.py",
        "obs = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0)).obs",
        "obs = self.env.reset(jax.random.PRNGKey(0)).obs",
        "a Brax env's observation size read from an eager reset (hundreds of little compiles)",
        "tests/envs/test_registry.py",
    ),
    m(
        "bf16-sac-actor-float32",
        "jaxrl/agents/sac_family.py",
        "        log_std_clip=config.log_std_clip,\n"
        "        matmul_precision=config.matmul_precision,\n"
        "        kernel_init=config.kernel_init,\n    )\n",
        "        log_std_clip=config.log_std_clip,\n"
        "        kernel_init=config.kernel_init,\n    )\n",
        "--matmul-precision bfloat16 leaves SAC's policy network in float32",
        PRECISION,
    ),
    m(
        "bf16-output-layer-float32",
        "jaxrl/networks.py",
        "            out = dense(self.out, self.matmul_precision, self.kernel_init, "
        "True, self.zero_out)",
        "            out = nn.Dense(self.out, kernel_init=KERNEL_INITS[self.kernel_init])",
        "--matmul-precision bfloat16 leaves every MLP's output layer in float32",
        PRECISION,
    ),
    m(
        "bf16-ppo-value-float32",
        "jaxrl/agents/ppo.py",
        "        out=1,\n        activation=config.activation,\n"
        "        matmul_precision=config.matmul_precision,\n",
        "        out=1,\n        activation=config.activation,\n",
        "--matmul-precision bfloat16 leaves PPO's value network in float32",
        PRECISION,
    ),
    m(
        "mixed-hidden-layers-float32",
        "jaxrl/networks.py",
        '    if matmul_precision == "mixed" and not output:',
        '    if matmul_precision == "mixed" and output:',
        "--matmul-precision mixed computes the output layers in bfloat16 and the hidden ones in "
        "float32, the wrong way round",
        PRECISION,
    ),
    m(
        "mixed-output-layer-bfloat16",
        "jaxrl/networks.py",
        "            out = dense(self.out, self.matmul_precision, self.kernel_init, "
        "True, self.zero_out)",
        "            out = dense(self.out, self.matmul_precision, self.kernel_init, "
        "False, self.zero_out)",
        "--matmul-precision mixed returns every MLP's output (values, logits, means) in bfloat16",
        PRECISION,
    ),
    m(
        "ppo-in-loss-bootstrap-values-shifted",
        "jaxrl/agents/ppo.py",
        '            next_values = value(params, batch["next_value_obs"])',
        "            next_values = values",
        "truncation 'bootstrap' with the advantage in the loss: each step bootstraps from its own "
        "value, not from its next observation's",
        BRAX_PPO,
    ),
    # jaxrl plot / render / TensorBoard (issue 38).
    m(
        "plot-seeds-run-as-one-run",
        "jaxrl/plot.py",
        "        return (_grid_members(path, saved) or {path: saved}), path",
        "        return {path: saved}, path",
        "jaxrl plot draws a --seeds run from its own rows (the mean, one seed, no band)",
        "tests/test_plot.py",
    ),
    m(
        "plot-band-only-for-several-settings",
        "jaxrl/plot.py",
        "            if len(group) > 1:",
        "            if len(groups) > 1:",
        "jaxrl plot draws the seeds' band only when there are several settings",
        "tests/test_plot.py",
    ),
    m(
        "plot-sweep-one-level-deep",
        "jaxrl/plot.py",
        '    found |= {config.parent for config in path.glob("*/*/config.json")}\n',
        "",
        "jaxrl plot looks for a sweep's runs one level down (they are SETTING/sSEED)",
        "tests/test_plot.py",
    ),
    m(
        "plot-figure-in-current-folder",
        "jaxrl/plot.py",
        '        return homes[0] / "curves.png"',
        '        return pathlib.Path("curves.png")',
        "jaxrl plot writes curves.png to the current folder, not the run's",
        "tests/test_plot.py",
    ),
    m(
        "tensorboard-flat-tags",
        "jaxrl/logs.py",
        "self._tb.add_scalar(tensorboard_tag(name), value, global_step=step)",
        "self._tb.add_scalar(name, value, global_step=step)",
        "TensorBoard scalars written under the rows' flat names (eval_return), not grouped",
        RUNS,
    ),
    m(
        "render-classic-pendulum-upside-down",
        "jaxrl/render.py",
        "            x, y = -np.sin(state[0]), np.cos(state[0])",
        "            x, y = np.sin(state[0]), -np.cos(state[0])",
        "the classic pendulum is drawn hanging at th = 0 (upright) and mirrored",
        "tests/test_render.py",
    ),
    m(
        "render-video-in-current-folder",
        "jaxrl/cli.py",
        '        args.out if args.out is not None else pathlib.Path(args.run) / "policy.mp4",',
        '        args.out if args.out is not None else "policy.mp4",',
        "jaxrl render writes policy.mp4 to the current folder, not the run's",
        "tests/test_commands.py",
    ),
    # --- Start-up (issue 38). ----------------------------------------------------------------
    m(
        "eager-brax-import",
        "jaxrl/__init__.py",
        "import pathlib as _pathlib\n",
        "import pathlib as _pathlib\n\nimport brax  # noqa: F401\n",
        "`import jaxrl` imports Brax (and with it mujoco, jax) eagerly again",
        STARTUP,
    ),
    m(
        "registry-eager-classic",
        "envs/registry.py",
        "from jaxrl.envs.wrappers import (",
        "from jaxrl.envs import classic  # noqa: F401\nfrom jaxrl.envs.wrappers import (",
        "the env registry imports the classic envs, so Brax, at import again",
        STARTUP,
    ),
    # --- jaxrl scale (issue 40). -------------------------------------------------------------
    m(
        "scale-crossing-in-updates",
        "experiments/scale_report.py",
        "sf.crossing(m.steps, m.returns, target)",
        "sf.crossing(m.updates, m.returns, target)",
        "jaxrl scale reads D_J off the gradient updates instead of the env steps",
        SCALE,
    ),
    m(
        "scale-fit-in-updates",
        "experiments/scale_folder.py",
        "sf.Run(self.sigma, self.batch_size, self.lr, self.steps, self.returns)",
        "sf.Run(self.sigma, self.batch_size, self.lr, self.updates, self.returns)",
        "the scaling laws are fitted to crossings in gradient updates, not env steps",
        SCALE,
    ),
    m(
        "scale-members-by-glob",
        "experiments/scale_folder.py",
        "dirs = [run / run_grid.member_dir(setting, seed) for seed in run_grid.seeds]",
        "dirs = sorted(run.glob('*/seed_*'))[len(members) * len(run_grid.seeds) :]"
        "[: len(run_grid.seeds)]",
        "a learning rate's curves are found by folder order, so vmap members' lrs are mixed up",
        SCALE,
    ),
    m(
        "scale-rerun-retrains-finished",
        "experiments/scale_train.py",
        'if program.status in ("done", "failed"):',
        'if program.status == "failed":',
        "running a scale grid again trains its finished runs again",
        SCALE,
    ),
    m(
        "scale-killed-run-counts-as-done",
        "experiments/scale_plan.py",
        'return "done" if (folder / "summary.json").is_file() else "resume"',
        'return "done"',
        "a run of the grid killed before its summary is taken as done, never finished",
        SCALE,
    ),
    m(
        "scale-widths-train-the-base-critic",
        "experiments/scale_train.py",
        "program.agent_config or the_plan.agent_config,",
        "the_plan.agent_config,",
        "every width of a width axis trains the base config's critic",
        SCALE,
    ),
    m(
        "scale-widths-compute-without-their-size",
        "experiments/scale_report.py",
        "            model_size=own[0].critic_params,",
        "            model_size=None,",
        "a width's compute is counted in updates, not FLOPs of its own critic's size",
        SCALE,
    ),
    m(
        "scale-td-overfitting-reversed",
        "experiments/scale_report.py",
        'return {**result, "seen": bool(small > 1.0 and small > large)}',
        'return {**result, "seen": bool(large > 1.0 and large > small)}',
        "the TD-overfitting check compares the widths the wrong way round",
        SCALE,
    ),
    m(
        "scale-widths-scale-the-last-layer",
        "experiments/scale_plan.py",
        "return tuple(max(1, round(h * width / base[0])) for h in base)",
        "return tuple(max(1, round(h * width / base[-1])) for h in base)",
        "a width is taken as the critic's last hidden layer, not its first",
        SCALE,
    ),
    # --- The GPU speed suite's measures (issue 39). -------------------------------------------
    m(
        "speed-scan-counted-once",
        "benchmarks/speed.py",
        'total += eqn.params["length"] * inner',
        "total += inner",
        "a scan's body counted once, as XLA's cost analysis does (PPO's epochs x minibatches lost)",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "speed-cond-sums-branches",
        "benchmarks/speed.py",
        "total += max(c[0] for c in counted)",
        "total += sum(c[0] for c in counted)",
        "a cond counted as both its branches run",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "ctrl-c-exit-through-python-shutdown",
        "jaxrl/cli.py",
        "    if whole_process and (interrupted or left):",
        "    if whole_process and left:",
        "a caught Ctrl-C exits through Python's shutdown, where a redelivered SIGINT kills it",
        "tests/test_startup.py",
    ),
    m(
        "seeds-count-ignores-seed",
        "jaxrl/run/driver.py",
        "        return tuple(range(first, first + count))",
        "        return tuple(range(count))",
        "--seed 3 --seeds 3 trains seeds 0, 1, 2: the --seed silently dropped",
        "tests/run/test_runs.py::test_a_count_of_seeds_starts_at_seed_and_a_list_stays_as_given",
    ),
    m(
        "gae-associative-compose-swapped",
        "jaxrl/agents/ppo.py",
        "        return earlier_decay * later_decay, earlier_delta + earlier_decay * later_delta",
        "        return earlier_decay * later_decay, later_delta + later_decay * earlier_delta",
        "the parallel advantage scan composes its steps in the wrong order",
        "tests/agents/test_ppo.py",
    ),
    m(
        "kernels-loop-body-once",
        "benchmarks/speed.py",
        "                total, copies = total + n * per_trip[0], copies + n * per_trip[1]",
        "                total, copies = total + per_trip[0], copies + per_trip[1]",
        "a loop's kernels counted once per call, not once per trip",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "kernels-cond-sums-branches",
        "benchmarks/speed.py",
        "                taken = pick(options, default=(0, 0))",
        "                taken = tuple(map(sum, zip(*options, strict=True)))",
        "a conditional's kernels counted as both its branches run",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "kernels-outer-trips-ignored",
        "benchmarks/speed.py",
        "            spread(callee, times * n)",
        "            spread(callee, n)",
        "an inner loop's trips per call leave out the trips of the loops around it",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "shares-not-checked",
        "jaxrl/sharding.py",
        "        if value is not None and value % count:",
        "        if value is not None and value % count and False:",
        "a num_envs or batch_size that does not split over the devices goes unchecked",
        "tests/test_sharding.py",
    ),
    # --- The store of compiled programs (issue 39). -------------------------------------------
    m(
        "store-key-without-agent",
        "jaxrl/run/program_key.py",
        "    agent = {}\n    if agent_config is not None:",
        "    agent = {}\n    if agent_config is not None and False:",
        "the agent config left out of the key: a run with another temperature loss loads the "
        "stored program",
        STORE,
    ),
    m(
        "store-key-without-shapes",
        "jaxrl/run/program_key.py",
        "    text = json.dumps([program_id, kind, _describe(tree), shapes], default=repr)",
        "    text = json.dumps([program_id, kind, _describe(tree)], default=repr)",
        "the arguments' shapes left out of the key: a run of 3 seeds loads the 2 seeds' program",
        STORE,
    ),
    m(
        "store-steps-free-on-policy",
        "jaxrl/run/program_key.py",
        'FREE_FIELDS = {"off-policy": ("seed", "total_steps"), "on-policy": ("seed",)}',
        'FREE_FIELDS = {"off-policy": ("seed", "total_steps"), "on-policy": ("seed", '
        '"total_steps")}',
        "PPO's step count left out of its key, though its learning-rate schedule reads it",
        STORE,
    ),
    m(
        "store-chunk-length-free",
        "jaxrl/run/program_key.py",
        '    run["iterations_per_chunk"] = config.iterations_per_chunk\n',
        "",
        "the off-policy key leaves out the chunk's length: a re-run of fewer steps per chunk "
        "loads the longer chunk",
        STORE,
    ),
    m(
        "episode-step-keeps-done",
        "envs/wrappers.py",
        "stepped = self.env.step(state.replace(done=jnp.zeros_like(state.done)), action)",
        "stepped = self.env.step(state, action)",
        "the env steps from the auto-reset's done = 1: an env that never sets done ends every "
        "episode after the first one after one step",
        OWN_ENV,
    ),
    m(
        "ppo-clip-injected-when-off",
        "jaxrl/agents/ppo.py",
        'clip = {"max_grad_norm": config.max_grad_norm} if config.max_grad_norm > 0 else {}',
        'clip = {"max_grad_norm": config.max_grad_norm}',
        "PPO without clipping (max_grad_norm 0) still clips, to a norm of zero",
        PPO_REF,
        HYPER,
    ),
    m(
        "ppo-clip-state-without-clip",
        "jaxrl/agents/ppo.py",
        "optax.identity() if max_grad_norm is None else optax.clip_by_global_norm(",
        "optax.identity() if True else optax.clip_by_global_norm(",
        "PPO never clips, though max_grad_norm > 0 is in its state",
        PPO_REF,
    ),
    m(
        "store-user-helpers-unkeyed",
        "jaxrl/run/program_key.py",
        "            beside.add(pathlib.Path(other_file))",
        "            pass",
        "a user's module is keyed without the helper modules it imports from beside it: an "
        "edit of the helper's reward loads the program traced from the old one",
        STORE,
    ),
    m(
        "store-write-failure-stops-the-run",
        "jaxrl/run/programs.py",
        "        return True\n    except OSError as error:",
        "        return True\n    except ZeroDivisionError as error:",
        "a store entry that cannot be written (a full disk) ends a run that compiled fine",
        STORE,
    ),
    m(
        "store-marked-running-at-load",
        "jaxrl/run/programs.py",
        "        if loaded is not None:\n            _remember(program_id, kind, path)",
        "        if loaded is not None:\n            running.touch()\n"
        "            _remember(program_id, kind, path)",
        "an entry is marked running when loaded: a run stopped before its first call (Ctrl-C "
        "while its first state builds) has its entry dropped for good",
        STORE,
    ),
    m(
        "eta-from-the-warm-up",
        "jaxrl/logs.py",
        "        warming_up = self._last_steps < self.warm_up_until and row.get(",
        "        warming_up = False and row.get(",
        "a chunk of the off-policy warm-up (random actions, no updates) gives the ETA its rate",
        RUNS,
    ),
    m(
        "store-lapack-uninitialised",
        "jaxrl/run/executables.py",
        '    if jax.default_backend() == "cpu":\n        jax.jit(jnp.linalg.cholesky)',
        '    if jax.default_backend() == "none":\n        jax.jit(jnp.linalg.cholesky)',
        "a loaded program calls LAPACK before jaxlib has pointed its kernels at it",
        "tests/run/test_compile_cache.py",
    ),
    m(
        "store-seed-free-with-randomization",
        "jaxrl/run/program_key.py",
        "    if config.randomize:  # the envs' physics are drawn from the seed",
        "    if False:  # the envs' physics are drawn from the seed",
        "with domain randomization the seed is left out of the key, though the physics drawn "
        "from it are constants of the programs: another seed loads the first seed's physics",
        STORE,
    ),
    m(
        "store-crash-not-remembered",
        "jaxrl/run/programs.py",
        "            _touch(self._running)\n",
        "            pass\n",
        "a process that dies in a loaded program leaves no trace: the next run loads it again",
        STORE,
    ),
    m(
        "store-key-without-env-class",
        "jaxrl/run/program_key.py",
        "        modules.append(type(layer).__module__)\n",
        "        pass\n",
        "the modules of the env's classes are not keyed: an edit of a user's env class, "
        "registered from another module, loads the program traced from the old code",
        STORE,
    ),
    m(
        "store-key-without-env-factory",
        "jaxrl/run/program_key.py",
        '        modules.append(getattr(factory, "__module__", None) or "")\n',
        "        pass\n",
        "a registered env's factory module is not keyed",
        STORE,
    ),
    m(
        "store-key-fileless-env",
        "jaxrl/run/program_key.py",
        "    if file is None:\n        return None\n    top = ",
        "    if file is None:\n        return []\n    top = ",
        "an env defined where it has no file (a notebook) is stored under a key blind to its code",
        STORE,
    ),
    m(
        "store-key-skips-exec-classes",
        "jaxrl/run/program_key.py",
        "    return modules  # a class made by exec()",
        '    return [m for m in modules if m != "builtins"]  # a class made by exec()',
        'an env class made by exec() (module "builtins", no file) is left out of the key '
        "instead of leaving the run unstored",
        STORE,
    ),
    m(
        "store-observation-size-not-read",
        "jaxrl/run/programs.py",
        '        vars(env)["observation_size"] = pickle.loads(path.read_bytes())\n        return\n',
        "        pickle.loads(path.read_bytes())\n",
        "the kept observation size is never read back: every run traces the env's reset again",
        STORE,
    ),
    m(
        "store-observation-size-key-without-options",
        "jaxrl/run/programs.py",
        '             "env": config.env, "options": config.env_options}',
        '             "env": config.env}',
        "the observation size is kept by env name alone: other env options read another's",
        STORE,
    ),
    m(
        "store-prefetch-takes-any-entry",
        "jaxrl/run/programs.py",
        "        loaded = pending.take() if pending is not None and pending.path == path else None",
        "        loaded = pending.take() if pending is not None else None",
        "the prefetched chunk is taken whatever entry the run asks for: a grid of 2 seeds runs "
        "the 3 seeds' program",
        STORE,
    ),
    m(
        "store-prefetch-hint-kept-on-load",
        "jaxrl/run/programs.py",
        '            _remember(program_id, kind, path)\n            note(kind, "loaded"',
        '            note(kind, "loaded"',
        "a loaded entry is not remembered as the run's last: after a run of other shapes every "
        "re-run prefetches the wrong program",
        STORE,
    ),
    m(
        "store-prefetch-never-started",
        "jaxrl/run/chunks.py",
        "        store.prefetch(kind)",
        "        pass",
        "no run prefetches: a re-run loads its chunk only after its first state",
        STORE,
    ),
    m(
        "store-prefetch-synchronous",
        "jaxrl/run/programs.py",
        'background.start("jaxrl-prefetch", self._load, entry)',
        'background.start("jaxrl-prefetch", lambda: None, self._load(entry))',
        "the prefetch loads the chunk on the calling thread, before the first state, so nothing "
        "runs beside it",
        STORE,
    ),
    m(
        "store-prefetch-resume-skips",
        "jaxrl/run/driver.py",
        "    with readying(trainer, run_grid, dataset, store) as chunks:\n        like = ",
        "    chunks = Chunks(trainer, run_grid, store)\n    if True:\n        like = ",
        "resume does not prefetch its chunk",
        STORE,
    ),
    m(
        "store-prefetch-leftover-kept",
        "jaxrl/run/programs.py",
        "def drop_prefetched(program_id: str | None, kind: str) -> None:\n    _PREFETCHED.pop(",
        "def drop_prefetched(program_id: str | None, kind: str) -> None:\n    _PREFETCHED.get(",
        "a chunk prefetched by a run that ends before asking for it stays in memory",
        STORE,
    ),
    m(
        "store-prefetch-failed-entry",
        "jaxrl/run/programs.py",
        '    return None if path.with_suffix(".failed").exists() else path',
        "    return path",
        "an entry whose first call raised is still prefetched by every run of its key",
        STORE,
    ),
    m(
        "store-early-seed-in-id",
        "jaxrl/run/programs.py",
        '_EARLY_FREE = ("--seed", "--out", "--quiet")',
        '_EARLY_FREE = ("--out", "--quiet")',
        "the command line's id keeps the seed: a re-run with another seed loads nothing early",
        STORE,
    ),
    m(
        "store-early-guess-unchecked",
        "jaxrl/run/programs.py",
        "    if early is not None and early.path == path:  # already loading",
        "    if early is not None:  # already loading",
        "the early load is kept whatever entry the run's own hint names: a command line that "
        "last ran another program leaves the run to load its own chunk after its first state",
        STORE,
    ),
    m(
        "store-early-hint-never-written",
        "jaxrl/run/programs.py",
        '    if early is not None and kind.startswith("chunk") and',
        '    if False and early is not None and kind.startswith("chunk") and',
        "no command line's hint is written: nothing ever loads early",
        STORE,
    ),
    m(
        "store-early-never-started",
        "jaxrl/cli.py",
        "    programs.prefetch_early(argv)",
        "    pass",
        "jaxrl train never starts the early load",
        STORE,
    ),
    m(
        "store-early-load-after-configs",
        "jaxrl/cli.py",
        "    programs.prefetch_early(argv)\n    try:\n"
        "        return _train(*resolve.configs_of(parsed))",
        "    try:\n        configs = resolve.configs_of(parsed)\n"
        "        programs.prefetch_early(argv)\n        return _train(*configs)",
        "jaxrl train starts its early load only once the env's name is checked (the simulator "
        "imported), so the load no longer runs beside those imports",
        STORE,
    ),
    m(
        "store-exit-waits",
        "jaxrl/cli.py",
        "    left = code != 0 and background.left_running()",
        "    left = False",
        "a command that stopped waits for the chunk still loading or compiling for it (seconds "
        "to minutes) before it exits",
        STORE,
    ),
    m(
        "store-success-skips-shutdown",
        "jaxrl/cli.py",
        "    left = code != 0 and background.left_running()",
        "    left = background.left_running()",
        "a command that succeeded but dropped a load unfinished ends through os._exit, skipping "
        "Python's exit hooks",
        "tests/run/test_program_store.py::"
        "test_a_command_that_stops_before_taking_its_early_load_exits_without_waiting",
    ),
    m(
        "background-thread-unregistered",
        "jaxrl/run/background.py",
        "        _THREADS[:] = [*(t for t in _THREADS if t.is_alive()), thread]",
        "        _THREADS[:] = [t for t in _THREADS if t.is_alive()]",
        "a load or compile started beside the run is not known to be running, so the process "
        "waits for it at exit",
        STORE,
    ),
    m(
        "store-early-chunk-never-made",
        "jaxrl/run/chunks.py",
        "            early = EarlyChunk(trainer, run_grid, store)",
        "            early = None",
        "a first run compiles its chunk only after its first state's programs",
        STORE,
    ),
    m(
        "store-early-chunk-unplaced",
        "jaxrl/run/chunks.py",
        "                x.shape, x.dtype, weak_type=x.weak_type, sharding=device\n",
        "                x.shape, x.dtype, weak_type=x.weak_type\n",
        "the chunk compiled beside the first state is keyed and placed otherwise than the state, "
        "so it is compiled a second time (and stored under a key no re-run asks for)",
        STORE,
    ),
    m(
        "store-early-chunk-error-lost",
        "jaxrl/run/chunks.py",
        "        if self._error is not None:\n            raise self._error\n",
        "        if False:\n            raise self._error\n",
        "a chunk that failed to compile on its thread is compiled again, its error lost",
        STORE,
    ),
    m(
        "store-early-chunk-after-reset",
        "jaxrl/run/state.py",
        "    if early is not None:\n"
        "        early.start(traced.out_info)\n"
        "    if compiled is None:\n"
        "        compiled = store.load_or_compile(kind, (key,), lower, _compile_once)\n",
        "    if compiled is None:\n"
        "        compiled = store.load_or_compile(kind, (key,), lower, _compile_once)\n"
        "    if early is not None:\n"
        "        early.start(traced.out_info)\n",
        "the chunk starts compiling only after the reset's compile, which it no longer overlaps",
        STORE,
    ),
    m(
        "store-watch-any-thread",
        "jaxrl/run/executables.py",
        "_WATCHED = threading.local()",
        "_WATCHED = lambda: None  # noqa: E731",
        "a compile watched for the cache takes another thread's compile for its own (a program "
        "from memory stored re-serialised, or another program's cache bytes stored under its key)",
        STORE,
    ),
    m(
        "store-load-no-public-fallback",
        "jaxrl/run/executables.py",
        '        program = (entry["executable"], in_tree, out_tree)\n'
        "        return serialize_executable.deserialize_and_load(*program)",
        "        return None",
        "where jax's private unpickler or Compiled differ (another jax version), a stored program "
        "is never loaded: every re-run compiles",
        STORE,
    ),
    m(
        "store-early-split-keeps-load",
        "jaxrl/run/chunks.py",
        "    else:  # its programs are its own: a load `prefetch_early` started is not for it\n"
        "        programs.drop_early()",
        "    else:  # its programs are its own: a load `prefetch_early` started is not for it\n"
        "        pass",
        "an actor/learner split run keeps the chunk `prefetch_early` loaded for nothing, beside "
        "its own compiles, for the whole run",
        STORE,
    ),
    m(
        "store-early-id-outlives-command",
        "jaxrl/cli.py",
        "        programs.command_ended()",
        "        pass",
        "a command that failed leaves its command line's id: a later run in the process writes "
        "its chunk under that command line's hint",
        STORE,
    ),
    m(
        "store-early-bad-flag-waits",
        "jaxrl/cli.py",
        "            _ended(stop.code, whole_process)",
        "            pass",
        "a flag tyro rejects ends the command only after the early load finishes",
        STORE,
    ),
    m(
        "chunk-cpu-copies-kept",
        "jaxrl/run/chunks.py",
        "    return compile_with_options(lowered, CHUNK_OPTIONS)",
        "    return lowered.compile()",
        "the CPU chunk is compiled with XLA's default copy insertion: every cond that passes a "
        "state through copies it, every step",
        STORE,
    ),
    m(
        "chunk-gpu-copies-kept",
        "jaxrl/run/chunks.py",
        '    "gpu": {"xla_gpu_copy_insertion_use_region_analysis": True},',
        "",
        "the GPU chunk is compiled with XLA's default copy insertion: the auto-reset's "
        "pass-through branch copies every env state leaf on every env step",
        STORE,
    ),
    m(
        "store-prefetch-hint-name-unchecked",
        "jaxrl/run/programs.py",
        '    if not re.fullmatch(rf"{kind}-[0-9a-f]{{40}}", name):',
        "    if False:",
        "a hint's name is not checked: one naming an entry of another kind is loaded",
        STORE,
    ),
    m(
        "store-prefetch-bad-hint-crashes",
        "jaxrl/run/programs.py",
        "    except (OSError, ValueError):  # no hint, or an unreadable one",
        "    except OSError:  # no hint, or an unreadable one",
        "a hint that is not text stops the run instead of being ignored",
        STORE,
    ),
    m(
        "brax-speed-update-normaliser-stale",
        "benchmarks/speed.py",
        "        normalizer = running_statistics.update(normalizer, data.observation)",
        "        normalizer = normalizer",
        "the timed Brax update leaves out its training step's normaliser update",
        BRAX_PPO,
    ),
    m(
        "brax-speed-update-shuffles-with-the-gradient-key",
        "benchmarks/speed.py",
        "            x = jax.random.permutation(key_perm, x)",
        "            x = jax.random.permutation(key_grad, x)",
        "the timed Brax update shuffles its unrolls with another key than Brax's",
        BRAX_PPO,
    ),
    m(
        "report-update-ratio-inverted",
        "benchmarks/report.py",
        '            ratio = ours["seconds_per_update"] / theirs["seconds_per_update"]',
        '            ratio = theirs["seconds_per_update"] / ours["seconds_per_update"]',
        "the report gives Brax's update time over jaxrl's as jaxrl's over Brax's",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "optional-bool-bad-value-passed-to-tyro",
        "jaxrl/config/resolve.py",
        '            if value.lower() not in spellings:  # tyro: "Unrecognized options: maybe"',
        "            if False:",
        "--normalize-observations maybe ends in tyro's box naming 'maybe' as an unknown option",
        "tests/test_cli.py",
    ),
    m(
        "optional-bool-value-case-kept",
        "jaxrl/config/resolve.py",
        "            out += [flag, spellings[value.lower()]]",
        "            out += [flag, value]",
        "--normalize-observations false is refused by tyro, which takes False alone",
        "tests/test_cli.py",
    ),
    m(
        "progress-bar-step-count-in-80-columns",
        "jaxrl/logs.py",
        "    if console.width >= 120:",
        "    if True:",
        "in 80 columns the bar's text columns take the line: the bar is dropped, each column cut",
        NARROW_BAR,
    ),
    m(
        "progress-bar-name-uncut",
        "jaxrl/logs.py",
        "            table_column=Column(max_width=max(12, console.width // 4), no_wrap=True),",
        "            table_column=Column(no_wrap=True),",
        "a long run name takes an 80-column bar's room: the bar and its columns are cut",
        NARROW_BAR,
    ),
    m(
        "progress-rate-rounds-to-1000k",
        "jaxrl/logs.py",
        "        if abs(number) >= scale * 0.9995:  # 999,999 is 1M, not 1e+03k",
        "        if abs(number) >= scale:",
        "a rate of 999,999 env steps per second shows as 1e+03k",
        NARROW_BAR,
    ),
    m(
        "tensorboard-rollback-keeps-old-events",
        "jaxrl/logs.py",
        '            if purge is None and (out_path / "tensorboard").exists():',
        "            if False:",
        "after a rollback to the start TensorBoard shows the abandoned chunks beside the new ones",
        RUNS + "::test_tensorboard_drops_the_events_of_rows_a_resume_or_rollback_does_not_keep",
    ),
    m(
        "plot-resumed-eval-every-splits-seeds",
        "jaxrl/plot.py",
        'IGNORED_KEYS = ("seed", "total_steps", "devices", "eval_every", "num_evals")',
        'IGNORED_KEYS = ("seed", "total_steps", "num_evals")',
        "a seed resumed with --steps or on other devices is drawn as another setting",
        "tests/test_plot.py",
    ),
    m(
        "plot-cadence-ignored",
        "jaxrl/plot.py",
        "    if cadence is not None:\n        flat[CADENCE] = cadence",
        "    if False:\n        flat[CADENCE] = cadence",
        "runs evaluated at other env steps are drawn as seeds of one setting",
        "tests/test_plot.py",
    ),
    m(
        "plot-sweep-under-way-fails",
        "jaxrl/plot.py",
        "            if path.resolve() in given:\n                raise",
        "            if True:\n                raise",
        "jaxrl plot of a sweep under way fails on its first run that has not logged yet",
        "tests/test_plot.py",
    ),
    m(
        "restore-out-of-memory-is-damage",
        "jaxrl/checkpoint.py",
        "        if _out_of_memory(error):  # the machine's failure, not the files': none is set "
        "aside",
        "        if False:",
        "a resume that ran out of memory sets the newest sound checkpoint aside as damaged",
        FAULTS + "::test_running_out_of_memory_while_restoring_sets_no_checkpoint_aside",
    ),
    m(
        "policy-save-into-a-missing-folder",
        "jaxrl/run/runs.py",
        "        path.parent.mkdir(parents=True, exist_ok=True)\n",
        "",
        "policy.save into a folder that does not exist is a FileNotFoundError traceback",
        RUNS + "::test_policy_saves_to_one_small_file_that_loads_without_the_run",
    ),
    m(
        "eval-builds-the-training-envs",
        "jaxrl/run/runs.py",
        "    eval_env = make_eval_env(config, env)",
        "    from jaxrl.loops.base import make_envs\n\n    eval_env = make_envs(config, env)[1]",
        "jaxrl eval builds every training env of the run (and its randomized physics) to play it",
        RUNS + "::test_evaluate_run_matches_the_trainers_evaluation",
    ),
    m(
        "split-resume-alone-keeps-no-chunks",
        "jaxrl/run/driver.py",
        "        if dataclasses.replace(trainer.config, **length).env_steps_per_chunk == "
        "per_chunk:",
        "        if False:",
        "a split run stopped part-way cannot go on on one device without --steps",
        SPLIT,
    ),
    m(
        "speed-memory-read-after-the-yardstick",
        "benchmarks/case.py",
        "    for key, value in memory().items():  # unless the case read its own (speed cases)\n"
        "        record.setdefault(key, value)",
        "    record.update(memory())",
        "a speed case's peak device memory is the matmul yardstick's, not its update's",
        "tests/benchmarks/test_speed.py",
    ),
    m(
        "tensorboard-writers-share-a-file",
        "jaxrl/logs.py",
        '                filename_suffix=f".{os.getpid()}.{next(_WRITERS)}",\n',
        "",
        "a writer opened in the same second as the one before (a rollback) writes over its file",
        RUNS + "::test_tensorboard_drops_the_events_of_rows_a_resume_or_rollback_does_not_keep",
    ),
    m(
        "report-reads-gpu-kernels-records",
        "benchmarks/report.py",
        '            elif "case" in record and "system" in record:',
        '            elif "case" in record:',
        "RESULTS.md gains an empty section for each file of a stand-alone script's records",
        "tests/benchmarks/test_bench.py::test_the_report_reads_suite_records_only",
    ),
    m(
        "mujoco-gl-unchecked",
        "jaxrl/cli.py",
        '    problem = gl.problem() if command != "plot" else None  # plot imports no MuJoCo',
        "    problem = None",
        "MUJOCO_GL=osmesa without its library ends every command in a traceback from MuJoCo",
        "tests/test_cli.py::test_a_mujoco_gl_that_cannot_work_is_named_before_mujoco_is_imported",
    ),
    m(
        "mujoco-gl-library-unchecked",
        "jaxrl/gl.py",
        "    if value in NAMES and not ctypes.util.find_library(NAMES[value]):",
        "    if False:",
        "MUJOCO_GL=osmesa without libOSMesa passes the check and fails inside MuJoCo",
        "tests/test_cli.py::test_a_mujoco_gl_that_cannot_work_is_named_before_mujoco_is_imported",
    ),
    m(
        "sweep-seeds-a-list-of-one",
        "experiments/sweep.py",
        "    seeds = list(driver.parse_seeds(args.seeds if args.seeds is not None else 1, "
        "train.seed))",
        '    seeds = [int(s) for s in (args.seeds or str(train.seed)).split(",")]',
        "jaxrl sweep --seeds 2 trains seed 2 alone, where jaxrl train --seeds 2 trains two",
        "tests/test_commands.py::test_sweep_reads_seeds_as_jaxrl_train_does",
    ),
    # --- CrossQ's heads and layer order, the DM Control suite (issue 69). ------------------
    m(
        "crossq-log-std-clip-ignored",
        "jaxrl/networks.py",
        "        if self.log_std_clip:\n            return mean, jnp.clip(raw, -20.0",
        "        if False:\n            return mean, jnp.clip(raw, -20.0",
        "CrossQ's policy keeps the squashed log-std (std 0.22 at start), not the authors' clip",
        CROSSQ_REF,
    ),
    m(
        "crossq-log-std-clipped-at-five",
        "jaxrl/networks.py",
        "            return mean, jnp.clip(raw, -20.0, self.log_std_max)",
        "            return mean, jnp.clip(raw, -5.0, self.log_std_max)",
        "CrossQ's clipped log-std has SAC's lower bound -5 instead of the authors' -20",
        "tests/agents/test_crossq.py",
    ),
    m(
        "crossq-bn-after-relu-ignored",
        "jaxrl/networks.py",
        "            x = norm()(nn.relu(x)) if self.after_relu else nn.relu(norm()(x))",
        "            x = nn.relu(norm()(x))",
        "--bn-after-relu keeps BatchRenorm before the ReLU",
        CROSSQ_REF,
    ),
    m(
        "dmc-area-from-zero-return",
        "benchmarks/dmc_algos.py",
        "    y = np.concatenate([returns[:, :1], returns], axis=1)",
        "    y = np.concatenate([0 * returns[:, :1], returns], axis=1)",
        "the suite's area under the curve takes a return of 0 at env step 0, not the first",
        "tests/benchmarks/test_dmc_algos.py",
    ),
    m(
        "dmc-at-sac-time-by-steps",
        "benchmarks/dmc_algos.py",
        "                same_time = at(seconds, returns, s_seconds[-1])",
        "                same_time = at(steps, returns, s_steps[-1])",
        "the return at SAC's wall-clock is read at SAC's env steps",
        "tests/benchmarks/test_dmc_algos.py",
    ),
    # --- Offline RL: datasets, collection, the offline loop and its agents (issue 70). -------
    m(
        "minari-next-obs-is-obs",
        "jaxrl/data/minari_format.py",
        '        parts["next"].append(obs[1:])',
        '        parts["next"].append(obs[:-1])',
        "a loaded dataset's next observation is the row's own, not the one its step reached",
        "tests/data/test_minari_format.py",
    ),
    m(
        "minari-running-episode-not-truncated",
        "jaxrl/data/minari_format.py",
        "            truncations[-1] |= not ended[end, env]  # cut by the stream's end",
        "            pass",
        "an episode the collection's end cut is stored as neither terminated nor truncated",
        "tests/data/test_minari_format.py",
    ),
    m(
        "collect-truncation-as-termination",
        "jaxrl/data/collect.py",
        '                "terminated": stepped.done - truncated,',
        '                "terminated": stepped.done,',
        "collected time-limit ends are stored as terminations too",
        "tests/data/test_collect.py",
    ),
    m(
        "collect-noise-ignored",
        "jaxrl/data/collect.py",
        "action + noise * jax.random.normal(noise_key, action.shape)",
        "action + 0.0 * jax.random.normal(noise_key, action.shape)",
        "--noise adds nothing to the collected actions",
        "tests/data/test_collect.py",
    ),
    m(
        "edac-diversity-unnormalised",
        "jaxrl/agents/edac.py",
        "    unit = action_grads / (norm + 1e-10)",
        "    unit = action_grads",
        "EDAC's diversity term uses dot products of the raw action gradients, not cosines",
        "tests/agents/test_edac_update_reference.py",
    ),
    m(
        "edac-diversity-norm-nan-gradient",
        "jaxrl/agents/edac.py",
        "    norm = jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, squares, 1.0)), 0.0)",
        "    norm = jnp.linalg.norm(action_grads, axis=-1, keepdims=True)",
        "EDAC's gradient norm has a NaN gradient where a critic is flat in the action",
        "tests/agents/test_edac_update_reference.py",
    ),
    m(
        "edac-actor-reads-old-temperature",
        "jaxrl/agents/edac.py",
        "        state = state.replace(log_alpha=log_alpha)\n",
        "",
        "EDAC's actor and critics read the temperature the update started from, not the new one",
        "tests/agents/test_edac_update_reference.py",
    ),
    m(
        "td3-bc-lambda-differentiated",
        "jaxrl/agents/td3_bc.py",
        "    scale = alpha / jax.lax.stop_gradient(jnp.abs(q).mean())",
        "    scale = alpha / jnp.abs(q).mean()",
        "TD3+BC's lambda = alpha / mean|Q| is differentiated with the actor's loss",
        "tests/agents/test_td3_bc.py",
    ),
    m(
        "rebrac-penalty-where-next-action-unknown",
        "jaxrl/agents/rebrac.py",
        "    return beta * batch.next_action_known * distance",
        "    return beta * distance",
        "ReBRAC's critic penalty also on rows whose next action is unknown (episode ends)",
        "tests/agents/test_rebrac.py",
    ),
    m(
        "rebrac-actor-bc-mean-over-action-dims",
        "jaxrl/agents/rebrac.py",
        "    return jnp.mean(beta * ((policy_action - action) ** 2).sum(-1) - scale * q)",
        "    return jnp.mean(beta * ((policy_action - action) ** 2).mean(-1) - scale * q)",
        "ReBRAC's actor BC term averages over action dimensions (TD3+BC's) instead of summing",
        "tests/agents/test_rebrac.py",
    ),
    m(
        "sac-rnd-bonus-unscaled",
        "jaxrl/agents/sac_rnd.py",
        "        return errors(rnd.predictor.params, rnd, obs, action) / scale",
        "        return errors(rnd.predictor.params, rnd, obs, action)",
        "SAC-RND's bonus is the raw RND error, not divided by the training errors' std",
        "tests/agents/test_sac_rnd.py",
    ),
    m(
        "sac-rnd-actor-penalty-at-the-data-actions",
        "jaxrl/agents/sac_rnd.py",
        "            penalty = bonus(state.rnd, batch.obs, action)",
        "            penalty = bonus(state.rnd, batch.obs, batch.action)",
        "SAC-RND's actor is penalised at the dataset's actions instead of its own",
        "tests/agents/test_sac_rnd.py",
    ),
    m(
        "sac-rnd-critics-read-the-new-temperature",
        "jaxrl/agents/sac_rnd.py",
        "                -alpha * next_log_prob - penalty,",
        "                -jnp.exp(log_alpha.params) * next_log_prob - penalty,",
        "SAC-RND's critics' target reads the temperature after this update's step",
        "tests/agents/test_sac_rnd.py",
    ),
    m(
        "brax-normalizer-variance-not-summed",
        "jaxrl/brax/params.py",
        "        summed = var if ema else var * count\n",
        "        summed = var\n",
        "Brax's statistics get the variance where they keep the summed squared deviations",
        "tests/brax/test_params.py",
    ),
    m(
        "brax-layer-index-off-by-one",
        "jaxrl/brax/params.py",
        "        out[name.format(match.group(1))] = value",
        "        out[name.format(int(match.group(1)) + 1)] = value",
        "jaxrl's Dense_i becomes Brax's hidden_(i+1)",
        "tests/brax/test_params.py",
    ),
    m(
        "next-action-from-the-same-slot",
        "jaxrl/replay.py",
        "    next_action = _gather(buffer.data.action, (slot + 1) % buffer.capacity, env, shards)",
        "    next_action = _gather(buffer.data.action, slot, env, shards)",
        "the next action drawn is the row's own action, not its env's next one",
        "tests/test_replay.py",
    ),
    m(
        "next-action-known-at-the-newest-slot",
        "jaxrl/replay.py",
        "    known = (1.0 - rows.done) * (slot != newest)",
        "    known = 1.0 - rows.done",
        "the newest slot's next action counts as known (it is the ring's oldest row)",
        "tests/test_replay.py",
    ),
    m(
        "replay-dataset-ignores-the-ring-s-wrap",
        "jaxrl/data/collect.py",
        '    start = int(buffer["position"]) % capacity if size == capacity else 0',
        "    start = 0",
        "collect --replay writes a wrapped ring's rows from slot 0, not from its oldest",
        "tests/data/test_collect.py",
    ),
    m(
        "offline-stats-not-the-dataset-s",
        "jaxrl/loops/offline.py",
        "        if config.normalize_observations:\n            obs = dataset.data.obs[:, 0]",
        "        if False:\n            obs = dataset.data.obs[:, 0]",
        "an offline run normalises with empty statistics instead of the dataset's",
        "tests/loops/test_offline.py",
    ),
    m(
        "offline-step-is-env-steps",
        "jaxrl/run/rows.py",
        '        "step": updates + env_steps,',
        '        "step": env_steps,',
        "an offline run's rows and checkpoints count env steps (0) instead of its updates",
        "tests/loops/test_offline.py",
    ),
    m(
        "e2o-pair-weights-off-by-one",
        "jaxrl/agents/e2o.py",
        "    weights = (size - 1 - jnp.arange(size)) / (size * (size - 1) / 2)",
        "    weights = (size - jnp.arange(size)) / (size * (size + 1) / 2)",
        "E2O's WeightedMinPair counts each value as the minimum of one pair too many",
        "tests/agents/test_edac_update_reference.py",
    ),
    m(
        "e2o-diversity-kept-online",
        "jaxrl/agents/e2o.py",
        "        total = loss + 0.5 * config.eta * weight * spread",
        "        total = loss + 0.5 * config.eta * spread",
        "E2O keeps EDAC's pessimistic diversity term at full weight after the switch to online",
        "tests/agents/test_edac_update_reference.py",
    ),
    m(
        "e2o-decay-from-run-start",
        "jaxrl/agents/e2o.py",
        "        done = (step - online_from).astype(jnp.float32)",
        "        done = step.astype(jnp.float32)",
        "E2O's pessimism decays from the run's first update, not from the switch to online",
        "tests/agents/test_e2o.py",
    ),
    m(
        "e2o-switch-remarked",
        "jaxrl/agents/e2o.py",
        "online_from=jnp.where(state.online_from < 0, state.step, state.online_from)",
        "online_from=state.step",
        "E2O's switch is marked again at every online chunk, restarting the decay each time",
        "tests/agents/test_e2o.py",
    ),
    m(
        "e2o-ucb-ignores-std",
        "jaxrl/agents/e2o.py",
        "    score = q.mean(0) + ucb_lambda * q.std(0)",
        "    score = q.mean(0)",
        "E2O's exploration takes the candidate of the highest mean, not of the upper bound",
        "tests/agents/test_e2o.py",
    ),
    m(
        "mixed-batch-without-dataset",
        "jaxrl/loops/offpolicy.py",
        "    from_dataset = round(config.offline_ratio * config.batch_size)"
        " if dataset is not None else 0",
        "    from_dataset = 0",
        "online batches never read the dataset, whatever --offline-ratio says",
        "tests/loops/test_offline.py::test_mixed_batches_take_their_share_of_rows_from_the_dataset",
        "tests/loops/test_offline.py::test_the_online_batches_read_the_dataset_at_their_ratio",
    ),
    m(
        "mixed-batch-ratio-inverted",
        "jaxrl/loops/offpolicy.py",
        "    online = draw(buffer, online_key, gamma, config.batch_size - from_dataset)\n"
        "    offline = draw(dataset, offline_key, gamma, from_dataset)",
        "    online = draw(buffer, online_key, gamma, from_dataset)\n"
        "    offline = draw(dataset, offline_key, gamma, config.batch_size - from_dataset)",
        "online batches draw --offline-ratio of their rows from the replay, not from the dataset",
        "tests/loops/test_offline.py::test_mixed_batches_take_their_share_of_rows_from_the_dataset",
    ),
    m(
        "online-chunk-never-switches",
        "jaxrl/loops/offpolicy.py",
        "    if agent.begin_online is None:\n        return state",
        "    if True:\n        return state",
        "the online chunks never tell the agent it is online (E2O keeps its offline target)",
        "tests/loops/test_offline.py::"
        "test_an_offline_to_online_run_fine_tunes_online_after_its_offline_updates",
    ),
    m(
        "init-from-drops-the-statistics",
        "jaxrl/run/state.py",
        "    return state.replace(agent=agent, obs_stats=stats)",
        "    return state.replace(agent=agent)",
        "--init-from takes the agent but not the observation statistics it was trained with",
        "tests/loops/test_offline.py::test_a_run_starts_from_a_finished_offline_run_with_init_from",
    ),
    m(
        "pretrained-agent-warms-up",
        "jaxrl/loops/offpolicy.py",
        '        if config.warmup_actions == "uniform" and not config.pretrained:',
        '        if config.warmup_actions == "uniform":',
        "an agent trained offline acts uniformly at random until learning_starts online",
        "tests/loops/test_offline.py::test_a_pretrained_agent_acts_from_its_first_online_step",
    ),
    m(
        "sampled-eval-one-draw",
        "jaxrl/loops/base.py",
        "                step_key, noise = jax.random.fold_in(act_key, t), 1.0",
        "                step_key, noise = act_key, 1.0",
        "sampled evaluation draws its noise once and repeats it every step",
        "tests/loops/test_eval_actions.py",
    ),
    m(
        "brax-ppo-drops-discounting",
        "jaxrl/brax/ppo.py",
        '            gamma=s["discounting"],',
        "",
        "the drop-in ignores Brax's discounting (jaxrl's default gamma 0.99 trains instead)",
        "tests/loops/test_ppo_loop_brax_parity.py::"
        "test_the_drop_in_trains_this_loop_from_brax_s_own_arguments",
    ),
    m(
        "brax-ppo-episode-length-unit",
        "jaxrl/brax/arguments.py",
        '    return -(-positive(s, "episode_length") // repeat)',
        '    return positive(s, "episode_length")',
        "Brax's episode_length (physics steps) taken as control steps under action_repeat",
        "tests/brax/test_ppo_train.py",
    ),
    m(
        "brax-ppo-progress-in-control-steps",
        "jaxrl/brax/ppo.py",
        "            progress_fn(step * repeat, pending.pop())",
        "            progress_fn(step, pending.pop())",
        "progress_fn gets jaxrl's control steps, not Brax's physics steps (x action_repeat)",
        "tests/brax/test_ppo_train.py",
    ),
    m(
        "brax-ppo-renamed-metric",
        "jaxrl/brax/metrics.py",
        '            "eval/episode_reward": float(result["eval_return"]),',
        '            "eval/episode_return": float(result["eval_return"]),',
        "the evaluation's return reported under another key than Brax's eval/episode_reward",
        "tests/brax/test_ppo_train.py",
    ),
    m(
        "brax-ppo-restores-the-value-anyway",
        "jaxrl/brax/ppo.py",
        "    if not restore_value_fn:",
        "    if False:",
        "restore_value_fn=False still restores the value network",
        "tests/brax/test_ppo_train.py::test_restore_params_and_restore_value_fn",
    ),
    m(
        "brax-ppo-checkpoint-in-control-steps",
        "jaxrl/brax/ppo.py",
        "            save(step * repeat, params)",
        "            save(step, params)",
        "checkpoints named by jaxrl's control steps, not Brax's physics steps",
        "tests/brax/test_ppo_train.py::test_checkpoints_are_brax_s_both_ways",
    ),
    m(
        "brax-sac-prefill-rounded-down",
        "jaxrl/brax/sac.py",
        "    prefill = -(-min_replay // envs)",
        "    prefill = min_replay // envs",
        "Brax's prefill of ceil(min_replay_size / num_envs) steps rounded down",
        "tests/brax/test_sac_train.py::test_brax_s_units_become_jaxrl_s",
    ),
    m(
        "brax-sac-progress-in-control-steps",
        "jaxrl/brax/sac.py",
        "            progress_fn(step * repeat, pending.pop())",
        "            progress_fn(step, pending.pop())",
        "the SAC door's progress_fn gets control steps, not Brax's physics steps",
        "tests/brax/test_sac_train.py",
    ),
    m(
        "brax-sac-target-entropy",
        "jaxrl/brax/sac.py",
        "            target_entropy_scale=0.5,",
        "            target_entropy_scale=1.0,",
        "the SAC door trains with the paper's target entropy -|A|, not Brax's -|A|/2",
        "tests/brax/test_sac_train.py::test_the_configs_are_the_parity_suites_sac_parity_flags",
    ),
    m(
        "brax-sac-renamed-metric",
        "jaxrl/brax/metrics.py",
        '            "training/critic_loss": row["critic_loss"] / self.agent.num_critics,',
        '            "training/q_loss": row["critic_loss"] / self.agent.num_critics,',
        "the SAC critic's loss reported under another key than Brax's training/critic_loss",
        "tests/brax/test_sac_train.py",
    ),
    m(
        "brax-sac-critic-loss-summed",
        "jaxrl/brax/metrics.py",
        '            "training/critic_loss": row["critic_loss"] / self.agent.num_critics,',
        '            "training/critic_loss": row["critic_loss"],',
        "the SAC door reports jaxrl's sum over the critics where Brax reports their mean",
        "tests/brax/test_sac_train.py::test_the_critic_loss_is_brax_s_mean_over_the_critics",
    ),
    m(
        "brax-sac-eval-on-nominal-physics",
        "jaxrl/brax/sac.py",
        '            randomize_eval=s["randomization_fn"] is not None,',
        "            randomize_eval=False,",
        "the SAC door evaluates on nominal physics where Brax randomizes its evaluator's envs",
        "tests/brax/test_sac_train.py::test_brax_s_units_become_jaxrl_s",
    ),
    m(
        "prefill-leaves-the-statistics",
        "jaxrl/loops/offpolicy.py",
        "            obs_stats=stats,\n            noise_scale=noise_scale,\n            key=key,",
        "            obs_stats=state.obs_stats,\n"
        "            noise_scale=noise_scale,\n            key=key,",
        "the replay prefill does not feed the observation normaliser",
        "tests/brax/test_sac_train.py::"
        "test_a_prefill_then_chunks_trains_as_chunks_that_stored_it_first",
    ),
    m(
        "prefill-draws-its-own-keys",
        "jaxrl/loops/offpolicy.py",
        "        key, act_key, _ = jax.random.split(state.key, 3)\n        env_state",
        "        key, _, act_key = jax.random.split(state.key, 3)\n        env_state",
        "the prefill acts with another of its keys than the chunk's iteration does",
        "tests/brax/test_sac_train.py::"
        "test_a_prefill_then_chunks_trains_as_chunks_that_stored_it_first",
    ),
    m(
        "export-without-normaliser",
        "jaxrl/export/policy.py",
        "    apply = make_policy(policy.config, agents",
        "    apply = make_policy(dataclasses.replace(policy.config, normalize_observations=False), "
        "agents",
        "the exported graph leaves out the run's observation normalisation",
        "tests/export/test_onnx.py::test_every_algorithm_s_graph_is_its_greedy_policy",
    ),
    m(
        "export-tanh-left-out",
        "jaxrl/export/graph.py",
        '    "tanh": "Tanh",',
        '    "tanh": "Identity",',
        "the exported graph leaves out the squashing into the action space (tanh)",
        "tests/export/test_onnx.py::test_a_sac_graph_is_numpy_s_normalise_mlp_and_tanh",
    ),
    m(
        "export-split-reads-the-wrong-half",
        "jaxrl/export/graph.py",
        "            bounds = [g.const([start], np.int64), g.const([start + int(size)], np.int64)]",
        "            bounds = [g.const([-int(size)], np.int64), g.const([_INT64_MAX], np.int64)]",
        "a split's pieces all read its last part (the actor's log-std half as its mean)",
        "tests/export/test_onnx.py::test_a_sac_graph_is_numpy_s_normalise_mlp_and_tanh",
    ),
    m(
        "crossq-acts-with-batch-statistics",
        "jaxrl/networks.py",
        "            mean, var = running_mean.value, running_var.value",
        "            mean, var = x.mean(axes), x.var(axes)",
        "CrossQ's BatchRenorm in evaluation mode normalises with the batch's statistics, not "
        "the running ones",
        "tests/export/test_onnx.py::test_a_crossq_graph_normalises_with_the_running_statistics",
    ),
    m(
        "brax-export-without-normaliser",
        "jaxrl/export/brax_checkpoint.py",
        "preprocess_observations_fn=running_statistics.normalize if normalize else _identity,",
        "preprocess_observations_fn=_identity,",
        "a Brax checkpoint's policy exported without its observation normaliser",
        "tests/export/test_onnx.py::test_a_brax_checkpoint_exports_brax_s_greedy_policy",
    ),
    m(
        "policy-file-reads-the-wrong-end",
        "jaxrl/run/runs.py",
        "zip(leaves, reads[: len(leaves)], strict=True)",
        "zip(leaves, reads[-len(leaves) :], strict=True)",
        "the policy file keeps the arrays at the wrong end of the jaxpr's inputs (the "
        "statistics' and observation's flags read as the agent's)",
        "tests/export/test_onnx.py::test_a_policy_file_holds_what_the_greedy_action_reads",
    ),
    m(
        "policy-file-calls-read-nothing",
        "jaxrl/export/graph.py",
        "            reads = inputs_read(_body(eqn).jaxpr, wanted)",
        "            reads = [False] * len(eqn.invars)",
        "the policy file's liveness takes a nested call (jit, closed_call) to read none of its "
        "inputs",
        "tests/export/test_onnx.py::test_a_policy_file_holds_what_the_greedy_action_reads",
    ),
    m(
        "policy-file-loads-by-another-key",
        "jaxrl/run/runs.py",
        "        value = arrays.get(jax.tree_util.keystr(path))",
        "        value = arrays.get(str(path))",
        "a policy file's arrays are looked up by another spelling of their paths (all zeros)",
        "tests/export/test_onnx.py::test_a_policy_file_holds_what_the_greedy_action_reads",
    ),
    m(
        "brax-checkpoint-oldest-step",
        "jaxrl/export/brax_checkpoint.py",
        "        return steps[max(steps)]",
        "        return steps[min(steps)]",
        "a folder of Brax checkpoints gives its oldest step's policy, not its newest",
        "tests/export/test_onnx.py::test_load_policy_reads_a_brax_checkpoint",
    ),
    m(
        "offpolicy-door-options-ignored",
        "jaxrl/brax/sac.py",
        "    return cls(**{**values, **options})",
        "    return cls(**values)",
        "the other algorithms' Brax door drops the algorithm's own options",
        "tests/brax/test_offpolicy_train.py",
    ),
    m(
        "offpolicy-door-critic-lr-left-at-default",
        "jaxrl/brax/sac.py",
        '    values = {"actor_lr": s["learning_rate"], "critic_lr": s["learning_rate"]}',
        '    values = {"actor_lr": s["learning_rate"]}',
        "the other algorithms' Brax door sets the actor's learning rate but not the critics'",
        "tests/brax/test_offpolicy_train.py",
    ),
    m(
        "offpolicy-door-explores-greedily",
        "jaxrl/brax/sac.py",
        "            if deterministic:\n                return greedy(state, stats, obs), {}",
        "            if True:\n                return greedy(state, stats, obs), {}",
        "the other algorithms' make_policy acts greedily where asked to explore",
        "tests/brax/test_offpolicy_train.py",
    ),
    m(
        "playground-preset-without-prefill",
        "jaxrl/brax/playground.py",
        "        rows = plan.prefill * config.num_envs",
        "        rows = plan.prefill",
        "--preset playground's SAC counts Brax's prefill in steps of all envs, not rows",
        "tests/brax/test_playground_preset.py",
    ),
    m(
        "playground-preset-factory-options-dropped",
        "jaxrl/brax/playground.py",
        '        values["network_factory"] = functools.partial(make, **factory)',
        '        values["network_factory"] = functools.partial(make)',
        "--preset playground drops the options of Playground's network_factory",
        "tests/brax/test_playground_preset.py",
    ),
    m(
        "sim-to-sim-forwards-after-the-target-moves",
        "docs/examples/reacher_sim_to_sim.py",
        "        self.data.mocap_pos[self.target, :2] = target_xy\n        return self.observe()",
        "        self.data.mocap_pos[self.target, :2] = target_xy\n"
        "        mujoco.mj_forward(self.model, self.data)\n        return self.observe()",
        "the sim-to-sim reset reads its first observation with the target in place, where "
        "Playground's reads it before the target moves",
        "tests/export/test_sim_to_sim.py",
    ),
    m(
        "sim-to-sim-one-physics-step",
        "docs/examples/reacher_sim_to_sim.py",
        "        self.substeps = round(CTRL_DT / SIM_DT)",
        "        self.substeps = 1",
        "the sim-to-sim env takes one physics step per control step instead of four",
        "tests/export/test_sim_to_sim.py",
    ),
    m(
        "sim-to-sim-finger-to-target-reversed",
        "docs/examples/reacher_sim_to_sim.py",
        "        return xpos[self.target_geom, :2] - xpos[self.finger_geom, :2]",
        "        return xpos[self.finger_geom, :2] - xpos[self.target_geom, :2]",
        "the sim-to-sim observation's finger-to-target vector points the other way",
        "tests/export/test_sim_to_sim.py",
    ),
    m(
        "brax-eval-env-ignored",
        "jaxrl/loops/base.py",
        "    return env, _eval_envs(config, eval_base, eval_dr, sizes)",
        "    return env, _eval_envs(config, base, eval_dr, sizes)",
        "a separate evaluation env (Brax's eval_env, envs.WithEvalEnv) is ignored: evaluation "
        "runs in the training env",
        "tests/brax/test_sac_train.py::test_eval_env_is_where_evaluation_runs",
    ),
    m(
        "brax-ppo-eval-env-without-evaluations",
        "jaxrl/brax/ppo.py",
        'trainer_env=arguments.checked_envs(env, s["eval_env"] if s["run_evals"] else None)',
        'trainer_env=arguments.checked_envs(env, s["eval_env"])',
        "the PPO door takes eval_env even with run_evals=False, where Brax ignores it",
        "tests/brax/test_ppo_train.py::test_eval_env_is_where_evaluation_runs",
    ),
    m(
        "playground-preset-env-options-dropped",
        "jaxrl/config/resolve.py",
        "        env_options = parse_env_options(known.env_option or ())",
        "        env_options = {}",
        "--preset playground plans on Playground's default task, without the --env-option",
        "tests/brax/test_playground_preset.py::"
        "test_env_options_reach_the_env_the_config_is_planned_on",
    ),
    m(
        "default-evals-without-a-floor",
        "jaxrl/config/train.py",
        "        return max(-(-self.total_steps // DEFAULT_EVALS), DEFAULT_EVAL_EVERY)",
        "        return max(-(-self.total_steps // DEFAULT_EVALS), 1)",
        "a run with no cadence given evaluates 20 times however short, not at most every 5,000 "
        "env steps",
        "tests/run/test_runs.py::test_the_evaluation_cadence_defaults_to_a_count_per_run",
    ),
    m(
        "resume-keeps-num-evals",
        "jaxrl/run/driver.py",
        "            config, total_steps=chunks * per_chunk, eval_every=per_chunk, num_evals=None",
        "            config, total_steps=chunks * per_chunk, eval_every=per_chunk",
        "--steps on resume pins the chunk's length but leaves num_evals set beside it",
        "tests/run/test_runs.py::test_a_run_with_num_evals_extended_keeps_its_chunks",
    ),
    m(
        "sac-rnd-actor-through-fixed-net",
        "jaxrl/agents/sac_rnd.py",
        "        fixed = jax.lax.stop_gradient(target_net.apply(rnd.target_params, s, a))",
        "        fixed = target_net.apply(rnd.target_params, s, a)",
        "the actor's gradient of the anti-exploration bonus also passes through the RND's fixed "
        "network (the reference stops it there)",
        "tests/agents/test_sac_rnd.py",
    ),
    m(
        "brax-eval-sps-in-control-steps",
        "jaxrl/brax/metrics.py",
        "        steps = config.eval_envs * self.episode_length",
        "        steps = config.eval_envs * config.episode_length",
        "the door's eval/sps counts control steps where Brax counts physics steps",
        "tests/brax/test_ppo_train.py::test_progress_comes_at_brax_s_steps_with_brax_s_keys",
    ),
    m(
        "brax-eval-sps-of-jaxrl-s-episodes",
        "jaxrl/brax/metrics.py",
        "        self.episode_length = episode_length or config.episode_length * action_repeat",
        "        self.episode_length = config.episode_length * action_repeat",
        "eval/sps counts jaxrl's episodes (time limit x action_repeat), not Brax's episode_length",
        "tests/brax/test_sac_train.py::test_progress_comes_at_brax_s_steps_with_brax_s_keys",
    ),
    m(
        "env-pair-sizes-read-every-split",
        "envs/registry.py",
        "    if env._sizes_agree:\n        return train, evaluate\n",
        "",
        "a WithEvalEnv's sizes read at every split (Playground's trace a reset each time)",
        "tests/envs/test_registry.py::test_an_env_pair_s_sizes_are_compared_once_and_a_misfit_named",
    ),
    m(
        "door-env-pair-rebuilt-after-its-check",
        "jaxrl/brax/arguments.py",
        "    return both\n",
        "    return envs.WithEvalEnv(env, eval_env)\n",
        "the door checks one env pair and hands the driver another, compared again",
        "tests/brax/test_ppo_train.py::test_eval_env_is_where_evaluation_runs",
    ),
    m(
        "metric-sums-of-the-next-episode",
        "envs/wrappers.py",
        '        info["finished_metrics"] = reached.info["episode_metrics"]',
        '        info["finished_metrics"] = state.info["episode_metrics"]',
        "a finished episode's metric sums read after the auto-reset (the next episode's zeros)",
        "tests/envs/test_registry.py::"
        "test_metric_sums_give_each_finished_episode_its_metrics_summed",
    ),
    m(
        "metric-sums-lag-a-step",
        "envs/wrappers.py",
        "v + jnp.asarray(stepped.metrics[k], jnp.float32)",
        "v + jnp.asarray(state.metrics[k], jnp.float32)",
        "each step adds the metrics of the state it left, not the one it reached",
        "tests/envs/test_registry.py::"
        "test_metric_sums_give_each_finished_episode_its_metrics_summed",
    ),
    m(
        "training-log-metrics-in-jaxrl-order",
        "jaxrl/brax/ppo.py",
        '            **{k: brax_order(v) for k, v in finished["metrics"].items()},',
        "            **{k: np.asarray(v).T.reshape(-1, 1)"
        ' for k, v in finished["metrics"].items()},',
        "the training episodes' metric sums fed to Brax's logger out of Brax's row order",
        "tests/brax/test_ppo_train.py::test_training_logs_keep_brax_s_order_units_and_window",
    ),
    m(
        "start-evaluation-takes-the-training-key",
        "jaxrl/loops/base.py",
        "jax.random.fold_in(key, START_EVALUATION))",
        "key)",
        "the step-0 evaluation draws with the key training goes on with, not one of its own",
        "tests/run/test_runs.py::"
        "test_the_step_0_evaluation_is_the_untrained_policy_s_and_leaves_training_alone",
    ),
    m(
        "start-row-not-in-the-files",
        "jaxrl/run/runner.py",
        "            self._write(self.start_row)\n",
        "",
        "the step-0 evaluation reported but never written to metrics.jsonl, .csv, TensorBoard",
        "tests/run/test_runs.py::test_log_files_and_tensorboard",
    ),
    m(
        "start-row-lost-on-resume",
        "jaxrl/run/runner.py",
        '                meta = {**meta, "start_row": self.start_row}',
        "                pass",
        "checkpoints do not keep the step-0 row: a resumed run's files lose it",
        "tests/run/test_runs.py::test_off_policy_resume_is_bit_identical",
    ),
    m(
        "csv-header-of-the-first-row",
        "jaxrl/logs.py",
        "        if self._csv is None or not set(row) <= set(self._csv.fieldnames):",
        "        if self._csv is None:",
        "metrics.csv keeps the step-0 row's columns: the chunks' losses are dropped",
        "tests/run/test_runs.py::test_log_files_and_tensorboard",
    ),
    m(
        "door-env-size-read-eagerly",
        "jaxrl/brax/arguments.py",
        "    return envs.traced_size(env)",
        "    return env",
        "the door reads a Brax env's observation size through Brax's eager reset at each read",
        "tests/envs/test_registry.py::test_an_env_object_s_observation_size_is_traced_once",
    ),
    m(
        "door-jaxrl-choices-agent-part-dropped",
        "jaxrl/brax/ppo.py",
        '            agent_config = dataclasses.replace(agent_config, **JAXRL_CHOICES["agent"])\n',
        "",
        "jaxrl_choices=True changes the env's autoreset but trains with Brax's loss choices",
        "tests/brax/test_ppo_train.py::test_jaxrl_choices_changes_the_choices_and_nothing_else",
    ),
    m(
        "door-jaxrl-choices-keeps-brax-truncation",
        "jaxrl/brax/ppo.py",
        '        "truncation": "bootstrap",\n',
        '        "truncation": "mask",\n',
        "jaxrl_choices=True keeps Brax's masked truncation while claiming jaxrl's",
        "tests/brax/test_ppo_train.py::test_jaxrl_choices_changes_the_choices_and_nothing_else",
    ),
    m(
        "door-jaxrl-choices-positional",
        "jaxrl/brax/ppo.py",
        "    run_evals: bool = True,\n    *,\n    jaxrl_choices",
        "    run_evals: bool = True,\n    jaxrl_choices",
        "jaxrl_choices takes a position after Brax's arguments (a positional call could reach it)",
        "tests/brax/test_ppo_train.py::test_the_signature_is_brax_s",
    ),
    m(
        "brax-ppo-gae-lambda-dropped",
        "jaxrl/brax/ppo.py",
        '            gae_lambda=s["gae_lambda"],\n',
        "",
        "the door drops Brax's gae_lambda (jaxrl's default, 0.95, whatever is given)",
        "tests/brax/test_ppo_train.py::test_each_hyperparameter_reaches_its_jaxrl_field",
    ),
    m(
        "brax-ppo-vf-coefficient-dropped",
        "jaxrl/brax/ppo.py",
        '            value_coef=s["vf_loss_coefficient"],\n',
        "",
        "the door drops Brax's vf_loss_coefficient (jaxrl's default, 0.5, whatever is given)",
        "tests/brax/test_ppo_train.py::test_each_hyperparameter_reaches_its_jaxrl_field",
    ),
    m(
        "brax-ppo-normalize-advantage-ignored",
        "jaxrl/brax/ppo.py",
        '            normalize_advantages=bool(s["normalize_advantage"]),\n',
        "            normalize_advantages=True,\n",
        "the door normalises advantages even with normalize_advantage=False",
        "tests/brax/test_ppo_train.py::test_each_hyperparameter_reaches_its_jaxrl_field",
    ),
    m(
        "obs-stats-until-ignored",
        "jaxrl/normalization.py",
        "    if until:\n",
        "    if False:\n",
        "the statistics go on learning past normalize_until_count",
        "tests/brax/test_params.py::test_the_statistics_learn_as_brax_s_in_either_mode",
    ),
    m(
        "obs-std-eps-dropped",
        "jaxrl/normalization.py",
        "jnp.sqrt(stats.var + (1e-8 + std_eps))",
        "jnp.sqrt(stats.var + 1e-8)",
        "observations normalised without normalize_observations_std_eps",
        "tests/brax/test_params.py::test_the_statistics_learn_as_brax_s_in_either_mode",
    ),
    m(
        "brax-ema-statistics-held-as-welford",
        "jaxrl/brax/params.py",
        '    ema = mode == "ema"\n',
        "    ema = False\n",
        "an 'ema' run's statistics are returned and checkpointed in Welford's layout",
        "tests/brax/test_params.py::test_the_statistics_learn_as_brax_s_in_either_mode",
    ),
    m(
        "brax-ppo-until-count-in-welford",
        "jaxrl/brax/ppo.py",
        'int(until) if mode == "ema" and until is not None else 0',
        "int(until) if until is not None else 0",
        "normalize_until_count stops the statistics in Welford mode, where Brax ignores it",
        "tests/brax/test_ppo_train.py::test_brax_s_normaliser_modes_and_options_reach_the_run",
    ),
    m(
        "brax-full-reset-ignored",
        "jaxrl/brax/factories.py",
        '    return "random" if options.get("full_reset") else "first"\n',
        '    return "first"\n',
        "Playground's wrapper with full_reset=True restarts finished envs at their first state",
        "tests/brax/test_ppo_train.py::test_wrappers_and_devices_are_taken_as_brax_takes_them",
    ),
    m(
        "brax-dict-stats-unread-entries-dropped",
        "jaxrl/brax/params.py",
        """        if key.startswith("pixels/"):  # Brax's normaliser leaves pixels out\n""",
        "        if key not in kept:  # only the entries the networks read\n",
        "the returned normaliser lacks the entries no network reads (Brax cannot resume from it)",
        "tests/brax/test_ppo_train.py"
        "::test_dict_observations_give_brax_s_params_and_checkpoints_both_ways",
    ),
    m(
        "brax-dict-stats-critic-as-actor",
        "jaxrl/brax/params.py",
        "{actor: stats[ACTOR], critic: stats[CRITIC]} if isinstance(stats, dict)",
        "{actor: stats[ACTOR], critic: stats[ACTOR]} if isinstance(stats, dict)",
        "the critic's entry is returned with the actor's statistics",
        "tests/brax/test_ppo_train.py"
        "::test_dict_observations_give_brax_s_params_and_checkpoints_both_ways",
    ),
    m(
        "playground-object-action-repeat-dropped",
        "envs/registry.py",
        '        or config_value(base, "action_repeat")\n',
        "",
        "a Playground env object's config action_repeat ignored: each action applied once",
        "tests/envs/test_own_env.py"
        "::test_a_playground_env_object_brings_its_config_s_time_limit_and_action_repeat",
    ),
    m(
        "playground-object-episode-length-dropped",
        "envs/registry.py",
        '        or config_value(base, "episode_length")\n',
        "",
        "a Playground env object's config time limit ignored: jaxrl.train(env=...) refuses it",
        "tests/envs/test_own_env.py"
        "::test_a_playground_env_object_brings_its_config_s_time_limit_and_action_repeat",
    ),
]


def repository_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def pytest(copy: pathlib.Path, targets: list[str], timeout: float) -> tuple[int, str]:
    # -n 0: one process per mutant (the script checks several mutants at once itself).
    command = [sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-m", "not slow"]
    command += ["-p", "no:cacheprovider", "--no-header", *targets]
    env = {**os.environ, "JAXRL_COMPILE_CACHE": "0"}
    try:
        done = subprocess.run(
            command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return -1, "timed out"
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return done.returncode, (failed[0] if failed else done.stdout.strip().splitlines()[-1])


def check(mutant: Mutant, copy: pathlib.Path, timeout: float) -> dict:
    target = copy / mutant.path
    original = target.read_text()
    if original.count(mutant.old) != 1:
        return {"verdict": "stale", "detail": f"text to mutate found {original.count(mutant.old)}x"}
    target.write_text(original.replace(mutant.old, mutant.new))
    start = time.perf_counter()
    try:
        code, detail = pytest(copy, list(mutant.tests), timeout)
        stage = "targeted tests"
        if code == 0:
            code, detail = pytest(copy, ["tests"], timeout)
            stage = "whole fast suite"
    finally:
        target.write_text(original)
    verdict = {0: "MISSED", 1: "caught"}.get(code, "invalid")
    return {
        "verdict": verdict,
        "detail": f"{stage}: {detail}",
        "seconds": time.perf_counter() - start,
    }


VERDICTS = ("caught", "MISSED", "invalid", "stale")
NOT_RUN = "not run"
COLUMNS = (
    "mutant",
    "file",
    "what it breaks",
    "should be caught by",
    "result",
    "last run",
    "first failure",
    "s",
    "id",
)


def mutant_id(mutant: Mutant) -> str:
    """What a result holds for: the mutant's file, text and edit (not its tests or words)."""
    text = "\0".join((mutant.path, mutant.old, mutant.new))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _cells(line: str) -> list[str]:
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def read_report(path: pathlib.Path = REPORT) -> dict[str, dict]:
    """The results a report records, by mutant name: id, verdict, date, detail, seconds
    ("not run" rows left out)."""
    results = {}
    lines = path.read_text().splitlines() if path.exists() else []
    for cells in (_cells(line) for line in lines if line.startswith("| ")):
        if len(cells) != len(COLUMNS) or cells[0] == COLUMNS[0]:
            continue
        row = dict(zip(COLUMNS, cells, strict=True))
        if row["result"] != NOT_RUN:
            results[row["mutant"]] = {
                "id": row["id"],
                "verdict": row["result"],
                "date": row["last run"],
                "detail": row["first failure"],
                "seconds": float(row["s"] or 0),
            }
    return results


def render(results: dict[str, dict]) -> str:
    """tests/MUTANTS.md: every mutant of MUTANTS, in order, with its result where `results`
    holds one for the mutant as it is defined now, "not run" elsewhere."""
    current = {
        mutant.name: results[mutant.name]
        for mutant in MUTANTS
        if mutant.name in results and results[mutant.name]["id"] == mutant_id(mutant)
    }
    counts = Counter(result["verdict"] for result in current.values())
    counts[NOT_RUN] = len(MUTANTS) - len(current)
    tally = ", ".join(f"{counts[v]} {v}" for v in (*VERDICTS, NOT_RUN) if counts[v])
    lines = [
        "# Mutation self-check",
        "",
        "Written by `python -m tests.mutants` (tests/mutants.py) from the mutants it defines and",
        "the last result of each; tests/test_structure.py checks that it lists exactly those",
        "mutants, as defined now. A result is that of the last run that checked the mutant (its",
        "date under `last run`); code changed since may change it. A mutant no run has checked as",
        'it is defined now (its file, text and edit: `id`) is "not run". `python -m tests.mutants`',
        "checks every mutant (over 30 minutes on 2 cores), `--only NAME,...` those named, and",
        "`--report` rewrites this file from the definitions and the results it holds.",
        "",
        f"**{len(MUTANTS)} mutants: {tally}** (fast tests, `-m 'not slow'`).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for mutant in MUTANTS:
        result = current.get(mutant.name)
        cells = [mutant.name, mutant.path, mutant.description, ", ".join(mutant.tests)]
        if result:
            cells += [result["verdict"], result["date"], result["detail"]]
            cells += [f"{result['seconds']:.0f}"]
        else:
            cells += [NOT_RUN, "", "", ""]
        cells.append(mutant_id(mutant))
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def record(results: dict[str, dict], mutant: Mutant, result: dict) -> None:
    """`result` of a run today as the mutant's last."""
    results[mutant.name] = {
        "id": mutant_id(mutant),
        "verdict": result["verdict"],
        "date": time.strftime("%Y-%m-%d"),
        "detail": " ".join(result["detail"].split()),
        "seconds": result.get("seconds", 0.0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated filters on mutant names")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per pytest run")
    parser.add_argument("--no-report", action="store_true", help=f"do not rewrite {REPORT.name}")
    parser.add_argument(
        "--report", action="store_true", help=f"rewrite {REPORT.name}, running no mutant"
    )
    parser.add_argument("--jobs", type=int, default=2, help="mutants checked at once")
    args = parser.parse_args(argv)
    recorded = read_report()
    if args.report:
        REPORT.write_text(render(recorded))
        return 0
    filters = [f for f in args.only.split(",") if f]
    chosen = [x for x in MUTANTS if not filters or any(f in x.name for f in filters)]
    if args.list:
        for mutant in chosen:
            print(f"{mutant.name:<42} {mutant.path:<28} {mutant.description}")
        return 0
    if not chosen:
        print(f"no mutant matches {args.only!r}; --list shows them", file=sys.stderr)
        return 2
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="jaxrl-mutants-") as scratch:
        # One copy of the tree per worker: each mutates and restores one file at a time.
        copies = [pathlib.Path(scratch) / str(i) for i in range(max(args.jobs, 1))]
        for copy in copies:
            for name in repository_files():
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, copy / name)
        free = list(copies)

        def run_one(mutant: Mutant) -> dict:
            copy = free.pop()
            try:
                result = check(mutant, copy, args.timeout)
            finally:
                free.append(copy)
            print(f"{result['verdict']:>7}  {mutant.name:<42} {result['detail']}", flush=True)
            with lock:  # the report after every mutant: an interrupted run keeps its results
                record(recorded, mutant, result)
                if not args.no_report:
                    REPORT.write_text(render(recorded))
            return result

        with concurrent.futures.ThreadPoolExecutor(len(copies)) as pool:
            results = list(zip(chosen, pool.map(run_one, chosen), strict=True))
    missed = [m.name for m, r in results if r["verdict"] != "caught"]
    print(
        f"{len(results) - len(missed)} of {len(results)} caught"
        + (f"; not: {missed}" if missed else "")
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
