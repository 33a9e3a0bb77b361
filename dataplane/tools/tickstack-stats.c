// SPDX-License-Identifier: Apache-2.0
/* tickstack-stats PID|all [-w SECONDS]: print the live counters a process
 * running under libtickstack publishes in /dev/shm/tickstack-<pid>. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickstack.h"

static int usage(void)
{
	fprintf(stderr, "usage: tickstack-stats PID|all [-w SECONDS]\n"
			"  prints per-XSK and per-socket counters of a process "
			"running under tickstack-run\n"
			"  -w N  repeat every N seconds until the process exits\n");
	return 2;
}

static void print(const struct tickstack_stats *t)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	uint32_t i;

	printf("pid %d profile %s: sockets accelerated %llu, on the kernel "
	       "%llu, fallback events %llu (kernel by option %llu, io_uring "
	       "%llu, shared ports %llu)\n",
	       t->pid, t->profile, (unsigned long long)t->sockets_accelerated,
	       (unsigned long long)t->sockets_kernel,
	       (unsigned long long)t->fallback_events,
	       (unsigned long long)t->kernel_option,
	       (unsigned long long)t->kernel_uring,
	       (unsigned long long)t->kernel_shared);
	for (i = 0; i < t->nxsk && i < TICKSTACK_STATS_MAX_XSK; i++) {
		const struct tickstack_xsk_stats *x = &t->xsk[i];

		if (!x->in_use)
			continue;
		printf("  xsk %s (ifindex %u) queues %u-%u, XDP %s, bound %s, "
		       "UDP checksums %s\n",
		       x->ifname, x->ifindex, x->queue,
		       x->queue + (x->nqueues ? x->nqueues - 1 : 0),
		       x->mode == 1 ? "native" : "skb",
		       x->zerocopy ? "zero-copy" : "copy",
		       x->tx_csum_offload ? "offloaded" : "in software");
#define PR(n) printf("    %-20s %llu\n", #n, (unsigned long long)x->n);
		TICKSTACK_XSK_COUNTERS(PR)
#undef PR
#define PR(n)                                                                  \
	printf("    %-20s %llu\n", #n, (unsigned long long)t->xsk_ext[i].n);
		TICKSTACK_XSK_EXT_COUNTERS(PR)
#undef PR
	}
	for (i = 0; i < TICKSTACK_STATS_MAX_SOCK; i++) {
		const struct tickstack_sock_stats *s = &t->sock[i];

		if (!s->in_use)
			continue;
		inet_ntop(AF_INET, &s->laddr, a, sizeof(a));
		inet_ntop(AF_INET, &s->raddr, b, sizeof(b));
		printf("  socket fd %d %s:%u -> %s:%u %s%s\n", s->fd, a,
		       ntohs(s->lport), b, ntohs(s->rport),
		       s->accelerated ? "accelerated" : "kernel",
		       s->in_use == 2 ? " (closed)" : "");
#define PR(n)                                                                  \
	if (s->n)                                                              \
		printf("    %-20s %llu\n", #n, (unsigned long long)s->n);
		TICKSTACK_SOCK_COUNTERS(PR)
#undef PR
	}
	printf("  tcp\n");
#define PR(n) printf("    %-20s %llu\n", #n, (unsigned long long)t->tcp.n);
	TICKSTACK_TCP_COUNTERS(PR)
#undef PR
#define PR(n) printf("    %-20s %llu\n", #n, (unsigned long long)t->tcp_ext.n);
	TICKSTACK_TCP_EXT_COUNTERS(PR)
#undef PR
	printf("  next hops\n");
#define PR(n) printf("    %-20s %llu\n", #n, (unsigned long long)t->nh.n);
	TICKSTACK_NH_COUNTERS(PR)
#undef PR
}

static int show(int pid)
{
	struct tickstack_stats *t;
	char path[64];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), TICKSTACK_STATS_PATH_FMT, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr,
			"tickstack-stats: %s: %s (is pid %d running under "
			"tickstack-run?)\n",
			path, strerror(errno), pid);
		return 1;
	}
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(*t)) {
		fprintf(stderr, "tickstack-stats: %s: too small (library "
				"version mismatch?)\n", path);
		close(fd);
		return 1;
	}
	t = mmap(NULL, sizeof(*t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (t == MAP_FAILED) {
		perror("tickstack-stats: mmap");
		return 1;
	}
	if (t->magic != TICKSTACK_STATS_MAGIC ||
	    t->version != TICKSTACK_STATS_VERSION) {
		fprintf(stderr, "tickstack-stats: %s: unknown format (magic %#x "
				"version %u)\n", path, t->magic, t->version);
		munmap(t, sizeof(*t));
		return 1;
	}
	if (kill(pid, 0) < 0 && errno == ESRCH)
		printf("(process %d has exited; stale region)\n", pid);
	print(t);
	munmap(t, sizeof(*t));
	return 0;
}

static int show_all(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (!d) {
		perror("tickstack-stats: /dev/shm");
		return 1;
	}
	while ((e = readdir(d))) {
		int pid, end = 0;

		/* tickstack-<pid> exactly: not the .cap/.dump files beside it
		 * (tickstack-dump, tickstack-stackdump) */
		if (sscanf(e->d_name, "tickstack-%d%n", &pid, &end) == 1 &&
		    pid > 0 && !e->d_name[end]) {
			show(pid);
			n++;
		}
	}
	closedir(d);
	if (!n)
		printf("no process runs under tickstack\n");
	return 0;
}

int main(int argc, char **argv)
{
	long pid = 0, every = 0;
	char *end;
	int all = 0, r;

	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "all")) {
		all = 1;
	} else {
		pid = strtol(argv[1], &end, 10);
		if (*end || pid <= 0) {
			fprintf(stderr, "tickstack-stats: '%s' is not a pid\n",
				argv[1]);
			return usage();
		}
	}
	if (argc == 4 && !strcmp(argv[2], "-w")) {
		every = strtol(argv[3], &end, 10);
		if (*end || every <= 0) {
			fprintf(stderr, "tickstack-stats: -w needs a positive "
					"number of seconds\n");
			return usage();
		}
	} else if (argc != 2) {
		return usage();
	}
	for (;;) {
		r = all ? show_all() : show((int)pid);
		if (!every || r)
			return r;
		fflush(stdout);
		sleep((unsigned)every);
		if (!all && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			return 0;
	}
}
