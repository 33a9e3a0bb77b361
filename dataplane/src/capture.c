// SPDX-License-Identifier: Apache-2.0
/* capture.c - what the inspection tools see of the bypass: the capture
 * ring tickstack-dump reads (frames the XSKs carry, both ways) and the
 * snapshot tickstack-stackdump asks for (sockets, rings, UMEM).
 *
 * Neither costs anything until a tool asks. The tool makes its file in
 * /dev/shm (tickstack-<pid>.cap or .dump), then writes a request into the
 * process's statistics region; the control thread (ctl.c) sees it within a
 * tick, checks the file (a regular file of this user with one link, opened
 * without following a symlink, of the size its header claims) and maps it.
 * The data path looks at one process-local flag per batch of frames
 * (ts_cap_on); only while it is set does it take the capture lock and copy.
 *
 * The ring's indices are kept here: what the reader writes into the shared
 * header (its tail) is only compared, never used to address memory. */
#include "ts_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int ts_cap_on;

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tickstack_cap_hdr *cap_h; /* under cap_lock */
static size_t cap_maplen;
static uint32_t cap_size, cap_snaplen; /* copied at attach: trusted */
static uint64_t cap_head;
static uint32_t cap_gen;
static uint32_t cap_answered; /* the last request looked at: a ring let go
			       * (stale reader) is not taken again */

static struct tickstack_dump *dump_map; /* control thread only */
static size_t dump_maplen;

/* Map the tool's file at path: a regular file of this user with one link,
 * at least min bytes. The mapping or NULL (said with ts_dbg). */
static void *map_tool_file(const char *path, size_t min, size_t *len)
{
	struct stat st;
	void *p;
	int fd;

	fd = ts_real_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ts_dbg("inspection request: %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1 || (size_t)st.st_size < min) {
		ts_log("%s is not a regular file of this user with one link of "
		       "%zu bytes or more: not used",
		       path, min);
		ts_real_close(fd);
		return NULL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	ts_real_close(fd);
	if (p == MAP_FAILED)
		return NULL;
	*len = (size_t)st.st_size;
	return p;
}

static void cap__detach(void)
{
	struct tickstack_cap_hdr *h;
	size_t len;

	pthread_mutex_lock(&cap_lock);
	h = cap_h;
	len = cap_maplen;
	cap_h = NULL;
	__atomic_store_n(&ts_cap_on, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cap_lock);
	if (!h)
		return;
	__atomic_store_n(&h->attached, 2, __ATOMIC_RELEASE);
	munmap(h, len);
	cap_gen = 0;
	__atomic_store_n(&ts_stats->cap_att, 0, __ATOMIC_RELEASE);
}

static void cap__attach(uint32_t gen)
{
	char path[64];
	struct tickstack_cap_hdr *h;
	size_t len = 0;

	cap_answered = gen;
	snprintf(path, sizeof(path), TICKSTACK_CAP_PATH_FMT, (int)getpid());
	h = map_tool_file(path, sizeof(*h), &len);
	if (!h)
		goto out_refuse;
	if (h->magic != TICKSTACK_CAP_MAGIC ||
	    h->version != TICKSTACK_CAP_VERSION || h->size < 4096 ||
	    (h->size & (h->size - 1)) || h->size > len - sizeof(*h) ||
	    h->snaplen < 64) {
		ts_log("%s: not a capture ring of this version: not used", path);
		munmap(h, len);
		goto out_refuse;
	}
	pthread_mutex_lock(&cap_lock);
	cap_h = h;
	cap_maplen = len;
	cap_size = h->size;
	cap_snaplen = h->snaplen;
	cap_head = 0;
	h->head = 0;
	h->captured = 0;
	h->dropped = 0;
	__atomic_store_n(&h->attached, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ts_cap_on, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cap_lock);
	cap_gen = gen;
	ts_dbg("capture attached: %s, %u bytes, snaplen %u", path, cap_size,
	       cap_snaplen);
out_refuse:
	/* answered either way: a refused ring is not tried again */
	__atomic_store_n(&ts_stats->cap_att, gen, __ATOMIC_RELEASE);
}

/* The control thread, every tick: follow the capture request. */
static void cap__poll(void)
{
	uint32_t req = __atomic_load_n(&ts_stats->cap_req, __ATOMIC_ACQUIRE);
	struct tickstack_cap_hdr *h;

	/* under the lock: ts_cap__fini clears it from the exiting thread
	 * (it never unmaps, so h stays readable here) */
	pthread_mutex_lock(&cap_lock);
	h = cap_h;
	pthread_mutex_unlock(&cap_lock);
	if (h) {
		uint64_t seen = __atomic_load_n(&h->reader_ns, __ATOMIC_RELAXED);

		/* asked to stop, replaced, or a reader gone without a word */
		if (req != cap_gen || ts_now_ns() > seen + TICKSTACK_CAP_STALE_NS)
			cap__detach();
		else
			return;
	}
	if (req && req != cap_answered)
		cap__attach(req);
}

void ts_cap__frame(uint32_t ifindex, uint32_t queue, uint32_t flags,
		   const void *p, uint32_t len, uint64_t ts_ns)
{
	struct tickstack_cap_hdr *h;
	struct tickstack_cap_rec *r;
	uint32_t caplen, need, off, end;
	uint64_t tail;

	pthread_mutex_lock(&cap_lock);
	h = cap_h;
	if (!h)
		goto out;
	caplen = len < cap_snaplen ? len : cap_snaplen;
	need = (uint32_t)(sizeof(*r) + caplen + TICKSTACK_CAP_ALIGN - 1) &
	       ~(TICKSTACK_CAP_ALIGN - 1);
	off = (uint32_t)(cap_head & (cap_size - 1));
	end = cap_size - off;
	tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
	/* a tail past the head or a ring's length behind it: no room (a
	 * reader that wrote nonsense only loses frames) */
	if (tail > cap_head || cap_head - tail > cap_size ||
	    (uint64_t)need + (end < need ? end : 0) >
		    cap_size - (cap_head - tail)) {
		__atomic_store_n(&h->dropped, h->dropped + 1, __ATOMIC_RELAXED);
		goto out;
	}
	if (end < need) { /* pad to the end, start over at 0 */
		r = (struct tickstack_cap_rec *)(void *)(h->data + off);
		memset(r, 0, sizeof(*r));
		r->reclen = end;
		r->flags = TICKSTACK_CAP_PAD;
		cap_head += end;
		off = 0;
	}
	r = (struct tickstack_cap_rec *)(void *)(h->data + off);
	r->reclen = need;
	r->caplen = caplen;
	r->origlen = len;
	r->ifindex = ifindex;
	r->ts_ns = ts_ns;
	r->flags = flags;
	r->queue = queue;
	memcpy(r + 1, p, caplen);
	cap_head += need;
	__atomic_store_n(&h->head, cap_head, __ATOMIC_RELEASE);
	__atomic_store_n(&h->captured, h->captured + 1, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&cap_lock);
}

uint64_t ts_cap__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the snapshot */
/* each layer's part of the snapshot (the XSKs, the UDP sockets, the
 * streams), registered at start, bottom first */
#define TS_DUMP_PARTS 4
static void (*parts[TS_DUMP_PARTS])(struct tickstack_dump *d);
static int nparts;

void ts_dump__part(void (*fill)(struct tickstack_dump *d))
{
	if (nparts < TS_DUMP_PARTS)
		parts[nparts++] = fill;
}

static void dump__poll(void)
{
	int i;
	uint32_t req = __atomic_load_n(&ts_stats->dump_req, __ATOMIC_ACQUIRE);
	struct tickstack_dump *d;
	char path[64];
	size_t len = 0;

	if (req == __atomic_load_n(&ts_stats->dump_done, __ATOMIC_ACQUIRE))
		return;
	snprintf(path, sizeof(path), TICKSTACK_DUMP_PATH_FMT, (int)getpid());
	d = map_tool_file(path, sizeof(*d), &len);
	if (d) {
		dump_map = d;
		dump_maplen = len;
		memset(d, 0, sizeof(*d));
		for (i = 0; i < nparts; i++)
			parts[i](d);
		d->time_ns = ts_cap__now();
		d->seq = req;
		d->version = TICKSTACK_DUMP_VERSION;
		__atomic_store_n(&d->magic, TICKSTACK_DUMP_MAGIC,
				 __ATOMIC_RELEASE);
		munmap(dump_map, dump_maplen);
		dump_map = NULL;
	}
	/* answered either way (a refused file is said on stderr) */
	__atomic_store_n(&ts_stats->dump_done, req, __ATOMIC_RELEASE);
}

/* A slot of the snapshot for one more socket; NULL when it is full
 * (counted in truncated). */
struct tickstack_dump_sock *ts_dump__sock_slot(struct tickstack_dump *d)
{
	if (d->nsock >= TICKSTACK_DUMP_MAX_SOCK) {
		d->truncated++;
		return NULL;
	}
	return &d->sock[d->nsock++];
}

void ts_inspect__poll(void)
{
	if (!ts_stats || !ts_stats->magic || ts_stats->pid != (int32_t)getpid())
		return; /* no region of ours in /dev/shm */
	cap__poll();
	dump__poll();
}

/* In a forked child: the parent's ring is the parent's (the mapping was
 * inherited); a tool asks the child through the child's own region. */
void ts_cap__after_fork_child(void)
{
	if (cap_h)
		munmap(cap_h, cap_maplen);
	cap_h = NULL;
	cap_gen = 0;
	cap_answered = 0;
	__atomic_store_n(&ts_cap_on, 0, __ATOMIC_RELAXED);
	pthread_mutex_init(&cap_lock, NULL);
}

/* At exit: the ring is let go, so a reader that cannot see the process
 * (from the node, another pid namespace) stops. */
void ts_cap__fini(void)
{
	struct tickstack_cap_hdr *h;

	pthread_mutex_lock(&cap_lock);
	h = cap_h;
	cap_h = NULL;
	__atomic_store_n(&ts_cap_on, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cap_lock);
	if (h)
		__atomic_store_n(&h->attached, 2, __ATOMIC_RELEASE);
}
