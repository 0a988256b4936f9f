#!/usr/bin/env bash
# A benchmark suite on a lent GPU machine (no network, no install): the wheels in .whl/
# (benchmarks/gpu/wheels.sh downloads them beforehand, on the CPU machine) go to a site
# folder, the checkout is imported from PYTHONPATH, and `jaxrl bench` writes its records,
# RESULTS.md, plots and log to $OUT (the device tool brings that folder back).
#   bash benchmarks/gpu/run.sh SUITE JOBS TIMEOUT_PER_CASE [more jaxrl bench flags]
#   bash benchmarks/gpu/run.sh compile-chunk 1 540   (benchmarks/compile_chunk.py, all at once)
#   bash benchmarks/gpu/run.sh rerun 1 150           (benchmarks/rerun.py, 150 s per run;
#       about 4 minutes per preset on an H200: two first runs, four re-runs; RERUN_PRESETS
#       picks the presets, by default fast_td3_playground sac_dmc ppo_dmc)
#   bash benchmarks/gpu/run.sh rerun 1 150 --from-cache   (and, per preset, two runs more:
#       programs stored from JAX's cache's bytes, then loaded; a few minutes more in all)
#   bash benchmarks/gpu/run.sh scale 1 480           (jaxrl scale at Playground's SAC scale)
#   bash benchmarks/gpu/run.sh gpu-split 1 200       (PPO's time split, shared and own
#       evaluation, Brax beside, the update alone: about 9 minutes of an H200)
#   bash benchmarks/gpu/run.sh gpu-mixed 1 150       (mixed precision: the PPO and FastTD3
#       updates alone in float32, bfloat16 and mixed, with their kernel counts, and Brax's
#       PPO update alone (brax-speed/ppo); PPO runs in
#       float32 and mixed beside Brax, mixed with its own evaluation, mixed over 3 seeds;
#       about 10 minutes of an H200)
#   bash benchmarks/gpu/run.sh gpu-unroll 1 200      (FastTD3's preset on CheetahRun with its
#       updates in their loop and written out, --unroll-updates 2: compile and env-steps/s;
#       about 4 minutes of an H200)
#   bash benchmarks/gpu/run.sh checks 1 120          (tests of GPU-only paths, run as plain
#       functions (no pytest on the machine): the chunk's copy insertion by region analysis
#       keeps its numbers bit for bit on the GPU, PPO's time-first minibatches match Brax's
#       loss; about 2 minutes)
#   bash benchmarks/gpu/run.sh gpu-door 1 510        (issue 74 item 4: gpu-parity's PPO cases
#       with each Brax call also made through jaxrl.brax.ppo; --only /CartpoleBalance/ first)
#   bash benchmarks/gpu/run.sh offline-speed 1 300   (issue 70 item 5: offline updates/s at
#       SAC-N's, EDAC's, LB-SAC's, TD3+BC's and ReBRAC's published sizes, the critics vmapped
#       and looped, 5 seeds in one program: benchmarks/offline_speed.py on the device)
#   bash benchmarks/gpu/run.sh xla-flags 1 120       (PPO's update alone, `speed/ppo` of
#       gpu-split, once per XLA_FLAGS setting below: XLA's defaults, command buffers (CUDA
#       graphs) for while loops, no autotuning; about 45 s each; records carry xla_flags)
set -uo pipefail
suite=${1:?suite}; jobs=${2:-1}; timeout=${3:-540}; shift 3 || true
out=${OUT:-/tmp/out}
mkdir -p "$out"
site=/tmp/site
if ! ls .whl/*.whl >/dev/null 2>&1; then
    echo "no wheels in .whl/: run bash benchmarks/gpu/wheels.sh on the CPU machine, then carry .whl" >&2
    exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl || exit 1
export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1 MUJOCO_GL=egl
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c "import jax, flax, optax, brax, mujoco; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, 'brax', brax.__version__, 'mujoco', mujoco.__version__, jax.devices())"
    date -u
    if [ "$suite" = compile-chunk ]; then  # issue 39: the chunk's compile, own and shared eval
        timeout "$timeout" python3 -m jaxrl.benchmarks.compile_chunk sac_dmc fast_td3_playground \
            ppo_dmc --init --out "$out/compile-chunk-gpu.jsonl" "$@"
    elif [ "$suite" = rerun ]; then  # issue 39: first runs and re-runs, the store on GPU
        # shellcheck disable=SC2086  # the presets are words
        python3 -m jaxrl.benchmarks.rerun ${RERUN_PRESETS:-fast_td3_playground sac_dmc ppo_dmc} \
            --env playground/CheetahRun --steps 65536 --libraries cusolver,cublas \
            --timeout "$timeout" --out "$out/rerun-gpu.jsonl" "$@"
    elif [ "$suite" = checks ]; then  # issue 39: what the CPU suite cannot check on a GPU
        timeout "$timeout" python3 -c "
import tests.test_program_store as store, tests.agents.test_ppo as ppo
import tests.agents.test_ppo_brax_parity as parity
for test, args in (
    (store.test_a_cpu_chunk_copies_nothing_its_conds_pass_through_and_computes_the_same, ()),
    (ppo.test_in_loss_minibatches_reach_the_loss_time_first_with_no_transpose_inside, ()),
    (parity.test_loss_and_gradients_match_brax_compute_ppo_loss, ('sequential',)),
    (parity.test_unrolls_are_shuffled_as_brax_shuffles_them, ()),
):
    test(*args); print('passed', test.__name__, flush=True)
" "$@"
    elif [ "$suite" = xla-flags ]; then  # issue 39: is PPO's update bound by launches?
        [ $# -gt 0 ] || set -- --only speed/ppo
        i=0
        for flags in "" "--xla_gpu_enable_command_buffer=+WHILE" "--xla_gpu_autotune_level=0"; do
            i=$((i + 1))
            echo "XLA_FLAGS=$flags"
            XLA_FLAGS="$flags" python3 -m jaxrl.cli bench --suite "${XLA_SUITE:-gpu-split}" \
                --jobs "$jobs" --timeout "$timeout" --out "$out/xla-flags-$i.jsonl" "$@"
        done
    elif [ "$suite" = offline-speed ]; then  # issue 70: the offline updates' GPU figure
        timeout "$timeout" python3 -m jaxrl.benchmarks.offline_speed \
            --out "$out/offline-speed-gpu.jsonl" "$@"
    elif [ "$suite" = scale ]; then  # issue 40: a grid at Playground's SAC scale (128 envs,
        # batch 512), stopped at the timeout; the fit then takes the runs there are
        timeout "$timeout" python3 -m jaxrl.cli scale --algo sac --env playground/ReacherEasy \
            --num-envs 128 --normalize-observations True --learning-starts 8192 --eval-envs 32 \
            --eval-every 16384 --steps 131072 --target 400 --utd 0.0625,0.125,0.25,0.5 \
            --batch-sizes 512 --lrs 3e-4,1e-3 --seeds 3 --out "$out/scale-reacher" --quiet "$@"
        python3 -m jaxrl.cli scale --from "$out/scale-reacher" --name scale
    else
        python3 -m jaxrl.cli bench --suite "$suite" --jobs "$jobs" --timeout "$timeout" \
            --out "$out/$suite-gpu.jsonl" "$@"
    fi
    date -u
} 2>&1 | tee "$out/$suite.log"
