/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: node URI parsing and configuration validation
 * (DESIGN §8), and rl_uri_describe on every line (issue 10 §4). Input: one
 * URI per line, the last line (if any) is read as
 * "connect op retry_delay jitter max_ttl drift" numbers. Nothing may
 * crash, leak or read out of bounds; every rejection must come with a
 * message. Host names are not resolved here (uri_parse only) except for
 * numeric ones inside config_load, so the target never touches DNS. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "uri.h"

#define MAX_LINES 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* rl_uri_describe: any string, any buffer size; the result is the whole
 * description cut to the buffer, one line, and masks a parsed password. */
static void describe_one(const char *line, const struct node_addr *a)
{
    char full[512];
    char small[16];
    size_t n = rl_uri_describe(line, full, sizeof(full));
    size_t i;

    if (n < sizeof(full) && strlen(full) != n)
        abort();
    for (i = 0; full[i] != '\0'; i++) {
        if ((unsigned char)full[i] < 0x20 || full[i] == 0x7f)
            abort();
    }
    if (rl_uri_describe(line, small, sizeof(small)) != n ||
        strlen(small) != (n < sizeof(small) ? n : sizeof(small) - 1) ||
        strncmp(small, full, strlen(small)) != 0)
        abort();
    if (a != NULL && a->password != NULL && strstr(full, "***") == NULL)
        abort();
}

static void parse_one(const char *line)
{
    struct node_addr a;
    char err[RL_ERRLEN];

    if (uri_parse(line, &a, err, sizeof(err)) == RL_OK) {
        /* display never carries credentials (a socket path may hold an
         * '@'; a host may not) */
        if (a.display == NULL ||
            (a.kind == ADDR_TCP && strchr(a.display, '@') != NULL))
            abort();
        describe_one(line, &a);
        node_addr_clear(&a);
    } else if (err[0] == '\0') {
        abort(); /* a rejection always says why */
    } else {
        describe_one(line, NULL);
    }
}

/* config_load resolves names: only feed it numeric hosts. */
static int numeric_only(const char *line)
{
    return strstr(line, "127.0.0.1") != NULL || strstr(line, "[::1]") ||
           strncmp(line, "unix:", 5) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    const char *nodes[MAX_LINES];
    size_t count = 0;
    char *line, *save = NULL;
    struct config cfg;
    rl_config in;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (line = strtok_r(text, "\n", &save); line != NULL && count < MAX_LINES;
         line = strtok_r(NULL, "\n", &save)) {
        parse_one(line);
        if (numeric_only(line))
            nodes[count++] = line;
    }
    rl_config_init(&in);
    in.nodes = nodes;
    in.node_count = count;
    if (size >= 8) {
        in.connect_timeout_ms = data[0] * 300u;
        in.op_timeout_ms = data[1] * 300u;
        in.retry_delay_ms = data[2] * 20u;
        in.retry_jitter_ms = data[3] * 20u;
        in.max_ttl_ms = (uint32_t)data[4] << 16;
        in.drift_factor = (double)(int8_t)data[5] / 500.0;
    }
    if (config_load(&in, &cfg) == RL_OK)
        config_clear(&cfg);
    else if (rl_last_error()[0] == '\0')
        abort();
    free(text);
    return 0;
}
