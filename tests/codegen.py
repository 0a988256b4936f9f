"""XLA:CPU's own code generator for one compile, in a suite that runs with a faster-compiling
one (tests/conftest.py), for the tests that require two programs to agree bit for bit.

Two programs that compute the same, compiled by the faster generator (XLA:CPU's fusion
emitters off), can round differently where XLA's own generator does not: the shared and the
own evaluation's chunks differed by one float32 step in one parameter of a tiny SAC, and a
chunk compiled with and without `chunks.CHUNK_OPTIONS` (the same optimised HLO but for its
copies and their order) in 39 leaves, 1 to 7 steps apart. Their LLVM IR differed in the
aliasing metadata that follows XLA's buffer assignment. A user's run compiles with XLA's own
generator, so these tests compare what users get:

    jax.jit(fn).lower(*args).compile(compiler_options=codegen.users())"""

import os

# The suite's faster-compiling code generator, which tests/conftest.py sets on the jaxlibs where
# it was checked; defined here, so that the tests using `users` import without conftest's
# session settings (benchmarks/gpu/run.sh's `checks` calls some as plain functions).
FAST_COMPILE_FLAG = "--xla_cpu_use_fusion_emitters=false"


def users() -> dict:
    """Compile options that give this compile XLA's own code generator: none where the suite
    did not change it (another jaxlib, another backend, or XLA_FLAGS set by hand)."""
    import jax  # here, not above: conftest imports this module before JAX may be imported

    if jax.default_backend() != "cpu":
        return {}
    if FAST_COMPILE_FLAG not in os.environ.get("XLA_FLAGS", "").split():
        return {}
    return {"xla_cpu_use_fusion_emitters": True}
