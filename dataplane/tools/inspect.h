/* SPDX-License-Identifier: Apache-2.0 */
/* inspect.h - finding and asking a process under libtickstack, shared by
 * tickstack-dump and tickstack-stackdump (docs/dataplane.md, "Seeing inside
 * the bypass").
 *
 * A process publishes /dev/shm/tickstack-<pid> (its pid in its own pid
 * namespace). The tools find it:
 *   - in the same pod or namespace (kubectl exec): /dev/shm, by that pid;
 *   - from the node by the host pid: /proc/<pid>/root/dev/shm, under the pid
 *     NSpid names in /proc/<pid>/status (reading another user's
 *     /proc/<pid>/root needs CAP_SYS_PTRACE over it: root on the node);
 *   - with --root DIR: DIR/dev/shm (e.g. /proc/<pid>/root for every process
 *     of that pod, -p all).
 * A request is a file the tool makes beside the region (O_EXCL|O_NOFOLLOW,
 * mode 0600, given to the region's owner when the tool runs as root) and a
 * counter it bumps in the region; the process's control thread answers
 * within 100 ms. */
#ifndef TS_INSPECT_H
#define TS_INSPECT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tickstack.h"

struct ts_target {
	char dir[280];  /* the /dev/shm holding its files */
	int pid;        /* in the file names (the process's own namespace) */
	int local;      /* same pid namespace: kill(pid, 0) tells if it lives */
	uid_t uid;      /* the region's owner */
	gid_t gid;
	struct tickstack_stats *st; /* mapped read-write */
};

static inline uint64_t ts_insp__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void ts_insp__sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* -p/-i PID|all and -r/--root DIR: the options both tools name their
 * targets with (for ts_insp__targets); 1 when o is one of them (its value
 * kept in *spec or *root), else 0 */
static inline int ts_insp__target_opt(int o, const char *arg, const char **spec,
				      const char **root)
{
	if (o == 'p' || o == 'i')
		*spec = arg;
	else if (o == 'r')
		*root = arg;
	else
		return 0;
	return 1;
}

/* "tickstack-<pid>" exactly (not the .cap or .dump beside it): the pid. */
static inline int ts_insp__region_pid(const char *name)
{
	int pid, end = 0;

	if (sscanf(name, "tickstack-%d%n", &pid, &end) != 1 || pid <= 0 ||
	    name[end])
		return 0;
	return pid;
}

/* The last pid NSpid lists for host pid: its pid in its own namespace. */
static inline int ts_insp__nspid(int pid)
{
	char path[64], line[256];
	int ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (;;) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			ns = (int)v;
			p = end;
		}
	}
	fclose(f);
	return ns;
}

/* Map the region of target t (t->dir, t->pid set). 0 or -1 (said). */
static inline int ts_insp__map(const char *tool, struct ts_target *t)
{
	char path[320];
	struct stat sb;
	int fd;

	snprintf(path, sizeof(path), "%s/tickstack-%d", t->dir, t->pid);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s (is pid %d running under "
				"tickstack-run, and is this its user or root?)\n",
			tool, path, strerror(errno), t->pid);
		return -1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (size_t)sb.st_size < sizeof(*t->st)) {
		fprintf(stderr, "%s: %s: not a region of this library version "
				"(too small): use the tools of the library the "
				"process runs\n", tool, path);
		close(fd);
		return -1;
	}
	t->uid = sb.st_uid;
	t->gid = sb.st_gid;
	t->st = mmap(NULL, sizeof(*t->st), PROT_READ | PROT_WRITE, MAP_SHARED,
		     fd, 0);
	close(fd);
	if (t->st == MAP_FAILED) {
		t->st = NULL;
		fprintf(stderr, "%s: mmap %s: %s\n", tool, path, strerror(errno));
		return -1;
	}
	if (t->st->magic != TICKSTACK_STATS_MAGIC ||
	    t->st->version != TICKSTACK_STATS_VERSION) {
		fprintf(stderr, "%s: %s: unknown format (magic %#x version %u)\n",
			tool, path, t->st->magic, t->st->version);
		munmap(t->st, sizeof(*t->st));
		t->st = NULL;
		return -1;
	}
	return 0;
}

/* Resolve "-p PID|all" (root: --root DIR or NULL) into up to max targets.
 * The count, or -1 (said). */
static inline int ts_insp__targets(const char *tool, const char *spec,
				   const char *root, struct ts_target *out,
				   int max)
{
	char dir[280], path[320];
	struct dirent *e;
	int n = 0, pid;
	char *end;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/dev/shm", root ? root : "");
	if (!strcmp(spec, "all")) {
		d = opendir(dir);
		if (!d) {
			fprintf(stderr, "%s: %s: %s\n", tool, dir, strerror(errno));
			return -1;
		}
		while ((e = readdir(d)) && n < max) {
			pid = ts_insp__region_pid(e->d_name);
			if (!pid)
				continue;
			memset(&out[n], 0, sizeof(out[n]));
			snprintf(out[n].dir, sizeof(out[n].dir), "%s", dir);
			out[n].pid = pid;
			out[n].local = !root;
			if (out[n].local && (pid == getpid() ||
					     (kill(pid, 0) < 0 && errno == ESRCH)))
				continue; /* a stale region, or this tool's own
					   * (in a bypass pod it runs preloaded) */
			if (ts_insp__map(tool, &out[n]))
				continue;
			/* no accelerated socket, no XSK: nothing to see, and
			 * no control thread to answer (a shell of the pod) */
			if (!out[n].st->nxsk && !out[n].st->sockets_accelerated) {
				munmap(out[n].st, sizeof(*out[n].st));
				continue;
			}
			n++;
		}
		closedir(d);
		if (!n)
			fprintf(stderr, "%s: no process runs under tickstack "
					"in %s\n", tool, dir);
		return n ? n : -1;
	}
	pid = (int)strtol(spec, &end, 10);
	if (*end || pid <= 0) {
		fprintf(stderr, "%s: -p '%s': give a pid or all\n", tool, spec);
		return -1;
	}
	memset(&out[0], 0, sizeof(out[0]));
	out[0].pid = pid;
	snprintf(path, sizeof(path), "%s/tickstack-%d", dir, pid);
	if (root || !access(path, F_OK)) {
		snprintf(out[0].dir, sizeof(out[0].dir), "%s", dir);
		out[0].local = !root;
	} else {
		/* from the node: the process's own /dev/shm and pid */
		int ns = ts_insp__nspid(pid);

		if (ns > 0) {
			snprintf(out[0].dir, sizeof(out[0].dir),
				 "/proc/%d/root/dev/shm", pid);
			out[0].pid = ns;
		} else {
			snprintf(out[0].dir, sizeof(out[0].dir), "%s", dir);
			out[0].local = 1;
		}
	}
	return ts_insp__map(tool, &out[0]) ? -1 : 1;
}

/* Make the request file name (beside t's region): created fresh, mode 0600,
 * size bytes, the region owner's; mapped. NULL (said) on failure. */
static inline void *ts_insp__make_file(const char *tool,
				       const struct ts_target *t,
				       const char *suffix, size_t size,
				       char *path, size_t pathlen)
{
	void *p;
	int fd;

	if (snprintf(path, pathlen, "%s/tickstack-%d.%s", t->dir, t->pid,
		     suffix) >= (int)pathlen) {
		fprintf(stderr, "%s: %s: path too long\n", tool, t->dir);
		return NULL;
	}
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0 && errno == EEXIST) {
		/* left by a tool that died: ours to replace (a name in a
		 * directory every user may write: never followed, made anew) */
		unlink(path);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		fprintf(stderr, "%s: cannot create %s: %s\n", tool, path,
			strerror(errno));
		return NULL;
	}
	/* the process opens it only when its own user owns it */
	if ((geteuid() != t->uid || getegid() != t->gid) &&
	    fchown(fd, t->uid, t->gid) < 0) {
		fprintf(stderr, "%s: %s: cannot give it to the process's user "
				"%u: %s (run as that user, or as root)\n",
			tool, path, (unsigned)t->uid, strerror(errno));
		goto out_unlink;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		fprintf(stderr, "%s: %s: %s\n", tool, path, strerror(errno));
		goto out_unlink;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "%s: mmap %s: %s\n", tool, path, strerror(errno));
		goto out_unlink;
	}
	close(fd);
	return p;
out_unlink:
	close(fd);
	unlink(path);
	return NULL;
}

/* A request generation: nonzero, new for each request. */
static inline uint32_t ts_insp__gen(void)
{
	uint32_t g = (uint32_t)ts_insp__mono_ns() ^ ((uint32_t)getpid() << 16);

	return g ? g : 1;
}

#endif /* TS_INSPECT_H */
