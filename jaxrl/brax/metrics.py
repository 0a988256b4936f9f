"""jaxrl's rows of metrics under Brax's keys, in Brax's units.

Brax's `ppo.train` (and `sac.train`, with its SAC losses) gives `progress_fn` the
evaluator's `eval/...` keys and the training step's `training/...` keys
(brax/training/acting.py `Evaluator.run_evaluation`, agents/ppo/train.py
`training_epoch_with_timing`). Here they come from a jaxrl row:
episode lengths and steps per second in physics steps (x action_repeat), the losses as
Brax's loss writes them (`v_loss` is vf_loss_coefficient x jaxrl's 0.5-scaled squared error,
`entropy_loss` is -entropy_cost x the entropy). `training/kl_mean` is Schulman's estimate of
KL(old || new) over the minibatches, where Brax computes the two Gaussians' KL in closed form.
The env's own metrics are `eval/episode_<name>` and `_std`, summed over each episode as Brax's
evaluator sums them (`TrainConfig.eval_env_metrics`). Evaluation time: jaxrl evaluates inside
its training program after step 0, so only the step-0 evaluation, a program of its own, is
timed apart (its compile included, as Brax's first evaluation includes it): `eval/walltime` is
that time at every step, `eval/epoch_eval_time` and `eval/sps` come at step 0 only; the later
evaluations' time is in `training/walltime`.
"""

from __future__ import annotations

import time
from typing import Any

ENV_METRIC = "eval_episode/"  # jaxrl's evaluation's prefix of the env's own metrics


class Report:
    """Brax's metrics of jaxrl's rows for one run (`config`, `agent_config`)."""

    def __init__(
        self,
        config: Any,
        agent_config: Any,
        action_repeat: int,
        run_evals: bool,
        episode_length: int | None = None,
    ):
        """`episode_length`: Brax's argument, in physics steps (None: the env's own, of
        control steps, was used), which Brax's `eval/sps` counts per evaluation env."""
        self.config, self.agent = config, agent_config
        self.repeat, self.run_evals = action_repeat, run_evals
        self.episode_length = episode_length or config.episode_length * action_repeat
        self.eval_seconds = 0.0  # the evaluations timed apart: the step-0 one
        self.reported_first = False

    def _eval(self, result: dict) -> dict:
        out = {
            "eval/walltime": self.eval_seconds,
            "eval/episode_reward": float(result["eval_return"]),
            "eval/episode_reward_std": float(result["eval_return_std"]),
            "eval/avg_episode_length": float(result["eval_length"]) * self.repeat,
            "eval/std_episode_length": float(result["eval_length_std"]) * self.repeat,
        }
        for key, value in result.items():  # the env's own metrics (eval_env_metrics)
            if key.startswith(ENV_METRIC):
                out["eval/episode_" + key[len(ENV_METRIC) :]] = float(value)
        return out

    def initial(self, result: dict, seconds: float) -> dict:
        """Brax's metrics of the evaluation at step 0 (`result`: jaxrl's evaluate's, which
        took `seconds`, its compile included), with its time and physics steps per second
        (Brax's `episode_length x num_eval_envs` over that time)."""
        self.eval_seconds += seconds
        config = self.config
        steps = config.eval_envs * self.episode_length
        return {
            **self._eval(result),
            "eval/epoch_eval_time": seconds,
            "eval/sps": steps / max(seconds, 1e-9),
        }

    def first(self, evaluate: Any, state: Any, progress_fn: Any) -> None:
        """Brax's evaluation of the untrained `state` at step 0 (`evaluate`: `start_program`'s;
        None: Brax does not evaluate), timed with its compile and reported to `progress_fn`
        once: a rollback that restarts from the first state does not repeat it."""
        if evaluate is None or self.reported_first:
            return
        import jax

        from jaxrl.loops.base import start_arguments
        from jaxrl.run.state import run_once

        tick = time.perf_counter()
        result = jax.device_get(run_once(evaluate, *start_arguments(state)))
        progress_fn(0, self.initial(result, time.perf_counter() - tick))
        self.reported_first = True

    @staticmethod
    def start_program(trainer: Any) -> Any:
        """The step-0 evaluation `first` runs: the run layer's (`loops.base.evaluate_start`),
        jitted, compiled as a program that runs once (`run.state.run_once`). The doors run it
        themselves, in the driver's `start_fn` (where the first chunk
        compiles beside it), so that it comes in Brax's order: after a restore, before SAC's
        replay prefill, whose observations move the normaliser."""
        import jax

        from jaxrl.loops.base import evaluate_start

        return jax.jit(evaluate_start(trainer.evaluate))

    def row(self, row: dict) -> dict:
        """Brax's metrics after an evaluation interval, from jaxrl's row of it."""
        training = {
            "training/sps": row["chunk_env_steps_per_second"] * self.repeat,
            "training/walltime": row["train_seconds"],
            **self.update_metrics(row),
        }
        if not self.run_evals:
            return training
        return {**training, **self._eval(row)}

    def update_metrics(self, row: dict) -> dict:
        """Brax's `training/` losses of jaxrl's row (or of one update's metrics, PPO)."""
        return self._ppo(row) if self.config.algo == "ppo" else self._off_policy(row)

    def _ppo(self, row: dict) -> dict:
        agent = self.agent
        value_loss = agent.value_coef * row["value_loss"]
        entropy_loss = -agent.entropy_coef * row["entropy"]
        return {
            "training/total_loss": row["policy_loss"] + value_loss + entropy_loss,
            "training/policy_loss": row["policy_loss"],
            "training/v_loss": value_loss,
            "training/entropy_loss": entropy_loss,
            "training/kl_mean": row["approx_kl"],
            "training/learning_rate": agent.learning_rate,
            # The policy's Gaussian: the loc's and scale's mean, max and min over each
            # minibatch, averaged over the gradient steps (Brax's compute_ppo_loss).
            **{f"training/{k}": row[k] for k in row if k.startswith("policy_dist_")},
        }

    def _off_policy(self, row: dict) -> dict:
        """Brax SAC's training step metrics: its losses and temperature averaged over the
        interval's updates, as jaxrl's row averages them, and the replay's size averaged over
        the interval's training steps, as Brax's epoch averages it. An algorithm without a
        temperature (TD3, PQL, ...) reports none."""
        config = self.config
        capacity = config.replay_capacity
        end = int(row["env_steps"]) // config.num_envs  # iterations done, the prefill in them
        start = end - config.iterations_per_chunk
        sizes = [min((i + 1) * config.num_envs, capacity) for i in range(start, end)]
        out = {
            # jaxrl's critic loss sums the critics' losses, Brax's averages them.
            "training/critic_loss": row["critic_loss"] / self.agent.num_critics,
            "training/actor_loss": row["actor_loss"],
        }
        for name in ("alpha_loss", "alpha"):
            if name in row:
                out[f"training/{name}"] = row[name]
        return {**out, "training/buffer_current_size": sum(sizes) / len(sizes)}
