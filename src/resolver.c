/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver.c -- see resolver.h.
 *
 * Host names are resolved by resolve_addr() on the caller's thread, once,
 * while the configuration is checked; the node layer then connects by
 * numeric address and the event loop never waits for DNS. IPv4 results are
 * preferred because Redis binds 127.0.0.1 / 0.0.0.0 by default. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "resolver.h"
#include "uri.h"

/* Pick the first IPv4 result, else the first IPv6 one. */
static const struct addrinfo *pick_address(const struct addrinfo *list)
{
    const struct addrinfo *ai;
    const struct addrinfo *v6 = NULL;

    for (ai = list; ai != NULL; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET)
            return ai;
        if (ai->ai_family == AF_INET6 && v6 == NULL)
            v6 = ai;
    }
    return v6;
}

/* getaddrinfo without AI_ADDRCONFIG: on a host with only loopback up (a
 * container, a CI runner) it would hide "localhost" and 127.0.0.1. */
rl_status resolve_host(const char *host, const char *display, char **ip,
                     char *err, size_t errlen)
{
    struct addrinfo hints;
    struct addrinfo *list = NULL;
    const struct addrinfo *ai;
    const void *bin;
    char buf[INET6_ADDRSTRLEN];
    rl_status st = RL_OK;
    int rc;

    *ip = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, NULL, &hints, &list);
    if (rc != 0) {
        if (rc == EAI_MEMORY)
            st = RL_ENOMEM;
        else if (rc == EAI_SYSTEM)
            st = RL_ESYSTEM;
        else
            st = RL_EINVAL;
        return uri_error(err, errlen, st,
                         "cannot resolve host '%s' in node '%s': %s", host,
                       display, gai_strerror(rc));
    }
    ai = pick_address(list);
    if (ai == NULL) {
        st = uri_error(err, errlen, RL_EINVAL,
                     "cannot resolve host '%s' in node '%s': no IPv4 or "
                     "IPv6 address", host, display);
        goto out_free;
    }
    if (ai->ai_family == AF_INET)
        bin = &((const struct sockaddr_in *)(const void *)ai->ai_addr)
                   ->sin_addr;
    else
        bin = &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)
                   ->sin6_addr;
    if (inet_ntop(ai->ai_family, bin, buf, sizeof(buf)) == NULL) {
        st = uri_error(err, errlen, RL_ESYSTEM,
                     "cannot format the address of host '%s'", host);
        goto out_free;
    }
    *ip = rl_strdup(buf);
    if (*ip == NULL)
        st = uri_error(err, errlen, RL_ENOMEM,
                     "resolving host '%s': out of memory", host);

out_free:
    freeaddrinfo(list);
    return st;
}

rl_status resolve_addr(struct node_addr *a, char *err, size_t errlen)
{
    char *ip;
    rl_status st;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (a == NULL)
        return uri_error(err, errlen, RL_EINVAL, "resolve_addr: address is NULL");
    if (a->kind == ADDR_UNIX)
        return RL_OK;
    if (a->host == NULL || a->host[0] == '\0')
        return uri_error(err, errlen, RL_EINVAL,
                       "resolve_addr: node '%s' has no host",
                       a->display != NULL ? a->display : "?");
    st = resolve_host(a->host, a->display != NULL ? a->display : a->host, &ip,
                    err, errlen);
    if (st != RL_OK)
        return st;
    free(a->ip);
    a->ip = ip;
    return RL_OK;
}

/* ---- Off the loop thread ------------------------------------------------ */

struct resolve_job {
    pthread_mutex_t mutex;
    int refs;              /* the owner's and the thread's */
    bool done;
    rl_status st;
    char *ip;              /* the answer, until the owner takes it */
    char *host;
    char *display;
    char err[RL_ERRLEN];
};

static void job_unref(struct resolve_job *j)
{
    bool last;

    pthread_mutex_lock(&j->mutex);
    last = --j->refs == 0;
    pthread_mutex_unlock(&j->mutex);
    if (!last)
        return;
    pthread_mutex_destroy(&j->mutex);
    free(j->ip);
    free(j->host);
    free(j->display);
    free(j);
}

static void *lookup(void *arg)
{
    struct resolve_job *j = arg;
    char err[RL_ERRLEN] = "";
    char *ip = NULL;
    rl_status st = resolve_host(j->host, j->display, &ip, err, sizeof(err));

    pthread_mutex_lock(&j->mutex);
    j->ip = ip;
    j->st = st;
    memcpy(j->err, err, sizeof(err));
    j->done = true;
    pthread_mutex_unlock(&j->mutex);
    job_unref(j);
    return NULL;
}

struct resolve_job *resolve_start(const char *host, const char *display)
{
    struct resolve_job *j = calloc(1, sizeof(*j));
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_t t;
    int rc;

    if (j == NULL)
        return NULL;
    j->host = rl_strdup(host);
    j->display = rl_strdup(display);
    if (j->host == NULL || j->display == NULL ||
        pthread_mutex_init(&j->mutex, NULL) != 0) {
        free(j->host);
        free(j->display);
        free(j);
        return NULL;
    }
    j->refs = 2;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* The application's signals are never delivered to our thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&t, &attr, lookup, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        j->refs = 1;
        job_unref(j);
        return NULL;
    }
    return j;
}

bool resolve_poll(struct resolve_job *j, char **ip, rl_status *st,
                  char *err, size_t errlen)
{
    bool done;

    pthread_mutex_lock(&j->mutex);
    done = j->done;
    if (done) {
        *ip = j->ip;
        j->ip = NULL;
        *st = j->st;
        snprintf(err, errlen, "%s", j->err);
    }
    pthread_mutex_unlock(&j->mutex);
    return done;
}

void resolve_drop(struct resolve_job *j)
{
    if (j != NULL)
        job_unref(j);
}
