/* test_util.c - the arena and buffers, the two glob matchers (env= / eval-*
 * '*'-only globs, and ignore='s fnmatch), lexical paths and strip. */
#include <stdlib.h>
#include <time.h>

#include "fdio.h"
#include "tap.h"
#include "util.h"

#include <unistd.h>

static void test_star_glob(void)
{
	static const struct {
		const char *pat, *s;
		bool want;
	} cases[] = {
		{ "*_API_KEY", "OPENAI_API_KEY", true },
		{ "*_API_KEY", "ANY_API_KEY_X", false }, /* anchored at the end */
		{ "*_API_KEY", "_API_KEY", true },
		{ "X*", "X", true },
		{ "X*", "AX", false }, /* anchored at the start */
		{ "*", "", true },
		{ "", "", true },
		{ "", "a", false },
		{ "a*b*c", "abc", true },
		{ "a*b*c", "aXbYc", true },
		{ "a*b*c", "acb", false },
		{ "a*bc*bc", "abcbc", true },
		{ "a*bc*bc", "abc", false }, /* pieces may not overlap */
		{ "**", "anything", true },
		{ "a?c", "abc", false }, /* '?' is literal here */
		{ "a?c", "a?c", true },
		{ "[ab]", "a", false },
	};
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++)
		ok(sb_glob_star_match(cases[i].pat, cases[i].s) == cases[i].want,
		   "star glob '%s' vs '%s'", cases[i].pat, cases[i].s);
}

static void test_star_glob_is_linear(void)
{
	/* a pattern that makes a backtracking matcher exponential */
	char pat[64], *s = malloc(200001);
	clock_t t0;
	int i;

	for (i = 0; i < 30; i++) {
		pat[2 * i] = 'a';
		pat[2 * i + 1] = '*';
	}
	strcpy(pat + 60, "b");
	memset(s, 'a', 200000);
	s[200000] = '\0';
	t0 = clock();
	ok(!sb_glob_star_match(pat, s), "a*a*...b does not match a^200000");
	ok((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0,
	   "and it answers quickly (no backtracking)");
	free(s);
}

static void test_fnmatch(void)
{
	static const struct {
		const char *pat, *s;
		bool want;
	} cases[] = {
		{ "*.log", "app.log", true },
		{ "*.log", "app.log.1", false },
		{ ".env", ".env", true },
		{ ".*", ".venv", true },
		{ "?.txt", "a.txt", true },
		{ "?.txt", "ab.txt", false },
		{ "[ab].txt", "b.txt", true },
		{ "[!ab].txt", "b.txt", false },
		{ "[!ab].txt", "c.txt", true },
		{ "[a-c]x", "bx", true },
		{ "[a-c]x", "dx", false },
		{ "[]]", "]", true },
		{ "[", "[", true }, /* unterminated: literal */
		{ "/etc/*", "/etc/passwd", true },
		{ "/etc/*", "/etc/ssl/certs", true }, /* '/' is ordinary */
		{ "*", "", true },
		{ "a*", "", false },
	};
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(cases); i++)
		ok(sb_fnmatch(cases[i].pat, cases[i].s) == cases[i].want,
		   "fnmatch '%s' vs '%s'", cases[i].pat, cases[i].s);
}

static void test_paths(struct sb_arena *a)
{
	is_str(sb_path_normalize(a, "/a//b/./c/"), "/a/b/c", "normalize");
	is_str(sb_path_normalize(a, "/a/b/../c"), "/a/c", "normalize ..");
	is_str(sb_path_normalize(a, "/../../x"), "/x", ".. above the root");
	is_str(sb_path_normalize(a, "/"), "/", "the root");
	is_str(sb_path_normalize(a, "//"), "/", "double slash root");
	is_str(sb_path_join(a, "/home/u", "data"), "/home/u/data", "join");
	is_str(sb_path_join(a, "/home/u", "./data/../x"), "/home/u/x",
	       "join and normalize");
	is_str(sb_path_join(a, "/home/u", "/etc"), "/etc", "absolute wins");
	ok(sb_path_under("/a/b", "/a"), "under");
	ok(sb_path_under("/a", "/a"), "a directory is under itself");
	ok(!sb_path_under("/ab", "/a"), "a prefix is not a parent");
	ok(sb_path_under("/anything", "/"), "everything is under /");
	ok(!sb_path_under("relative", "/"), "a relative path is not");
}

/* The components sb_path_next() walks, each in brackets. */
static const char *components(struct sb_arena *a, const char *path)
{
	struct sb_buf b = { 0 };
	const char *c, *r;
	size_t n;

	sb_buf_puts(&b, "");
	for (c = sb_path_next(path, &n); n; c = sb_path_next(c + n, &n))
		sb_buf_printf(&b, "[%.*s]", (int)n, c);
	r = sb_arena_strdup(a, b.s);
	sb_buf_free(&b);
	return r;
}

static void test_path_components(struct sb_arena *a)
{
	is_str(components(a, "/a/bc"), "[a][bc]", "components");
	is_str(components(a, "//a///b/./../"), "[a][b][.][..]",
	       "components: slashes skipped, dots kept");
	is_str(components(a, "rel/x"), "[rel][x]", "components: relative");
	is_str(components(a, "/"), "", "components: the root has none");
	is_str(components(a, ""), "", "components: nor the empty path");
}

static void test_own_fd_dir(void)
{
	ok(sb_path_own_fd_dir("/proc/self/fd", 42), "/proc/self/fd");
	ok(sb_path_own_fd_dir("/proc/thread-self/fd", 42), "thread-self");
	ok(sb_path_own_fd_dir("/proc/42/fd", 42), "the own pid");
	ok(sb_path_own_fd_dir("/proc/42/task/43/fd", 42), "an own thread");
	ok(!sb_path_own_fd_dir("/proc/1/fd", 42), "another pid");
	ok(!sb_path_own_fd_dir("/proc/420/fd", 42), "a longer pid");
	ok(!sb_path_own_fd_dir("/proc/4/fd", 42), "a shorter pid");
	ok(!sb_path_own_fd_dir("/proc/1/task/43/fd", 42), "another's thread");
	ok(!sb_path_own_fd_dir("/proc/self/fd/3", 42), "an entry");
	ok(!sb_path_own_fd_dir("/proc/self/fdinfo", 42), "fdinfo");
	ok(!sb_path_own_fd_dir("/proc/self", 42), "/proc/self");
	ok(!sb_path_own_fd_dir("/dev/fd", 42), "not resolved");
	ok(!sb_path_own_fd_dir("/tmp/proc/self/fd", 42), "not /proc");
}

static void test_strings(struct sb_arena *a)
{
	is_str(sb_strip(a, " \t x y \r\n", 9), "x y", "strip");
	is_str(sb_strip(a, "   ", 3), "", "strip to empty");
	ok(sb_str_ieq("LandLock", "landlock"), "case-insensitive equality");
	ok(!sb_str_ieq("land", "landlock"), "lengths differ");
	ok(!sb_str_ieq("landlock", "land"), "lengths differ, either way");
	ok(sb_mem_ieq("Host.Example.", "host.examplE", 12),
	   "case-insensitive equality of the first n bytes");
	ok(!sb_mem_ieq("hosts", "hostx", 5), "a difference within n");
	ok(sb_str_starts("eval-call", "eval-"), "starts");
	is_str(sb_arena_printf(a, "%s-%d", "x", 42), "x-42", "arena printf");
}

static void test_arena_and_vec(void)
{
	struct sb_arena *a = sb_arena_new();
	SB_VEC(int) v = { 0 };
	struct sb_buf b = { 0 };
	char *big;
	int i, sum = 0;

	for (i = 0; i < 10000; i++)
		*SB_VEC_PUSH(a, v) = i;
	for (i = 0; i < 10000; i++)
		sum += v.v[i] == i;
	is_int(v.n, 10000, "vector holds every element");
	is_int(sum, 10000, "in order, intact after growth");
	big = sb_arena_alloc(a, 1 << 20);
	ok(big[0] == 0 && big[(1 << 20) - 1] == 0, "big allocations zeroed");
	for (i = 0; i < 1000; i++)
		sb_buf_printf(&b, "%d,", i);
	ok(b.len == strlen(b.s) && sb_str_starts(b.s, "0,1,2,"),
	   "buffer grows and stays terminated");
	sb_buf_free(&b);
	sb_arena_free(a);
}

/* sb_fd_read_all: whole descriptors of every size, read in growing
 * pieces straight into the buffer, what was there kept. */
static void test_fd_read_all(void)
{
	static const size_t sizes[] = { 0, 1, 306, 4095, 4096, 4097, 70000,
					300000 };
	size_t i, k;

	for (i = 0; i < SB_ARRAY_LEN(sizes); i++) {
		char *text = malloc(sizes[i] + 1);
		struct sb_buf b = { 0 };
		int fd, r;

		for (k = 0; k < sizes[i]; k++)
			text[k] = (char)('a' + k % 26);
		fd = sb_memfd_text("t", text, sizes[i]);
		sb_buf_puts(&b, "kept:");
		r = fd >= 0 ? sb_fd_read_all(fd, &b) : fd;
		ok(r == 0 && b.len == 5 + sizes[i] && !memcmp(b.s, "kept:", 5) &&
			   !memcmp(b.s + 5, text, sizes[i]) &&
			   b.s[b.len] == '\0',
		   "sb_fd_read_all: %zu bytes after what the buffer held",
		   sizes[i]);
		if (fd >= 0)
			close(fd);
		sb_buf_free(&b);
		free(text);
	}
}

int main(void)
{
	struct sb_arena *a = sb_arena_new();

	test_star_glob();
	test_star_glob_is_linear();
	test_fnmatch();
	test_paths(a);
	test_path_components(a);
	test_own_fd_dir();
	test_strings(a);
	test_arena_and_vec();
	test_fd_read_all();
	sb_arena_free(a);
	return tap_done();
}
