"""An agent that evaluates a model's formula under the calculator profile.

The model is asked for a formula over the order's variables (price, qty,
discount); whatever text comes back is evaluated with
pysandboxes.guarded_eval(..., profile="calc"), never with eval(). A prompt
injection that turns the formula into an escape is refused before anything
runs, with the message that names the rule the formula would need.

Run it under python-sb (the guard lives in python-sb's guard library):

    build/python-sb examples/formula-agent/agent.py --demo
    build/python-sb examples/formula-agent/agent.py 'price * qty - discount'
"""
import sys

from pysandboxes import (EvalInterrupted, EvalSyntaxRejected,
                         RuleEvalPermissionError, guarded_eval)

ORDER = {"price": 12.5, "qty": 4, "discount": 5}

# What a model might answer: one honest formula, then injected ones.
DEMO = [
    ("the model's formula", "round(price * qty - min(discount, 10), 2)"),
    ("injected: walk to os", "().__class__.__base__.__subclasses__()"),
    ("injected: import", "__import__('os').system('id')"),
    ("injected: open a file", "open('/etc/passwd').read()"),
    ("injected: endless work", "9 ** 9 ** 9"),
]


def evaluate(formula):
    """The formula's value, or the refusal as one line to show the model."""
    try:
        return "[ OK ]    " + repr(guarded_eval(formula, profile="calc",
                                                names=dict(ORDER)))
    except EvalSyntaxRejected as e:
        return "[REFUSED] " + e.msg.replace("\n", "\n          ")
    except RuleEvalPermissionError as e:
        return "[REFUSED] " + str(e).replace("\n", " ")
    except EvalInterrupted as e:
        return "[STOPPED] " + str(e)


def main(argv):
    if argv[1:] == ["--demo"]:
        for label, formula in DEMO:
            print(f"{label}: {formula}")
            print(evaluate(formula))
        return 0
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(evaluate(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
