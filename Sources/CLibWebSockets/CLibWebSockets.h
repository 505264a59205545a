// What Swift cannot import from libwebsockets: function-like and compound macros.
// Names are prefixed CLibWebSockets_ so that they never collide with lws' own.
#ifndef CLIBWEBSOCKETS_H
#define CLIBWEBSOCKETS_H

#include <libwebsockets.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>

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

// lws 4.1 arms its libev timer only when it services an event, so a timeout that falls due on a quiet loop (a
// lagging reader's hang-up, a stalled handshake) would wait for unrelated traffic. A ticker wakes lws every
// `interval` seconds; each wakeup services whatever timers are ripe, and runs the loop's own idle sweep and ends of
// lingering and event streams' heartbeats (see ServiceLoop.runDueTimers).
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

// What the watchers below call: a Swift closure with the context it was registered with.
typedef void (*CLibWebSockets_Callback)(void *context);

// Calls `callback(context)` each time the loop is about to wait for events (a libev prepare watcher): after every
// callback of the iteration, outside all of lws' callbacks, where a connection may be closed synchronously.
typedef struct {
    ev_prepare prepare;
    CLibWebSockets_Callback callback;
    void *context;
} CLibWebSockets_BeforeWait;

static void CLibWebSockets_beforeWait(struct ev_loop *loop, ev_prepare *prepare, int revents) {
    (void)loop;
    (void)revents;
    CLibWebSockets_BeforeWait *watcher = (CLibWebSockets_BeforeWait *)prepare;
    watcher->callback(watcher->context);
}

static inline void *CLibWebSockets_startBeforeWait(void *loop, CLibWebSockets_Callback callback,
                                                   void *context) {
    CLibWebSockets_BeforeWait *watcher = (CLibWebSockets_BeforeWait *)malloc(sizeof(CLibWebSockets_BeforeWait));
    if (!watcher) return NULL;
    ev_prepare_init(&watcher->prepare, CLibWebSockets_beforeWait);
    watcher->callback = callback;
    watcher->context = context;
    ev_prepare_start((struct ev_loop *)loop, &watcher->prepare);
    return watcher;
}

static inline void CLibWebSockets_stopBeforeWait(void *loop, void *watcher) {
    ev_prepare_stop((struct ev_loop *)loop, &((CLibWebSockets_BeforeWait *)watcher)->prepare);
    free(watcher);
}

// The server reads its WebSocket connections itself (see Connection's frame reader): lws 4.1 acts on a frame
// header before any callback can see it, and neither refuses unmasked frames nor non-minimal lengths. One libev
// watcher per connection, on the connection's socket, calls `callback(context)` when it is readable.
typedef struct {
    ev_io io;
    CLibWebSockets_Callback callback;
    void *context;
} CLibWebSockets_Reader;

static void CLibWebSockets_readable(struct ev_loop *loop, ev_io *io, int revents) {
    (void)loop;
    (void)revents;
    CLibWebSockets_Reader *reader = (CLibWebSockets_Reader *)io;
    reader->callback(reader->context);
}

static inline void *CLibWebSockets_newReader(int fd, CLibWebSockets_Callback callback, void *context) {
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

// Reading a TLS connection goes through its OpenSSL object, which decrypts (and may hold decrypted bytes the socket
// no longer shows as readable: see CLibWebSockets_tlsPending and CLibWebSockets_feedReader).
static inline void *CLibWebSockets_tlsConnection(struct lws *wsi) { return (void *)lws_get_ssl(wsi); }

/// Reads up to `length` bytes of application data: > 0 bytes read, 0 the peer closed, -1 nothing to read now,
/// -2 the connection failed.
static inline long CLibWebSockets_tlsRead(void *tls, void *buffer, int length) {
    ERR_clear_error();
    int count = SSL_read((SSL *)tls, buffer, length);
    if (count > 0) return count;
    switch (SSL_get_error((SSL *)tls, count)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: ERR_clear_error(); return -2;
    }
}

/// Decrypted bytes OpenSSL holds that a read would return at once.
static inline int CLibWebSockets_tlsPending(void *tls) { return SSL_pending((SSL *)tls); }

/// Runs the reader's callback on the next loop iteration, whether or not the socket is readable.
static inline void CLibWebSockets_feedReader(void *loop, void *reader) {
    ev_feed_event((struct ev_loop *)loop, &((CLibWebSockets_Reader *)reader)->io, EV_READ);
}

static inline void CLibWebSockets_freeReader(void *loop, void *reader) {
    ev_io_stop((struct ev_loop *)loop, &((CLibWebSockets_Reader *)reader)->io);
    free(reader);
}

// What lws 4.1 read past the end of a handshake (frames a client sent without waiting for the 101, or a server's
// first frames behind its 101) it keeps on the connection's input buflist for its own frame parser, which neither
// role runs. struct lws is
// private, but its `buflist` member follows `user_space` and `opaque_parent_data`, which public calls read and
// write: with a marker in opaque_parent_data, that pair is looked for within the allocation (malloc_usable_size
// bounds the search), and the member after it is the list. Returns its offset, or 0 when the pair is not found.
#include <malloc.h>
#include <string.h>

static inline size_t CLibWebSockets_inputBuflistOffset(struct lws *wsi) {
    static const char marker = 0;
    void *user = lws_wsi_user(wsi);
    void *saved = lws_get_opaque_parent_data(wsi);
    size_t size = malloc_usable_size(wsi), found = 0;
    if (!user) return 0;
    lws_set_opaque_parent_data(wsi, (void *)&marker);
    for (size_t offset = 0; offset + 3 * sizeof(void *) <= size; offset += sizeof(void *)) {
        void **slot = (void **)((char *)wsi + offset);
        if (slot[0] == user && slot[1] == (const void *)&marker) {
            found = offset + 2 * sizeof(void *);
            break;
        }
    }
    lws_set_opaque_parent_data(wsi, saved);
    return found;
}

/// Moves up to `length` bytes off the input buflist found at `offset` (see above) into `buffer`; the count moved.
static inline size_t CLibWebSockets_takeBufferedInput(struct lws *wsi, size_t offset, void *buffer, size_t length) {
    struct lws_buflist **head = (struct lws_buflist **)((char *)wsi + offset);
    uint8_t *segment = NULL;
    size_t count = lws_buflist_next_segment_len(head, &segment);
    if (count > length) count = length;
    if (!count) return 0;
    memcpy(buffer, segment, count);
    lws_buflist_use_segment(head, count);
    return count;
}

// TLS (Debian's libwebsockets is built with OpenSSL). The server's certificate and key are checked here, in a
// context of our own, before lws loads them into its live one: lws loads the certificate first, and a key that
// then fails to load or match would leave its context without a usable pair (start-up, and a reload on SIGHUP).

static inline uint64_t CLibWebSockets_sslGlobalInitOption(void) { return LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT; }

/// 1 when `cert` (a PEM chain) and `key` (PEM) load and belong together; otherwise 0 with OpenSSL's reason in `error`.
static inline int CLibWebSockets_checkCertificatePair(const char *cert, const char *key, char *error, size_t length) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    int ok = 0;
    if (!ctx) {
        snprintf(error, length, "OpenSSL could not create a context");
        return 0;
    }
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(error, length, "certificate %s is not a usable PEM certificate chain (%s)", cert, ERR_reason_error_string(ERR_peek_last_error()));
    } else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        snprintf(error, length, "private key %s is not usable with certificate %s (%s)", key, cert, ERR_reason_error_string(ERR_peek_last_error()));
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(error, length, "private key %s does not match certificate %s", key, cert);
    } else {
        ok = 1;
    }
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return ok;
}

/// 1 when `path` holds PEM CA certificates OpenSSL can trust; otherwise 0 with the reason in `error`.
static inline int CLibWebSockets_checkCAFile(const char *path, char *error, size_t length) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    int ok = 0;
    if (!ctx) {
        snprintf(error, length, "OpenSSL could not create a context");
        return 0;
    }
    ERR_clear_error();
    if (SSL_CTX_load_verify_locations(ctx, path, NULL) != 1)
        snprintf(error, length, "cannot use CA certificate %s: %s", path, ERR_reason_error_string(ERR_peek_last_error()));
    else
        ok = 1;
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return ok;
}

/// Why certificate verification failed, from the X509_STORE_CTX lws passes with
/// LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION; NULL when it did not.
static inline const char *CLibWebSockets_verificationError(void *store) {
    int error = X509_STORE_CTX_get_error((X509_STORE_CTX *)store);
    return error == X509_V_OK ? NULL : X509_verify_cert_error_string(error);
}

#endif
