"""The run layer behind `jaxrl.driver`'s `train` and `resume` (which stay the public facade):
`plan` (RunOptions, RunResult and the Plan both build), `runner` (the chunk loop), `folder` (the
run folder: its checks, config.json, summary.json, checkpoints' meta and reading them back),
`health` (non-finite checks and rollback), `resources` (memory and devices), `state` (the run's
first state) and `rows` (metric rows and seed/grid summaries). Importing this package imports
none of them (nor JAX)."""
