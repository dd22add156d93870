/* SPDX-License-Identifier: BSD-3-Clause */
/* lock_demo -- take, show and release one lock with the blocking API.
 *   lock_demo host:port[,host:port...] [resource]
 * The nodes are trusted to persist every write (tools/nodes.sh starts them
 * with appendfsync always), so freshly started nodes vote at once. */
#include <redlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 16

int main(int argc, char **argv)
{
    const char *nodes[MAX_NODES];
    size_t count = 0;
    char *list, *save = NULL, *tok;
    rl_acquire_opts o = {0};
    rl_holder_info holders[MAX_NODES];
    size_t n, i;
    rl_config cfg;
    rl_client *c;
    rl_lock *l;
    rl_status st;

    if (argc < 2) {
        fprintf(stderr, "usage: lock_demo host:port[,...] [resource]\n");
        return 2;
    }
    list = strdup(argv[1]);
    for (tok = strtok_r(list, ",", &save); tok && count < MAX_NODES;
         tok = strtok_r(NULL, ",", &save))
        nodes[count++] = tok;
    rl_config_init(&cfg);
    cfg.nodes = nodes;
    cfg.node_count = count;
    cfg.trust_restarted_nodes = true;
    c = rl_client_new(&cfg, &st);
    if (c == NULL) {
        fprintf(stderr, "lock_demo: %s\n", rl_last_error());
        free(list);
        return 2;
    }
    o.ttl_ms = 10000;
    st = rl_acquire(c, argc > 2 ? argv[2] : "demo", &o, &l);
    if (st != RL_OK) {
        fprintf(stderr, "lock_demo: %s: %s\n", rl_strerror(st),
                rl_last_error());
        rl_client_free(c);
        free(list);
        return 1;
    }
    printf("acquired '%s' on %u nodes, token %s, valid for %lld ms\n",
           rl_lock_resource(l), rl_lock_nodes_ok(l), rl_lock_token(l),
           (long long)rl_lock_validity_ms(l));
    if (rl_resource_status(c, rl_lock_resource(l), holders, MAX_NODES, &n) ==
        RL_OK) {
        for (i = 0; i < n; i++)
            printf("  %-22s holder %.8s pttl %lld ms\n", holders[i].name,
                   holders[i].token, (long long)holders[i].pttl_ms);
    }
    st = rl_release(l);
    printf("released: %s\n", rl_strerror(st));
    rl_client_free(c);
    free(list);
    return st == RL_OK ? 0 : 1;
}
