"""Group F of attacks.md: the environment. python-sb starts the
interpreter with the variables env= names and nothing else, so a secret
of the caller is not hidden by a check the program could get around: it
is absent (the launcher's refusal). /proc/<ppid>/environ is D21."""

import os

from harness import attack


@attack("F1", "Read a variable outside env= (os.environ, os.getenv)")
def test_F1(case, judge):
    env = dict(os.environ, AWS_SECRET="s3cr3t", KEEP="kept")
    out = case.run("python-import=*\nenv=KEEP=${KEEP}\n", {
        "control": "import os\nreturn os.environ['KEEP']",
        "environ": "import os\nreturn os.environ['AWS_SECRET']",
        "getenv": """
            import os
            v = os.getenv('AWS_SECRET')
            if v is None:
                raise LookupError('absent')
            return v
            """,
        "posix": """
            import posix
            v = posix.environ.get(b'AWS_SECRET')
            if v is None:
                raise LookupError('absent')
            return v
            """,
    }, env=env)
    assert out["control"].escaped and out["control"].msg == "'kept'", \
        out["control"]
    judge.launcher(out["environ"], "KeyError", "'AWS_SECRET'",
                   "not in the environment")
    judge.launcher(out["getenv"], "LookupError", "absent",
                   "not in the environment")
    judge.launcher(out["posix"], "LookupError", "absent",
                   "not in the environment")
