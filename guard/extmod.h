/* extmod.h - what a C extension module's file is (extmod.c): its identity
 * and the PyInit_ symbols it exports, read from the file itself.
 */
#ifndef SB_EXTMOD_H
#define SB_EXTMOD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#define SB_EXTMOD_MAX_INITS 64

struct sb_extmod {
	struct stat st;		/* of the descriptor opened */
	char canon[PATH_MAX];	/* the path it really is */
	size_t n_inits;
	char inits[SB_EXTMOD_MAX_INITS][128]; /* "_ctypes" for PyInit__ctypes */
};

/* Open 'path' and read what it is: 0, or -errno (-ENOEXEC: not an ELF
 * shared object whose dynamic symbols can be read). */
int sb_extmod_read(const char *path, struct sb_extmod *m);
/* Does the file export PyInit_<name> (or PyInitU_<name>)? */
bool sb_extmod_exports(const struct sb_extmod *m, const char *name);
/* Is 'addr' mapped from the file m describes? 0 yes, -EXDEV another file,
 * -ENOENT not mapped, other -errno when /proc/self/maps cannot be read. */
int sb_extmod_maps_file(const void *addr, const struct sb_extmod *m);

/* The file the code at 'addr' was loaded from is the one m describes:
 * by device and inode where /proc/self/maps can be read, else by the
 * PyInit_ symbols of the object as mapped. 0, -EXDEV (another file),
 * -ENOENT (not mapped) or another -errno. */
int sb_extmod_check_loaded(const void *addr, const struct sb_extmod *m);

#endif
