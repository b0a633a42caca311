"""The one function of the agent-snippet sample that runs in the sandbox:
run_snippet(code) executes a code snippet (as written by a model) and
gives back what it left in `result`.

It is an @sandbox function, so under sandboxes() each call runs in a
python-sb worker confined by this directory's .py-sandboxes, and what it
prints is streamed back to the caller. This module imports nothing but
pysandboxes: the snippet gets a fresh namespace, and whatever it imports
is judged by the rules. agent.py opens sandboxes(isolated=True): each call
runs in a child forked from a worker that ran no snippet, so what one
snippet changes in the worker (a module, this function) dies with it.
"""
from pysandboxes import sandbox


@sandbox
def run_snippet(code):
    """exec() the snippet in a fresh namespace; the value of its `result`
    variable, or None. The snippet's exceptions, a refusal of the sandbox
    included, propagate to the caller."""
    namespace = {"__name__": "__snippet__"}
    exec(compile(code, "<snippet>", "exec"), namespace)
    return namespace.get("result")
