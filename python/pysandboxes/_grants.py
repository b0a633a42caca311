"""What partial mode grants itself (issue 15 item 5): a worker imports the
module of each function it runs, so the module and the directory it is
found in must be visible to it. This module owns those grants, and
the message that names the same rules when the worker still cannot import
a function's module (a locked rule file takes no command-line rule); it
decides nothing else. The grants are the narrowest rules that let the
import system find and load the module, read-only:

- python-import=<top-level name>;
- expose-list=<the sys.path directory that holds it>: importlib lists it
  to find the name, and sees no file content through it;
- expose-ro=<the module file, or the top-level package's directory>.

A module inside the interpreter's own trees (the standard library,
site-packages) needs no file rule: the implicit rules cover them.
"""
import importlib.util
import os
import sys

# the functions marked with @sandbox, by module: granted when workers start
decorated = set()


def _interpreter_trees():
    trees = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for p in sys.path:
        if p and os.path.basename(p) in ("site-packages", "dist-packages"):
            trees.add(p)
    return [os.path.realpath(t) for t in trees if t]


def _under(path, tree):
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def location(module):
    """(top-level name, its sys.path directory, the file or package
    directory) of a module, or None when it is not a file on disk."""
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is None or not spec.name or spec.name == "__main__":
            return None
        module = spec.name
    top = module.partition(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not os.path.isabs(spec.origin):
        return None
    if spec.submodule_search_locations:
        found = os.path.dirname(spec.origin)  # the package's directory
    else:
        found = spec.origin
    # the directory importlib lists is where the name was found, not
    # where a symbolic link there points
    return (top, os.path.realpath(os.path.dirname(found)),
            os.path.realpath(found))


def rule_args(modules):
    """--key=value rules that let a worker import these modules."""
    out = []
    trees = _interpreter_trees()
    for module in sorted(m for m in modules if m):
        loc = location(module)
        if loc is None:
            continue
        top, parent, target = loc
        rules = [f"--python-import={top}"]
        if not any(_under(target, t) for t in trees):
            rules += [f"--expose-list={parent}", f"--expose-ro={target}"]
        out += [r for r in rules if r not in out]
    return out


def _named(exc):
    """The module an import error is about: its .name, else the one its
    message names (the guard's "Module named 'x' is not allowed by a
    rule", CPython's "No module named 'x'"), which is all a rebuilt
    remote exception carries; None when neither says."""
    name = getattr(exc, "name", None)
    if name:
        return name
    text = str(exc)
    for head in ("Module named '", "No module named '"):
        start = text.find(head)
        if start >= 0:
            start += len(head)
            end = text.find("'", start)
            if end > start:
                return text[start:end]
    return None


def hidden(module, exc):
    """The worker could not import a function's module that the parent
    finds on disk: a ModuleNotFoundError naming the rules to add, or None
    when exc is about another module. When the module's own import of
    another module was refused, the message names that module's rule
    first: the function's module was found, its grants are no cure."""
    loc = location(module)
    top = module.partition(".")[0]
    if loc is None:
        return None
    named = _named(exc)
    if named is not None and named.partition(".")[0] != top:
        what = named.partition(".")[0]
        if "not allowed by a rule" in str(exc):
            cure = f"add 'python-import={what}' to the rule file"
        else:
            cure = (f"let the sandbox import '{named}' (python-import= "
                    f"and, outside the interpreter's own trees, "
                    f"expose-ro= of its file)")
        return ModuleNotFoundError(
            f"Module '{module}' ({loc[2]}) cannot be imported in the "
            f"sandbox: its import of '{named}' is refused: {cure} "
            f"({exc})", name=named)
    _, parent, target = loc
    rules = [f"python-import={top}"]
    if not any(_under(target, t) for t in _interpreter_trees()):
        rules = [f"expose-ro={target}", f"expose-list={parent}"] + rules
    return ModuleNotFoundError(
        f"Module '{module}' ({target}) cannot be imported in the sandbox: "
        f"add " + ", ".join(f"'{r}'" for r in rules) + " to the rule file "
        f"({exc})", name=module)
