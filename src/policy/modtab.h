/* modtab.h - the modules python-sb judges by name (modtab.c): those that
 * hand out raw memory or native code, and those that can undo the guard.
 * The guard, learning and the rule review read this one table.
 */
#ifndef SB_MODTAB_H
#define SB_MODTAB_H

#include <stdbool.h>

/* Does module 'name' by itself hand out raw memory or native code, or
 * reach files, processes or the network without an audit event the guard
 * judges (the guard wants the native grant to import it)? Matched against a module's
 * own name: the top-level name of an import, the last component of an
 * extension's name or a PyInit_ symbol its file exports. */
bool sb_modtab_is_native(const char *name);

/* Why module 'name' needs the native grant when it is not for raw memory:
 * what it reaches outside ("reads and writes history and init files by
 * path"), NULL for a raw-memory module or one that needs no grant. */
const char *sb_modtab_outside(const char *name);

/* Can top-level module 'name' undo the guard or run code around it? Every
 * native module can: learning groups these under its warning and the rule
 * review grades an import of one high. */
bool sb_modtab_is_dangerous(const char *name);

#endif
