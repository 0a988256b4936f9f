"""A run, hosted: trained, kept and read back (host only; the compiled loops are `jaxrl.loops`).

`driver` (`train`, `resume`, `check_setting`: every check of the input, the trainer and the
first or restored state, handed on as a `Plan`), `runner` (the chunk loop), `chunks` (the chunk
programs the runner is handed, compiled or loaded), `runs` (a run folder
read back: its configs, `load_policy`, `evaluate_run`), `plan` (RunOptions, RunResult and the
Plan), `folder` (the run folder: its checks, config.json, summary.json, checkpoints' meta),
`health` (non-finite checks and rollback), `resources` (memory and devices), `state` (the run's
first state), `rows` (metric rows and seed/grid summaries), and the store of compiled programs
(`programs`, `program_key`, `executables`), with `background` (the threads a run starts beside
its work, for the command line to leave at exit). Importing this package imports none of them (nor
JAX)."""
