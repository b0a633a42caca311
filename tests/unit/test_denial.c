/* test_denial.c - the denial log's JSON: string escaping (quotes, control
 * characters, bytes that are not UTF-8), the record's exact text, and one
 * write(2) per record on an O_APPEND descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "denial.h"
#include "tap.h"

static void test_strings(void)
{
	static const struct {
		const char *in, *want, *name;
	} cases[] = {
		{ "", "\"\"", "empty" },
		{ "/tmp/a b", "\"/tmp/a b\"", "plain" },
		{ "a\"b\\c", "\"a\\\"b\\\\c\"", "quote and backslash" },
		{ "a\nb\tc\rd", "\"a\\nb\\tc\\rd\"", "newline, tab, CR" },
		{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"", "control" },
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"", "UTF-8 kept" },
		{ "\xe2\x82\xac\xf0\x9f\x98\x80",
		  "\"\xe2\x82\xac\xf0\x9f\x98\x80\"",
		  "3 and 4 byte UTF-8 kept" },
		{ "a\xff" "b", "\"a\\udcffb\"", "invalid byte" },
		{ "\xc3", "\"\\udcc3\"", "truncated sequence" },
		{ "\xc0\xaf", "\"\\udcc0\\udcaf\"", "overlong slash" },
		{ "\xed\xa0\x80", "\"\\udced\\udca0\\udc80\"",
		  "UTF-8 encoded surrogate" },
		{ "\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\"",
		  "above U+10FFFF" },
		{ "\xe2\x80\xa8", "\"\\u2028\"", "line separator" },
		{ "}\n{\"layer\": \"supervisor\"",
		  "\"}\\n{\\\"layer\\\": \\\"supervisor\\\"\"",
		  "an injected record stays inside the string" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sb_buf b = { 0 };

		sb_json_string(&b, cases[i].in);
		sb_buf_add(&b, "", 1);
		is_str(b.s, cases[i].want, "string: %s", cases[i].name);
		sb_buf_free(&b);
	}
}

static void test_record(void)
{
	struct sb_denial d = {
		.layer = SB_LAYER_PYTHON,
		.kind = "file",
		.target = "/etc/shadow",
		.add = "expose-ro=/etc/shadow",
		.by = "sandbox",
		.pid = 42,
	};
	struct sb_buf b = { 0 };

	/* 2026-12-02T01:02:03.045Z */
	sb_denial_format(&b, &d, 1796173323045LL);
	sb_buf_add(&b, "", 1);
	is_str(b.s,
	       "{\"time\": \"2026-12-02T01:02:03.045Z\", \"pid\": 42, "
	       "\"layer\": \"python\", \"kind\": \"file\", \"target\": "
	       "\"/etc/shadow\", \"rule\": \"no rule\", \"add\": "
	       "\"expose-ro=/etc/shadow\", \"by\": \"sandbox\"}\n",
	       "record, no rule");
	sb_buf_free(&b);

	d.layer = SB_LAYER_SUPERVISOR;
	d.kind = "network";
	d.target = "10.1.2.3:80";
	d.rule = "net=DENY|*|10.0.0.0/8|*|OUT from x(3)";
	d.add = NULL;
	d.by = "supervisor";
	sb_denial_format(&b, &d, 999);
	sb_buf_add(&b, "", 1);
	is_str(b.s,
	       "{\"time\": \"1970-01-01T00:00:00.999Z\", \"pid\": 42, "
	       "\"layer\": \"supervisor\", \"kind\": \"network\", \"target\": "
	       "\"10.1.2.3:80\", \"rule\": \"net=DENY|*|10.0.0.0/8|*|OUT from "
	       "x(3)\", \"add\": null, \"by\": \"supervisor\"}\n",
	       "record with a rule, nothing to add");
	sb_buf_free(&b);
}

static void test_write(void)
{
	char path[] = "/tmp/test_denial.XXXXXX", buf[4096];
	struct sb_denial d = { .layer = SB_LAYER_PYTHON, .kind = "import",
			       .target = "x\ny", .pid = 7 };
	int fd = mkstemp(path), afd;
	ssize_t n;
	int lines = 0;

	if (!ok(fd >= 0, "mkstemp"))
		return;
	afd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	unlink(path);
	is_int(sb_denial_write(-1, &d, 0), 0, "no log: nothing written");
	is_int(write(afd, "x", 1), 1, "someone else writes first");
	is_int(sb_denial_write(afd, &d, 0), 0, "a record written");
	is_int(sb_denial_write(afd, &d, 0), 0, "another appended");
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	ok(n > 0, "read back");
	buf[n > 0 ? n : 0] = '\0';
	for (char *s = buf; (s = strchr(s, '\n')); s++)
		lines++;
	is_int(lines, 2, "one line a record (the newline in the target is "
			 "escaped)");
	ok(strncmp(buf, "x{\"time\": \"", 11) == 0, "appended at the end");
	ok(strstr(buf, "\"target\": \"x\\ny\"") != NULL, "target escaped");
	close(afd);
	close(fd);
	is_int(sb_denial_write(afd, &d, 0), -EBADF, "a closed fd: -EBADF");
}

/* The cap: records while they fit, then one "log-full" record padded to
 * the cap, then nothing (from any writer: the file's size decides). */
static void test_cap(void)
{
	char path[] = "/tmp/test_denial.XXXXXX", buf[8192];
	struct sb_denial d = { .layer = SB_LAYER_SUPERVISOR, .kind = "file",
			       .target = "/etc/shadow", .pid = 9 };
	int fd = mkstemp(path), afd, b;
	const uint64_t cap = 1000;
	struct stat st;
	int lines = 0, full = 0, records = 0;
	ssize_t n;

	if (!ok(fd >= 0, "mkstemp"))
		return;
	afd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	b = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	unlink(path);
	for (int i = 0; i < 20; i++)
		sb_denial_write(i % 2 ? afd : b, &d, cap);
	is_int(sb_denial_write(afd, &d, cap), -EFBIG, "a full log: -EFBIG");
	ok(fstat(fd, &st) == 0 && (uint64_t)st.st_size >= cap &&
		   (uint64_t)st.st_size < cap + 400,
	   "the file stops at about the cap");
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	for (char *s = buf; (s = strchr(s, '\n')); s++)
		lines++;
	for (char *s = buf; (s = strstr(s, "\"kind\": \"file\"")); s++)
		records++;
	for (char *s = buf; (s = strstr(s, "\"kind\": \"log-full\"")); s++)
		full++;
	is_int(full, 1, "one log-full record");
	is_int(lines, records + 1, "the records that fit, then log-full");
	ok(records > 0 && buf[n - 1] == '\n', "whole lines");
	close(afd);
	close(b);
	close(fd);
}

/* The guest's lines (os-sandbox=qemu): what sb_denial_wire writes comes
 * back field for field, whatever bytes the fields hold; a line of any
 * other form is refused. */
static void test_wire(void)
{
	struct sb_denial d = {
		.layer = SB_LAYER_PYTHON,
		.kind = "file",
		.target = "/a\tb\nc\\d \xff",
		.rule = NULL,
		.add = "expose-ro=/a",
		.by = "sandbox",
		.pid = 118,
	}, back;
	static const char *const bad[] = {
		"",
		"rec",
		"not a record",
		"rec\tpython\tfile\t/x\t-\t-\tsandbox",
		"rec\tpython\tfile\t/x\t-\t-\tsandbox\t1\textra",
		"rec\troot\tfile\t/x\t-\t-\tsandbox\t1",
		"rec\tpython\tfile\t/x\t-\t-\tkernel\t1",
		"rec\tpython\t\t/x\t-\t-\tsandbox\t1",
		"rec\tpython\tfile\t/x\tno-flag\t-\tsandbox\t1",
		"rec\tpython\tfile\t/x\t-junk\t-\tsandbox\t1",
		"rec\tpython\tfile\t/x\t-\t-\tsandbox\t-1",
		"rec\tpython\tfile\t/x\t-\t-\tsandbox\t99999999999",
		"rec\tpython\tfile\t/x\t-\t-\tsandbox\t2147483648",
		"rec\tpython\tfile\t/x\t-\t-\tsandbox\t1x",
		"rec\tpython\tfile\t/x\\q\t-\t-\tsandbox\t1",
		"rec\tpython\taaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\t/x\t-\t-\tsandbox\t1",
	};
	static const char nul[] = "rec\tpython\tfile\t/x\0y\t-\t-\tsandbox\t1";
	struct sb_buf b = { 0 };
	struct sb_arena *a = sb_arena_new();
	size_t i;

	sb_denial_wire(&b, &d);
	ok(b.len > 0 && b.s[b.len - 1] == '\n' &&
		   memchr(b.s, '\n', b.len) == b.s + b.len - 1,
	   "wire: one line");
	ok(sb_denial_unwire(a, b.s, b.len - 1, &back), "wire: taken back");
	is_str(back.layer, d.layer, "wire: layer");
	is_str(back.kind, d.kind, "wire: kind");
	is_str(back.target, d.target, "wire: target with tab, newline, "
				      "backslash, a non-UTF-8 byte");
	ok(back.rule == NULL, "wire: no rule stays none");
	is_str(back.add, d.add, "wire: add");
	is_str(back.by, d.by, "wire: by");
	is_int(back.pid, 118, "wire: pid");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(!sb_denial_unwire(a, bad[i], strlen(bad[i]), &back),
		   "wire: refused: %zu", i);
	ok(!sb_denial_unwire(a, nul, sizeof(nul) - 1, &back),
	   "wire: refused: a NUL");
	{
		/* a record longer than a line the host takes is sent with its
		 * target cut and marked, not dropped */
		size_t n = SB_DENIAL_WIRE_MAX + 100;
		char *long_target = malloc(n + 1), line[SB_DENIAL_WIRE_MAX + 1];
		struct sb_denial big = d;
		int p[2];
		ssize_t got;

		memset(long_target, 'x', n);
		long_target[n] = '\0';
		big.target = long_target;
		ok(pipe(p) == 0, "wire: a pipe");
		is_int(sb_denial_send(p[1], &big), 0, "wire: a long record sent");
		close(p[1]);
		got = read(p[0], line, sizeof(line));
		close(p[0]);
		ok(got > 0 && got <= SB_DENIAL_WIRE_MAX && line[got - 1] == '\n',
		   "wire: as one line the host takes");
		ok(got > 0 && sb_denial_unwire(a, line, (size_t)got - 1, &back),
		   "wire: the long record taken back");
		ok(got > 0 && strstr(back.target, "... (cut)") != NULL,
		   "wire: its target marked as cut");
		free(long_target);
	}
	sb_buf_free(&b);
	sb_arena_free(a);
}

int main(void)
{
	test_strings();
	test_record();
	test_write();
	test_cap();
	test_wire();
	return tap_done();
}
