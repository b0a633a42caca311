/* parse_bench.c - how long the policy parser takes on a 1,000-rule file
 * with no host names (issue: under 5 ms). Prints the median of the runs in
 * milliseconds; bench/run turns it into the table. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/sb-parse-bench-XXXXXX", path[128];
	const char *env[] = { "HOME=/root", "TMPDIR=/tmp", "API_KEY=x", NULL };
	int runs = argc > 1 ? atoi(argv[1]) : 50, i;
	double *t = calloc((size_t)runs, sizeof(*t));
	struct sb_parse_opts o = { 0 };
	FILE *f;

	if (!mkdtemp(dir) || !t)
		return 1;
	snprintf(path, sizeof(path), "%s/.py-sandboxes", dir);
	f = fopen(path, "w");
	/* a realistic mix: 1,000 rules of every kind except host names */
	for (i = 0; i < 1000; i++) {
		switch (i % 8) {
		case 0: fprintf(f, "env=VAR_%d=${HOME}/x%d  # comment\n", i, i); break;
		case 1: fprintf(f, "expose-ro=${TMPDIR:-/tmp}\n"); break;
		case 2: fprintf(f, "ignore=*.secret%d\n", i); break;
		case 3: fprintf(f, "net=ALLOW|TCP|10.%d.0.0/16|443,8000-8080|OUT\n", i % 250); break;
		case 4: fprintf(f, "python-import=mod%d, other%d\n", i, i); break;
		case 5: fprintf(f, "python-api=ALLOW:os.system, threads\n"); break;
		case 6: fprintf(f, "eval-call:p%d=min, max, abs\n", i); break;
		default: fprintf(f, "# just a comment line %d\n", i); break;
		}
	}
	fclose(f);
	o.cwd = dir;
	o.envp = env;
	for (i = 0; i < runs; i++) {
		struct sb_policy *p = NULL;
		double t0 = now_ms();

		if (sb_policy_parse(&o, &p) != 0 || p->errors.n) {
			fprintf(stderr, "parse failed: %s\n",
				p && p->errors.n ? p->errors.v[0].text : "?");
			return 1;
		}
		t[i] = now_ms() - t0;
		sb_policy_free(p);
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp_double);
	printf("%.3f %.3f %.3f\n", t[runs / 2], t[0], t[runs - 1]);
	unlink(path);
	rmdir(dir);
	free(t);
	return 0;
}
