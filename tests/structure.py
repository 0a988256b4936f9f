#!/usr/bin/env python3
"""Structure measurements of the `jaxrl/` package (stdlib only; never imports jaxrl).

Usage:
    python tests/structure.py /path/to/repo               # the working tree
    python tests/structure.py /path/to/repo --rev HEAD    # a commit, read via `git show`
    python tests/structure.py /path/to/repo --top 20 --package jaxrl

Prints a markdown report:
  1. longest functions/methods (nested defs are their own entries; end_lineno - lineno + 1,
     from the `def` line, decorators excluded)
  2. lines per module (physical lines, as `wc -l`)
  3. internal import graph and its strongly connected components (> 1 module)
  4. internal modules that <package>/cli.py imports (module-level / function-local)
  5. validation sites for batch_size and num_envs
  6. exception classes defined in the package
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

FIELDS = ("batch_size", "num_envs")
ERROR_CALL_SUFFIXES = ("error", "exit", "fail", "abort")
BUILTIN_EXC_ROOTS = {"BaseException", "Exception"}


# --------------------------------------------------------------------------- sources


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def read(repo: Path, rev: str | None, path: str) -> str | None:
    try:
        if rev:
            return git(repo, "show", f"{rev}:{path}")
        return (repo / path).read_text(encoding="utf-8")
    except (subprocess.CalledProcessError, OSError):
        return None


def load_sources(repo: Path, folder: str, rev: str | None) -> dict[str, str]:
    """{relative path: source} for every .py file under <folder>/."""
    if rev:
        names = git(repo, "ls-tree", "-r", "--name-only", rev, "--", folder + "/").split("\n")
        return {n: git(repo, "show", f"{rev}:{n}") for n in sorted(names) if n.endswith(".py")}
    root = repo / folder
    return {
        str(p.relative_to(repo)): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))
    }


def mapped_folders(repo: Path, rev: str | None, package: str) -> dict[str, str]:
    """pyproject's [tool.setuptools.package-dir] entries under the package:
    {folder: dotted package}, e.g. {"envs": "jaxrl.envs"}."""
    text = read(repo, rev, "pyproject.toml")
    if not text:
        return {}
    try:
        import tomllib

        dirs = tomllib.loads(text).get("tool", {}).get("setuptools", {}).get("package-dir", {})
    except Exception:
        return {}
    return {
        folder.rstrip("/"): name
        for name, folder in dirs.items()
        if name.startswith(package + ".") and folder
    }


MAPPED: dict[str, str] = {}  # folder -> dotted package, filled in main()


def module_name(path: str) -> str:
    parts = path[:-3].split("/")
    if parts[0] in MAPPED:
        parts = MAPPED[parts[0]].split(".") + parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_package(path: str) -> bool:
    return path.endswith("/__init__.py")


def count_lines(source: str) -> int:
    return source.count("\n") + (0 if source.endswith("\n") or not source else 1)


# --------------------------------------------------------------------------- 1. functions


def functions(tree: ast.AST):
    """Yields (qualname, node) for every def, nested ones included."""

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                yield name, child
                yield from walk(child, name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


# --------------------------------------------------------------------------- 3. imports


def parents_map(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    return parents


def enclosing(node, parents, kinds):
    node = parents.get(node)
    while node is not None:
        if isinstance(node, kinds):
            return node
        node = parents.get(node)
    return None


def in_type_checking(node, parents) -> bool:
    node_ = parents.get(node)
    while node_ is not None:
        if isinstance(node_, ast.If):
            test = ast.unparse(node_.test)
            if "TYPE_CHECKING" in test:
                return True
        node_ = parents.get(node_)
    return False


def import_edges(path: str, tree: ast.AST, modules: set[str], package: str):
    """Yields (target module, line, kind, statement) for each internal import. `modules`
    holds every module of the package, the mapped folders' included."""
    me = module_name(path)
    pkg = me if is_package(path) else me.rpartition(".")[0]
    parents = parents_map(tree)

    def resolve(name: str) -> str | None:
        # the longest prefix of `name` that is a module of the package
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            cand = ".".join(parts[:i])
            if cand in modules:
                return cand
        return None

    seen = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            kind = "function-local"
        elif in_type_checking(node, parents):
            kind = "TYPE_CHECKING"
        else:
            kind = "module-level"
        stmt = ast.unparse(node)
        targets = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == package or alias.name.startswith(package + "."):
                    targets.append(resolve(alias.name))
        else:
            if node.level:
                base = pkg.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                base = ".".join(base)
                full = f"{base}.{node.module}" if node.module else base
            else:
                full = node.module or ""
            if not (full == package or full.startswith(package + ".")):
                continue
            for alias in node.names:
                sub = f"{full}.{alias.name}"
                # `from pkg import submodule` imports the submodule; else the module itself
                targets.append(sub if sub in modules else resolve(full))
        for target in targets:
            if target and target != me and (target, node.lineno) not in seen:
                seen.add((target, node.lineno))
                yield target, node.lineno, kind, stmt


def tarjan(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


# --------------------------------------------------------------------------- 5. validation


def names_in(node: ast.AST) -> set[str]:
    """Identifiers and string constants mentioned in an expression."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.add(sub.value)
    return found


def text_mentions(node: ast.AST, field: str) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and field in sub.value:
            return True
        if isinstance(sub, ast.Name) and sub.id == field:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == field:
            return True
    return False


def is_error_stmt(node: ast.AST) -> bool:
    if isinstance(node, ast.Raise):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name.lower().endswith(ERROR_CALL_SUFFIXES)
    return False


def direct_body_errors(stmts):
    """Error statements in `stmts`, descending into nested blocks but not defs/classes."""
    for stmt in stmts:
        if is_error_stmt(stmt):
            yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(stmt, ast.If):
                yield from direct_body_errors(inner)


def loop_names(loop: ast.For, scope: ast.AST) -> set[str]:
    """Strings the loop iterates over; a bare Name is looked up among the scope's assignments."""
    found = names_in(loop.iter)
    if isinstance(loop.iter, ast.Name):
        for sub in ast.walk(scope):
            if isinstance(sub, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == loop.iter.id for t in sub.targets
            ):
                found |= names_in(sub.value)
    return found


def validation_sites(path: str, tree: ast.AST, fields=FIELDS):
    """Yields (field, line, how, condition, error line, error head) per check that raises or
    reports an error about `field`. how: 'condition' (field named in the test), 'loop over
    names' (the test sits in a `for` over a tuple naming the field), 'message only' (only the
    error's text names it; the condition derives from it), 'assert'."""
    parents = parents_map(tree)
    covered = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            for field in fields:
                if field in names_in(node.test) or text_mentions(node, field):
                    yield field, node.lineno, "assert", ast.unparse(node.test), node.lineno, ""
            continue
        if not isinstance(node, ast.If):
            continue
        errors = list(direct_body_errors(node.body))
        if not errors:
            continue
        test_names = names_in(node.test)
        scope = enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef)) or tree
        loops = []
        cur = parents.get(node)
        while cur is not None and cur is not scope:
            if isinstance(cur, ast.For):
                loops.append(cur)
            cur = parents.get(cur)
        for field in fields:
            how = None
            context = ""
            if field in test_names:
                how = "condition"
            else:
                for loop in loops:
                    if field in loop_names(loop, scope):
                        how = "loop over names"
                        context = f"for {ast.unparse(loop.target)} in {ast.unparse(loop.iter)}: "
                        break
            if how is None and (
                any(text_mentions(e, field) for e in errors)
                or any(text_mentions(b, field) for b in node.body)  # a message built in the body
            ):
                how = "message only"
            if how is None:
                continue
            err = errors[0]
            covered.update((field, e.lineno) for e in errors)
            head = ast.unparse(err).split("(")[0]
            yield field, node.lineno, how, context + ast.unparse(node.test), err.lineno, head
    # raises outside any `if` body scanned above (e.g. after an early-return guard, in an
    # `else`) whose message names the field
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise):
            continue
        for field in fields:
            if (field, node.lineno) in covered or not text_mentions(node, field):
                continue
            guard = "(unconditional raise"
            func = enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
            if func is not None:
                guard += f" at the end of `{func.name}`; its guard is an early return above"
            head = ast.unparse(node).split("(")[0]
            yield field, node.lineno, "message only", guard + ")", node.lineno, head


# --------------------------------------------------------------------------- 6. exceptions


def exception_classes(trees: dict[str, ast.AST]):
    classes = {}  # name -> (module, line, bases)
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                classes.setdefault(node.name, []).append((path, node.lineno, bases))

    def is_exc(name, seen=()):
        short = name.rpartition(".")[2]
        if short in BUILTIN_EXC_ROOTS or short.endswith(("Error", "Exception", "Warning")):
            return True
        if short in classes and short not in seen:
            return any(is_exc(b, seen + (short,)) for _, _, bases in classes[short] for b in bases)
        return False

    out = []
    for name, defs in classes.items():
        for path, line, bases in defs:
            if any(is_exc(b, (name,)) for b in bases):
                out.append((path, line, name, bases))
    return sorted(out)


# --------------------------------------------------------------------------- report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--rev", default=None, help="measure this commit instead of the work tree")
    ap.add_argument("--package", default="jaxrl")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)
    repo, package = args.repo.resolve(), args.package

    try:
        commit = git(repo, "log", "-1", "--format=%h", *([args.rev] if args.rev else [])).strip()
        dirty = git(repo, "status", "--porcelain", "--", package + "/").strip()
    except Exception:  # not a git checkout
        commit, dirty = "?", ""
    sources = load_sources(repo, package, args.rev)
    trees = {p: ast.parse(s, filename=p) for p, s in sources.items()}
    MAPPED.update(mapped_folders(repo, args.rev, package))
    mapped_trees = {}
    for folder in MAPPED:
        for p_, s_ in load_sources(repo, folder, args.rev).items():
            try:
                mapped_trees[p_] = ast.parse(s_, filename=p_)
            except SyntaxError:
                pass
    modules = {module_name(p): p for p in sources}  # in scope: <package>/ itself
    all_modules = {**modules, **{module_name(p): p for p in mapped_trees}}
    body: list[str] = []

    def P(*parts):
        body.append(" ".join(str(x) for x in parts))

    where = f"commit `{commit}`"
    if args.rev:
        where += f" (read from git, `--rev {args.rev}`)"
    else:
        where += " working tree" + (
            f" — **uncommitted changes in {package}/:** "
            + ", ".join(line.split()[-1] for line in dirty.splitlines())
            if dirty
            else " (clean)"
        )
    title = f"# `{package}/` structure — {where}\n"
    P(
        f"{len(sources)} modules in `{package}/`. Generated by "
        f"`python {Path(__file__).resolve()} {args.repo}"
        + (f" --rev {args.rev}" if args.rev else "")
        + "`.\n"
    )

    # 1
    funcs = []
    for path, tree in trees.items():
        for qual, node in functions(tree):
            funcs.append((node.end_lineno - node.lineno + 1, path, node.lineno, qual))
    funcs.sort(key=lambda t: (-t[0], t[1], t[2]))
    P(f"## 1. Longest functions/methods (top {args.top} of {len(funcs)})\n")
    P(
        "`end_lineno - lineno + 1`, from the `def` line (decorators excluded); nested defs "
        "counted separately (and also inside their parent).\n"
    )
    P("| # | lines | function | location |\n|---|---:|---|---|")
    for i, (n, path, line, qual) in enumerate(funcs[: args.top], 1):
        P(f"| {i} | {n} | `{qual}` | {path}:{line} |")
    over = {t: sum(1 for f in funcs if f[0] > t) for t in (50, 100, 150)}
    P("\nFunctions longer than " + ", ".join(f"{t} lines: {c}" for t, c in over.items()) + ".\n")

    # 2
    loc = sorted(((count_lines(s), p) for p, s in sources.items()), key=lambda t: (-t[0], t[1]))
    total = sum(n for n, _ in loc)
    P("## 2. Lines per module\n")
    P("| lines | module |\n|---:|---|")
    for n, p in loc:
        P(f"| {n} | {p} |")
    P(f"| **{total}** | **total ({len(loc)} files)** |\n")

    # 3
    edges = defaultdict(lambda: defaultdict(list))  # src -> dst -> [(line, kind, stmt)]
    for path, tree in {**trees, **mapped_trees}.items():
        src = module_name(path)
        for dst, line, kind, stmt in import_edges(path, tree, set(all_modules), package):
            edges[src][dst].append((line, kind, stmt))

    def kinds(src, dst):
        return {k for _, k, _ in edges[src][dst]}

    inner = [(s_, d) for s_ in modules for d in edges[s_] if d in modules]
    local_only = sum(1 for s_, d in inner if "module-level" not in kinds(s_, d))
    to_mapped = sorted({d for s_ in modules for d in edges[s_] if d not in modules})
    P("## 3. Import circles\n")
    P(
        f"Graph of imports between the {len(modules)} modules of `{package}/`: {len(inner)} "
        f"distinct module→module edges ({local_only} of them only function-local). An edge goes "
        f"to the module named (`from {package} import x` → `{package}.x` where x is a "
        f"submodule, else `{package}` itself); the implicit import of a parent package's "
        "`__init__` (e.g. `from jaxrl.loops.base import …` also runs `jaxrl/loops/__init__.py`) "
        "is not an edge. Edges marked **[function-local]** are imports inside a function body.\n"
    )
    if MAPPED:
        P(
            "Mapped folders (pyproject `package-dir`, outside `jaxrl/`): "
            + ", ".join(f"`{f}/` = `{n}`" for f, n in MAPPED.items())
            + f". `{package}/` imports {len(to_mapped)} of their modules: "
            + ", ".join(f"`{m}`" for m in to_mapped)
            + ". They are left out of the first two passes and added in the third.\n"
        )

    def report_sccs(label, nodes, keep, paths):
        graph = {s_: {d for d in edges[s_] if d in nodes and keep(s_, d)} for s_ in nodes}
        sccs = [c for c in tarjan(nodes, graph) if len(c) > 1]
        P(f"### SCCs over {label}: {len(sccs)}\n")
        for i, comp in enumerate(sorted(sccs, key=lambda c: (-len(c), c)), 1):
            members = set(comp)
            n_in = sum(len(graph[m] & members) for m in comp)
            P(
                f"{i}. **{len(comp)} modules, {n_in} edges:** "
                + ", ".join(f"`{m}`" for m in comp)
                + "\n"
            )
            for s_ in comp:
                for d in sorted(graph[s_] & members):
                    for line, kind, stmt in sorted(edges[s_][d]):
                        if not keep(s_, d) or (keep is module_level and kind != "module-level"):
                            continue
                        mark = "" if kind == "module-level" else f" **[{kind}]**"
                        if len(stmt) > 90:
                            stmt = stmt[:87] + "..."
                        P(f"   - `{s_}` → `{d}` — {paths[s_]}:{line} `{stmt}`{mark}")
            P("")
        if not sccs:
            P("(none)\n")
        return sccs

    def every(s_, d):
        return True

    def module_level(s_, d):
        return "module-level" in kinds(s_, d)

    scc_all = report_sccs(
        f"`{package}/`, all edges (module-level + function-local)", modules, every, modules
    )
    scc_top = report_sccs(
        f"`{package}/`, module-level edges only (cycles at import time)",
        modules,
        module_level,
        modules,
    )
    scc_mapped = []
    if MAPPED:
        scc_mapped = report_sccs(
            f"`{package}/` + mapped folders, all edges", all_modules, every, all_modules
        )

    # 4
    cli_mod = f"{package}.cli"
    P(f"## 4. Internal imports of `{package}/cli.py`\n")
    if cli_mod in modules:
        targets = edges[cli_mod]
        top = sorted(d for d in targets if "module-level" in kinds(cli_mod, d))
        loc_ = sorted(d for d in targets if "module-level" not in kinds(cli_mod, d))
        every_local = sorted(d for d in targets if "function-local" in kinds(cli_mod, d))
        in_pkg = [d for d in targets if d in modules]
        P(
            f"- distinct internal modules: **{len(targets)}** ({len(in_pkg)} in `{package}/`, "
            f"{len(targets) - len(in_pkg)} in mapped folders)"
        )
        P(f"- module-level: **{len(top)}** — " + ", ".join(f"`{m}`" for m in top))
        P(
            f"- function-local only (not also imported at module level): **{len(loc_)}** — "
            + ", ".join(f"`{m}`" for m in loc_)
        )
        P(
            f"- imported function-locally at all: {len(every_local)} — "
            + ", ".join(f"`{m}`" for m in every_local)
        )
        P("\n| target | kind | line | statement |\n|---|---|---:|---|")
        for d in sorted(edges[cli_mod]):
            for line, kind, stmt in sorted(edges[cli_mod][d]):
                P(f"| `{d}` | {kind} | {line} | `{stmt}` |")
        P("")
    else:
        P("(no cli.py)\n")

    # 5
    P("## 5. Validation sites\n")
    P(
        "An `if` whose body raises (or calls a `*error`/`*exit`/`*fail` function), or an "
        "`assert`, counted for a field when the field is named in the condition, or the `if` "
        "sits in a `for` over names that include it, or (weakest) only the error's message names "
        "it.\n"
    )
    sites = defaultdict(list)
    for path, tree in trees.items():
        for field, line, how, cond, eline, head in validation_sites(path, tree):
            sites[field].append((path, line, how, cond, eline, head))
    for field in FIELDS:
        rows = sorted(sites[field])
        strong = [r for r in rows if r[2] != "message only"]
        P(
            f"### `{field}`: {len(rows)} sites ({len(strong)} checking it in the condition "
            f"or a name loop)\n"
        )
        P("| location | how | condition | raises |\n|---|---|---|---|")
        for path, line, how, cond, eline, head in rows:
            cond = cond.replace("|", "\\|")
            if len(cond) > 140:
                cond = cond[:137] + "..."
            P(f"| {path}:{line} | {how} | `{cond}` | {head} (:{eline}) |")
        P("")

    # 6
    exc = exception_classes(trees)
    P(f"## 6. Exception classes: {len(exc)}\n")
    P("| class | bases | module |\n|---|---|---|")
    for path, line, name, bases in exc:
        P(f"| `{name}` | {', '.join(bases)} | {path}:{line} |")
    P("")

    # summary, printed first
    def fmt(sccs):
        return "; ".join("{" + ", ".join(c) + "}" for c in sccs) or "none"

    summary = [
        title,
        "## Summary\n",
        "- longest functions: "
        + ", ".join(f"`{q}` {n} ({p}:{at})" for n, p, at, q in funcs[:3])
        + f"; {over[100]} functions over 100 lines, {over[50]} over 50 (of {len(funcs)})",
        f"- lines: {total} in {len(loc)} files; largest "
        + ", ".join(f"{p} {n}" for n, p in loc[:3]),
        f"- import SCCs in `{package}/` (all edges): {len(scc_all)} — {fmt(scc_all)}",
        f"- import SCCs in `{package}/` (module-level only): {len(scc_top)} — {fmt(scc_top)}",
    ]
    if MAPPED:
        summary.append(
            f"- import SCCs with mapped folders (all edges): {len(scc_mapped)} — {fmt(scc_mapped)}"
        )
    if cli_mod in modules:
        summary.append(
            f"- `cli.py` imports {len(targets)} internal modules: {len(top)} module-level, "
            f"{len(loc_)} function-local only ({len(in_pkg)} of the {len(targets)} in "
            f"`{package}/`)"
        )
    for field in FIELDS:
        rows = sorted(sites[field])
        summary.append(
            f"- `{field}` validation sites: {len(rows)} — "
            + ", ".join(
                f"{r[0]}:{r[1]}" + (" (msg only)" if r[2] == "message only" else "") for r in rows
            )
        )
    summary.append(f"- exception classes: {len(exc)}\n")
    print("\n".join(summary + body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
