/* SPDX-License-Identifier: BSD-3-Clause */
/* error.c -- status texts generated from RL_STATUS_MAP and the per-thread
 * detail message behind rl_last_error(). The detail is thread-local because
 * the blocking API is used from many threads at once. Also
 * the per-thread count of user callbacks running (callback_enter). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static _Thread_local char last_error[RL_ERRLEN];
static _Thread_local unsigned callback_depth;

void callback_enter(void)
{
    callback_depth++;
}

void callback_leave(void)
{
    callback_depth--;
}

bool in_callback(void)
{
    return callback_depth > 0;
}

const char *rl_strerror(rl_status st)
{
    switch (st) {
#define RL_STATUS_TEXT_(name, value, text)                                    \
    case name:                                                                \
        return text;
        RL_STATUS_MAP(RL_STATUS_TEXT_)
#undef RL_STATUS_TEXT_
    }
    return "unknown error";
}

const char *rl_status_name(rl_status st)
{
    switch (st) {
#define RL_STATUS_NAME_(name, value, text)                                    \
    case name:                                                                \
        return #name;
        RL_STATUS_MAP(RL_STATUS_NAME_)
#undef RL_STATUS_NAME_
    }
    return "RL_UNKNOWN";
}

const char *rl_last_error(void)
{
    return last_error;
}

const char *rl_version(void)
{
    return RL_VERSION_STRING;
}

rl_status rl_fail(rl_status st, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return st;
}

void rl_error_set_text(const char *msg)
{
    snprintf(last_error, sizeof(last_error), "%s", msg ? msg : "");
}

void rl_error_clear(void)
{
    last_error[0] = '\0';
}

char *rl_strdup(const char *s)
{
    size_t len;
    char *copy;

    if (s == NULL)
        return NULL;
    len = strlen(s) + 1;
    copy = malloc(len);
    if (copy != NULL)
        memcpy(copy, s, len);
    return copy;
}
