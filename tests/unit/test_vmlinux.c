/* test_vmlinux.c - the guest kernel unpacked from a bzImage (vmlinux.c):
 * made-up images with a zstd and an xz payload give back the ELF inside,
 * byte for byte; every malformed image is refused with its reason and
 * nothing else (the caller then boots the bzImage); and the machine's own
 * /boot kernel, when there is one, unpacks to an ELF with a PVH entry.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lzma.h>
#include <zstd.h>

#include "fdio.h"
#include "tap.h"
#include "vmlinux.h"

/* An x86-64 ELF: a header, one PT_NOTE program header, a note. */
struct elf {
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Nhdr nh;
	char name[4];
	unsigned char desc[4];
	char body[4000];
};

static void make_elf(struct elf *e, const char *name, unsigned type)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->eh.e_ident, ELFMAG, SELFMAG);
	e->eh.e_ident[EI_CLASS] = ELFCLASS64;
	e->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	e->eh.e_machine = EM_X86_64;
	e->eh.e_phoff = offsetof(struct elf, ph);
	e->eh.e_phentsize = sizeof(Elf64_Phdr);
	e->eh.e_phnum = 1;
	e->ph.p_type = PT_NOTE;
	e->ph.p_offset = offsetof(struct elf, nh);
	e->ph.p_filesz = sizeof(e->nh) + 8;
	e->nh.n_namesz = 4;
	e->nh.n_descsz = 4;
	e->nh.n_type = type;
	memcpy(e->name, name, 4);
	for (size_t i = 0; i < sizeof(e->body); i++)
		e->body[i] = (char)(i * 7);
}

/* A bzImage: 4 setup sectors then the boot sector's 512, the header's
 * fields set, the payload 64 bytes into the protected-mode part, the size
 * the kernel's build appends after it. */
static unsigned char *make_image(const void *payload, size_t n, size_t *len)
{
	size_t start = 5 * 512, off = 64;
	unsigned char *img = calloc(1, start + off + n + 4);

	img[0x1f1] = 4;
	memcpy(img + 0x202, "HdrS", 4);
	img[0x206] = 0x0f;
	img[0x207] = 0x02;
	img[0x248] = (unsigned char)off;
	img[0x24c] = (unsigned char)n;
	img[0x24d] = (unsigned char)(n >> 8);
	img[0x24e] = (unsigned char)(n >> 16);
	memcpy(img + start + off, payload, n);
	*len = start + off + n + 4;
	return img;
}

/* with a checksum, as the zstd tool the kernel's build runs writes it */
static size_t zstd_of(const void *in, size_t n, void *out, size_t cap)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t r;

	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	r = ZSTD_compress2(c, out, cap, in, n);
	ZSTD_freeCCtx(c);
	return ZSTD_isError(r) ? 0 : r;
}

static size_t xz_of(const void *in, size_t n, void *out, size_t cap)
{
	size_t pos = 0;

	return lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, in, n, out,
				       &pos, cap) == LZMA_OK
		       ? pos
		       : 0;
}

/* Unpack img; the fd's bytes equal 'want' when it is not NULL. */
static void check_unpacks(const char *what, const unsigned char *img,
			  size_t len, const struct elf *want)
{
	const char *why = "unset";
	int fd = sb_vmlinux_unpack(img, len, &why);
	struct sb_buf got = { 0 };

	ok(fd >= 0 && why == NULL, "%s: unpacked (%s)", what,
	   why ? why : "no reason");
	if (fd < 0)
		return;
	ok(fcntl(fd, F_GETFD) == 0, "%s: the memfd is inherited by exec",
	   what);
	is_int(sb_fd_read_all(fd, &got), 0, "%s: read back", what);
	if (want)
		ok(got.len == sizeof(*want) &&
			   memcmp(got.s, want, sizeof(*want)) == 0,
		   "%s: the ELF inside, byte for byte", what);
	else
		ok(sb_vmlinux_has_pvh((const unsigned char *)got.s, got.len),
		   "%s: an ELF with a PVH entry", what);
	sb_buf_free(&got);
	close(fd);
}

static void check_refused(const char *what, const unsigned char *img,
			  size_t len, int err, const char *reason)
{
	const char *why = NULL;
	int r = sb_vmlinux_unpack(img, len, &why);

	is_int(r, -err, "%s: refused", what);
	ok(why && strstr(why, reason), "%s: says '%s' (%s)", what, reason,
	   why ? why : "nothing");
}

static void the_machines_kernel(void)
{
	DIR *d = opendir("/boot");
	struct dirent *e;
	char path[512] = "";

	while (d && (e = readdir(d)))
		if (strncmp(e->d_name, "vmlinuz-", 8) == 0)
			snprintf(path, sizeof(path), "/boot/%s", e->d_name);
	if (d)
		closedir(d);
	int fd = *path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	struct sb_buf img = { 0 };

	if (fd < 0 || sb_fd_read_all(fd, &img) < 0) {
		ok(1, "# SKIP no readable /boot/vmlinuz-* here");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	diag("unpacking %s", path);
	check_unpacks("the machine's kernel", (const unsigned char *)img.s,
		      img.len, NULL);
	sb_buf_free(&img);
}

int main(void)
{
	static struct elf pvh, plain, bad;
	static unsigned char packed[1 << 16];
	unsigned char *img;
	size_t n, len;

	make_elf(&pvh, "Xen", 18);
	make_elf(&plain, "Xen", 17);
	make_elf(&bad, "Xen", 18);
	bad.nh.n_namesz = 0xfffffff0u; /* a note that runs off the end */

	ok(sb_vmlinux_has_pvh((unsigned char *)&pvh, sizeof(pvh)),
	   "a Xen note of type 18 is a PVH entry");
	ok(!sb_vmlinux_has_pvh((unsigned char *)&plain, sizeof(plain)),
	   "another Xen note is not");
	ok(!sb_vmlinux_has_pvh((unsigned char *)&bad, sizeof(bad)),
	   "a note whose name runs off the end is not (and is not read)");
	ok(!sb_vmlinux_has_pvh((unsigned char *)&pvh, 40),
	   "a header cut before its program headers is not");

	n = zstd_of(&pvh, sizeof(pvh), packed, sizeof(packed));
	img = make_image(packed, n, &len);
	check_unpacks("zstd", img, len, &pvh);
	free(img);
	img = make_image(packed, n / 2, &len);
	check_refused("zstd cut in half", img, len, EINVAL, "cut short");
	free(img);
	packed[n / 2] ^= 0xff;
	packed[n / 2 + 1] ^= 0xff;
	img = make_image(packed, n, &len);
	check_refused("zstd corrupted", img, len, EINVAL, "");  /* zstd's words */
	free(img);

	n = xz_of(&pvh, sizeof(pvh), packed, sizeof(packed));
	img = make_image(packed, n, &len);
	check_unpacks("xz", img, len, &pvh);
	free(img);
	img = make_image(packed, n - 20, &len);
	check_refused("xz cut short", img, len, EINVAL, "xz payload");
	free(img);

	n = zstd_of(&plain, sizeof(plain), packed, sizeof(packed));
	img = make_image(packed, n, &len);
	check_refused("no PVH entry", img, len, ENOEXEC, "no PVH entry");
	img[0x24c] = 0xff;
	img[0x24d] = 0xff;
	check_refused("payload past the end", img, len, EINVAL,
		      "outside the file");
	img[0x206] = 0x07;
	check_refused("boot protocol 2.07", img, len, EINVAL, "older than");
	memcpy(img + 0x202, "HdrX", 4);
	check_refused("no HdrS", img, len, EINVAL, "not a bzImage");
	check_refused("too short", img, 0x100, EINVAL, "not a bzImage");
	free(img);
	img = make_image("\x1f\x8b\x08\0\0\0\0\0", 8, &len);
	check_refused("gzip", img, len, ENOTSUP, "cannot read");
	free(img);

	the_machines_kernel();
	return tap_done();
}
