// SPDX-License-Identifier: Apache-2.0
/* tcp_isn.c - TCP initial sequence numbers as RFC 6528 has them, and as
 * Linux computes them (secure_tcp_seq): a keyed hash of the 4-tuple
 * (SipHash-2-4, libsodium's crypto_shorthash) plus a clock that ticks every
 * 64 ns. lwIP asks through its LWIP_HOOK_TCP_ISN (src/lwip_hooks.h) for
 * every connect and every SYN a listener answers.
 *
 * The key is one per boot and user, not per process: in the file
 * /dev/shm/tickstack.isn.<euid> (a pod's own /dev/shm in Kubernetes), made
 * once from getrandom(). So a process that reuses the 4-tuple of an earlier
 * process's connection numbers its SYN above that connection's (the clock
 * moved on, the hash is the same), which is what a peer holding the old
 * connection in TIME_WAIT asks of a new SYN. The file is written under a
 * temporary name (O_CREAT|O_EXCL|O_NOFOLLOW, 0600) and linked into place,
 * so that nobody reads half a key; a file found there is used only when it
 * is a regular file of this user that nobody else may read or write (mode
 * 0600) and holds exactly a key. Anything else (no /dev/shm, a planted
 * file) leaves the process with a key of its own, said in the log: still
 * unpredictable, only a port reused across processes then relies on TCP
 * timestamps to end the peer's TIME_WAIT. docs/dataplane-design.md,
 * "Initial sequence numbers". */
#include "ts_internal.h"
#include "lwip_hooks.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sodium/crypto_shorthash_siphash24.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define ISN_KEY_LEN crypto_shorthash_siphash24_KEYBYTES
#define ISN_KEY_FMT "/dev/shm/tickstack.isn.%u"

static unsigned char isn_key[ISN_KEY_LEN];

/* 0: buf holds the key of the file open at fd */
static int key_read(int fd, unsigned char *buf)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) || st.st_size != ISN_KEY_LEN)
		return -EPERM;
	if (pread(fd, buf, ISN_KEY_LEN, 0) != ISN_KEY_LEN)
		return -EIO;
	return 0;
}

static int key_open(const char *path, unsigned char *buf)
{
	int fd = ts_real_open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = key_read(fd, buf);
	ts_real_close(fd);
	return err;
}

/* Publish buf as the key at path: written whole under a temporary name,
 * then linked (link fails when another process published first). */
static int key_publish(const char *path, const unsigned char *buf)
{
	char tmp[96];
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	unlink(tmp); /* a dead process of our pid's, or nothing */
	fd = ts_real_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  0600);
	if (fd < 0)
		return -errno;
	if (ts_real_write(fd, buf, ISN_KEY_LEN) != ISN_KEY_LEN)
		err = -EIO;
	ts_real_close(fd);
	if (!err && link(tmp, path))
		err = -errno;
	unlink(tmp);
	return err;
}

int ts_isn__init(void)
{
	unsigned char fresh[ISN_KEY_LEN];
	char path[64];
	int err;

	if (getrandom(fresh, sizeof(fresh), 0) != sizeof(fresh))
		return -errno;
	memcpy(isn_key, fresh, sizeof(isn_key)); /* at worst, our own */
	snprintf(path, sizeof(path), ISN_KEY_FMT, (unsigned)geteuid());
	err = key_open(path, isn_key);
	if (err == -ENOENT) {
		err = key_publish(path, fresh);
		if (err == -EEXIST) /* another process was first */
			err = key_open(path, isn_key);
	}
	if (err) {
		memcpy(isn_key, fresh, sizeof(isn_key));
		ts_log("TCP sequence numbers: %s unusable (%s): this process "
		       "keys them alone (a port reused after it relies on TCP "
		       "timestamps); remove the file or make /dev/shm writable",
		       path, strerror(-err));
	}
	return 0;
}

/* LWIP_HOOK_TCP_ISN: ports in host order, addresses IPv4 (what the stack
 * carries). */
u32_t ts_isn__hook(const ip_addr_t *lip, u16_t lport, const ip_addr_t *rip,
		   u16_t rport)
{
	unsigned char in[12], h[crypto_shorthash_siphash24_BYTES];
	uint32_t la = ip4_addr_get_u32(ip_2_ip4(lip));
	uint32_t ra = ip4_addr_get_u32(ip_2_ip4(rip));
	uint32_t out;

	memcpy(in, &la, 4);
	memcpy(in + 4, &ra, 4);
	memcpy(in + 8, &lport, 2);
	memcpy(in + 10, &rport, 2);
	crypto_shorthash_siphash24(h, in, sizeof(in), isn_key);
	memcpy(&out, h, sizeof(out));
	return out + (uint32_t)(ts_now_ns() >> 6);
}
