// SPDX-License-Identifier: Apache-2.0
/* core.c - the bottom layer every other file of the library may use: the
 * real libc calls (TS_REAL_CALLS, resolved once), the control lock and the
 * reentrancy guard, the cached pid, and signal state (how many handlers ran,
 * the signal eventfd). It calls nothing of the library above it
 * (tests/layers.py, docs/dataplane-design.md "Layers"). */
#include "ts_internal.h"

#include <dlfcn.h>

#define TS_DEFINE_REAL(ret, name, args) ret(*ts_real_##name) args;
TS_REAL_CALLS(TS_DEFINE_REAL)
#undef TS_DEFINE_REAL

__thread int ts_in_lib;
pid_t ts_pid;
/* A mutex, not a spinlock: threads of one process often share a CPU, and
 * a preempted spinlock holder would stall the others for a time slice. */
static pthread_mutex_t ts_mutex = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

/* The ThreadSanitizer build of the library (make test's stress test)
 * takes the real calls from libc itself, past TSan's interceptors: TSan
 * models fds and would report the test's deliberate close of a socket
 * another thread is blocked on (what the test is about) as a race on the
 * fd. The library's own memory and locks stay fully checked. The files it
 * opens itself and closes with ts_real_close it opens with ts_real_open, so
 * that TSan sees neither end (an open it saw, with no close, would stay the
 * opener's fd in its model, and the number's next socket a race). */
#ifdef TS_REAL_FROM_LIBC
static void *real_handle(void)
{
	static void *h;

	if (!h)
		h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	return h ? h : RTLD_NEXT;
}
#define TS_DLSYM(name) dlsym(real_handle(), name)
#else
#define TS_DLSYM(name) dlsym(RTLD_NEXT, name)
#endif

void *ts_real__sym(const char *name)
{
	return TS_DLSYM(name);
}

void ts_real__resolve(void)
{
#define TS_RESOLVE(ret, name, args)                                            \
	if (!ts_real_##name)                                                   \
		ts_real_##name = (ret(*) args)TS_DLSYM(#name);
	TS_REAL_CALLS(TS_RESOLVE)
#undef TS_RESOLVE
}

/* While the lock is held, calls the library makes itself (libxdp and
 * libbpf call socket, close, ...) go straight to libc: ts_in_lib. */
void ts_lock(void)
{
	ts_in_lib++;
	pthread_mutex_lock(&ts_mutex);
}

void ts_unlock(void)
{
	pthread_mutex_unlock(&ts_mutex);
	ts_in_lib--;
}

/* ------------------------------------------------------------------ */
/* signal state: the interposer's trampoline counts every handler run,
 * the blocking calls compare the counts before and after they sleep.  */

static unsigned long sig_gen, sig_norestart_gen;
/* written by whoever must wake the sleepers that have no eventfd of their
 * own (the TCP waits, threads past the wait primitive's slots); created by
 * the sockets at start (ts_sock__init_tables) */
int ts_sig_efd = -1;

void ts_sig__note(int restart)
{
	__atomic_add_fetch(&sig_gen, 1, __ATOMIC_RELEASE);
	if (!restart)
		__atomic_add_fetch(&sig_norestart_gen, 1, __ATOMIC_RELEASE);
}

unsigned long ts_sig__gen(void)
{
	return __atomic_load_n(&sig_gen, __ATOMIC_ACQUIRE);
}

unsigned long ts_sig__norestart_gen(void)
{
	return __atomic_load_n(&sig_norestart_gen, __ATOMIC_ACQUIRE);
}
