/* eval.h - the eval guard (py-sandboxes(5), eval-*): what api.c's eval, exec
 * and compile wrappers hand over when an eval-* default profile exists, and
 * the arming of pysandboxes.guarded_eval. Everything runs with the GIL held.
 */
#ifndef SB_GUARD_EVAL_H
#define SB_GUARD_EVAL_H

#include <stdbool.h>

#include "capi.h"

/* Resolve what the eval guard needs, take the raw compile() and install the
 * allocation bound. Called once when the guard arms, before the eval/exec/
 * compile wrappers replace the builtins. 0, or -1 with an exception set. */
int sb_eval_arm(void);

/* Does the policy carry a default eval profile (eval/exec/compile from
 * application code are then guarded instead of refused)? */
bool sb_eval_enabled(void);

/* Learning: check what eval()/exec()/compile() ('which') is handed, from
 * application code, against the default profile (its defaults when the
 * rules have none) and record, as learn records, the eval-* rule each
 * refusal names. true when the call needs no python-api= grant (a source
 * or an AST, or a code object compiled that way); false for a code object
 * of unknown provenance. Never raises. */
bool sb_eval_learn(const char *which, PyObject *args, PyObject *kw);
/* Learning: 'code', returned by compile() after sb_eval_learn(), is one
 * the guard would have compiled: exec() of it needs no grant. */
void sb_eval_learn_compiled(PyObject *code);

/* Is an evaluation running on this thread, and is this eval/exec of a
 * source (or a compile)? Then it is the evaluated code's, whoever calls
 * it: a library function it reached (typing.get_type_hints(f, {})
 * evaluating an annotation) is not exempt. A code object a library runs
 * (the import system executing a module) stays with the API guard. */
bool sb_eval_running(const char *which, PyObject *args, PyObject *kw);

/* eval, exec or compile ('which') called from application code or while an
 * evaluation runs, guarded by the evaluation's profile or the default one.
 * A new reference, or NULL with an exception set. */
PyObject *sb_eval_builtin(const char *which, PyObject *args, PyObject *kw);

#endif
