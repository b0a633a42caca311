/* vmlinux.c - the guest kernel of os-sandbox=qemu unpacked for a direct
 * (PVH) boot.
 *
 * A Debian /boot/vmlinuz-* is a bzImage: the real-mode setup, a small
 * decompressor, then the kernel itself compressed (zstd on Debian's 6.x
 * kernels, xz on others). Booted as it is, the guest runs that
 * decompressor first, which under TCG emulation takes over a second on the
 * development machine; unpacked here natively (about 0.1 s), the kernel is
 * an ELF that qemu starts at its PVH entry point, with nothing to unpack.
 *
 * The result is used only when it is an x86-64 ELF with a PVH entry (a
 * "Xen" note of type XEN_ELFNOTE_PHYS32_ENTRY, CONFIG_PVH); otherwise, or
 * when the compression is one this build cannot read, the caller boots the
 * bzImage as before. Nothing is cached: the memfd lives as long as the
 * run, and is made from the file python-sb read itself.
 */
#include "vmlinux.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fdio.h"

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

static int grow(unsigned char **out, size_t *cap, size_t need)
{
	unsigned char *n;
	size_t c = *cap ? *cap : 64u << 20;

	while (c < need)
		c *= 2;
	if (c > MAX_KERNEL)
		return -EFBIG;
	n = realloc(*out, c);
	if (!n)
		return -ENOMEM;
	*out = n;
	*cap = c;
	return 0;
}

#ifdef SB_HAVE_ZSTD
/* One zstd frame (the kernel's build appends the size after it). */
static int unzstd(const unsigned char *in, size_t n, unsigned char **out,
		  size_t *len, const char **why)
{
	ZSTD_DCtx *z = ZSTD_createDCtx();
	ZSTD_inBuffer ib = { in, n, 0 };
	size_t cap = 0, r = 1;
	int e = 0;

	if (!z)
		return -ENOMEM;
	*len = 0;
	while (r != 0) {
		ZSTD_outBuffer ob;

		if (*len == cap && (e = grow(out, &cap, cap + 1)) < 0)
			break;
		ob = (ZSTD_outBuffer){ *out, cap, *len };
		r = ZSTD_decompressStream(z, &ob, &ib);
		*len = ob.pos;
		if (ZSTD_isError(r)) {
			*why = ZSTD_getErrorName(r);
			e = -EINVAL;
			break;
		}
		if (r != 0 && ib.pos == ib.size && ob.pos < ob.size) {
			*why = "the zstd payload is cut short";
			e = -EINVAL;
			break;
		}
	}
	ZSTD_freeDCtx(z);
	return e;
}
#endif

#ifdef SB_HAVE_LZMA
static int unxz(const unsigned char *in, size_t n, unsigned char **out,
		size_t *len, const char **why)
{
	lzma_stream s = LZMA_STREAM_INIT;
	size_t cap = 0;
	lzma_ret r;
	int e = 0;

	if (lzma_stream_decoder(&s, MAX_KERNEL, 0) != LZMA_OK)
		return -ENOMEM;
	s.next_in = in;
	s.avail_in = n;
	*len = 0;
	for (;;) {
		if (*len == cap && (e = grow(out, &cap, cap + 1)) < 0)
			break;
		s.next_out = *out + *len;
		s.avail_out = cap - *len;
		r = lzma_code(&s, LZMA_FINISH);
		*len = cap - s.avail_out;
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK) {
			*why = r == LZMA_BUF_ERROR ? "the xz payload is cut short"
						   : "the xz payload is corrupt";
			e = -EINVAL;
			break;
		}
	}
	lzma_end(&s);
	return e;
}
#endif

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
	unsigned char *out = NULL;
	size_t setup, start, off, plen, olen = 0;
	int r;

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
	r = -ENOTSUP;
	*why = "a compression this build cannot read";
#ifdef SB_HAVE_ZSTD
	if (memcmp(pl, "\x28\xb5\x2f\xfd", 4) == 0)
		r = unzstd(pl, plen, &out, &olen, why);
#endif
#ifdef SB_HAVE_LZMA
	if (memcmp(pl, "\xfd" "7zXZ\0", 6) == 0)
		r = unxz(pl, plen, &out, &olen, why);
#endif
	if (r == -EFBIG)
		*why = "the kernel unpacks to more than 512 MiB";
	else if (r == -ENOMEM)
		*why = "out of memory";
	if (r == 0 && !sb_vmlinux_has_pvh(out, olen)) {
		*why = "the kernel has no PVH entry point (CONFIG_PVH)";
		r = -ENOEXEC;
	}
	if (r == 0) {
		r = sb_memfd_text("pysb-vmlinux", (const char *)out, olen);
		if (r < 0)
			*why = "memfd for the kernel";
	}
	free(out);
	if (r >= 0)
		*why = NULL;
	return r;
}
