"""jaxrl: JAX-accelerated, massively parallel reinforcement learning.

Functional API:
    config = jaxrl.TrainConfig(env="classic/pendulum", total_steps=16_000, ...)
    trainer = jaxrl.make_train(config, jaxrl.sac.make(jaxrl.SACConfig()))
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
Host driver with logging and whole-run checkpoints: `jaxrl.train(config, agent_config,
out_dir)`, `jaxrl.resume(out_dir)`; a trained policy: `jaxrl.load_policy(out_dir)`.
"""

import pathlib as _pathlib


def _source_checkout_path() -> None:
    """Installed, `envs/`, `experiments/` and `benchmarks/` are the subpackages `jaxrl.envs`,
    `jaxrl.experiments` and `jaxrl.benchmarks` (pyproject.toml's package-dir), so nothing named
    `envs` lands in site-packages. When this `jaxrl` is imported straight from a source checkout
    (its tests, a copy made by the mutation script, a clone run with another checkout's
    environment), those folders sit beside it instead: its own are searched first, so the code
    that runs is always the checkout's own, never that of whichever checkout was installed."""
    root = _pathlib.Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "envs" / "registry.py").is_file():
        __path__.append(str(root))


_source_checkout_path()

# Every public name is imported on first use (PEP 562 module __getattr__), not here: the
# submodules below pull in jax, flax, optax, orbax, Brax, MuJoCo and MuJoCo Playground, seconds
# of imports that `import jaxrl`, `jaxrl --help` and `jaxrl --version` do not need (issue 38).
# A plain table of name -> (module, attribute) rather than importlib.util.LazyLoader: LazyLoader
# defers a module's execution but still finds it, and errors surface at odd places; a table
# says exactly which module each name comes from, and the resolved value is cached in the
# module's globals, so the second lookup is an ordinary attribute.
_LAZY = {
    # name: (module, attribute in it; None: the module itself)
    "agents": ("jaxrl.agents", None),
    "envs": ("jaxrl.envs", None),
    "replay": ("jaxrl.replay", None),
    "ppo": ("jaxrl.agents.ppo", None),
    "sac": ("jaxrl.agents.sac", None),
    # `jaxrl scale`'s Python API: scale.run, scale.fit, scale.plan, scale.Budget (docs/SCALE.md).
    "scale": ("jaxrl.experiments.scale", None),
    "ALGORITHMS": ("jaxrl.agents", "ALGORITHMS"),
    "Agent": ("jaxrl.agents", "Agent"),
    "PPOConfig": ("jaxrl.agents.ppo", "PPOConfig"),
    "SACConfig": ("jaxrl.agents.sac", "SACConfig"),
    "TD3Config": ("jaxrl.agents.td3", "TD3Config"),
    "CrossQConfig": ("jaxrl.agents.crossq", "CrossQConfig"),
    "DroQConfig": ("jaxrl.agents.droq", "DroQConfig"),
    "REDQConfig": ("jaxrl.agents.redq", "REDQConfig"),
    "FastTD3Config": ("jaxrl.agents.fast_td3", "FastTD3Config"),
    "PQLConfig": ("jaxrl.agents.pql", "PQLConfig"),
    "DSACTConfig": ("jaxrl.agents.dsac_t", "DSACTConfig"),
    "FastSACConfig": ("jaxrl.agents.fast_sac", "FastSACConfig"),
    "SACNConfig": ("jaxrl.agents.edac", "SACNConfig"),
    "EDACConfig": ("jaxrl.agents.edac", "EDACConfig"),
    "E2OConfig": ("jaxrl.agents.e2o", "E2OConfig"),
    "SACRNDConfig": ("jaxrl.agents.sac_rnd", "SACRNDConfig"),
    "TD3BCConfig": ("jaxrl.agents.td3_bc", "TD3BCConfig"),
    "ReBRACConfig": ("jaxrl.agents.rebrac", "ReBRACConfig"),
    "preset": ("jaxrl.config.resolve", "preset"),
    "ConfigError": ("jaxrl.errors", "ConfigError"),
    "TrainConfig": ("jaxrl.config", "TrainConfig"),
    "RunOptions": ("jaxrl.config.options", "RunOptions"),
    "RunResult": ("jaxrl.run.plan", "RunResult"),
    "resume": ("jaxrl.run.driver", "resume"),
    "train": ("jaxrl.run.driver", "train"),
    "OffPolicyState": ("jaxrl.loops", "OffPolicyState"),
    "OnPolicyState": ("jaxrl.loops", "OnPolicyState"),
    "Trainer": ("jaxrl.loops", "Trainer"),
    "make_train": ("jaxrl.loops", "make_train"),
    "Policy": ("jaxrl.run.runs", "Policy"),
    "evaluate_run": ("jaxrl.run.runs", "evaluate_run"),
    "load_policy": ("jaxrl.run.runs", "load_policy"),
    "Batch": ("jaxrl.types", "Batch"),
    "Rollout": ("jaxrl.types", "Rollout"),
    "Transition": ("jaxrl.types", "Transition"),
    "make_env": ("jaxrl.envs", "make"),
    "make_vec_env": ("jaxrl.envs", "make_vec"),
    "list_envs": ("jaxrl.envs", "list_envs"),
}


def __getattr__(name: str):
    if name == "__version__":
        from jaxrl.version import version

        value = version()
    elif name in _LAZY:
        import importlib

        module_name, attribute = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # resolved once; later lookups never come back here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# Every lazily imported name is public.
__all__ = ["__version__", *_LAZY]
