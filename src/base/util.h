/* util.h - arena allocation, growable arrays and small string helpers.
 *
 * Everything the pure modules (policy, cli, net) allocate comes from one arena
 * per object, so a policy is freed in one call and the fuzzer stays leak-free.
 * Allocation failure aborts: there is no sane way to go on half-parsed, and
 * abort() before exec is fail-closed (the same choice as bubblewrap's xmalloc).
 * Nothing here prints (except on that abort) or makes a syscall.
 */
#ifndef SB_UTIL_H
#define SB_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define SB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define SB_UNUSED __attribute__((unused))

struct sb_arena;

struct sb_arena *sb_arena_new(void);
void sb_arena_free(struct sb_arena *a);
/* Zeroed memory that lives as long as the arena. */
void *sb_arena_alloc(struct sb_arena *a, size_t n);
char *sb_arena_strndup(struct sb_arena *a, const char *s, size_t n);
char *sb_arena_strdup(struct sb_arena *a, const char *s);
char *sb_arena_printf(struct sb_arena *a, const char *fmt, ...) SB_PRINTF(2, 3);
char *sb_arena_vprintf(struct sb_arena *a, const char *fmt, va_list ap)
	SB_PRINTF(2, 0);
/* Grow an arena array to hold at least 'want' elements (new ones zeroed). */
void *sb_arena_grow(struct sb_arena *a, void *v, size_t *cap, size_t want,
		    size_t elem);

/* A growable array of T kept in an arena: SB_VEC(struct x) name; */
#define SB_VEC(type)                                                           \
	struct {                                                               \
		type *v;                                                       \
		size_t n, cap;                                                 \
	}
/* Append one zeroed element and return a pointer to it. */
#define SB_VEC_PUSH(arena, vec)                                                \
	((vec).v = sb_arena_grow((arena), (vec).v, &(vec).cap, (vec).n + 1,   \
				 sizeof(*(vec).v)),                            \
	 &(vec).v[(vec).n++])

/* A growable byte buffer on the heap (for output that outlives no arena). */
struct sb_buf {
	char *s;
	size_t len, cap;
};
void sb_buf_add(struct sb_buf *b, const char *s, size_t n);
/* Room for 'extra' more bytes and a NUL after b->len. */
void sb_buf_reserve(struct sb_buf *b, size_t extra);
void sb_buf_puts(struct sb_buf *b, const char *s);
void sb_buf_printf(struct sb_buf *b, const char *fmt, ...) SB_PRINTF(2, 3);
void sb_buf_free(struct sb_buf *b);
/* The one escaping of the tab-separated records (the policy blob, the
 * learning records): \t, \n and \\ stand for tab, newline, backslash. */
void sb_buf_put_field(struct sb_buf *b, const char *s);
/* Split such a record into unescaped fields; returns the count, of which at
 * most 'max' are stored in f. *bad is set on a bad escape or a NUL. */
size_t sb_split_fields(struct sb_arena *a, const char *line, size_t n,
		       char **f, size_t max, bool *bad);

/* Python's str.strip() set of ASCII white space. */
bool sb_is_space(int c);
/* Return s without leading/trailing white space, in a copy from the arena. */
char *sb_strip(struct sb_arena *a, const char *s, size_t n);
bool sb_str_starts(const char *s, const char *prefix);
/* ASCII case-insensitive equality. */
bool sb_str_ieq(const char *a, const char *b);
/* The same for the first 'n' bytes of each. */
bool sb_mem_ieq(const char *a, const char *b, size_t n);
/* Is 's' one of the n strings of v (exact)? */
bool sb_str_in(const char *s, const char *const *v, size_t n);

/* Anchored glob where '*' is the only metacharacter (env=, eval-* patterns);
 * linear time, no backtracking blow-up. */
bool sb_glob_star_match(const char *pat, const char *s);

/* fnmatch-style glob ('*', '?', '[...]') used by ignore=; '/' is ordinary. */
bool sb_fnmatch(const char *pat, const char *s);

/* 'base' ("" for the root) joined with 'path' (unless 'path' is absolute)
 * and normalised lexically like os.path.abspath(): '//' and '.' collapse,
 * '..' pops the last component (never above the root), no trailing slash,
 * "/" when empty. No syscall, no allocation (the guard's open() runs
 * through it): 0, or -1 when the result needs more than 'cap' bytes. */
int sb_path_lexical(char *out, size_t cap, const char *base, const char *path);

/* The same for one path, in the arena; it cannot be too long. */
char *sb_path_normalize(struct sb_arena *a, const char *path);
/* Join 'rel' onto 'base' (unless rel is absolute) and normalise. */
char *sb_path_join(struct sb_arena *a, const char *base, const char *rel);
/* The first component of 's' (past its leading slashes), with its length
 * in *n: 0 at the end of the path. Components in turn:
 * for (c = sb_path_next(s, &n); n; c = sb_path_next(c + n, &n)) */
const char *sb_path_next(const char *s, size_t *n);
/* Is 'path' equal to 'dir' or below it (both normalised, absolute)? */
bool sb_path_under(const char *path, const char *dir);
/* Is 'path' (normalised) a process's own in /proc: /proc itself,
 * /proc/self, /proc/thread-self or /proc/PID and what is below them? Its
 * name changes from run to run; the rest of /proc (meminfo, cpuinfo,
 * sys/...) is the system's. */
bool sb_path_proc_own(const char *path);
/* Is 'path' (normalised) the descriptor directory of process 'pid' or of
 * one of its threads: /proc/self/fd, /proc/thread-self/fd, /proc/PID/fd,
 * /proc/PID/task/TID/fd? Listing it shows the numbers of that process's
 * own descriptors, nothing of any file (its entries are magic links,
 * each judged where it leads when opened or read). */
bool sb_path_own_fd_dir(const char *path, long pid);

/* The length of the UTF-8 sequence at s (at most n bytes), 0 when it is
 * not valid UTF-8; *cp gets the code point. */
size_t sb_utf8_seq(const unsigned char *s, size_t n, unsigned *cp);
/* Control characters (C0, DEL, C1), the marks that reorder or hide text
 * (bidirectional embeddings, overrides, isolates, zero-width ones, the
 * byte order mark). */
bool sb_hidden_cp(unsigned c);
/* The first character of s[0..n) a reviewer could not see as it is (as
 * sb_hidden_cp, and with 'invalid' a byte that is not UTF-8), or NULL;
 * *cp (when not NULL) gets its code point, or the byte. */
const char *sb_text_hidden(const char *s, size_t n, bool invalid,
			   unsigned *cp);

/* An absolute path as messages name it: relative to 'cwd' when below it
 * (a pointer into 'path'), else 'path'. */
const char *sb_path_shown(const char *path, const char *cwd);

#endif
