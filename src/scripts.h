/* SPDX-License-Identifier: BSD-3-Clause */
/* scripts.h -- the Lua scripts every node runs, with their SHA1 digests
 * (their sources: src/lua; their contract: docs/protocol.md). */
#ifndef REDLOCK_SCRIPTS_H
#define REDLOCK_SCRIPTS_H

#include <stdbool.h>

/* The value a fair lock's key holds while it is free and waiters queue
 * on its node (docs/fair-queue.md 2.0, "The reservation"): no token
 * looks like it (tokens start with hex digits), so a plain SET NX -- a
 * fair mutex's first attempt, or any plain client's -- is refused
 * there, and only the waiter the queue entitles takes the key over.
 * Status reports it as free. The scripts spell it out. */
#define QUEUE_RESERVED "redlock:queued"

/* One per file src/lua/<name>.lua (SCRIPT_<NAME>), whose header gives
 * its KEYS, ARGV and reply; the build fails when the two lists differ.
 * A client asks each node which it has at the handshake and loads the
 * others (node.c). */
enum script_id {
    SCRIPT_ACQUIRE_MULTI,
    SCRIPT_RELEASE,
    SCRIPT_ROLLBACK,
    SCRIPT_EXTEND,
    SCRIPT_INSPECT,
    SCRIPT_INSPECT_SLOTS,
    SCRIPT_ACQUIRE_FENCED,
    SCRIPT_FENCE_WRITE,
    SCRIPT_FORCE_RELEASE,
    SCRIPT_TOUCH_BATCH,
    SCRIPT_READER_ACQUIRE,
    SCRIPT_READER_EXTEND,
    SCRIPT_READER_RELEASE,
    SCRIPT_WRITER_ACQUIRE,
    SCRIPT_INTENT_CLEAR,
    SCRIPT_PROCLAIM,
    SCRIPT_FAIR_ACQUIRE,
    SCRIPT_FAIR_ACQUIRE_FENCED,
    SCRIPT_QUEUE_ENTER,
    SCRIPT_FAIR_RELEASE,
    SCRIPT_FAIR_ROLLBACK,
    SCRIPT_QUEUE_LEAVE,
    SCRIPT_QUEUE_INSPECT,
    SCRIPT_FAIR_READER_ACQUIRE,
    SCRIPT_FAIR_READER_RELEASE,
    SCRIPT_FAIR_READER_ROLLBACK,
    SCRIPT_KEEP,
    SCRIPT_RELEASE_BATCH,
    SCRIPT_COUNT,
};

struct script {
    const char *name;   /* for messages: the file's name, src/lua/<name>.lua */
    const char *source; /* Lua, as a node receives it */
    char sha1[41];      /* hex digest of source, for EVALSHA */
    bool creates_keys;  /* sets lock keys, or the fence counter and its
                           record for a token that a retry reuses: never
                           resend it late (node.c) */
};

/* The script with its digest (a constant table: any thread). */
const struct script *script_get(enum script_id id);

#endif
