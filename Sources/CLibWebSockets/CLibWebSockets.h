// What Swift cannot import from libwebsockets: function-like and compound macros.
// Names are prefixed CLibWebSockets_ so that they never collide with lws' own.
#ifndef CLIBWEBSOCKETS_H
#define CLIBWEBSOCKETS_H

#include <libwebsockets.h>

// Outbound buffers are allocated with this headroom so lws can write frame headers in place.
_Static_assert(LWS_PRE >= 14, "LWS_PRE must cover the largest WebSocket frame header");
_Static_assert(LWS_PRE % sizeof(void *) == 0, "LWS_PRE keeps payloads pointer-aligned");

static inline size_t CLibWebSockets_LWS_PRE(void) { return LWS_PRE; }

// The service loop runs lws on a libev loop of its own (a "foreign" loop to lws) so that it can choose epoll
// and break the loop from a callback. poll() scans every descriptor on every wakeup, which with a thousand
// connections was half of the server's time.
#include <ev.h>

static inline void *CLibWebSockets_newEpollLoop(void) { return ev_loop_new(EVBACKEND_EPOLL); }
static inline void CLibWebSockets_runLoop(void *loop) { ev_run((struct ev_loop *)loop, 0); }
static inline void CLibWebSockets_breakLoop(void *loop) { ev_break((struct ev_loop *)loop, EVBREAK_ALL); }
static inline void CLibWebSockets_destroyLoop(void *loop) { ev_loop_destroy((struct ev_loop *)loop); }
static inline uint64_t CLibWebSockets_libevOption(void) { return LWS_SERVER_OPTION_LIBEV; }

#endif
