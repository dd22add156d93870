#!/usr/bin/env bash
# Model-check the Redlock protocol (spec/redlock.pml, see spec/README.md):
# every model must hold its properties, every negative control must fail
# with a counterexample trail. Runs two jobs at a time in a temp dir.
# The state spaces are too large for exhaustive search within minutes:
# each run is a bitstate (-DBITSTATE, 2^27 bits for models, 2^24 for
# controls) depth-first search in a
# randomized transition order, stopped after its time budget (SIGINT:
# pan prints what it explored). A model "holds" = no violation in the
# states explored; docs/proof.md gives the counts and the longer runs.
#   tools/model-check.sh            all models and controls
#   tools/model-check.sh NAME...    only those
#   MC_BUDGET=SECONDS               per model run (default 25)
#   MC_CONTROL_BUDGET=SECONDS       per negative control (default 300; a
#                                   control stops at its first trail)
#   MC_KEEP=1                       keep the temp dir (trails)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
model=$here/spec/redlock.pml
budget=${MC_BUDGET:-25}
cbudget=${MC_CONTROL_BUDGET:-300}
command -v spin >/dev/null || { echo "model-check: spin not installed"; exit 1; }
tmp=$(mktemp -d /tmp/redlock-mc.XXXXXX)
[ "${MC_KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT

# name | expect (hold/fail) | spin -D options | what it shows
jobs=(
"mutex-n3k2|hold|-DN=3 -DK=2 -DATT=1 -DRST=1 -DTMAX=8|acquire/rollback/release, one restart"
"watch-n3k2|hold|-DN=3 -DK=2 -DATT=1 -DRST=1 -DPAUSES=1 -DWATCH -DRESTOREONCE -DTMAX=8|watchdog, extend, restore once, a pause"
"fence-n3k2|hold|-DN=3 -DK=2 -DATT=1 -DRST=1 -DFENCE -DTMAX=8|fencing with the wall-clock term"
"fencefix-n3k2|hold|-DN=3 -DK=2 -DATT=1 -DRST=1 -DFENCE -DNOWALL -DFENCEFIX -DTMAX=8|fencing repair, no wall clock"
"persist-n3k2|hold|-DN=3 -DK=2 -DATT=1 -DRST=1 -DPERSIST -DNOQUAR -DTMAX=8|persistence, no quarantine needed"
"guard-n3k2|hold|-DN=3 -DK=2 -DATT=1 -DRST=0 -DFASTNODE -DGUARD -DTMAX=8|fast node, clock guard"
"all-n5k3|hold|-DN=5 -DK=3 -DATT=1 -DRST=1 -DWATCH -DRESTOREONCE -DFENCE -DFENCEFIX -DNOWALL -DTMAX=7|N=5, K=3, everything"
"ctl-noquar|fail|-DN=3 -DK=2 -DATT=1 -DRST=1 -DNOQUAR -DTMAX=8|no quarantine with restarts"
"ctl-resurrect|fail|-DN=3 -DK=2 -DATT=1 -DRST=0 -DWATCH -DRESTOREONCE -DRESURRECT -DTMAX=8|extend re-SETs absent keys"
"ctl-nodrift|fail|-DN=3 -DK=2 -DATT=1 -DRST=0 -DNODRIFT -DTMAX=8|validity without drift"
"ctl-nowall|fail|-DN=3 -DK=2 -DATT=1 -DRST=1 -DFENCE -DNOWALL -DTMAX=8|fencing without wall clock, one restart"
"ctl-fastnode|fail|-DN=3 -DK=2 -DATT=1 -DRST=0 -DFASTNODE -DTMAX=8|fast node, no clock guard"
"ctl-restore-every|fail|-DN=3 -DK=2 -DATT=1 -DRST=1 -DWATCH -DTMAX=8|extend restores on every round (C today)"
)

# run_one NAME EXPECT DEFS: writes $tmp/NAME.result (one summary line)
run_one()
{
    local name=$1 expect=$2 defs=$3 d=$tmp/$1 out verdict states secs err
    mkdir -p "$d" && cp "$model" "$d/" && cd "$d" || return 1
    # shellcheck disable=SC2086
    if ! spin -a $defs redlock.pml >spin.log 2>&1 ||
        ! gcc -O2 -w -DVECTORSZ=2048 -DSAFETY -DBITSTATE -DT_RAND -DP_RAND \
            -o pan pan.c 2>gcc.log; then
        echo "model $name: ERROR (does not compile)" >"$tmp/$name.result"
        return
    fi
    SECONDS=0
    # A control searches a smaller bitstate longer: it stops at its trail.
    if [ "$expect" = fail ]; then
        timeout -s INT "$cbudget" ./pan -m100000 -w24 -RS1 >pan.log 2>&1
    else
        timeout -s INT "$budget" ./pan -m100000 -w27 -RS1 >pan.log 2>&1
    fi
    secs=$SECONDS
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log | head -1)
    err=$(grep -m1 -E '^pan:[0-9]+: ' pan.log | sed 's/^pan:[0-9]*: *//')
    if [ -n "$err" ]; then
        # shellcheck disable=SC2086
        spin -t -p $defs redlock.pml >trail.txt 2>&1
        [ "$expect" = fail ] && verdict="FAILS as it must" || verdict="VIOLATED"
    else
        [ "$expect" = hold ] && verdict="holds" || verdict="DID NOT FAIL"
    fi
    printf 'model %-18s %-17s %10s states %4ss %s\n' "$name" "$verdict" \
        "${states:-?}" "$secs" "${err:+($err)}" >"$tmp/$name.result"
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
    IFS='|' read -r name expect defs what <<<"$j"
    want "$name" || continue
    names+=("$name")
    echo "model-check: $name ($what) ..."
    run_one "$name" "$expect" "$defs" &
    running=$((running + 1))
    if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
wait
bad=0
echo "---- model-check summary (budget ${budget}s per run, bitstate) ----"
for name in "${names[@]}"; do
    cat "$tmp/$name.result"
    grep -qE 'VIOLATED|DID NOT FAIL|ERROR' "$tmp/$name.result" && bad=$((bad + 1))
done
[ "${MC_KEEP:-0}" = 1 ] && echo "trails in $tmp"
if [ "$bad" != 0 ]; then
    echo "model-check: $bad model(s) wrong"
    exit 1
fi
echo "model-check: all models hold and all controls fail"
