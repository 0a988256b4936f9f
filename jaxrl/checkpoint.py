"""Whole-run checkpoints with orbax's CheckpointManager.

A checkpoint is the whole loop state (`OffPolicyState` or `OnPolicyState`: agent parameters,
targets, optimiser states, batch statistics, temperature; observation statistics; replay
buffer, env states, RNG key, counters) plus the run's metric rows so far, so a resumed run
continues exactly where the saved one was.
Folders are `RUN/checkpoints/<env_steps>/`, one orbax item per part:

- `agent`, `obs_stats`: what a policy needs (`jaxrl.load_policy` and `jaxrl eval` read only these);
- `loop`: the rest of the state (the replay buffer only with `include_buffer`);
- `history`: the metric rows up to this checkpoint (JSON);
- `meta`: algorithm, env, sizes, env steps and whether the buffer is in (JSON).

orbax writes each checkpoint under a temporary name and renames it only when complete, so a
crash during a save leaves the previous checkpoints intact; `keep` bounds how many stay.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import shutil
from typing import Any

import jax

from jaxrl.errors import JaxrlError

POLICY_ITEMS = ("agent", "obs_stats")
# The layout of the saved state. 2: hyperparameters as state (the loop state's hp, agent
# states' hp, optimiser states of optax.inject_hyperparams); 1 (no "state_layout" in meta):
# before that; 3: the replay buffer laid out [time, env] (jaxrl.replay), so devices can split
# its envs; 4: critic heads (agent states' `head_state`), and the on-policy loop's own state
# counting rollouts in `iteration`.
STATE_LAYOUT = 4


def _loop_part(state: Any) -> dict[str, Any]:
    """The loop state's fields other than the policy's (`POLICY_ITEMS`): env states, replay
    buffer (off-policy), key, counters, hyperparameters."""
    return {
        field.name: getattr(state, field.name)
        for field in dataclasses.fields(state)
        if field.name not in POLICY_ITEMS
    }


class CheckpointError(JaxrlError, ValueError):
    """A checkpoint that is missing, incomplete or of another run."""


class CheckpointWriteError(CheckpointError):
    """A checkpoint that could not be written (disk full, quota, permissions): the earlier ones
    are intact."""


class DamagedCheckpointError(CheckpointError):
    """A complete checkpoint (committed by orbax) whose files cannot be read back: truncated,
    emptied or removed since it was written."""


DAMAGED = "damaged-checkpoints"
"""Where a resume moves a damaged checkpoint (beside `checkpoints/`): kept, out of the way."""


@contextlib.contextmanager
def _reading(where: str):
    """A context in which orbax's (or tensorstore's, or json's) failure to read checkpoint
    `where` becomes a DamagedCheckpointError naming it, not a traceback from inside orbax."""
    try:
        yield
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001 - any failure to read is damage, named below
        first = (str(error).strip().splitlines() or [""])[0][:300]
        if _out_of_memory(error):  # the machine's failure, not the files': none is set aside
            raise CheckpointError(
                f"checkpoint {where} could not be restored: out of memory "
                f"({type(error).__name__}: {first}); its files are kept. Free the device's or "
                "the host's memory (another process on it?) and resume again."
            ) from None
        raise DamagedCheckpointError(
            f"checkpoint {where} cannot be read ({type(error).__name__}: {first}): a file "
            "of it is truncated, emptied or missing"
        ) from None


def _out_of_memory(error: BaseException) -> bool:
    """An allocation that failed while restoring (XLA's RESOURCE_EXHAUSTED on a device, Python's
    MemoryError on the host): a resume that hit it would otherwise take a sound checkpoint for a
    damaged one and set it aside, going on from an older one."""
    text = str(error)
    return (
        isinstance(error, MemoryError)
        or "RESOURCE_EXHAUSTED" in text
        or ("out of memory" in text.lower())
    )


def _name(path) -> str:
    """A tree path as names joined by '/', the same for a state's arrays and orbax's metadata
    of them (dict keys, dataclass and named-tuple fields, list indices)."""
    parts = []
    for key in path:
        for attribute in ("key", "name", "idx"):
            if hasattr(key, attribute):
                parts.append(str(getattr(key, attribute)))
                break
        else:
            parts.append(str(key))
    return "/".join(parts)


def _arrays(tree) -> dict[str, tuple[tuple[int, ...], str]]:
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {_name(path): (tuple(leaf.shape), str(leaf.dtype)) for path, leaf in leaves}


def check_arrays(directory: str | os.PathLike, step: int, items: dict[str, Any]) -> None:
    """Refuses checkpoint `step` where the arrays saved under `items`' names differ from the
    templates' (`items`: name -> state part): in name, shape or dtype, as a checkpoint of
    another algorithm, network size or env holds. Reads orbax's metadata only."""
    ocp = _ocp()
    where = f"{pathlib.Path(directory) / str(step)}"
    differ = []
    for item, like in items.items():
        with _reading(where):
            metadata = ocp.StandardCheckpointHandler().metadata(
                pathlib.Path(directory).absolute() / str(step) / item
            )
        saved = _arrays(getattr(metadata, "tree", metadata))
        expected = _arrays(_abstract(like))
        # Parameters before optimiser moments, which repeat their shapes.
        for name in sorted(set(saved) | set(expected), key=lambda n: ("opt_state" in n, n)):
            have, want = saved.get(name), expected.get(name)
            if have == want:
                continue
            show = lambda entry: f"{entry[1]}{list(entry[0])}"  # noqa: E731
            if have is None:
                differ.append(f"{item}/{name} is missing (the run has {show(want)})")
            elif want is None:
                differ.append(f"{item}/{name} {show(have)} is not in the run")
            else:
                differ.append(f"{item}/{name} is {show(have)}, the run's {show(want)}")
    if differ:
        shown = "; ".join(differ[:3]) + (f"; and {len(differ) - 3} more" if len(differ) > 3 else "")
        raise CheckpointError(
            f"checkpoint {where} holds other arrays than this run's: {shown}. It was written by "
            "a run of another algorithm, network size, env or jaxrl version; restore it with "
            "that run's config (its own folder's config.json)."
        )


def set_aside(directory: str | os.PathLike, step: int) -> pathlib.Path:
    """Moves checkpoint `step` out of `directory` into `../damaged-checkpoints/`, unchanged (a
    resume then goes on from the one before, and a later save of that step has room)."""
    source = pathlib.Path(directory) / str(step)
    target = pathlib.Path(directory).parent / DAMAGED / str(step)
    suffix = 1
    while target.exists():
        target = target.with_name(f"{step}.{suffix}")
        suffix += 1
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    return target


def _ocp():
    import orbax.checkpoint as ocp

    return ocp


def manager(directory: str | os.PathLike, keep: int | None = 3, create: bool = True):
    """An orbax CheckpointManager over `directory` keeping the newest `keep` checkpoints (None:
    all). Saves are synchronous: training continues only once the checkpoint is on disk."""
    ocp = _ocp()
    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, create=create, enable_async_checkpointing=False
    )
    return ocp.CheckpointManager(pathlib.Path(directory).absolute(), options=options)


def _drop_empty(tree):
    """`tree` with its zero-size arrays replaced by None. orbax refuses to write arrays of size 0,
    and MJX states hold some (e.g. `data.act` of a model without actuator activations); they
    carry no values, so a restore takes them back from the template (`_put_back_empty`)."""
    leaves, treedef = jax.tree.flatten(tree)
    return jax.tree.unflatten(treedef, [None if leaf.size == 0 else leaf for leaf in leaves])


def _put_back_empty(restored, like):
    """`restored` (read from a tree saved through `_drop_empty`) with `like`'s zero-size arrays
    back in their places."""
    like_leaves, treedef = jax.tree.flatten(like)
    restored_leaves = treedef.flatten_up_to(restored)
    return jax.tree.unflatten(
        treedef,
        [
            template if template.size == 0 else value
            for template, value in zip(like_leaves, restored_leaves, strict=True)
        ],
    )


def save(
    checkpoints,
    state: Any,
    env_steps: int,
    history: list[dict],
    meta: dict[str, Any],
    *,
    include_buffer: bool = True,
) -> None:
    """Writes checkpoint `env_steps` through the manager `checkpoints`."""
    ocp = _ocp()
    loop = _loop_part(state)
    if not include_buffer and "buffer" in loop:
        loop["buffer"] = None
    meta = {
        **meta,
        "env_steps": int(env_steps),
        "has_buffer": loop.get("buffer") is not None,
        "state_layout": STATE_LAYOUT,
    }
    try:
        checkpoints.save(
            int(env_steps),
            args=ocp.args.Composite(
                agent=ocp.args.StandardSave(_drop_empty(state.agent)),
                obs_stats=ocp.args.StandardSave(_drop_empty(state.obs_stats)),
                loop=ocp.args.StandardSave(_drop_empty(loop)),
                history=ocp.args.JsonSave(history),
                meta=ocp.args.JsonSave(meta),
            ),
            force=True,
        )
        checkpoints.wait_until_finished()
    except Exception as error:  # noqa: BLE001 - a disk full, a quota, a lost mount: all named
        directory = pathlib.Path(checkpoints.directory)
        # orbax commits a checkpoint by renaming its temporary folder: what failed before the
        # rename is only that folder, removed to give the space back.
        for partial in directory.glob(f"{int(env_steps)}.orbax-checkpoint-tmp*"):
            shutil.rmtree(partial, ignore_errors=True)
        kept = steps(directory)
        first = (str(error).strip().splitlines() or [""])[0][:300]
        raise CheckpointWriteError(
            f"the checkpoint at env step {int(env_steps):,} could not be written "
            f"({type(error).__name__}: {first}); the run stopped. "
            + (
                f"The checkpoints before it are intact (newest: env step {kept[-1]:,}); "
                if kept
                else "There is no earlier checkpoint; "
            )
            + "free some space (or fix the folder) and continue with jaxrl train --resume RUN."
        ) from None


def _reader(directory: str | os.PathLike):
    # Not orbax's read_only mode, which logs warnings on every open; a manager that keeps all
    # checkpoints and creates nothing never writes or deletes unless asked to save.
    return manager(directory, keep=None, create=False)


def steps(directory: str | os.PathLike) -> list[int]:
    """The env steps of the complete checkpoints under `directory`, oldest first."""
    path = pathlib.Path(directory)
    if not path.is_dir():
        return []
    return sorted(_reader(path).all_steps())


def pick(directory: str | os.PathLike, step: int | None = None) -> int:
    """`step` if a complete checkpoint of it exists, else (None) the newest one."""
    available = steps(directory)
    if not available:
        raise CheckpointError(f"no complete checkpoint under {directory}")
    if step is None:
        return available[-1]
    if step not in available:
        raise CheckpointError(
            f"no checkpoint at env step {step} under {directory}; there are: "
            f"{', '.join(map(str, available))}"
        )
    return step


def _abstract(tree):
    """The shapes and dtypes of `tree`'s arrays, zero-size ones dropped as `save` drops them."""
    # With its sharding where it has one: restored onto the run's devices as it was laid out.
    shape = lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None))  # noqa: E731
    return _drop_empty(jax.tree.map(shape, tree))


def read_meta(directory: str | os.PathLike, step: int) -> tuple[dict, list[dict]]:
    """(meta, history) of checkpoint `step`."""
    ocp = _ocp()
    with _reading(f"{pathlib.Path(directory) / str(step)}"):
        restored = _reader(directory).restore(
            step,
            args=ocp.args.Composite(meta=ocp.args.JsonRestore(), history=ocp.args.JsonRestore()),
        )
        meta, history = restored["meta"], restored["history"]
        if not isinstance(meta, dict) or not isinstance(history, list):
            raise ValueError("its meta or history is not what jaxrl writes")
    return meta, history


def check_layout(meta: dict, where: str) -> None:
    """Refuses a checkpoint whose state another layout of jaxrl wrote, naming both."""
    layout = meta.get("state_layout", 1)
    if layout != STATE_LAYOUT:
        raise CheckpointError(
            f"checkpoint {where} holds a state of layout {layout}, written by another version "
            f"of jaxrl (this one reads layout {STATE_LAYOUT}: hyperparameters are part of the "
            "state since layout 2, the replay buffer is laid out [time, env] since layout 3, "
            "critic heads have a state and on-policy runs count rollouts since layout 4); "
            "continue or evaluate it with the jaxrl version that wrote "
            "it, or train the run anew."
        )


def check_meta(meta: dict, expected: dict, where: str) -> None:
    """Refuses a checkpoint whose algorithm, env or sizes differ from the run's."""
    differ = [
        f"{name} {meta.get(name)!r} (run: {value!r})"
        for name, value in expected.items()
        if meta.get(name) != value
    ]
    if differ:
        raise CheckpointError(f"checkpoint {where} is of another run: {'; '.join(differ)}")


def restore_policy(directory: str | os.PathLike, step: int, like_agent, like_stats):
    """(agent state, observation statistics) of checkpoint `step`, shaped like the templates
    (arrays or ShapeDtypeStructs); the replay buffer and env states are not read."""
    ocp = _ocp()
    where = f"{pathlib.Path(directory) / str(step)}"
    check_layout(read_meta(directory, step)[0], where)
    check_arrays(directory, step, {"agent": like_agent, "obs_stats": like_stats})
    with _reading(where):
        restored = _reader(directory).restore(
            step,
            args=ocp.args.Composite(
                agent=ocp.args.StandardRestore(_abstract(like_agent)),
                obs_stats=ocp.args.StandardRestore(_abstract(like_stats)),
            ),
        )
    return (
        _put_back_empty(restored["agent"], like_agent),
        _put_back_empty(restored["obs_stats"], like_stats),
    )


def restore_loop(directory: str | os.PathLike, step: int) -> dict[str, Any]:
    """The loop part of checkpoint `step` (env states, replay buffer, key, counters) as saved,
    nested dicts of arrays, without a template: what `jaxrl collect --replay` reads of a run
    whose envs it does not build."""
    ocp = _ocp()
    where = f"{pathlib.Path(directory) / str(step)}"
    check_layout(read_meta(directory, step)[0], where)
    with _reading(where):
        restored = _reader(directory).restore(
            step, args=ocp.args.Composite(loop=ocp.args.StandardRestore())
        )
    return restored["loop"]


def restore_state(directory: str | os.PathLike, step: int, like: Any) -> Any:
    """The whole loop state of checkpoint `step`, shaped like `like` (a fresh state from
    `trainer.init`). Saved without the replay buffer, the state gets `like`'s (empty) one."""
    ocp = _ocp()
    where = f"{pathlib.Path(directory) / str(step)}"
    meta, _ = read_meta(directory, step)
    check_layout(meta, where)
    loop_like = _loop_part(like)
    if "buffer" in loop_like and not meta.get("has_buffer", True):
        loop_like["buffer"] = None
    items = {"agent": like.agent, "obs_stats": like.obs_stats, "loop": loop_like}
    check_arrays(directory, step, items)
    with _reading(where):
        restored = _reader(directory).restore(
            step,
            args=ocp.args.Composite(
                **{name: ocp.args.StandardRestore(_abstract(part)) for name, part in items.items()}
            ),
        )
    loop = dict(restored["loop"])
    if "buffer" in loop and loop["buffer"] is None:
        loop["buffer"] = like.buffer
    loop = _put_back_empty(loop, _loop_part(like))
    return like.replace(
        agent=_put_back_empty(restored["agent"], like.agent),
        obs_stats=_put_back_empty(restored["obs_stats"], like.obs_stats),
        **loop,
    )
