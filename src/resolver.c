/* resolver.c -- see resolver.h. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "resolver.h"
#include "uri.h"

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
    rl_status st = uri_lookup(j->host, j->display, &ip, err, sizeof(err));

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
