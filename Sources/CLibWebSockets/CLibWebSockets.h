// What Swift cannot import from libwebsockets: function-like and compound macros.
// Names are prefixed CLibWebSockets_ so that they never collide with lws' own.
#ifndef CLIBWEBSOCKETS_H
#define CLIBWEBSOCKETS_H

#include <libwebsockets.h>

// Outbound buffers are allocated with this headroom so lws can write frame headers in place.
_Static_assert(LWS_PRE >= 14, "LWS_PRE must cover the largest WebSocket frame header");
_Static_assert(LWS_PRE % sizeof(void *) == 0, "LWS_PRE keeps payloads pointer-aligned");

static inline size_t CLibWebSockets_LWS_PRE(void) { return LWS_PRE; }

#endif
