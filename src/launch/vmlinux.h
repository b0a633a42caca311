/* vmlinux.h - a bzImage's kernel unpacked to an ELF qemu boots at its PVH
 * entry (vmlinux.c: why, and when it is not used), and the unpacking it
 * shares with the guest's kernel modules.
 */
#ifndef SB_VMLINUX_H
#define SB_VMLINUX_H

#include <stdbool.h>
#include <stddef.h>

/* The kernel inside the bzImage img[0..len), unpacked into a new sealed
 * memfd (no CLOEXEC, as sb_memfd_text makes them) when it is an x86-64 ELF
 * with a PVH entry. Returns the memfd, or -errno with *why saying what
 * stopped it (not a bzImage, the payload out of the file, an unknown
 * compression, a corrupt or cut payload, no PVH entry); the caller then
 * boots img itself. The caller closes the memfd. */
int sb_vmlinux_unpack(const unsigned char *img, size_t len, const char **why);

/* A zstd frame or an xz stream in[0..n) unpacked into out[0..cap): 0 and
 * its length in *len, or -EFBIG (more than cap), -EINVAL (corrupt or cut
 * short, *why says which), -ENOTSUP (another format, or one this build
 * cannot read), -ENOMEM. Also the kernel modules of the guest's
 * initramfs (qemu.c), which the guest then loads without unpacking them
 * under emulation. */
int sb_unpack(const unsigned char *in, size_t n, unsigned char *out,
	      size_t cap, size_t *len, const char **why);

/* elf[0..len) is an x86-64 ELF with a XEN_ELFNOTE_PHYS32_ENTRY note. */
bool sb_vmlinux_has_pvh(const unsigned char *elf, size_t len);

#endif
