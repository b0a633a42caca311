/* extmod.c - what a C extension module is, read from its file rather than
 * taken from the name its loader is given: the file's identity (device and
 * inode of the descriptor opened, and the path it really is) and the
 * PyInit_ symbols its dynamic symbol table exports, which say which modules
 * it can initialise whatever it is called. After the load it checks that
 * the code the module came from is mapped from that same file (its device
 * and inode in /proc/self/maps), or, where /proc is out of reach (the
 * kernel providers), that the object mapped exports the same PyInit_
 * symbols as the file judged, read from its dynamic table in memory. That
 * check comes after dlopen() ran the object's constructors and PyInit_:
 * what keeps another file from being loaded is that the loader is handed
 * the canonical path judged (imports.c), not the program's spec; this is
 * the backstop.
 *
 * No Python here: imports.c judges what this file reports.
 */
#include "guard.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "extmod.h"

/* A dynamic symbol table larger than this is not a Python extension. */
#define EXTMOD_MAX_TABLE (64u << 20)

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(fd, buf, n, (off_t)off);

	return r == (ssize_t)n ? 0 : -1;
}

static void *read_block(int fd, uint64_t off, uint64_t size, uint64_t fsize)
{
	void *p;

	if (size == 0 || size > EXTMOD_MAX_TABLE || off > fsize ||
	    size > fsize - off)
		return NULL;
	p = malloc(size + 1);
	if (!p)
		return NULL;
	if (read_at(fd, p, size, off) < 0) {
		free(p);
		return NULL;
	}
	((char *)p)[size] = '\0';
	return p;
}

static int add_init(struct sb_extmod *m, const char *sym)
{
	const char *name = NULL;

	if (strncmp(sym, "PyInit_", 7) == 0)
		name = sym + 7;
	else if (strncmp(sym, "PyInitU_", 8) == 0)
		name = sym + 8;
	if (!name || !*name)
		return 0;
	if (m->n_inits == SB_EXTMOD_MAX_INITS)
		return -1; /* more than any extension exports: refuse */
	snprintf(m->inits[m->n_inits++], sizeof(m->inits[0]), "%s", name);
	return 0;
}

/* ELF64 and ELF32 differ in field widths only: one reader per class. */
#define EXTMOD_SCAN(bits)                                                      \
	static int scan##bits(int fd, struct sb_extmod *m, uint64_t fsize)     \
	{                                                                      \
		Elf##bits##_Ehdr eh;                                           \
		Elf##bits##_Shdr *sh = NULL;                                   \
		Elf##bits##_Sym *syms = NULL;                                  \
		char *strs = NULL;                                             \
		size_t d, i, nsyms, shsz, strsz;                                         \
		int r = -1;                                                    \
                                                                               \
		if (read_at(fd, &eh, sizeof(eh), 0) < 0 ||                     \
		    eh.e_shentsize != sizeof(Elf##bits##_Shdr) ||              \
		    eh.e_shnum == 0)                                           \
			return -1;                                             \
		shsz = (size_t)eh.e_shnum * sizeof(*sh);                       \
		sh = read_block(fd, eh.e_shoff, shsz, fsize);                  \
		if (!sh)                                                       \
			return -1;                                             \
		for (d = 0; d < eh.e_shnum; d++)                               \
			if (sh[d].sh_type == SHT_DYNSYM)                       \
				break;                                         \
		if (d == eh.e_shnum || sh[d].sh_link >= eh.e_shnum ||          \
		    sh[d].sh_entsize != sizeof(*syms))                         \
			goto out;                                              \
		strsz = sh[sh[d].sh_link].sh_size;                             \
		syms = read_block(fd, sh[d].sh_offset, sh[d].sh_size, fsize);  \
		strs = read_block(fd, sh[sh[d].sh_link].sh_offset, strsz,      \
				  fsize);                                      \
		if (!syms || !strs)                                            \
			goto out;                                              \
		nsyms = sh[d].sh_size / sizeof(*syms);                         \
		for (i = 1; i < nsyms; i++) {                                  \
			if (syms[i].st_shndx == SHN_UNDEF ||                   \
			    syms[i].st_name >= strsz)                          \
				continue;                                      \
			if (add_init(m, strs + syms[i].st_name) < 0)           \
				goto out;                                      \
		}                                                              \
		r = 0;                                                         \
	out:                                                                   \
		free(strs);                                                    \
		free(syms);                                                    \
		free(sh);                                                      \
		return r;                                                      \
	}

EXTMOD_SCAN(64)
EXTMOD_SCAN(32)

int sb_extmod_read(const char *path, struct sb_extmod *m)
{
	unsigned char ident[EI_NIDENT];
	char proc[64];
	ssize_t n;
	int fd, r;

	memset(m, 0, sizeof(*m));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &m->st) < 0 || !S_ISREG(m->st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	/* the path the descriptor really is; realpath() where /proc is out
	 * of reach, checked against the descriptor */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, m->canon, sizeof(m->canon) - 1);
	if (n > 0 && m->canon[0] == '/') {
		m->canon[n] = '\0';
	} else {
		struct stat st;

		if (!realpath(path, m->canon) || stat(m->canon, &st) < 0 ||
		    st.st_dev != m->st.st_dev || st.st_ino != m->st.st_ino) {
			r = -EAGAIN;
			goto out;
		}
	}
	if (read_at(fd, ident, sizeof(ident), 0) < 0 ||
	    memcmp(ident, ELFMAG, SELFMAG) != 0) {
		r = -ENOEXEC;
		goto out;
	}
	if (ident[EI_CLASS] == ELFCLASS64)
		r = scan64(fd, m, (uint64_t)m->st.st_size);
	else if (ident[EI_CLASS] == ELFCLASS32)
		r = scan32(fd, m, (uint64_t)m->st.st_size);
	else
		r = -1;
	if (r < 0)
		r = -ENOEXEC;
out:
	close(fd);
	return r;
}

bool sb_extmod_exports(const struct sb_extmod *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n_inits; i++)
		if (strcmp(m->inits[i], name) == 0)
			return true;
	return false;
}

int sb_extmod_maps_file(const void *addr, const struct sb_extmod *m)
{
	unsigned long lo, hi, ino, maj, mnr, a = (unsigned long)addr;
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %*s %*s %lx:%lx %lu", &lo, &hi, &maj,
			   &mnr, &ino) != 5)
			continue;
		if (a < lo || a >= hi)
			continue;
		r = makedev(maj, mnr) == m->st.st_dev &&
				    ino == (unsigned long)m->st.st_ino
			    ? 0
			    : -EXDEV;
		break;
	}
	fclose(f);
	return r;
}

/* ---- the object as loaded ---- */

struct loaded_search {
	uintptr_t addr;
	struct sb_extmod *out;
	int r;
};

/* Symbols in a DT_GNU_HASH table: one past the highest index a chain
 * reaches (the table has no count). */
static size_t gnu_hash_count(const uint32_t *h)
{
	uint32_t nbuckets = h[0], symoffset = h[1], bloom = h[2];
	const uint32_t *buckets =
		h + 4 + bloom * (sizeof(ElfW(Addr)) / sizeof(uint32_t));
	const uint32_t *chain = buckets + nbuckets;
	uint32_t i, last = 0;

	for (i = 0; i < nbuckets; i++)
		if (buckets[i] > last)
			last = buckets[i];
	if (last < symoffset)
		return symoffset;
	while (!(chain[last - symoffset] & 1))
		last++;
	return last + 1;
}

static uintptr_t dyn_addr(ElfW(Addr) base, ElfW(Addr) v)
{
	/* glibc relocates some d_ptr values in place, not all of them */
	return v >= base ? (uintptr_t)v : (uintptr_t)(base + v);
}

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	struct loaded_search *s = data;
	const ElfW(Dyn) *dyn = NULL, *d;
	const ElfW(Sym) *syms = NULL;
	const char *strs = NULL;
	size_t i, n = 0, strsz = 0;
	bool inside = false;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && s->addr >= lo &&
		    s->addr < lo + ph->p_memsz)
			inside = true;
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
	}
	if (!inside)
		return 0;
	s->r = -ENOEXEC;
	if (!dyn)
		return 1;
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			syms = (const ElfW(Sym) *)dyn_addr(info->dlpi_addr,
							   d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			strs = (const char *)dyn_addr(info->dlpi_addr,
						      d->d_un.d_ptr);
		else if (d->d_tag == DT_STRSZ)
			strsz = d->d_un.d_val;
		else if (d->d_tag == DT_HASH && !n)
			n = ((const uint32_t *)dyn_addr(info->dlpi_addr,
							d->d_un.d_ptr))[1];
		else if (d->d_tag == DT_GNU_HASH)
			n = gnu_hash_count((const uint32_t *)dyn_addr(
				info->dlpi_addr, d->d_un.d_ptr));
	}
	if (!syms || !strs || !n)
		return 1;
	for (i = 1; i < n; i++) {
		if (syms[i].st_shndx == SHN_UNDEF || syms[i].st_name >= strsz)
			continue;
		if (add_init(s->out, strs + syms[i].st_name) < 0)
			return 1;
	}
	s->r = 0;
	(void)size;
	return 1;
}

/* The PyInit_ names the object mapped at 'addr' exports, as loaded. */
static int loaded_inits(const void *addr, struct sb_extmod *out)
{
	struct loaded_search s = { (uintptr_t)addr, out, -ENOENT };

	out->n_inits = 0;
	dl_iterate_phdr(find_loaded, &s);
	return s.r;
}

static bool same_inits(const struct sb_extmod *a, const struct sb_extmod *b)
{
	size_t i;

	if (a->n_inits != b->n_inits)
		return false;
	for (i = 0; i < a->n_inits; i++)
		if (!sb_extmod_exports(b, a->inits[i]))
			return false;
	return true;
}

int sb_extmod_check_loaded(const void *addr, const struct sb_extmod *m)
{
	struct sb_extmod *mem;
	int r = sb_extmod_maps_file(addr, m);

	if (r == 0 || r == -EXDEV || r == -ENOENT)
		return r;
	/* /proc/self/maps is out of reach: compare what is mapped */
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	r = loaded_inits(addr, mem);
	if (r == 0 && !same_inits(m, mem))
		r = -EXDEV;
	free(mem);
	return r;
}
