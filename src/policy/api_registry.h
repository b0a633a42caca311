/* api_registry.h - the sensitive Python API registry (py-sandboxes(5),
 * python-api=) as one data table: every qualified name, its category, and
 * platform/version tags. The python-api= rules, the guard, learning and the
 * docs all read this one table; nothing else lists these names.
 */
#ifndef SB_API_REGISTRY_H
#define SB_API_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

enum sb_api_category {
	SB_API_PROCESS_EXEC,
	SB_API_PROCESS_CONTROL,
	SB_API_PRIVILEGES,
	SB_API_THREADS,
	SB_API_NATIVE,
	SB_API_INTROSPECTION,
	SB_API_DYNAMIC_CODE,
	SB_API_DESERIALIZATION,
	SB_API_CATEGORY_COUNT
};

enum {
	SB_API_WINDOWS = 1 << 0, /* (W) exists only on Windows */
	SB_API_POSIX = 1 << 1,   /* (P) only on POSIX */
	SB_API_LINUX = 1 << 2,   /* (L) only on Linux */
	SB_API_C_ACCEL = 1 << 3, /* (C) absent without _pickle */
	SB_API_CLASS = 1 << 4,   /* a class: its __init__ is what is judged */
	SB_API_BY_ARGS = 1 << 5, /* judged by its audit event's arguments */
};

struct sb_api_entry {
	const char *qualname; /* "module.attr[.attr]" */
	enum sb_api_category category;
	unsigned tags;
	/* CPython 3.x minor bounds, inclusive; 0 = unbounded */
	unsigned char min_minor, max_minor;
};

/* Sorted by qualname (strcmp), so lookups can bisect. */
extern const struct sb_api_entry sb_api_registry[];
extern const size_t sb_api_registry_len;

/* Index into sb_api_registry, or -1. */
long sb_api_lookup(const char *qualname);
const char *sb_api_category_name(enum sb_api_category c);
/* -1 when unknown. */
int sb_api_category_from_name(const char *name);
/* The one-line description of a category ("runs code outside ..."). */
const char *sb_api_category_doc(enum sb_api_category c);
/* process-exec, privileges, native, dynamic-code, deserialization */
int sb_api_category_is_dangerous(enum sb_api_category c);

/* The one list of ioctl requests both layers let a program make on its own
 * descriptors (terminal modes and sizes, FIONREAD, FIONBIO, FIOCLEX...):
 * the seccomp allowlist's ioctl rule, and the guard's judgement of
 * fcntl.ioctl (any other request needs python-api=ALLOW:fcntl.ioctl).
 * Never TIOCSTI, TIOCLINUX, TIOCSETD, TIOCSCTTY nor an interface's SIOCS*.
 * The kernel reads the request as 32 bits: so does this. */
extern const unsigned long sb_ioctl_safe[];
extern const size_t sb_ioctl_safe_len;
bool sb_ioctl_request_safe(unsigned long request);
/* The requests allowed with these integer arguments only (TCXONC: the
 * restarts, never TCOOFF), on the same two layers. */
struct sb_ioctl_arg {
	unsigned long request, arg;
};
extern const struct sb_ioctl_arg sb_ioctl_safe_args[];
extern const size_t sb_ioctl_safe_args_len;
/* Either list: a request of sb_ioctl_safe, or (request, arg) of
 * sb_ioctl_safe_args when the argument is an integer ('int_arg'). */
bool sb_ioctl_call_safe(unsigned long request, bool int_arg,
			unsigned long arg);
/* The requests of sb_ioctl_safe the kernel layer's filter sends to the
 * supervisor instead (their argument is behind a pointer): a terminal's
 * modes set (TCSETS, TCSETSW, TCSETSF), judged and set there (ttysup.c). */
extern const unsigned long sb_ioctl_judged[];
extern const size_t sb_ioctl_judged_len;
bool sb_ioctl_request_judged(unsigned long request);

#endif
