/* review_main.c - `python-sb --pysandboxes-review [--json] [DIFF | OLD NEW]`:
 * reads the diff (a file, or standard input when none or "-" is named) or
 * the two versions of a rule file, hands them to review.c and prints its
 * report. It owns the command's arguments, its reading and its exit status:
 * 0 reviewed, 1 reviewed and an added rule is high risk or invalid (for a CI
 * step that asks for a second approval), 2 usage, 255 an input unreadable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exit_status.h"
#include "fdio.h"
#include "review.h"

#define EXIT_HIGH 1

static const char review_usage[] =
	"usage: python-sb --pysandboxes-review [--json] [DIFF | - | OLD NEW]\n"
	"  DIFF     a unified diff (git diff, diff -u) of rule files; none or"
	" '-': stdin\n"
	"  OLD NEW  two versions of a rule file ('/dev/null' for none)\n"
	"  --json   JSON instead of a Markdown table\n"
	"Exit status: 0 reviewed, 1 an added rule is high risk or invalid,\n"
	"2 usage error, 255 an input could not be read.\n";

/* The whole of 'path' ("-": stdin) as a NUL-terminated string, or NULL
 * after naming the step and the path. */
static char *read_input(struct sb_arena *a, const char *path)
{
	struct sb_buf b = { 0 };
	char *s;
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0) {
		fprintf(stderr, "python-sb: open %s: %s\n", path,
			strerror(errno));
		return NULL;
	}
	r = sb_fd_read_all(fd, &b);
	if (fd)
		close(fd);
	if (r < 0) {
		fprintf(stderr, "python-sb: read %s: %s\n", path,
			strerror(-r));
		if (r == -EFBIG)
			fprintf(stderr, "Hint: at most %u bytes are read.\n",
				SB_FD_READ_MAX);
		sb_buf_free(&b);
		return NULL;
	}
	if (b.s && memchr(b.s, '\0', b.len)) {
		fprintf(stderr, "python-sb: read %s: a NUL byte: this is not "
				"a text diff or rule file\n", path);
		sb_buf_free(&b);
		return NULL;
	}
	s = sb_arena_strndup(a, b.s ? b.s : "", b.len);
	sb_buf_free(&b);
	return s;
}

int sb_review_main(int argc, char **argv)
{
	struct sb_review r = { 0 };
	struct sb_buf out = { 0 };
	const char *paths[2];
	char *texts[2];
	size_t n = 0;
	bool json = false;
	int i, rc = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "-h") == 0 ||
			   strcmp(argv[i], "--help") == 0) {
			fputs(review_usage, stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "python-sb: unknown review option "
					"'%s'\n%s", argv[i], review_usage);
			return SB_EXIT_USAGE;
		} else if (n == 2) {
			fprintf(stderr, "python-sb: the review takes a diff "
					"or two files\n%s", review_usage);
			return SB_EXIT_USAGE;
		} else {
			paths[n++] = argv[i];
		}
	}
	if (!n)
		paths[n++] = "-";
	r.arena = sb_arena_new();
	for (i = 0; i < (int)n; i++) {
		texts[i] = read_input(r.arena, paths[i]);
		if (!texts[i]) {
			sb_arena_free(r.arena);
			return SB_EXIT_SETUP;
		}
	}
	if (n == 2)
		sb_review_add_files(&r, paths[0], texts[0],
				    paths[1], texts[1]);
	else if (!sb_review_add_diff(&r, texts[0]) && *texts[0] &&
		 !strstr(texts[0], "\n@@ ") &&
		 strncmp(texts[0], "@@ ", 3) != 0) {
		/* not a diff at all: say so rather than "no change" */
		fprintf(stderr, "python-sb: review %s: not a unified diff\n"
				"Hint: to compare two versions of a rule "
				"file, name both: OLD NEW\n",
			strcmp(paths[0], "-") ? paths[0] : "standard input");
		sb_arena_free(r.arena);
		return SB_EXIT_USAGE;
	}
	sb_review_format(&r, json, &out);
	fwrite(out.s ? out.s : "", 1, out.len, stdout);
	if (sb_review_worst(&r) <= SB_RISK_HIGH)
		rc = EXIT_HIGH;
	sb_buf_free(&out);
	sb_arena_free(r.arena);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "python-sb: write standard output: %s\n",
			strerror(errno));
		return SB_EXIT_SETUP;
	}
	return rc;
}
