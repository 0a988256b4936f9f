"""The run's configuration, shared by every algorithm (the agent's own config is separate):
`TrainConfig`, what the run trains (config.json's "train"), beside `TrainOptions`
(jaxrl.config.options), how the run starts and is kept (its "run"). `SECTIONS` groups their
fields for `jaxrl train --help`; each section's sizes are checked once, by TrainConfig's
check of that section."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

import tyro

from jaxrl.config.choices import Choices, check_choices, check_finite
from jaxrl.config.offline import OfflineSchedule, whole
from jaxrl.config.options import TrainOptions
from jaxrl.errors import ConfigError  # raised here; also importable as jaxrl.config.ConfigError

EXPLORATION_MODES = ("fixed", "uniform", "linspace")
WARMUP_ACTIONS = ("uniform", "policy")
INT32_MAX = 2**31 - 1
# Domain randomizers by name (`jaxrl.envs.randomization` implements them): the task's own in
# Playground, and the built-in scalings of body masses and geom frictions.
RANDOMIZERS = ("playground", "mass", "friction")
# Where a finished training env starts its next episode (TrainConfig.autoreset).
AUTORESETS = ("random", "first")
# Which envs evaluation episodes step in (TrainConfig.eval_simulator).
EVAL_SIMULATORS = ("auto", "shared", "own")
EVAL_ACTIONS = ("greedy", "sampled")
# The evaluations of a run that sets neither eval_every nor num_evals, at least this far apart.
DEFAULT_EVALS, DEFAULT_EVAL_EVERY = 20, 5_000

# The loop-level settings an algorithm may choose for itself (an agent's `loop_defaults`), and
# their values for algorithms that choose none: a config field left at None takes the agent's
# value, else this one.
LOOP_DEFAULTS = {
    "normalize_observations": False,
    "n_step": 1,
    "exploration": "fixed",
    "noise_scale_min": 1.0,
    "noise_scale_max": 1.0,
    "acting_lag": 0,
    "split_every": 0,
}


# Storage types of replayed observations (TrainConfig.replay_obs_dtype).
REPLAY_OBS_DTYPES = ("float32", "bfloat16", "float16")


class Section(NamedTuple):
    title: str
    """The group's description in `jaxrl train --help` and docs/FLAGS.md."""
    fields: tuple[str, ...]
    """Its flags' fields (of TrainOptions or TrainConfig), in the order --help lists them."""


# The sections of the run's settings: the groups of `jaxrl train --help` and docs/FLAGS.md, in
# this order (the algorithm's own flags follow, under its name). Every field of TrainOptions and
# TrainConfig is in exactly one (`section_members` refuses a field in none or in two, and
# tests/config/test_help.py checks it), and each section's sizes are checked once, by the section's
# own check (TrainConfig._check_<section>), where a size compared with another (batch_size with
# buffer_size) sits in the section of both.
#
# A grouping, not nested dataclasses: a field keeps its flat name in config.json ("train" and
# "run"), in --config and --resume, in presets and sweeps, in `--vmap NAME=...`, in
# dataclasses.replace(config, NAME=...) and on the command line (--batch-size, never
# --collection.batch-size), so saved runs and commands stay valid and a field may change
# section without any of them changing.
SECTIONS: dict[str, Section] = {
    "run": Section(
        "The run: what starts it, where it is kept, its seeds, checkpoints and logs.",
        (
            "preset",
            "config",
            "resume",
            "out",
            "algo",
            "seed",
            "seeds",
            "vmap",
            "checkpoint_every",
            "keep_checkpoints",
            "checkpoint_buffer",
            "tensorboard",
            "wandb",
            "stop_at_return",
            "on_nan",
            "max_rollbacks",
            "compile_cache",
            "quiet",
        ),
    ),
    "env": Section(
        "The environment: which, its episodes, observations, actions and physics.",
        (
            "env",
            "env_options",
            "env_option",
            "env_imports",
            "episode_length",
            "action_repeat",
            "autoreset",
            "actor_obs",
            "critic_obs",
            "joint_limit_actions",
            "randomize",
            "randomize_scale",
        ),
    ),
    "collection": Section(
        "Collecting and replaying experience: length, envs, updates, replay buffer, warm-up, "
        "returns, exploration.",
        (
            "total_steps",
            "num_envs",
            "updates_per_step",
            "unroll_updates",
            "batch_size",
            "buffer_size",
            "replay_obs_dtype",
            "learning_starts",
            "warmup_actions",
            "gamma",
            "n_step",
            "exploration",
            "noise_scale_min",
            "noise_scale_max",
            "acting_lag",
        ),
    ),
    "offline": Section(
        "Offline RL: a Minari dataset learnt from before (or instead of, or beside) env steps.",
        ("dataset", "offline_updates", "offline_eval_every", "offline_ratio", "init_from"),
    ),
    "on_policy": Section(
        "On-policy algorithms (PPO): the rollouts, and hard resets of the training envs.",
        ("unroll_length", "reset_every"),
    ),
    "evaluation": Section(
        "Evaluation: how often, on how many envs, on which physics.",
        (
            "eval_every",
            "num_evals",
            "eval_envs",
            "eval_at_start",
            "eval_actions",
            "eval_env_metrics",
            "eval_simulator",
            "randomize_eval",
        ),
    ),
    "normalisation": Section(
        "Observation normalisation: whether, the clipping, the order its statistics update in.",
        (
            "normalize_observations",
            "obs_clip",
            "obs_std_eps",
            "obs_stats_until",
            "renormalize_rollout",
        ),
    ),
    "devices": Section(
        "Devices and hosts: the run split over several devices, or several processes.",
        ("devices", "split_every", "coordinator", "num_processes", "process_id"),
    ),
}


_whole = whole


@dataclasses.dataclass(frozen=True)
class TrainConfig(OfflineSchedule):
    # Data, not program: the loop keeps these in its state (its `hp`), so a settings grid
    # (`--vmap gamma=0.98,0.99`) varies them inside one compiled program. Agent configs name
    # their own (e.g. SACConfig.ARRAY_FIELDS); every other field shapes the program.
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = ("gamma", "noise_scale_min", "noise_scale_max")

    env: str = "classic/pendulum"
    """Environment as family/name, e.g. brax/ant or classic/pendulum (`jaxrl list` names them)."""
    algo: str | None = None
    """Algorithm to train, e.g. sac, td3 or ppo (`jaxrl list` names them all; default sac, or
    the preset's). In Python, None takes the algorithm of the agent config passed with it."""
    seed: int = 0
    """Random seed: initialisation, env resets, exploration and batch sampling derive from it."""
    total_steps: Annotated[int, tyro.conf.arg(aliases=("--steps",))] = 50_000
    """Length of the run in env steps (transitions collected), all envs together.
    Rounded up so that every evaluation chunk runs the same number of loop iterations.
    0 with --offline-updates: an offline run, which never steps the training envs."""
    dataset: str | None = None
    """A Minari dataset to learn from offline (docs/OFFLINE.md): its id under
    MINARI_DATASETS_PATH, or its folder. Its observations and actions must fit --env."""
    offline_updates: int = 0
    """Gradient updates on --dataset before any env step (all of an offline run's updates);
    with --steps, fine-tuning online follows them."""
    offline_eval_every: int = 5_000
    """Offline updates between evaluations: one chunk each (rounded as --eval-every is)."""
    offline_ratio: float = 0.5
    """Online, the share of each batch drawn from --dataset (the rest from the run's own
    replay), as RLPD's and Cal-QL's symmetric sampling; 0: online rows alone."""
    init_from: str | None = None
    """Start from the agent and observation statistics of another run's newest checkpoint (its
    folder: the same algorithm and network sizes), e.g. to fine-tune an offline run online."""
    num_envs: int = 16
    """Training envs run in parallel; one loop iteration steps all of them once."""
    env_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Options of the env family for making the env, e.g. {"backend": "mjx"} for brax/*.
    Brax takes its backend (mjx, generalized, positional, spring) and the env's constructor
    arguments, Playground its task config's keys, classic tasks their constructor's
    arguments. On the command line: --env-option KEY=VALUE."""
    env_imports: Annotated[
        tuple[str, ...], tyro.conf.UseAppendAction, tyro.conf.arg(name="import")
    ] = ()
    """A module to import before the env is made: yours, registering jaxrl.envs.register envs.
    Repeatable: --import mylab.tasks --env mylab/Reach. Saved with the run, so resume, eval
    and render import it again; the current folder is searched too."""
    actor_obs: str | None = None
    """The entry of a dict observation the policy reads; None: "state" (Playground's choice).
    Playground's robot tasks observe {"state": ..., "privileged_state": ...}. Evaluation and
    saved policies read this entry only. Envs that observe one array: leave it unset."""
    critic_obs: str | None = None
    """The entry the critics (PPO: the value function) read; None: the actor's entry.
    E.g. privileged_state: an asymmetric actor-critic, whose critic sees what the simulator
    knows and the robot does not (training only; the policy never reads it)."""
    joint_limit_actions: bool = False
    """Bound each action by its joint's limits (FastSAC's humanoid recipe) instead of [-1, 1].
    For tasks whose motor targets are default_pose + action x action_scale (Playground's
    locomotion joystick tasks): -1 and +1 then reach the joint's lower and upper limit, and
    0 stays the default pose. Other tasks are refused before compiling."""
    randomize: Annotated[str | None, Choices(RANDOMIZERS, several=True)] = None
    """Domain randomization of the training envs' physics, one draw per env; None: none.
    "mass", "friction" (each body's mass, each geom's friction scaled by U[1 - s, 1 + s],
    s = randomize_scale), "playground" (the task's own randomizer in Playground, which its
    robot tasks have), or several joined by commas. MJX models: brax/* need backend=mjx."""
    randomize_scale: float = 0.1
    """Half-width s of the built-in randomizers' scale factors U[1 - s, 1 + s]."""
    randomize_eval: bool = False
    """Evaluate on randomized physics too (other draws than training's); default: nominal."""
    autoreset: Annotated[str, Choices(AUTORESETS)] = "random"
    """Where a finished training env starts its next episode: "random", a fresh random initial
    state; "first", the state that env started the run from (or its last hard reset: see
    reset_every), as the training wrappers of Brax and MuJoCo Playground do (a cached first
    state). Evaluation envs always start from fresh random states."""
    episode_length: int | None = None
    """Time limit of an episode in agent steps (after action repeat); None: the task's own."""
    action_repeat: int | None = None
    """Simulator steps each action is applied for, their rewards summed; None: the task's own."""
    batch_size: int = 256
    """Transitions sampled from the replay buffer per gradient update (off-policy only)."""
    updates_per_step: int = 8
    """Gradient updates per loop iteration, i.e. per step of all num_envs envs (off-policy only).
    The classic single-env update-to-data ratio is updates_per_step / num_envs: the default,
    8 updates per iteration of 16 envs, is UTD 0.5, which learns pendulum in ~10k env steps."""
    unroll_updates: int = 1
    """Of an iteration's updates_per_step updates, how many each trip of their loop runs
    written out (`jax.lax.scan`'s unroll; updates_per_step: no loop). Off-policy, one-program
    loop only (an actor/learner split's learners keep their loop). The same updates, to float
    rounding (XLA fuses the written-out program its own way); a speed choice for GPUs, where
    XLA copies the agent's whole state on every trip of that loop. The update is then compiled
    that many times over, so the first compile takes longer. Not timed on a GPU yet."""
    buffer_size: int = 1_000_000
    """Replay buffer capacity in transitions (off-policy only).
    Rounded down to a multiple of num_envs, so row i + num_envs is the same env's next step."""
    replay_obs_dtype: Annotated[str, Choices(REPLAY_OBS_DTYPES)] = "float32"
    """Storage type of the replay buffer's observations and next observations: "float32",
    "bfloat16" or "float16" (half the bytes; cast back to float32 when sampled). Off-policy
    only. The buffer's other fields stay as they are."""
    learning_starts: int = 5_000
    """Env steps of warm-up actions, all envs together, before any update (off-policy only).
    Updates also wait until the buffer holds batch_size and n_step x num_envs transitions."""
    warmup_actions: Annotated[str, Choices(WARMUP_ACTIONS)] = "uniform"
    """Warm-up actions: "uniform" random in [-1, 1] (the SAC/TD3 papers) or "policy".
    "policy": the untrained policy's own samples (Brax's SAC prefills its buffer that way)."""
    eval_every: int | None = None
    """Env steps, all envs together, between evaluations (one chunk each); None: from
    num_evals. At most one evaluation per loop iteration (num_envs steps, x unroll_length
    on-policy)."""
    num_evals: int | None = None
    """Evaluations over the run (Brax's num_evals, less its one at step 0), evenly spaced; with
    eval_every, one or the other. Neither given: 20, but none closer than 5,000 env steps."""
    eval_envs: int = 16
    """Evaluation episodes, one per eval env run in parallel, each acting deterministically."""
    eval_actions: Annotated[str, Choices(EVAL_ACTIONS)] = "greedy"
    """Evaluation actions: "greedy" (the policy's mean, or the actor's output), or "sampled":
    the agent's acting distribution at noise scale 1, a fresh draw per step (Brax's trainers'
    default, `deterministic_eval=False`). "sampled" evaluates on envs of its own."""
    eval_env_metrics: bool = False
    """Also report each of the env's own metrics (its State.metrics), summed over every
    evaluation episode, as eval_episode/<name> and its _std across episodes (those named
    *per_step: per physics step), and eval_length_std, as Brax's evaluator does. Evaluates
    on envs of its own."""
    eval_simulator: Annotated[str, Choices(EVAL_SIMULATORS)] = "auto"
    """Where a chunk's evaluation steps: "shared", in the training envs' own step, so the
    chunk holds the simulator once and compiles sooner, evaluation then stepping num_envs
    envs of which the first eval_envs are its episodes; "own", a batch of eval_envs envs of
    its own (the simulator compiled twice), which steps faster; "auto", shared on a GPU or
    TPU, own on a CPU. Pass "own" for long runs. Shared needs eval_envs <= num_envs and no
    domain randomization. The same returns, to float32 rounding on contact-rich MJX tasks
    (timings: benchmarks/notes/2026-12-06-code-figures.md)."""
    normalize_observations: bool | None = None
    """Normalise observations by their running mean and std; None: the algorithm's own choice.
    None takes the agent's `loop_defaults`, then `LOOP_DEFAULTS` of jaxrl.config (False):
    FastTD3 and PQL normalise observations and explore with per-env noise scales."""
    obs_clip: float = 10.0
    """Normalised observations are clipped to +-obs_clip; 0: not clipped (as in Brax's trainers)."""
    obs_std_eps: float = 0.0
    """Added to the variance under the square root when observations are normalised (Brax's
    `normalize_observations_std_eps`)."""
    obs_stats_until: int = 0
    """The observation statistics stop learning once they have counted more than this many
    observations; 0: never (Brax's `normalize_until_count` in its "ema" mode)."""
    gamma: float = 0.99
    """Discount factor, for 1-step and n-step bootstrapped targets (and PPO's advantages) alike."""
    n_step: int | None = None
    """Rewards summed per bootstrapped target (n-step returns); None: the algorithm's own.
    Off-policy only; summed at sampling time, stopping at episode ends. None: PQL's 3, else 1."""
    exploration: Annotated[str | None, Choices(EXPLORATION_MODES)] = None
    """Per-env noise scales: "fixed", "uniform" or "linspace"; None: the algorithm's own.
    A scale multiplies the agent's own acting noise (1: that noise, 0: deterministic).
    "fixed": 1 for every env; "uniform": drawn from U[noise_scale_min, noise_scale_max]
    per env, redrawn when its episode ends (FastTD3); "linspace": spaced evenly over that
    range (PQL). Off-policy only. None: FastTD3's and PQL's own, else "fixed"."""
    noise_scale_min: float | None = None
    """Low end of the per-env noise scales ("uniform", "linspace"); None: the algorithm's own.
    None: FastTD3's and PQL's own, else 1."""
    noise_scale_max: float | None = None
    """High end of the per-env noise scales ("uniform", "linspace"); None: the algorithm's own.
    None: FastTD3's and PQL's own, else 1."""
    acting_lag: int | None = None
    """Iterations between copies of the learners' parameters to the actor; 0: always current.
    PQL's asynchronous actor (off-policy only): acting lags the learners by up to
    acting_lag - 1 iterations, so 1 acts as 0. None: the algorithm's own (0 for all so far)."""
    split_every: int | None = None
    """Actor/learner split (PQL's scheme) over --devices N >= 2: iterations per exchange.
    The first device steps the envs and acts, the other N - 1 learn (data-parallel), both at
    once; every split_every iterations the actor's transitions go to the learners' replay
    buffer and the learners' parameters to the actor, so each side works one exchange behind
    the other (`jaxrl.loops.split`). Chunks round up to whole exchanges. 0: no split (every
    device does everything, split along the data axis); ignored on one device. None: the
    algorithm's own (PQL: 8, others: 0). Off-policy only."""
    unroll_length: int = 20
    """On-policy algorithms (PPO): steps of every env per rollout, one update per rollout.
    The replay fields (batch_size, updates_per_step, buffer_size, learning_starts,
    warmup_actions, n_step, exploration, noise scales, acting_lag) are off-policy only."""
    renormalize_rollout: bool = False
    """Update the observation statistics in Brax's order rather than jaxrl's.
    On-policy (Brax's PPO): the statistics take in the observations the rollout acted on, and
    the update reads the rollout normalised with them (acting used the previous statistics).
    Off-policy (Brax's SAC): the statistics take in the observations each step acted on.
    False: the statistics take in the observations the steps reached (on-policy, the update
    reads the rollout normalised as it was collected)."""
    reset_every: int = 0
    """On-policy: every this many iterations (rollout + update) every training env restarts
    from a fresh random state, mid-episode or not; 0: never. Brax's PPO does this
    num_resets_per_eval times between evaluations (MuJoCo Playground's DM Control settings:
    10), i.e. every (updates per evaluation) / num_resets_per_eval updates."""
    devices: int | Literal["all"] = 0
    """Devices to split the run over: 0 the default one alone, N the first N, all of them.
    Envs, replay buffer and every batch are divided along a data axis, parameters replicated
    and gradients averaged (jaxrl.sharding); "all" counts every process's devices with
    several hosts. num_envs and batch_size must be multiples of it."""

    def __post_init__(self):
        """Normalises env_imports and checks every field (ConfigError): the Choices marked on
        fields, then each section's own checks, in the order of SECTIONS."""
        if isinstance(self.env_imports, str):  # one module named as a string
            object.__setattr__(self, "env_imports", (self.env_imports,))
        # Every field marked with Choices, whichever its section: randomize, autoreset, ...
        check_choices(self, ConfigError)
        check_finite(self, ConfigError)
        self._check_run()
        self._check_env()
        self._check_collection()
        self._check_on_policy()
        self._check_evaluation()
        self._check_normalisation()
        self._check_devices()

    def _check_run(self) -> None:
        if not _whole(self.seed, 0):
            raise ConfigError(f"seed must be an integer >= 0, got {self.seed!r}")

    def _check_env(self) -> None:
        for name in ("episode_length", "action_repeat"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be a positive integer or unset, got {value!r}")
        for name in ("actor_obs", "critic_obs"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"{name} must name an observation entry, got {value!r}")
        if not 0 < self.randomize_scale < 1:
            raise ConfigError(f"randomize_scale must be in (0, 1), got {self.randomize_scale}")

    def _check_collection(self) -> None:
        """The run's length and the replay's sizes, each on its own, then, once the algorithm
        is named and learns off-policy, against each other: the buffer holds a batch, a step of
        every env and n_step of them, and updates start before the run ends."""
        for name in ("num_envs", "batch_size", "updates_per_step", "buffer_size",
                     "unroll_updates"):  # fmt: skip
            value = getattr(self, name)
            if not _whole(value, 1):
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        self._check_offline()
        if self.buffer_size > INT32_MAX:
            raise ConfigError(
                f"buffer_size {self.buffer_size:,} is beyond what the replay buffer indexes "
                f"(rows are int32: at most {INT32_MAX:,}); lower buffer_size."
            )
        starts = self.learning_starts
        if not _whole(starts, 0):
            raise ConfigError(f"learning_starts must be an integer >= 0, got {starts!r}")
        if not 0 <= self.gamma <= 1:
            raise ConfigError(f"gamma must be in [0, 1], got {self.gamma}")
        if self.n_step is not None and self.n_step < 1:
            raise ConfigError(f"n_step must be a positive integer, got {self.n_step!r}")
        low, high = self.noise_scale_min, self.noise_scale_max
        if (low is not None and low < 0) or (high is not None and high < 0):
            raise ConfigError(f"noise scales must be >= 0, got {low} and {high}")
        if low is not None and high is not None and low > high:
            raise ConfigError(f"need 0 <= noise_scale_min <= noise_scale_max, got {low} and {high}")
        if self.acting_lag is not None and self.acting_lag < 0:
            raise ConfigError(f"acting_lag must be >= 0, got {self.acting_lag}")
        # None: the algorithm is named later, by the agent's config (dataclasses.replace runs
        # these checks again then). An on-policy run has no replay.
        if self.algo is None or self.on_policy:
            return
        if self.batch_size > self.buffer_size:
            raise ConfigError(
                f"batch_size {self.batch_size} is larger than the replay buffer "
                f"(buffer_size {self.buffer_size}); raise buffer_size or lower batch_size."
            )
        if self.num_envs > self.buffer_size:
            raise ConfigError(
                f"num_envs {self.num_envs} exceeds buffer_size {self.buffer_size}: one step of "
                "all envs would not fit in the replay buffer; raise buffer_size."
            )
        if (self.n_step or 1) * self.num_envs > self.buffer_size:
            raise ConfigError(
                f"n_step {self.n_step} x num_envs {self.num_envs} rows do not fit in buffer_size "
                f"{self.buffer_size}; raise buffer_size."
            )
        if self.total_steps and self.learning_starts >= self.total_steps:
            raise ConfigError(
                f"learning_starts {self.learning_starts} >= total_steps {self.total_steps}: "
                "no gradient update would ever run; lower learning_starts or raise total_steps."
            )

    def _check_on_policy(self) -> None:
        if not isinstance(self.unroll_length, int) or self.unroll_length < 1:
            raise ConfigError(
                f"unroll_length must be a positive integer, got {self.unroll_length!r}"
            )
        if (
            isinstance(self.reset_every, bool)
            or not isinstance(self.reset_every, int)
            or (self.reset_every < 0)
        ):
            raise ConfigError(
                f"reset_every must be an integer >= 0 (0: never), got {self.reset_every!r}"
            )

    def _check_evaluation(self) -> None:
        for name in ("eval_every", "num_evals", "eval_envs"):
            value = getattr(self, name)
            if not _whole(value, 1) and (value is not None or name == "eval_envs"):
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.eval_every is not None and self.num_evals is not None:
            raise ConfigError(
                f"eval_every ({self.eval_every}) and num_evals ({self.num_evals}) both set the "
                "evaluations' cadence: give one"
            )
        if self.eval_simulator == "shared" and self.eval_envs > self.num_envs:
            raise ConfigError(
                f"eval_simulator 'shared' steps the evaluation in the {self.num_envs} training "
                f"envs, fewer than eval_envs ({self.eval_envs}): lower eval_envs, or use "
                "eval_simulator 'own'"
            )
        if self.eval_simulator == "shared" and self.randomize:
            raise ConfigError(
                f"eval_simulator 'shared' steps the evaluation in the training envs, whose "
                f"physics --randomize {self.randomize} randomizes: use eval_simulator 'own'"
            )

    def _check_normalisation(self) -> None:
        if not self.obs_clip >= 0:
            raise ConfigError(f"obs_clip must be >= 0 (0: no clipping), got {self.obs_clip}")
        if not self.obs_std_eps >= 0:
            raise ConfigError(f"obs_std_eps must be >= 0, got {self.obs_std_eps}")
        if not self.obs_stats_until >= 0:
            raise ConfigError(
                f"obs_stats_until must be >= 0 (0: the statistics never stop learning), "
                f"got {self.obs_stats_until}"
            )

    def _check_devices(self) -> None:
        """The counts only: whether num_envs and batch_size divide over the devices is known
        once "all" is counted (jaxrl.sharding.check_shares)."""
        if self.devices != "all" and not _whole(self.devices, 0):
            raise ConfigError(
                f'devices must be a count >= 0 (0: no mesh) or "all", got {self.devices!r}'
            )
        if self.split_every is not None and not _whole(self.split_every, 0):
            raise ConfigError(
                f"split_every must be an integer >= 0 (0: no actor/learner split), got "
                f"{self.split_every!r}"
            )

    def resolved(self, agent_defaults: dict[str, Any] | None = None) -> TrainConfig:
        """This config with every field left at None set: the agent's own loop defaults first
        (e.g. FastTD3's per-env noise scales), then LOOP_DEFAULTS. Explicit values stay."""
        defaults = {**LOOP_DEFAULTS, **(agent_defaults or {})}
        unknown = set(defaults) - set(LOOP_DEFAULTS)
        if unknown:
            raise ConfigError(f"loop defaults {sorted(unknown)} are not loop-level settings")
        unset = {name: value for name, value in defaults.items() if getattr(self, name) is None}
        return dataclasses.replace(self, **unset) if unset else self

    @property
    def replay_capacity(self) -> int:
        """buffer_size rounded down to whole loop iterations, so that row i + num_envs is
        always the same env's next step (n-step returns rely on it)."""
        return self.buffer_size - self.buffer_size % self.num_envs

    @property
    def on_policy(self) -> bool:
        from jaxrl import agents  # the registry knows which algorithms learn on-policy

        spec = agents.ALGORITHMS.get(self.algo)
        return spec is not None and spec.on_policy

    @property
    def split(self) -> bool:
        """Whether actor and learners run on separate devices (`jaxrl.loops.split`): an
        off-policy run with split_every > 0 over two devices or more."""
        if not self.split_every or self.on_policy:
            return False
        from jaxrl import sharding  # counts "all" devices (imports jax)

        return sharding.device_count(self.devices) >= 2

    @property
    def steps_per_iteration(self) -> int:
        """Steps of each env in one loop iteration (one pass of the loop's body): a rollout of
        unroll_length for on-policy algorithms, one step for off-policy ones."""
        return self.unroll_length if self.on_policy else 1

    @property
    def env_steps_per_iteration(self) -> int:
        return self.num_envs * self.steps_per_iteration

    @property
    def eval_interval(self) -> int:
        """Env steps between evaluations as asked: eval_every; else total_steps / num_evals
        rounded up; else one of DEFAULT_EVALS, at least DEFAULT_EVAL_EVERY apart (a short run
        evaluates as often as before num_evals existed, a long one 20 times, not thousands)."""
        if self.eval_every is not None:
            return self.eval_every
        if self.num_evals is not None:
            return max(-(-self.total_steps // self.num_evals), 1)
        return max(-(-self.total_steps // DEFAULT_EVALS), DEFAULT_EVAL_EVERY)

    @property
    def num_chunks(self) -> int:
        """Evaluations in the run's online part: one every eval_interval env steps, but at most
        one per iteration (a step of all envs, or a rollout), so the run does not overshoot
        total_steps when an iteration is longer than eval_interval."""
        per_chunk = max(self.eval_interval, self.env_steps_per_iteration)
        return -(-self.total_steps // per_chunk)

    @property
    def iterations_per_chunk(self) -> int:
        """Loop iterations per chunk, spread so the run ends at the first multiple of
        num_chunks iterations at or above total_steps: an evaluation about every eval_interval
        env steps. A run without env steps (offline only) keeps the size of one evaluation's."""
        if not self.num_chunks:
            return -(
                -max(self.eval_interval, self.env_steps_per_iteration)
                // self.env_steps_per_iteration
            )
        iterations = -(-self.total_steps // self.env_steps_per_iteration)
        iterations = -(-iterations // self.num_chunks)
        if self.split:  # whole exchanges of the actor/learner split
            iterations = -(-iterations // self.split_every) * self.split_every
        return iterations

    @property
    def env_steps_per_chunk(self) -> int:
        return self.iterations_per_chunk * self.env_steps_per_iteration


def section_members() -> dict[str, tuple[tuple[type, dataclasses.Field], ...]]:
    """SECTIONS with each field as (its class, TrainOptions or TrainConfig; the field). A field
    of either class in no section or in two, or a name that is no field, is this module's
    mistake: RuntimeError, so `jaxrl train` and its tests stop at once."""
    fields = {
        f.name: (cls, f) for cls in (TrainOptions, TrainConfig) for f in dataclasses.fields(cls)
    }
    named = [name for section in SECTIONS.values() for name in section.fields]
    twice = sorted({name for name in named if named.count(name) > 1})
    missing = sorted(set(fields) - set(named))
    unknown = sorted(set(named) - set(fields))
    if twice or missing or unknown:
        raise RuntimeError(
            f"jaxrl.config.train.SECTIONS: fields in two sections {twice}, in none {missing}, "
            f"names that are no field {unknown}"
        )
    return {
        name: tuple(fields[field] for field in section.fields) for name, section in SECTIONS.items()
    }
