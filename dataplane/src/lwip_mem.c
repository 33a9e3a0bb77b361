// SPDX-License-Identifier: Apache-2.0
/* lwip_mem.c - lwIP's heap (MEM_LIBC_MALLOC: every pbuf, segment and pool
 * object) on libc's malloc with a bounded cache of freed blocks in front.
 *
 * Why: a bulk TCP transfer allocates and frees its send buffer and receive
 * window (1 MiB each, src/lwipopts.h) in segment-sized blocks at the top of
 * the application's heap. glibc gives the top back to the kernel on free
 * (brk, M_TRIM_THRESHOLD) and takes it again on the next allocations, so
 * each megabyte moved cost page faults, zeroed pages and brk calls: 10-17 %
 * of the sender's and the receiver's CPU in iperf3 at MTU 9,000
 * (docs/dataplane-design.md, "Benchmark"). The application's
 * malloc settings stay the application's (no mallopt): the library keeps
 * what lwIP frees, up to TS_MEM_CACHE_BYTES per process, in free lists by
 * size class, and gives the rest back to malloc.
 *
 * Blocks carry a 16-byte header with their class (TS_MEM_BIG: a plain
 * malloc'd block, larger than the largest class). The lists are under
 * their own mutex: lwIP allocates under its core lock, but a received
 * segment is allocated on the RX path (ts_tcp__input), which does not hold
 * it. The sanitizer builds pass every call straight to malloc, so that
 * they see each block's true life. */
#include "ts_internal.h"
#include "lwipopts.h" /* ts_mem__malloc, ts_mem__calloc, ts_mem__free */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TS_MEM_HDR 16u
#define TS_MEM_STEP 512u
#define TS_MEM_CLASSES 36u /* up to 18 KiB: a 9,000-MTU segment and its pbuf */
#define TS_MEM_BIG 0xffffu
#define TS_MEM_CACHE_BYTES (4u << 20)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TS_MEM_PASS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TS_MEM_PASS 1
#endif
#endif

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
#ifndef TS_MEM_PASS
struct ts_mem_free {
	struct ts_mem_free *next;
};

static struct ts_mem_free *mem_lists[TS_MEM_CLASSES];
static size_t mem_cached; /* bytes held in the lists */
#endif

void *ts_mem__malloc(size_t size)
{
#ifdef TS_MEM_PASS
	return malloc(size);
#else
	size_t c = (size + TS_MEM_HDR + TS_MEM_STEP - 1) / TS_MEM_STEP;
	uint8_t *p = NULL;

	if (c < TS_MEM_CLASSES) {
		pthread_mutex_lock(&mem_lock);
		if (mem_lists[c]) {
			p = (uint8_t *)mem_lists[c];
			mem_lists[c] = mem_lists[c]->next;
			mem_cached -= c * TS_MEM_STEP;
		}
		pthread_mutex_unlock(&mem_lock);
		if (!p)
			p = malloc(c * TS_MEM_STEP);
	} else {
		c = TS_MEM_BIG;
		p = size <= SIZE_MAX - TS_MEM_HDR ? malloc(size + TS_MEM_HDR) : NULL;
	}
	if (!p)
		return NULL;
	*(uint16_t *)p = (uint16_t)c;
	return p + TS_MEM_HDR;
#endif
}

void *ts_mem__calloc(size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = ts_mem__malloc(n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void ts_mem__free(void *ptr)
{
#ifdef TS_MEM_PASS
	free(ptr);
#else
	uint8_t *p;
	unsigned c;

	if (!ptr)
		return;
	p = (uint8_t *)ptr - TS_MEM_HDR;
	c = *(uint16_t *)p;
	if (c != TS_MEM_BIG) {
		pthread_mutex_lock(&mem_lock);
		if (mem_cached + c * TS_MEM_STEP <= TS_MEM_CACHE_BYTES) {
			((struct ts_mem_free *)p)->next = mem_lists[c];
			mem_lists[c] = (struct ts_mem_free *)p;
			mem_cached += c * TS_MEM_STEP;
			p = NULL;
		}
		pthread_mutex_unlock(&mem_lock);
	}
	free(p);
#endif
}

/* atfork: no thread holds the lists' lock across a fork */
void ts_mem__fork_prepare(void)
{
	pthread_mutex_lock(&mem_lock);
}

void ts_mem__fork_parent(void)
{
	pthread_mutex_unlock(&mem_lock);
}

void ts_mem__fork_child(void)
{
	pthread_mutex_init(&mem_lock, NULL);
}
