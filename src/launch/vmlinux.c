/* vmlinux.c - the guest kernel of os-sandbox=qemu unpacked for a direct
 * (PVH) boot.
 *
 * A Debian /boot/vmlinuz-* is a bzImage: the real-mode setup, a small
 * decompressor, then the kernel itself compressed (zstd on Debian's 6.x
 * kernels, xz on others). Booted as it is, the guest runs that
 * decompressor first, which under TCG emulation takes over a second on the
 * development machine; unpacked here natively (about 0.1 s), the kernel is
 * an ELF that qemu starts at its PVH entry point, with nothing to unpack. It
 * is unpacked into the memfd's own pages: no buffer, no copy.
 *
 * The result is used only when it is an x86-64 ELF with a PVH entry (a
 * "Xen" note of type XEN_ELFNOTE_PHYS32_ENTRY, CONFIG_PVH); otherwise, or
 * when the compression is one this build cannot read, the caller boots the
 * bzImage as before. The memfd lives as long as the run, and is made
 * from the file python-sb read itself; root's runs keep a copy that
 * others' runs may boot (kcache.c).
 *
 * libzstd and liblzma are opened (dlopen, by their sonames) when a payload
 * needs one: linked, they were loaded by every python-sb run, a quarter
 * of a millisecond each time for what only os-sandbox=qemu uses. Without
 * the library the payload is "a compression this build cannot read".
 */
#include "vmlinux.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

#ifdef SB_HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef SB_HAVE_LZMA
#include <lzma.h>
#endif

/* bzImage boot protocol (Documentation/arch/x86/boot.rst) */
#define HDR_SETUP_SECTS 0x1f1
#define HDR_MAGIC 0x202
#define HDR_VERSION 0x206
#define HDR_PAYLOAD_OFFSET 0x248
#define HDR_PAYLOAD_LENGTH 0x24c
#define XEN_ELFNOTE_PHYS32_ENTRY 18
/* far above any kernel; a payload that says more is refused */
#define MAX_KERNEL (512u << 20)

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Open 'soname' (once: *h, or NULL when it failed) and resolve each
 * names[i] into fns[i], a function pointer's bytes; false when the library
 * or one of them is missing. */
static bool open_lib(void **h, bool *tried, const char *soname,
		     const char *const names[], void *const fns[], size_t n)
{
	size_t i;

	if (!*tried) {
		*tried = true;
		*h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
		for (i = 0; *h && i < n; i++) {
			void *f = dlsym(*h, names[i]);

			if (!f) {
				dlclose(*h);
				*h = NULL;
			} else {
				/* ISO C has no conversion from void * to a
				 * function pointer: copy its bytes */
				memcpy(fns[i], &f, sizeof(f));
			}
		}
	}
	return *h != NULL;
}

#ifdef SB_HAVE_ZSTD
static struct {
	void *h;
	bool tried;
	ZSTD_DCtx *(*create)(void);
	size_t (*stream)(ZSTD_DCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *);
	size_t (*release)(ZSTD_DCtx *);
	unsigned (*is_error)(size_t);
	const char *(*error_name)(size_t);
} zs;

static bool zstd_open(void)
{
	static const char *const names[] = {
		"ZSTD_createDCtx", "ZSTD_decompressStream", "ZSTD_freeDCtx",
		"ZSTD_isError", "ZSTD_getErrorName",
	};
	void *const fns[] = { &zs.create, &zs.stream, &zs.release,
			      &zs.is_error, &zs.error_name };

	return open_lib(&zs.h, &zs.tried, "libzstd.so.1", names, fns,
			sizeof(names) / sizeof(names[0]));
}

/* One zstd frame (the kernel's build appends the size after it) into
 * out[0..cap). */
static int unzstd(const unsigned char *in, size_t n, unsigned char *out,
		  size_t cap, size_t *len, const char **why)
{
	ZSTD_DCtx *z;
	ZSTD_inBuffer ib = { in, n, 0 };
	ZSTD_outBuffer ob = { out, cap, 0 };
	size_t r;
	int e = 0;

	if (!zstd_open()) {
		*why = "libzstd.so.1 is not installed";
		return -ENOTSUP;
	}
	z = zs.create();
	if (!z)
		return -ENOMEM;
	do {
		r = zs.stream(z, &ob, &ib);
		if (zs.is_error(r)) {
			*why = zs.error_name(r);
			e = -EINVAL;
		} else if (r != 0 && ob.pos == ob.size) {
			e = -EFBIG;
		} else if (r != 0 && ib.pos == ib.size) {
			*why = "the zstd payload is cut short";
			e = -EINVAL;
		}
	} while (r != 0 && !e);
	*len = ob.pos;
	zs.release(z);
	return e;
}
#endif

#ifdef SB_HAVE_LZMA
static struct {
	void *h;
	bool tried;
	lzma_ret (*decoder)(lzma_stream *, uint64_t, uint32_t);
	lzma_ret (*code)(lzma_stream *, lzma_action);
	void (*end)(lzma_stream *);
} xz;

static bool xz_open(void)
{
	static const char *const names[] = {
		"lzma_stream_decoder", "lzma_code", "lzma_end",
	};
	void *const fns[] = { &xz.decoder, &xz.code, &xz.end };

	return open_lib(&xz.h, &xz.tried, "liblzma.so.5", names, fns,
			sizeof(names) / sizeof(names[0]));
}

static int unxz(const unsigned char *in, size_t n, unsigned char *out,
		size_t cap, size_t *len, const char **why)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r;

	if (!xz_open()) {
		*why = "liblzma.so.5 is not installed";
		return -ENOTSUP;
	}
	if (xz.decoder(&s, MAX_KERNEL, 0) != LZMA_OK)
		return -ENOMEM;
	s.next_in = in;
	s.avail_in = n;
	s.next_out = out;
	s.avail_out = cap;
	do
		r = xz.code(&s, LZMA_FINISH);
	while (r == LZMA_OK && s.avail_out);
	*len = cap - s.avail_out;
	xz.end(&s);
	if (r == LZMA_STREAM_END)
		return 0;
	if (!s.avail_out)
		return -EFBIG;
	*why = r == LZMA_BUF_ERROR ? "the xz payload is cut short"
				   : "the xz payload is corrupt";
	return -EINVAL;
}
#endif

int sb_unpack(const unsigned char *in, size_t n, unsigned char *out,
	      size_t cap, size_t *len, const char **why)
{
	*len = 0;
	*why = "a compression this build cannot read";
#ifdef SB_HAVE_ZSTD
	if (n >= 4 && memcmp(in, "\x28\xb5\x2f\xfd", 4) == 0)
		return unzstd(in, n, out, cap, len, why);
#endif
#ifdef SB_HAVE_LZMA
	if (n >= 6 && memcmp(in, "\xfd" "7zXZ\0", 6) == 0)
		return unxz(in, n, out, cap, len, why);
#endif
	(void)in, (void)n, (void)out, (void)cap;
	return -ENOTSUP;
}

bool sb_vmlinux_has_pvh(const unsigned char *elf, size_t len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	size_t i;

	if (len < sizeof(*eh) || memcmp(elf, ELFMAG, SELFMAG) != 0 ||
	    elf[EI_CLASS] != ELFCLASS64 || elf[EI_DATA] != ELFDATA2LSB ||
	    eh->e_machine != EM_X86_64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > len ||
	    (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
		return false;
	for (i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph =
			(const Elf64_Phdr *)(elf + eh->e_phoff) + i;
		size_t off, end;

		if (ph->p_type != PT_NOTE || ph->p_offset > len ||
		    ph->p_filesz > len - ph->p_offset)
			continue;
		off = ph->p_offset;
		end = off + ph->p_filesz;
		while (end - off >= sizeof(Elf64_Nhdr)) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(elf + off);
			size_t name = (nh->n_namesz + 3u) & ~(size_t)3;
			size_t desc = (nh->n_descsz + 3u) & ~(size_t)3;

			off += sizeof(*nh);
			if (name > end - off || desc > end - off - name)
				break;
			if (nh->n_namesz == 4 &&
			    memcmp(elf + off, "Xen", 4) == 0 &&
			    nh->n_type == XEN_ELFNOTE_PHYS32_ENTRY)
				return true;
			off += name + desc;
		}
	}
	return false;
}

int sb_vmlinux_unpack(const unsigned char *img, size_t len,
		      const char **why)
{
	const unsigned char *pl;
	unsigned char *out;
	size_t setup, start, off, plen, olen = 0;
	int r, fd;

	*why = NULL;
	if (len < HDR_PAYLOAD_LENGTH + 4 ||
	    memcmp(img + HDR_MAGIC, "HdrS", 4) != 0) {
		*why = "not a bzImage";
		return -EINVAL;
	}
	if ((img[HDR_VERSION] | img[HDR_VERSION + 1] << 8) < 0x208) {
		*why = "a boot protocol older than 2.08 (no payload fields)";
		return -EINVAL;
	}
	setup = img[HDR_SETUP_SECTS] ? img[HDR_SETUP_SECTS] : 4;
	start = (setup + 1) * 512;
	off = le32(img + HDR_PAYLOAD_OFFSET);
	plen = le32(img + HDR_PAYLOAD_LENGTH);
	if (start > len || off > len - start || plen > len - start - off ||
	    plen < 6) {
		*why = "the payload lies outside the file";
		return -EINVAL;
	}
	pl = img + start + off;
	/* unpacked straight into the memfd, mapped MAX_KERNEL long: a sparse
	 * file whose pages exist once written, so nothing is grown, copied
	 * or written twice; it is cut to its length and sealed after */
	fd = memfd_create("pysb-vmlinux", MFD_ALLOW_SEALING);
	if (fd < 0) {
		*why = "memfd for the kernel";
		return -errno;
	}
	if (ftruncate(fd, MAX_KERNEL) < 0 ||
	    (out = mmap(NULL, MAX_KERNEL, PROT_READ | PROT_WRITE, MAP_SHARED,
			fd, 0)) == MAP_FAILED) {
		r = -errno;
		*why = "memfd for the kernel";
		close(fd);
		return r;
	}
	r = sb_unpack(pl, plen, out, MAX_KERNEL, &olen, why);
	if (r == -EFBIG)
		*why = "the kernel unpacks to more than 512 MiB";
	else if (r == -ENOMEM)
		*why = "out of memory";
	if (r == 0 && !sb_vmlinux_has_pvh(out, olen)) {
		*why = "the kernel has no PVH entry point (CONFIG_PVH)";
		r = -ENOEXEC;
	}
	munmap(out, MAX_KERNEL);
	if (r == 0 &&
	    (ftruncate(fd, (off_t)olen) < 0 ||
	     fcntl(fd, F_ADD_SEALS,
		   F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) <
		     0)) {
		r = -errno;
		*why = "memfd for the kernel";
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	*why = NULL;
	return fd;
}
