/* fsrules.h - the file decision of py-sandboxes(5) (expose-*, ignore=), as pure
 * code: given the spellings of an accessed path and the intent, which rule
 * decides. The caller (the guard) canonicalises; nothing here touches the file
 * system. */
#ifndef SB_FSRULES_H
#define SB_FSRULES_H

#include "policy.h"

enum sb_fs_verdict {
	SB_FS_ALLOW,
	SB_FS_IGNORED,     /* hidden by an ignore= rule: report ENOENT */
	SB_FS_NOT_EXPOSED, /* no expose-* rule covers it: ENOENT */
	SB_FS_READ_ONLY,   /* write intent under expose-ro: EACCES */
};

struct sb_fs_decision {
	enum sb_fs_verdict verdict;
	const struct sb_expose *expose; /* the deciding exposure, if any */
	const struct sb_ignore *ignore; /* the ignore rule that matched */
};

/* 'spelled' is the path as the program wrote it, 'abs' its absolute form,
 * 'canon' the canonical one (symlinks resolved); any may repeat another. */
void sb_fs_decide(const struct sb_policy *p, const char *spelled,
		  const char *abs, const char *canon, bool write,
		  struct sb_fs_decision *d);

/* The longest exposure containing a canonical path, or NULL. An
 * expose-made= rule counts as long as its directory, and a rule of that
 * directory itself wins over it. */
const struct sb_expose *sb_fs_find_expose(const struct sb_policy *p,
					   const char *canon);

/* For an expose-made= rule 'e' that contains 'canon': the entry right in
 * its directory that holds canon (canon itself, or the directory it lies
 * in) into out; its length, or 0 when canon is not below the directory or
 * the name does not fit. Whether the program made that entry is for the
 * caller to know (the guard: entrysup.c, guard/files.c). */
size_t sb_fs_made_top(const struct sb_expose *e, const char *canon,
		      char *out, size_t size);

/* Add an implicit exposure (the interpreter's trees, CA stores); 'path'
 * must be canonical. Keeps p->exposes ordered longest first; a path exposed
 * already keeps its rule. */
void sb_fs_add_implicit(struct sb_policy *p, const char *path, bool is_dir,
			const char *origin);

#endif
