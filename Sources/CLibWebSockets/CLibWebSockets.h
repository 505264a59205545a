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
#include <stdlib.h>

static inline void *CLibWebSockets_newEpollLoop(void) { return ev_loop_new(EVBACKEND_EPOLL); }
static inline void CLibWebSockets_runLoop(void *loop) { ev_run((struct ev_loop *)loop, 0); }
static inline void CLibWebSockets_breakLoop(void *loop) { ev_break((struct ev_loop *)loop, EVBREAK_ALL); }
static inline void CLibWebSockets_destroyLoop(void *loop) { ev_loop_destroy((struct ev_loop *)loop); }
static inline uint64_t CLibWebSockets_libevOption(void) { return LWS_SERVER_OPTION_LIBEV; }

// lws 4.1 arms its libev timer only when it services an event, so a timeout that falls due on a quiet loop (an
// idle connection's PING, a lagging reader's hang-up) would wait for unrelated traffic. A ticker wakes lws every
// `interval` seconds; each wakeup services whatever timers are ripe.
static void CLibWebSockets_tick(struct ev_loop *loop, ev_timer *timer, int revents) {
    (void)loop;
    (void)revents;
    lws_cancel_service((struct lws_context *)timer->data);
}

static inline void *CLibWebSockets_startTicker(void *loop, struct lws_context *context, double interval) {
    ev_timer *timer = (ev_timer *)malloc(sizeof(ev_timer));
    if (!timer) return NULL;
    ev_timer_init(timer, CLibWebSockets_tick, interval, interval);
    timer->data = context;
    ev_timer_start((struct ev_loop *)loop, timer);
    return timer;
}

static inline void CLibWebSockets_stopTicker(void *loop, void *timer) {
    ev_timer_stop((struct ev_loop *)loop, (ev_timer *)timer);
    free(timer);
}

// The server reads its WebSocket connections itself (see Connection's frame reader): lws 4.1 acts on a frame
// header before any callback can see it, and neither refuses unmasked frames nor non-minimal lengths. One libev
// watcher per connection, on the connection's socket, calls `callback(context)` when it is readable.
typedef void (*CLibWebSockets_ReadableCallback)(void *context);

typedef struct {
    ev_io io;
    CLibWebSockets_ReadableCallback callback;
    void *context;
} CLibWebSockets_Reader;

static void CLibWebSockets_readable(struct ev_loop *loop, ev_io *io, int revents) {
    (void)loop;
    (void)revents;
    CLibWebSockets_Reader *reader = (CLibWebSockets_Reader *)io;
    reader->callback(reader->context);
}

static inline void *CLibWebSockets_newReader(int fd, CLibWebSockets_ReadableCallback callback, void *context) {
    CLibWebSockets_Reader *reader = (CLibWebSockets_Reader *)malloc(sizeof(CLibWebSockets_Reader));
    if (!reader) return NULL;
    ev_io_init(&reader->io, CLibWebSockets_readable, fd, EV_READ);
    reader->callback = callback;
    reader->context = context;
    return reader;
}

static inline void CLibWebSockets_startReader(void *loop, void *reader) {
    ev_io_start((struct ev_loop *)loop, &((CLibWebSockets_Reader *)reader)->io);
}

static inline void CLibWebSockets_stopReader(void *loop, void *reader) {
    ev_io_stop((struct ev_loop *)loop, &((CLibWebSockets_Reader *)reader)->io);
}

static inline void CLibWebSockets_freeReader(void *loop, void *reader) {
    ev_io_stop((struct ev_loop *)loop, &((CLibWebSockets_Reader *)reader)->io);
    free(reader);
}

#endif
