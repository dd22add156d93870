/* SPDX-License-Identifier: BSD-3-Clause */
/* relay.h -- relayed connections: client <-> faultproxy <-> upstream. */
#ifndef FAULTPROXY_RELAY_H
#define FAULTPROXY_RELAY_H

#include <stdbool.h>

#include "faultproxy.h"

enum relay_close {
    RELAY_FIN,                  /* orderly close: the peer reads EOF */
    RELAY_RST                   /* abortive close: the peer gets ECONNRESET */
};

/* Takes ownership of cfd, a freshly accepted non-blocking client socket:
 * resets it at once when refuse is on, otherwise starts the upstream
 * connect and relays. Never fails: on any error the client is closed. */
void relay_accept(struct proxy *px, int cfd);

/* Closes every relayed connection, both sides, the way how says. */
void relay_close_all(struct proxy *px, enum relay_close how);

/* Turns blackhole on or off for current and future connections. On: every
 * queued byte is discarded. Off: connections that lost a side meanwhile
 * are closed, the others resume relaying new bytes. */
void relay_set_blackhole(struct proxy *px, bool on);

/* Turns hold on or off for current and future connections. On: bytes
 * read are queued (backpressure as usual) and nothing is written. Off:
 * what is queued leaves, each chunk at its due time or at once. */
void relay_set_hold(struct proxy *px, bool on);

#endif /* FAULTPROXY_RELAY_H */
