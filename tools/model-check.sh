#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Model-check the Redlock protocol (spec/*.pml, see spec/README.md): every
# model must hold its properties, every negative control must fail with a
# counterexample trail of the property it breaks. Runs two jobs at a time
# in a temp dir. The models: redlock.pml (mutex, watchdog, fencing,
# restarts, clock guard, batched releases and extends), rwlock.pml
# (read-write lock), rwlive.pml (writer starvation, LTL), semaphore.pml,
# renewal.pml (batched renewals, vote withdrawal, eviction, restart trust
# "auto", batches of releases with per-lock answers), leaderterm.pml (a
# reader of a fenced acquire: a leader only with its own term), fairq.pml (the
# fair waiting queue of docs/fair-queue.md: the mutex's as built, the
# semaphore's (-DLIMIT=2) and the read-write lock's (-DRW) as being
# built: safety whatever the queue holds, order, and for the mutex
# liveness with a dead waiter, LTL; the mutex's and the writer's first
# attempt is a bare SET NX, the key reserved while a queue exists).
# Most state spaces are too large for exhaustive search within seconds:
# such a run is a bitstate (-DBITSTATE, 2^28 bits) depth-first search in a
# randomized but seeded (-RS, reproducible) transition order, or SPIN's
# fixed order (seed 0), or breadth-first (seed "bfs", still bitstate: the
# shortest trail of a control whose trail lies under a wide space),
# stopped at its first violation or after its time budget (SIGINT: pan
# prints what it explored). A model "holds" = no violation in the states
# explored; the summary says which runs are exhaustive (the runs with an
# ltl claim are: pan -a -f, acceptance cycles under weak fairness);
# docs/proof.md gives the counts, the coverage and the longer runs. A
# negative control runs in
# a narrowed environment (spec/redlock.pml: LATE, RSTNODE, SOLO,
# NOTIMEOUT, SHORTKEYS; with NOTIMEOUT pan -E, as a client waiting for a
# reply that a restart dropped blocks for good) so that its trail is found
# within seconds; its positive twin (NAME-fixed) runs in the same
# narrowed environment without the bug and must hold there.
#   tools/model-check.sh            all models and controls
#   tools/model-check.sh NAME...    only those
#   MC_SCALE=F                      multiply every model's budget by F
#                                   (default 1)
#   MC_CONTROL_DEADLINE=S           a negative control's deadline in
#                                   seconds (default 900; it stops at its
#                                   trail, on an idle machine within 60 s)
#   MC_KEEP=1                       keep the temp dir (trails)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
scale=${MC_SCALE:-1}
control_deadline=${MC_CONTROL_DEADLINE:-900}
command -v spin >/dev/null || { echo "model-check: spin not installed (tools/setup-debian.sh)"; exit 1; }
tmp=$(mktemp -d /tmp/redlock-mc.XXXXXX)
[ "${MC_KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT

# Narrowed environments of the controls (and their twins).
T2="-DN=3 -DK=2 -DATT=1 -DNOTIMEOUT"
R1="$T2 -DRST=1 -DLATE -DRSTNODE -DTMAX=4"
F1="$R1 -DSHORTKEYS -DFENCE"
RV="$T2 -DRST=0 -DSOLO -DSHORTKEYS -DFENCE -DFENCEFIX -DNOWALL -DREV -DREVSTALE -DTMAX=5"
BS="-DN=3 -DK=2 -DATT=2 -DNOTIMEOUT -DRST=0 -DWATCH -DBATCH -DSHORTKEYS -DTMAX=5"
LR="-DN=3 -DK=2 -DATT=2 -DNOTIMEOUT -DRST=0 -DTMAX=0 -DLATEROLLBACK"
RW="-DK=2 -DNW=1 -DRST=0 -DNOTIMEOUT -DTMAX=4"
RWS="-DK=2 -DNW=1 -DRST=0 -DNOTIMEOUT -DSOLO -DWATCH -DSHORTKEYS -DTMAX=6"
SM="-DRST=0 -DNOTIMEOUT -DTMAX=2"
RN="-DNOTIMEOUT -DTMAX=4"
RN1="-DNOTIMEOUT -DONELOCK -DTMAX=0"
RB="-DNOTIMEOUT -DBATCH -DTMAX=0"
FQL="-DLIVE -DKILL -DROT"
# name | expect: hold, or the assertion text the trail must violate |
# budget (s; "-" for a control: MC_CONTROL_DEADLINE) | pan seed (0: SPIN's fixed order, no randomization) |
# spin -D options | what it shows | model file in spec/ (default
# redlock.pml; a run whose options leave an ltl claim in the model is
# searched exhaustively for acceptance cycles under weak fairness, pan -a
# -f)
jobs=(
"mutex-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DTMAX=8|acquire/rollback/release, one restart"
"watch-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DPAUSES=1 -DWATCH -DRESTOREONCE -DTMAX=8|watchdog, extend, restore once, a pause"
"retry-n3k2|hold|10|1|-DN=3 -DK=2 -DATT=2 -DRST=1 -DFENCE -DFENCEFIX -DLATEROLLBACK -DTMAX=8|a retry with its own token after a failed attempt whose rollback may land at any later time, fencing, one restart"
"fence-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DFENCE -DFENCEFIX -DTMAX=8|fencing as in C (marker rule + wall-clock fallback)"
"fencefix-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DFENCE -DFENCEFIX -DNOWALL -DTMAX=8|fencing marker rule, no wall clock at all"
"persist-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DPERSIST -DNOQUAR -DFENCE -DFENCEFIX -DNOWALL -DTMAX=8|persistence: no quarantine needed, fencing"
"guard-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=0 -DFASTNODE -DGUARD -DTMAX=8|fast node, clock guard"
"all-n5k3|hold|20|1|-DN=5 -DK=3 -DATT=1 -DRST=1 -DWATCH -DRESTOREONCE -DFENCE -DFENCEFIX -DNOWALL -DTMAX=7|N=5, K=3, everything"
"ctl-noquar|holding[|-|1|$R1 -DNOQUAR|no quarantine with restarts"
"noquar-fixed|hold|20|1|$R1|twin of ctl-noquar"
"ctl-resurrect|dead[n]|-|1|$T2 -DRST=0 -DSOLO -DWATCH -DRESTOREONCE -DRESURRECT -DTMAX=8|extend re-SETs absent keys"
"resurrect-fixed|hold|20|1|$T2 -DRST=0 -DSOLO -DWATCH -DRESTOREONCE -DTMAX=8|twin of ctl-resurrect"
"ctl-nodrift|holding[|-|1|$T2 -DRST=0 -DNODRIFT -DTMAX=6|validity without drift"
"nodrift-fixed|hold|20|1|$T2 -DRST=0 -DTMAX=6|twin of ctl-nodrift"
"ctl-nowall|fv>lastfence|-|0|$F1 -DNOWALL|previous fencing rule without the wall clock, one restart"
"nowall-fixed|hold|60|0|$F1 -DFENCEFIX -DNOWALL|twin of ctl-nowall: trusted-quorum rule, no wall clock"
"ctl-trustrefused|fv>lastfence|-|0|$F1 -DFENCEFIX -DNOWALL -DTRUSTREFUSED|refusals' counters trusted too"
"ctl-fwone|fv>lastfence|-|0|$F1 -DFENCEFIX -DNOWALL -DFWONE|write round done at one node"
"rev-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DFENCE -DFENCEFIX -DREV -DTMAX=8|one counter per node, raised by another resource's fenced acquires too: fencing as in C (marker rule + wall-clock fallback)"
"revfix-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DFENCE -DFENCEFIX -DNOWALL -DREV -DTMAX=8|one counter per node, another resource, no wall clock at all"
"revpersist-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=1 -DRST=1 -DPERSIST -DNOQUAR -DFENCE -DFENCEFIX -DNOWALL -DREV -DTMAX=8|one counter per node, another resource, persistence (restart trusted): a restarted node's counter is marked at once"
"ctl-rev-eager|fv>lastfence|-|1|$RV -DEAGERMARK|one counter per node, every fence-write sets the marker (the per-resource rule): another resource's stale token repairs a restarted node"
"rev-eager-fixed|hold|10|1|$RV|twin of ctl-rev-eager: the marker only where the node's run was out of its restart quarantine at the round's start"
"ctl-fastnode|holding[|-|1|$T2 -DRST=0 -DFASTNODE -DTMAX=6|fast node, no clock guard"
"fastnode-fixed|hold|20|1|$T2 -DRST=0 -DFASTNODE -DGUARD -DTMAX=6|twin of ctl-fastnode: clock guard"
"ctl-laterollback|holding[|-|3|$LR -DSAMETOKEN|a late rollback lands behind the retry, which reuses the token (C before finding 8's fix)"
"laterollback-fixed|hold|10|3|$LR|twin of ctl-laterollback: the same late rollbacks, a token per attempt (C)"
"ctl-restore-every|dead[n]|-|1|$T2 -DRST=1 -DSOLO -DRSTNODE -DWATCH -DTMAX=8|extend restores on every round"
"restore-fixed|hold|20|1|$T2 -DRST=1 -DSOLO -DRSTNODE -DWATCH -DRESTOREONCE -DTMAX=8|twin of ctl-restore-every"
# one call per node carrying two locks' releases and extends (issue 44)
"batch-n3k2|hold|20|1|-DN=3 -DK=2 -DATT=2 -DRST=1 -DWATCH -DRESTOREONCE -DBATCH -DTMAX=8|two clients' releases and extends in one call per node, answered per lock, failing calls, a retry, watchdog, one restart"
"ctl-batch-swap|holding[|-|3|$BS -DSWAPTOKEN|a batch compares each entry with the other entry's token: a holder's key deleted by a stale release"
"batch-swap-fixed|hold|10|3|$BS|twin of ctl-batch-swap: each entry with its own token"
# read-write lock (spec/rwlock.pml)
"rw-w1r2|hold|10|1|-DNW=1 -DRST=1 -DPAUSES=1 -DWATCH -DTMAX=7|1 writer, 2 readers renewing, a restart, a pause|rwlock.pml"
"rw-w2r1|hold|5|1|-DNW=2 -DRST=1 -DWATCH -DTMAX=7|2 writers (intents), 1 reader renewing, a restart|rwlock.pml"
"rw-nointent|hold|5|1|-DNW=1 -DRST=1 -DWATCH -DNOINTENT -DTMAX=7|readers ignore the writer intent: still safe|rwlock.pml"
"ctl-rw-share|readers_share|-|1|-DNW=1 -DRST=0 -DSHARECHECK -DTMAX=6|two readers inside their validity at once (must be found)|rwlock.pml"
"ctl-rw-wignore|holding[|-|1|$RW -DWIGNORE|writer ignores the readers' hash|rwlock.pml"
"rw-wignore-fixed|hold|5|1|$RW|twin of ctl-rw-wignore|rwlock.pml"
"ctl-rw-recreate|dead[n]|-|1|$RWS -DRRECREATE|reader-extend re-adds a lapsed reader|rwlock.pml"
"rw-recreate-fixed|hold|5|1|$RWS|twin of ctl-rw-recreate|rwlock.pml"
# writer starvation (spec/rwlive.pml): LTL under weak fairness, exhaustive
"live-c|hold|20|0||as in C: a refused writer's next attempts mark the intent in the same step: the writer wins|rwlive.pml"
"ctl-live-nointent|acceptance cycle|-|0|-DNOINTENT|readers ignore the intent: the writer starves|rwlive.pml"
"ctl-live-late|acceptance cycle|-|0|-DLATEINTENT|C before the fix: the intent sent after each refusal, the writer can starve (docs/proof.md finding 6)|rwlive.pml"
# semaphore (spec/semaphore.pml)
"sem-n3k3|hold|8|1|-DRST=1|3 clients, 2 permits, a restart|semaphore.pml"
"ctl-sem-extraslot|<=2|-|1|$SM -DEXTRASLOT|one slot more than the limit|semaphore.pml"
"sem-extraslot-fixed|hold|5|1|$SM|twin of ctl-sem-extraslot|semaphore.pml"
# renewals in batches, vote withdrawal, node preconditions (spec/renewal.pml)
"renew-n3|hold|10|1|-DEVT=1 -DRST=1 -DAUTO|2 locks in one touch-batch, a contender, eviction on and off, a restart (auto trust)|renewal.pml"
"ctl-renew-wronglock|gres[|-|1|$RN -DEVT=1 -DWRONGLOCK|a batch's answers counted for the other lock|renewal.pml"
"ctl-evict-rule|held[0]|-|bfs|$RN1 -DEVSTART -DNOEVICTRULE|a node that may evict votes|renewal.pml"
"evict-rule-fixed|hold|5|bfs|$RN1 -DEVSTART|twin of ctl-evict-rule|renewal.pml"
"ctl-evict-back|held[0]|-|bfs|$RN1 -DATT=2 -DEVT=1 -DNOBEHAVE|a node votes again as soon as it stops evicting|renewal.pml"
"evict-back-fixed|hold|5|bfs|$RN1 -DATT=2 -DEVT=1|twin of ctl-evict-back: no vote until max_ttl after it evicted|renewal.pml"
"ctl-auto-liar|held[0]|-|bfs|$RN1 -DATT=2 -DRST=1 -DAUTO -DLIAR|auto trust of a node that ran everysec before its restart|renewal.pml"
"auto-fixed|hold|5|bfs|$RN1 -DATT=2 -DRST=1 -DAUTO|twin of ctl-auto-liar: trusted only with appendfsync always|renewal.pml"
# batches of several locks' releases with per-lock answers, failing
# batch calls (spec/renewal.pml BATCH; issue 44)
"renew-batch|hold|10|1|-DEVT=1 -DRST=1 -DAUTO -DATT=2 -DBATCH|renew-n3 with release batches (both held locks and the contender's in one call per node, answered per lock) and failing batch calls (touch-batch and release-batch)|renewal.pml"
"cover-batch|seen|-|1|$RB -DCOVER|(witness) one release-batch call answers deleted, absent and another lock's|renewal.pml"
"ctl-batch-first|key[|-|1|$RB -DFIRSTANSWER|a batch takes its first entry's answer for every entry: another lock's key deleted|renewal.pml"
"batch-first-fixed|hold|5|1|$RB|twin of ctl-batch-first and cover-batch: each entry on its own key and token|renewal.pml"
# a reader of a fenced acquire: leader + term (spec/leaderterm.pml)
"leaderterm|hold|10|1|-DC=3 -DATT=1|3 candidates, one attempt each, a reader reading twice: as in C|leaderterm.pml"
"ctl-leaderterm-oldrule|ownterm|-|bfs|-DC=2 -DATT=1 -DRD=1 -DOLDRULE|the rule before the record: a held value with the largest counter read|leaderterm.pml"
"ctl-leaderterm-onerec|landed|-|1|-DC=2 -DATT=1 -DRD=1 -DONEREC|a term recorded on one holding node suffices|leaderterm.pml"
"leaderterm-c2|hold|10|1|-DC=2 -DATT=1 -DRD=1|twin of ctl-leaderterm-oldrule and ctl-leaderterm-onerec: the rule of inspect.c|leaderterm.pml"
"ctl-leaderterm-reuse|landed|-|7|-DC=1 -DATT=2 -DRD=1 -DREUSETERM|a retry computes its earlier attempt's term again (C before the fix; docs/proof.md, leaderterm.pml finding)|leaderterm.pml"
"leaderterm-retry|hold|10|1|-DC=1 -DATT=2 -DRD=1|twin of ctl-leaderterm-reuse, as in C: a retry's term is above its earlier attempt's|leaderterm.pml"
# the fair waiting queue (spec/fairq.pml; docs/fair-queue.md): the mutex, as built
"fq-safety|hold|10|1|-DFAULTS=2 -DKILL -DLEAVE|3 fair clients; 2 faults on the queue or counters of any nodes, a death, leaves: still one holder|fairq.pml"
"fq-order|hold|15|0|-DORDER|fault-free: a registration that landed on a quorum before a first attempt is served before it|fairq.pml"
"ctl-fq-nohead|ahead[|-|0|-DORDER -DNOHEAD|the script grants any registered waiter: overtaking|fairq.pml"
"ctl-fq-noreserve|ahead[|-|0|-DORDER -DNORESERVE|the key left free while a queue exists: a newcomer's bare SET NX takes it in the hand-off to the head, overtaking|fairq.pml"
"fq-order-tmo|hold|15|0|-DORDER -DTMO|a reply lost: a refusal with fewer than a quorum of K:qt takes no ticket, attempt 1 again|fairq.pml"
"ctl-fq-ticketany|ahead[|-|0|-DORDER -DTMO -DTICKETANY|a reply lost, the ticket taken from the replies there are: overtaking|fairq.pml"
"fq-live|hold|60|0|$FQL|every waiter is served, a registered waiter dies, then no RES is left (LTL, weak fairness); twin of the two controls below|fairq.pml"
"ctl-fq-headpurge|acceptance cycle|-|0|$FQL -DHEADPURGE|dead entries purged only at the head, only in fair-acquire: stall|fairq.pml"
"ctl-fq-pernode|acceptance cycle|-|0|$FQL -DPERNODE|score = the node's own arrival counter: each waiter head on one node|fairq.pml"
# the fair queue of a semaphore (2 permits, 3 clients; docs/proof.md: its
# order holds only for registrations on every node, REGALL) and of a
# read-write lock (1 writer and 2 readers; 2 writers for safety), as
# being built
"fq-sem-safety|hold|8|1|-DLIMIT=2 -DFAULTS=2 -DKILL -DLEAVE|semaphore: 2 faults on the queue or counters of any nodes, a death, leaves: at most 2 holders|fairq.pml"
"fq-sem-order|hold|10|0|-DLIMIT=2 -DORDER -DREGALL|semaphore, fault-free: a grant leaves a permit for each registration that was on every node before its attempt 1 and still waits|fairq.pml"
"ctl-fq-sem-norank|ahead[|-|0|-DLIMIT=2 -DORDER -DREGALL -DNORANK|semaphore, the entitlement check removed: overtaking|fairq.pml"
"ctl-fq-sem-rankonly|ahead[|-|0|-DLIMIT=2 -DORDER -DREGALL -DRANKONLY|semaphore, entitled = rank < 2 (the entries only): a holder with no entry uncounted, overtaking|fairq.pml"
"ctl-fq-sem-quorum|ahead[|-|0|-DLIMIT=2 -DORDER|semaphore, a registration on a quorum only: the holder and the waiter ahead seen on different nodes, overtaking|fairq.pml"
"fq-rw-safety|hold|8|1|-DRW -DNW=2 -DFAULTS=2 -DKILL -DLEAVE|read-write, 2 writers, a reader: 2 faults on the queue or counters of any nodes, a death, leaves: no writer beside anyone|fairq.pml"
"fq-rw-order|hold|10|0|-DRW -DORDER|read-write, fault-free: a queued writer before later readers, queued readers before a later writer|fairq.pml"
"ctl-fq-rw-rignore|ahead[|-|0|-DRW -DORDER -DRIGNORE|read-write, readers ignore the queued writer: overtaking|fairq.pml"
)

# run_one NAME EXPECT BUDGET SEED DEFS: writes $tmp/NAME.result (one line)
run_one()
{
    local name=$1 expect=$2 budget=$3 seed=$4 defs=$5 m=${6:-redlock.pml}
    local d=$tmp/$1 verdict states secs err eflag='' depth mode
    local rnd="-DT_RAND -DP_RAND" cflags="-DSAFETY -DBITSTATE" pflags="-w28"
    [ "$seed" = 0 ] && rnd=
    mkdir -p "$d" && cp "$here/spec/$m" "$d/" && cd "$d" || return 1
    mode=bitstate
    if [ "$seed" = bfs ]; then
        # breadth-first: the shortest trails (a control's is shallow but
        # lies under a wide state space), bitstate
        cflags="$cflags -DBFS" rnd='' seed=0 mode="bitstate BFS"
    fi
    # shellcheck disable=SC2086 # $defs, $rnd and the flags are word lists
    if ! spin -a $defs "$m" >spin.log 2>&1; then
        echo "model $name: ERROR (does not compile)" >"$tmp/$name.result"
        return
    fi
    # an ltl claim in the model as these options preprocess it (spin -a
    # prints it): liveness, exhaustive, acceptance cycles under weak
    # fairness
    if grep -q '^ltl ' spin.log; then
        cflags="-DNFAIR=3" pflags="-a -f" rnd='' mode=exhaustive
    fi
    # shellcheck disable=SC2086
    if ! gcc -O2 -w -DVECTORSZ=2048 $cflags $rnd -o pan pan.c 2>gcc.log; then
        echo "model $name: ERROR (does not compile)" >"$tmp/$name.result"
        return
    fi
    case " $defs " in *" -DNOTIMEOUT "*) eflag=-E ;; esac
    # A control's search order is fixed by its seed, so it meets its trail
    # after the same number of states on any machine: it has a deadline,
    # not a budget (a slow or busy machine takes longer, it must not fail).
    if [ "$expect" = hold ]; then
        budget=$(awk -v b="$budget" -v s="$scale" 'BEGIN { printf "%d", b * s }')
    else
        budget=$control_deadline
    fi
    SECONDS=0
    # shellcheck disable=SC2086
    timeout -s INT "$budget" ./pan $eflag $pflags -m100000 -RS"$seed" \
        >pan.log 2>&1
    secs=$SECONDS
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log | head -1)
    depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.log | head -1)
    err=$(grep -m1 -E '^pan:[0-9]+: ' pan.log | sed 's/^pan:[0-9]*: *//')
    # an exhaustive search that ran out of time is not a complete one
    [ "$mode" = exhaustive ] && grep -q 'Interrupted' pan.log &&
        mode="exhaustive, unfinished"
    if [ -n "$err" ]; then
        # shellcheck disable=SC2086
        spin -t -p $defs "$m" >trail.txt 2>&1
        if [ "$expect" = hold ]; then
            verdict="VIOLATED"
        elif [[ "$err" == *"$expect"* ]]; then
            verdict="FAILS as it must"
        else
            verdict="WRONG TRAIL"
        fi
    elif [ "$expect" = hold ]; then
        verdict="holds"
    else
        verdict="DID NOT FAIL"
    fi
    printf 'model %-18s %-17s %10s states depth %5s %4ss %s %s\n' "$name" \
        "$verdict" "${states:-?}" "${depth:-?}" "$secs" "[$mode]" \
        "${err:+($err)}" >"$tmp/$name.result"
}

selected=("$@")
want()
{
    [ ${#selected[@]} = 0 ] && return 0
    local s
    for s in "${selected[@]}"; do [ "$s" = "$1" ] && return 0; done
    return 1
}

running=0
names=()
for j in "${jobs[@]}"; do
    IFS='|' read -r name expect budget seed defs what mfile <<<"$j"
    want "$name" || continue
    names+=("$name")
    echo "model-check: $name ($what) ..."
    run_one "$name" "$expect" "$budget" "$seed" "$defs" "$mfile" &
    running=$((running + 1))
    if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
wait
bad=0
echo "---- model-check summary (budgets x$scale) ----"
for name in "${names[@]}"; do
    cat "$tmp/$name.result"
    grep -qE 'VIOLATED|DID NOT FAIL|WRONG TRAIL|ERROR' "$tmp/$name.result" && bad=$((bad + 1))
done
[ "${MC_KEEP:-0}" = 1 ] && echo "trails in $tmp"
if [ "$bad" != 0 ]; then
    echo "model-check: $bad model(s) wrong"
    exit 1
fi
echo "model-check: all models hold and all controls fail"
