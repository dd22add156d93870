/* SPDX-License-Identifier: BSD-3-Clause */
/* control.h -- the faultproxy control socket (line protocol). */
#ifndef FAULTPROXY_CONTROL_H
#define FAULTPROXY_CONTROL_H

#include "faultproxy.h"

/* Takes ownership of fd, a freshly accepted non-blocking control client. */
void ctl_accept(struct proxy *px, int fd);

/* Closes and frees every control client (shutdown). */
void ctl_close_all(struct proxy *px);

#endif /* FAULTPROXY_CONTROL_H */
