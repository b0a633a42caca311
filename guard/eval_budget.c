/* eval_budget.c - the eval guard's run-time budgets (py-sandboxes(5), eval-*):
 * the __sb_tick__ and __sb_enter__ helpers the checker's rewrite calls
 * (eval-max-iterations, eval-max-call-depth, eval-timeout), the allocator
 * wrapper behind eval-max-alloc, and run_code, which runs checked code with the
 * budgets of its profile and turns a spent budget into EvalInterrupted or
 * RuleEvalPermissionError. The evaluation in progress is the thread local
 * 'ev_cur' (eval_int.h). It judges no source and builds no namespace
 * (eval_check.c, eval.c); the allocator hooks run on every PyMem allocation of
 * the process, so they only compare a size and never call into Python.
 */
#include "eval_int.h"
#include "exit_status.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---- budgets ---- */

static void add_ms(struct timespec *t, long long ms)
{
	t->tv_sec += (time_t)(ms / 1000);
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static bool code_is_ours(PyObject *code)
{
	PyObject *file = py.PyObject_GetAttrString(code, "co_filename");
	const char *s = file ? py.PyUnicode_AsUTF8AndSize(file, NULL) : NULL;
	bool r = s && sb_str_starts(s, "<eval:");

	py.Py_DecRef(file);
	py.PyErr_Clear();
	return r;
}

static void timeout_reason(struct ev_run *run)
{
	long long ms = run->p->rules->scalar[SB_EVAL_TIMEOUT];
	char num[48];
	size_t n;

	snprintf(num, sizeof(num), "%lld.%03lld", ms / 1000, ms % 1000);
	n = strlen(num);
	while (num[n - 1] == '0' && num[n - 2] != '.')
		num[--n] = '\0';
	snprintf(run->reason, sizeof(run->reason), "eval-timeout=%ss", num);
}

static bool past_deadline(const struct ev_run *run)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > run->deadline.tv_sec ||
	       (now.tv_sec == run->deadline.tv_sec &&
		now.tv_nsec >= run->deadline.tv_nsec);
}

static PyObject *true_(void)
{
	PyObject *t = py.PyLong_FromLong(1);

	return t;
}

/* What a helper returns: a true value, or NULL with EvalInterrupted set
 * once a budget ran out; the clock is read first when 'clock' says so. */
static PyObject *verdict(struct ev_run *run, bool clock)
{
	if (!run->why && clock && past_deadline(run)) {
		run->why = "timeout";
		timeout_reason(run);
	}
	if (run->why) {
		ev_raise_interrupted(run);
		return NULL;
	}
	return true_();
}

/* Code of an evaluation that runs after it, while its thread handles a
 * GeneratorExit: the finally (or except GeneratorExit) block of a
 * generator or coroutine the evaluation left behind, closed by the
 * collector or by the caller dropping it. Nothing charges it and nobody
 * called it: its first step is refused (weaknesses.md 68 keeps the
 * code the caller calls itself). */
static PyObject *orphan(void)
{
	PyObject *t = NULL, *v = NULL, *tb = NULL;
	bool closing;

	ev.PyErr_GetExcInfo(&t, &v, &tb);
	closing = t && py.PyObject_IsSubclass(t, *ev.generator_exit) == 1;
	py.PyErr_Clear();
	py.Py_DecRef(t);
	py.Py_DecRef(v);
	py.Py_DecRef(tb);
	if (!closing)
		return true_(); /* code that outlived its evaluation */
	ev_raise_orphan("a generator of an evaluation closed after it");
	return NULL;
}

/* __sb_tick__(): inserted by the checker at the top of every loop body and
 * as a condition of every comprehension. Counts iterations, watches the
 * clock; once a budget ran out it raises at every later step. */
static PyObject *g_tick(PyObject *self, PyObject *args)
{
	struct ev_run *run = ev_cur;
	const struct sb_eval_profile *r;

	(void)self;
	(void)args;
	if (!run)
		return orphan();
	r = run->p->rules;
	if (!run->why &&
	    ++run->lines > r->scalar[SB_EVAL_MAX_ITERATIONS]) {
		run->why = "iterations";
		snprintf(run->reason, sizeof(run->reason),
			 "eval-max-iterations=%lld",
			 (long long)r->scalar[SB_EVAL_MAX_ITERATIONS]);
	}
	return verdict(run, !run->why && (++run->events & 31) == 0);
}

/* __sb_enter__(): inserted at the top of every function the source defines.
 * The call depth is the number of the evaluated code's frames on the
 * stack, the top-level one aside. */
static PyObject *g_enter(PyObject *self, PyObject *args)
{
	struct ev_run *run = ev_cur;
	const struct sb_eval_profile *r;
	PyObject *f, *back, *code;
	long long depth = -1;

	(void)self;
	(void)args;
	if (!run)
		return orphan();
	r = run->p->rules;
	f = py.PyEval_GetFrame();
	if (f)
		py.Py_IncRef(f);
	while (f && !run->why) {
		code = py.PyFrame_GetCode(f);
		if (code && code_is_ours(code))
			depth++;
		py.Py_DecRef(code);
		if (depth > r->scalar[SB_EVAL_MAX_CALL_DEPTH]) {
			run->why = "depth";
			snprintf(run->reason, sizeof(run->reason),
				 "eval-max-call-depth=%lld",
				 (long long)r->scalar[SB_EVAL_MAX_CALL_DEPTH]);
		}
		back = py.PyFrame_GetBack(f);
		py.Py_DecRef(f);
		f = back;
	}
	py.Py_DecRef(f);
	return verdict(run, true);
}

/* One allocation bigger than eval-max-alloc while an evaluation runs on
 * this thread fails before it happens (the interpreter raises
 * MemoryError; the evaluation then ends in RuleEvalPermissionError). */
static bool alloc_refused(size_t size)
{
	struct ev_run *run = ev_cur;

	if (!run || size <= (size_t)run->p->rules->scalar[SB_EVAL_MAX_ALLOC])
		return false;
	if (!run->refused)
		run->refused = size;
	return true;
}

static void *a_malloc(void *ctx, size_t size)
{
	struct ev_allocator *o = ctx;

	return alloc_refused(size) ? NULL : o->malloc(o->ctx, size);
}

static void *a_calloc(void *ctx, size_t nelem, size_t elsize)
{
	struct ev_allocator *o = ctx;

	if (elsize && nelem > SIZE_MAX / elsize)
		return NULL;
	return alloc_refused(nelem * elsize) ? NULL
					     : o->calloc(o->ctx, nelem, elsize);
}

static void *a_realloc(void *ctx, void *ptr, size_t size)
{
	struct ev_allocator *o = ctx;

	return alloc_refused(size) ? NULL : o->realloc(o->ctx, ptr, size);
}

static void a_free(void *ctx, void *ptr)
{
	struct ev_allocator *o = ctx;

	o->free(o->ctx, ptr);
}

void ev_install_allocator(int domain, struct ev_allocator *orig)
{
	struct ev_allocator mine = { orig, a_malloc, a_calloc, a_realloc,
				     a_free };

	ev.PyMem_GetAllocator(domain, orig);
	ev.PyMem_SetAllocator(domain, &mine);
}

/* ---- a fault during an evaluation ----
 *
 * C code of the interpreter that recurses on data the evaluated code built
 * without a recursion check (the hash of a tuple nested 500,000 deep)
 * overflows the C stack: the budgets bound steps, calls and single
 * allocations, not the depth of data. A SIGSEGV while an evaluation runs
 * on the thread ends the program with 255 and a message (fail closed)
 * rather than a crash; outside one, the previous disposition decides. The
 * handler runs on an alternate stack, set up per thread at its first
 * evaluation (a thread that has one keeps it). */

static __thread bool altstack_done;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] =
		"python-sb: the interpreter faulted (SIGSEGV) during an "
		"evaluation: C code recursing on data the evaluated code "
		"built overflows the C stack (eval guard); the program is "
		"stopped\n";
	const struct sigaction *prev = &sb_g.eval.prev_segv;
	ssize_t n;

	if (ev_cur) {
		n = write(2, msg, sizeof(msg) - 1);
		(void)n;
		_exit(SB_EXIT_SETUP);
	}
	if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
		prev->sa_sigaction(sig, si, uc);
		return;
	}
	if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
		return;
	}
	/* the default: the faulting instruction runs again and kills */
	signal(sig, SIG_DFL);
}

static void guard_faults(void)
{
	stack_t old, st;
	struct sigaction sa;
	void *mem;

	if (!altstack_done) {
		altstack_done = true;
		if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
			mem = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			st.ss_sp = mem;
			st.ss_size = 65536;
			st.ss_flags = 0;
			if (mem != MAP_FAILED && sigaltstack(&st, NULL) < 0)
				munmap(mem, 65536);
		}
	}
	if (sb_g.eval.segv_installed)
		return;
	sb_g.eval.segv_installed = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &sb_g.eval.prev_segv) < 0)
		memset(&sb_g.eval.prev_segv, 0, sizeof(sb_g.eval.prev_segv));
}

static int add_helpers(PyObject *g)
{
	if (ev.PyDict_SetItem(g, sb_g.eval.str_tick, sb_g.eval.tick_fn) < 0 ||
	    ev.PyDict_SetItem(g, sb_g.eval.str_enter, sb_g.eval.enter_fn) < 0)
		return -1;
	return 0;
}

/* Run 'code' in (g, l) under p's budgets. */
PyObject *run_code(struct ev_profile *p, PyObject *code, PyObject *g,
		   PyObject *l)
{
	struct ev_run run = { .p = p, .outer = ev_cur };
	PyObject *res;
	char target[64], hint[200], rule[64];

	clock_gettime(CLOCK_MONOTONIC, &run.deadline);
	add_ms(&run.deadline, p->rules->scalar[SB_EVAL_TIMEOUT]);
	guard_faults();
	ev_cur = &run;
	/* a locals mapping is read before the globals: a dict the caller
	 * passed gets the helpers too */
	if (add_helpers(g) < 0 ||
	    (l && l != g && py.PyObject_IsInstance(l, ev.dict_type) == 1 &&
	     add_helpers(l) < 0))
		res = NULL;
	else
		res = ev.PyEval_EvalCode(code, g, l ? l : g);
	ev_cur = run.outer;
	if (run.why) {
		py.Py_DecRef(res);
		py.PyErr_Clear();
		ev_raise_interrupted(&run);
		return NULL;
	}
	if (run.refused) {
		py.Py_DecRef(res);
		py.PyErr_Clear();
		snprintf(target, sizeof(target), "an allocation of %zu bytes",
			 run.refused);
		snprintf(hint, sizeof(hint),
			 "It exceeds eval-max-alloc=%lld bytes; raise "
			 "`eval-max-alloc` to allow it.",
			 (long long)p->rules->scalar[SB_EVAL_MAX_ALLOC]);
		snprintf(rule, sizeof(rule), "eval-max-alloc=%lld",
			 (long long)p->rules->scalar[SB_EVAL_MAX_ALLOC]);
		ev_raise_logged(target, "eval-max-alloc", hint, rule, NULL);
		return NULL;
	}
	return res;
}

/* METH_NOARGS: the cheapest call CPython makes to C */
struct py_method_def ev_tick_def = { "__sb_tick__", (void *)g_tick, 0x0004,
				  NULL };
struct py_method_def ev_enter_def = { "__sb_enter__", (void *)g_enter, 0x0004,
				   NULL };
