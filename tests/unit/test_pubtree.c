/* test_pubtree.c - the public parts of a tree (src/base/pubtree.c): a tree
 * made with every kind of entry, its parts checked one by one, and the
 * guard's check of single paths against the same modes. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pubtree.h"
#include "tap.h"

static char root[64];
static char got[32][512];
static int n_got;

static void add(void *ctx, const char *path, bool is_dir)
{
	(void)ctx;
	if (n_got < 32)
		snprintf(got[n_got++], sizeof(got[0]), "%s%s",
			 path + strlen(root), is_dir ? "/" : "");
}

static void mk(const char *rel, mode_t mode, bool dir)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (dir) {
		mkdir(p, 0700);
	} else {
		fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		if (fd >= 0)
			close(fd);
	}
	chmod(p, mode);
}

static bool has(const char *rel)
{
	for (int i = 0; i < n_got; i++)
		if (!strcmp(got[i], rel))
			return true;
	return false;
}

/* is any part a prefix of 'rel' (does a grant reach it)? */
static bool reached(const char *rel)
{
	for (int i = 0; i < n_got; i++) {
		size_t n = strlen(got[i]);

		if (!strncmp(got[i], rel, n) &&
		    (got[i][n - 1] == '/' || !rel[n]))
			return true;
	}
	return false;
}

static bool public_rel(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	return sb_public_path(root, p);
}

int main(void)
{
	char cmd[128], deep[256] = "deep";
	int i;

	snprintf(root, sizeof(root), "/tmp/pubtree-XXXXXX");
	if (!mkdtemp(root))
		return 1;
	chmod(root, 0755);
	mk("pub", 0755, true);
	mk("pub/a.pem", 0644, false);
	snprintf(cmd, sizeof(cmd), "%s/pub/l.0", root);
	if (symlink("a.pem", cmd) != 0)
		return 1;
	mk("conf", 0644, false);
	mk("priv", 0710, true);
	mk("priv/key", 0644, false); /* public by itself, behind a closed door */
	mk("mixed", 0755, true);
	mk("mixed/ok.pem", 0644, false);
	mk("mixed/secret.key", 0640, false);
	mk("mixed/sub", 0755, true);
	mk("mixed/sub/b.pem", 0644, false);
	mk("fifo", 0644, false);
	snprintf(cmd, sizeof(cmd), "%s/fifo", root);
	unlink(cmd);
	if (mkfifo(cmd, 0644) != 0)
		return 1;
	for (i = 0; i < 8; i++) {
		mk(deep, 0755, true);
		strcat(deep, "/d");
	}
	mk(deep, 0644, false); /* deep/d/d/d/d/d/d/d/d, below the cut */

	sb_public_parts(root, add, NULL);
	ok(!has("/"), "a tree holding private entries is not one part");
	ok(has("/pub/"), "a wholly public directory is one part");
	ok(has("/conf"), "a public file beside private ones is a part");
	ok(has("/mixed/ok.pem") && has("/mixed/sub/"),
	   "a directory with a private file: its public entries, each");
	ok(!reached("/mixed/secret.key"), "a file others cannot read: left out");
	ok(!reached("/priv/key"),
	   "what lies behind a directory others cannot enter: left out");
	ok(!reached("/fifo"), "a FIFO is no part");
	ok(!reached("/deep/d/d/d/d/d/d/d/d"), "below the depth cut: left out");
	for (i = 0; i < n_got; i++)
		printf("# part %s\n", got[i]);

	ok(public_rel("/pub/a.pem") && public_rel("/mixed/sub/b.pem") &&
		   public_rel(""),
	   "sb_public_path: public files and the root");
	ok(!public_rel("/mixed/secret.key") && !public_rel("/priv/key") &&
		   !public_rel("/priv") && !public_rel("/missing"),
	   "sb_public_path: a private file, a closed directory, nothing");
	ok(!sb_public_path(root, "/etc/hostname") &&
		   !sb_public_path("/tmp/pub", "/tmp/public"),
	   "sb_public_path: nothing outside the root, nor its namesake");

	n_got = 0;
	mk("mixed/secret.key", 0644, false);
	mk("priv", 0755, true);
	mk("deep", 0700, true);
	sb_public_parts(root, add, NULL);
	ok(!has("/mixed/ok.pem") && has("/mixed/") && has("/priv/"),
	   "made public, the same directories are one part each");

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	return tap_done();
}
