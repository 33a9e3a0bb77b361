// SPDX-License-Identifier: Apache-2.0
/* stats.c - the per-process statistics region in /dev/shm, read live by
 * tickstack-stats and printed at exit on request (TICKSTACK_STATS=1).
 *
 * Both files are created without trusting what is already there: /dev/shm
 * is writable by every user of the (pod's or host's) IPC namespace, so a
 * name could be a planted symlink or someone else's file. The region is
 * created O_EXCL|O_NOFOLLOW (a stale file of an earlier process with our
 * pid is removed first); the dump file is appended to only when it is a
 * regular file of ours with one link, never truncated, never followed. */
#include "ts_internal.h"
#include "steer_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

struct tickstack_stats *ts_stats;
static struct tickstack_stats ts_stats_fallback;
static char ts_stats_path[64];

static int map_region(void)
{
	int fd;
	void *p;

	snprintf(ts_stats_path, sizeof(ts_stats_path), TICKSTACK_STATS_PATH_FMT,
		 (int)getpid());
	fd = ts_real_open(ts_stats_path,
			  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		/* our pid's name: left by a process that died before us */
		unlink(ts_stats_path);
		fd = ts_real_open(ts_stats_path,
				  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	}
	if (fd < 0)
		goto out_fallback;
	if (ftruncate(fd, sizeof(struct tickstack_stats)) < 0)
		goto out_close;
	p = mmap(NULL, sizeof(struct tickstack_stats), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto out_close;
	ts_real_close(fd);
	ts_stats = p;
	return 0;
out_close:
	ts_real_close(fd);
	unlink(ts_stats_path);
out_fallback:
	ts_stats_path[0] = 0;
	ts_stats = &ts_stats_fallback;
	return -errno;
}

/* Regions of processes that died without running their exit handler
 * (SIGKILL) stay in /dev/shm: remove them when a new process starts. */
static void gc_stale_regions(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	char path[300];
	int pid;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (sscanf(e->d_name, "tickstack-%d", &pid) != 1 || pid <= 0)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
		unlink(path);
	}
	closedir(d);
}

int ts_stats__init(void)
{
	int err;

	gc_stale_regions();
	err = map_region();

	memset(ts_stats, 0, sizeof(*ts_stats));
	ts_stats->version = TICKSTACK_STATS_VERSION;
	ts_stats->pid = (int32_t)getpid();
	memcpy(ts_stats->profile, ts_cfg.profile, sizeof(ts_stats->profile));
	__atomic_store_n(&ts_stats->magic, TICKSTACK_STATS_MAGIC,
			 __ATOMIC_RELEASE);
	return err;
}

/* The child gets its own region: a copy of the parent's socket slots
 * (the sockets are inherited), counters restarting from zero. */
void ts_stats__reinit_after_fork(void)
{
	struct tickstack_stats *old = ts_stats;
	struct tickstack_stats copy;
	int i;

	memcpy(&copy, old, sizeof(copy));
	if (map_region() < 0 && ts_stats == old)
		return;
	memset(ts_stats, 0, sizeof(*ts_stats));
	ts_stats->version = TICKSTACK_STATS_VERSION;
	ts_stats->pid = (int32_t)getpid();
	memcpy(ts_stats->profile, copy.profile, sizeof(ts_stats->profile));
	for (i = 0; i < TICKSTACK_STATS_MAX_SOCK; i++) {
		struct tickstack_sock_stats *d = &ts_stats->sock[i];
		const struct tickstack_sock_stats *s = &copy.sock[i];

		if (s->in_use != 1)
			continue;
		d->fd = s->fd;
		d->in_use = 1;
		d->laddr = s->laddr;
		d->lport = s->lport;
		d->raddr = s->raddr;
		d->rport = s->rport;
	}
	__atomic_store_n(&ts_stats->magic, TICKSTACK_STATS_MAGIC,
			 __ATOMIC_RELEASE);
}

struct tickstack_xsk_stats *ts_stats__xsk_slot(void)
{
	uint32_t i;

	for (i = 0; i < TICKSTACK_STATS_MAX_XSK; i++) {
		if (!ts_stats->xsk[i].in_use) {
			ts_stats->xsk[i].in_use = 1;
			memset(&ts_stats->xsk_ext[i], 0,
			       sizeof(ts_stats->xsk_ext[i]));
			if (i + 1 > ts_stats->nxsk)
				ts_stats->nxsk = i + 1;
			return &ts_stats->xsk[i];
		}
	}
	return NULL;
}

/* the byte counters of the XSK slot x (ts_stats__xsk_slot's) */
struct tickstack_xsk_ext *ts_stats__xsk_ext(struct tickstack_xsk_stats *x)
{
	return &ts_stats->xsk_ext[x - ts_stats->xsk];
}

struct tickstack_sock_stats *ts_stats__sock_slot(int fd)
{
	uint32_t want;
	int i;

	/* free slots first, then slots of closed sockets */
	for (want = 0; want <= 2; want += 2) {
		for (i = 0; i < TICKSTACK_STATS_MAX_SOCK; i++) {
			struct tickstack_sock_stats *s = &ts_stats->sock[i];

			if (s->in_use == want) {
				memset(s, 0, sizeof(*s));
				s->fd = fd;
				s->in_use = 1;
				return s;
			}
		}
	}
	return NULL;
}

static void dump_to(FILE *f)
{
	const struct tickstack_stats *t = ts_stats;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	uint32_t i;

	fprintf(f, "tickstack stats pid=%d profile=%s sockets_accelerated=%llu "
		   "sockets_kernel=%llu fallback_events=%llu kernel_option=%llu "
		   "kernel_uring=%llu kernel_shared=%llu\n",
		(int)t->pid, t->profile,
		(unsigned long long)t->sockets_accelerated,
		(unsigned long long)t->sockets_kernel,
		(unsigned long long)t->fallback_events,
		(unsigned long long)t->kernel_option,
		(unsigned long long)t->kernel_uring,
		(unsigned long long)t->kernel_shared);
	/* what this process buffers on receive below its sockets: a socket
	 * queue of sockq_len datagrams (fewer when SO_RCVBUF's bytes say so),
	 * UMEM frames per XSK, the rings' entries; not counters */
	fprintf(f, "buffers sockq_len=%u umem_frames=%u frame_size=%u "
		   "rx_ring=%u fill_ring=%u\n",
		ts_cfg.sockq_len, ts_cfg.umem_frames, (unsigned)TS_FRAME_SIZE,
		TS_RING_SIZE, TS_RING_SIZE);
	for (i = 0; i < t->nxsk && i < TICKSTACK_STATS_MAX_XSK; i++) {
		const struct tickstack_xsk_stats *x = &t->xsk[i];

		if (!x->in_use)
			continue;
		fprintf(f, "xsk if=%s ifindex=%u queue=%u queues=%u mode=%s "
			   "bind=%s tx_csum=%s",
			x->ifname, x->ifindex, x->queue, x->nqueues,
			x->mode == 1 ? "native" : "skb",
			x->zerocopy ? "zerocopy" : "copy",
			x->tx_csum_offload ? "offload" : "software");
#define PR(n) fprintf(f, " " #n "=%llu", (unsigned long long)x->n);
		TICKSTACK_XSK_COUNTERS(PR)
#undef PR
#define PR(n) fprintf(f, " " #n "=%llu", (unsigned long long)t->xsk_ext[i].n);
		TICKSTACK_XSK_EXT_COUNTERS(PR)
#undef PR
		fprintf(f, "\n");
	}
	for (i = 0; i < TICKSTACK_STATS_MAX_SOCK; i++) {
		const struct tickstack_sock_stats *s = &t->sock[i];

		if (!s->in_use)
			continue;
		inet_ntop(AF_INET, &s->laddr, a, sizeof(a));
		inet_ntop(AF_INET, &s->raddr, b, sizeof(b));
		fprintf(f, "sock fd=%d local=%s:%u remote=%s:%u accelerated=%u "
			   "closed=%u",
			s->fd, a, ntohs(s->lport), b, ntohs(s->rport),
			s->accelerated, s->in_use == 2);
#define PR(n) fprintf(f, " " #n "=%llu", (unsigned long long)s->n);
		TICKSTACK_SOCK_COUNTERS(PR)
#undef PR
		fprintf(f, "\n");
	}
	fprintf(f, "tcp");
#define PR(n) fprintf(f, " " #n "=%llu", (unsigned long long)t->tcp.n);
	TICKSTACK_TCP_COUNTERS(PR)
#undef PR
#define PR(n) fprintf(f, " " #n "=%llu", (unsigned long long)t->tcp_ext.n);
	TICKSTACK_TCP_EXT_COUNTERS(PR)
#undef PR
	fprintf(f, "\n");
	fprintf(f, "nh");
#define PR(n) fprintf(f, " " #n "=%llu", (unsigned long long)t->nh.n);
	TICKSTACK_NH_COUNTERS(PR)
#undef PR
	fprintf(f, "\n");
}

/* Append to path: created (O_EXCL) or an existing regular file of this
 * user with a single link; never a symlink (O_NOFOLLOW), never truncated. */
static FILE *stats__open_dump(const char *path)
{
	struct stat st;
	FILE *f;
	int fd;

	if (!strcmp(path, "/dev/null"))
		return NULL; /* the usual way to say "no dump": silent */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW |
				O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
				st.st_uid != geteuid() || st.st_nlink != 1)) {
			ts_real_close(fd);
			ts_log("TICKSTACK_STATS_FILE=%s exists and is not a regular "
			       "file of this user with one link: not written; "
			       "remove it or name another file",
			       path);
			return NULL;
		}
	}
	if (fd < 0) {
		ts_log("cannot write TICKSTACK_STATS_FILE=%s: %s%s", path,
		       strerror(errno),
		       errno == ELOOP ? " (a symlink: name the file itself)" : "");
		return NULL;
	}
	f = fdopen(fd, "a");
	if (!f)
		ts_real_close(fd);
	return f;
}

/* the stack's XSK counters read into the region before it is shown
 * (ts_stack__init registers it) */
static void (*stats_refresh)(void);

void ts_stats__refresher(void (*fn)(void))
{
	stats_refresh = fn;
}

void ts_stats__dump(void)
{
	FILE *f;

	if (!ts_cfg.stats_dump || !ts_stats)
		return;
	if (stats_refresh)
		stats_refresh();
	if (ts_cfg.stats_file[0]) {
		char path[300];

		/* %p in the file name is replaced by the pid (forked children) */
		const char *p = strstr(ts_cfg.stats_file, "%p");

		if (p)
			snprintf(path, sizeof(path), "%.*s%d%s",
				 (int)(p - ts_cfg.stats_file), ts_cfg.stats_file,
				 (int)getpid(), p + 2);
		else
			snprintf(path, sizeof(path), "%s", ts_cfg.stats_file);
		f = stats__open_dump(path);
		if (!f)
			return;
		dump_to(f);
		fclose(f);
		return;
	}
	dump_to(stderr);
	fflush(stderr);
}

void ts_stats__fini(void)
{
	if (ts_stats_path[0])
		unlink(ts_stats_path);
}
