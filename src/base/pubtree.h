/* pubtree.h - the parts of a system tree that every user may read.
 *
 * python-sb grants some system trees without a rule (the CA stores a TLS
 * client reads). Such a tree can hold what is not public beside what is: a
 * server's private keys live in /etc/ssl/private and /etc/pki/tls/private,
 * readable by root (whom the program may run as) and by a group its user
 * may be in (ssl-cert). So a tree is granted by its public parts only,
 * public meaning what the file's own mode lets every user read: a directory
 * whose whole content is public is one part; below a directory that holds
 * anything else, each public entry is a part of its own, and the rest is
 * left out. A symbolic link needs no part: what it leads to is judged where
 * it lies. Both layers use the same parts (the Landlock rules and mounts,
 * the guard's implicit exposures): one walk, one verdict. */
#ifndef SB_PUBTREE_H
#define SB_PUBTREE_H

#include <stdbool.h>
#include <stddef.h>

/* The CA stores (OpenSSL's, GnuTLS's and NSS's places on Debian and Red
 * Hat). Those in /etc, the administrator's, where keys are kept beside
 * the certificates, are granted by their public parts ('walk'); those in
 * /usr/share hold the distribution's files, as /usr/lib does, and are
 * granted whole, as it is (a walk of the 150 certificates of
 * /usr/share/ca-certificates costs 0.4 ms at every start). The guard
 * judges every access below any of them with sb_public_path. */
struct sb_ca_store {
	const char *path;
	bool walk;
};
extern const struct sb_ca_store sb_ca_stores[];
extern const size_t sb_n_ca_stores;

/* Is the canonical path 'canon', below or at 'root', public: itself and
 * every directory from root down to it readable (and searchable) by every
 * user? The guard's check of one access, the walk's verdict for one
 * path. */
bool sb_public_path(const char *root, const char *canon);

/* Call add(ctx, path, is_dir) for each public part of the tree at 'root'
 * (canonical paths; nothing when root is absent or not public). A tree
 * deeper than a few levels, or with more entries than a CA store holds, is
 * cut there: what lies beyond is left out, never granted unseen. */
void sb_public_parts(const char *root,
		     void (*add)(void *ctx, const char *path, bool is_dir),
		     void *ctx);

#endif
