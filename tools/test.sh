#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite on a fresh Debian bookworm machine (run as root, or
# with sudo available): installs the packages, builds with warnings as
# errors, runs every test (unit, integration, CLI) with real redis-server
# processes, then again under ASan+UBSan (chaos and the checks of the
# sources excluded) with the chaos suite's CI profile beside them, then
# the threaded integration tests under TSan and, beside them, the
# integration tests under valgrind (zero errors and zero leaks required);
# the protocol model (SPIN) runs beside the first stages and its verdict
# comes last.
#   tools/test.sh              everything
#   tools/test.sh --quick      release build + ctest only
#   tools/test.sh --repeat N   every stage N times in a row (stops at the
#                              first failure; says which round)
#   tools/test.sh --hog N      N busy loops run beside the suite, as on a
#                              busy CI host (tests must pass there too)
#   tools/test.sh --stress N   the release stage only (release build, every
#                              test but chaos), each test run N times in a
#                              row, stopping at its first failure (ctest
#                              --repeat until-fail:N), beside 2 busy loops
#                              (--hog N to change): a case that fails once
#                              in N runs shows up here, not in CI
#   tools/test.sh --stress N --tests REGEX
#                              the same for the tests whose name matches
#                              REGEX (ctest -R), e.g. '^cli_' (also with
#                              --quick)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
repeat=1
hogs=
stress=
tests=
usage() {
    sed -n '2,/^set -euo/p' "$0" |
        sed '$d; /SPDX-License-Identifier/d; s/^# \{0,1\}//' >&2
    exit "${1:-2}"
}
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --repeat) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; repeat=$2; shift ;;
    --hog) [[ ${2:-} =~ ^[0-9]+$ ]] || usage; hogs=$2; shift ;;
    --stress) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; stress=$2; shift ;;
    --tests) [ -n "${2:-}" ] || usage; tests=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "test.sh: unknown option '$1'" >&2; usage ;;
    esac
    shift
done
# The release stage's ctest arguments: every test once, or N times with
# --stress (which runs that stage only), or only those --tests names.
release_args=()
if [ -n "$stress" ]; then
    quick=1
    release_args+=(--repeat "until-fail:$stress")
    hogs=${hogs:-2}
fi
if [ -n "$tests" ]; then
    [ "$quick" = 1 ] ||
        { echo "test.sh: --tests needs --quick or --stress" >&2; usage; }
    release_args+=(-R "$tests")
fi
hogs=${hogs:-0}
bash tools/setup-debian.sh
jobs=$(nproc)
# Tests run three at a time on the 2-core machines: many cases spend
# their time waiting for keys to lapse or nodes to restart (at two at a
# time a full run's release stage summed 444 s of test time in 232 s, and
# the CI run took over 20 minutes). Every wait is for an event on a
# scaled deadline, so the extra load costs time, not verdicts; --stress
# runs them this way beside its busy loops.
ctest_jobs=3

# The busy loops are not this shell's children (started from a subshell
# that exits at once), so the valgrind stage's job counting and `wait`
# see only its own programs.
hog_pids=()
model_pid=
chaos_pid=
vg_pid=
# A process and its descendants (the model stage's pan runs).
kill_tree() {
    local child
    for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}
stop_background() {
    [ ${#hog_pids[@]} -eq 0 ] || kill "${hog_pids[@]}" 2>/dev/null || true
    [ -z "$model_pid" ] || kill_tree "$model_pid"
    [ -z "$chaos_pid" ] || kill_tree "$chaos_pid"
    [ -z "$vg_pid" ] || kill_tree "$vg_pid"
}
trap stop_background EXIT
for _ in $(seq 1 "$hogs"); do
    hog_pids+=("$( (while :; do :; done) >/dev/null 2>&1 & echo $!)")
done
[ "$hogs" = 0 ] || echo "test.sh: $hogs busy loop(s) running beside the suite"

# One round of every stage (--repeat runs it again).
run_stages() {
section() { printf '\n==== %s (%s) ====\n' "$*" "$(date -u +%T)"; }
mkdir -p build
summary=build/test-summary.log
: >"$summary"
# ctest output also goes to the summary, counted at the end.
run_ctest() { ctest "$@" 2>&1 | tee -a "$summary"; }
# A stage run in the background (what, its pid, its log): its log joins
# the summary, and its failure ends the run.
collect() {
    local rc=0
    wait "$2" || rc=$?
    tee -a "$summary" <"$3"
    [ "$rc" = 0 ] || { echo "$1 failed (exit $rc)"; exit 1; }
}

section "release build (warnings are errors)"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRL_WERROR=ON >/dev/null
cmake --build build/release -j"$jobs"
if [ "$quick" != 1 ]; then
    # The protocol model (SPIN) runs beside the release tests: its two
    # searches at a time are the busy loops --stress puts there (the
    # tests wait for events on scaled deadlines, so load costs them
    # time, not verdicts), and the two stages, one after the other, took
    # 7 of CI's 20 minutes. Half the default budgets (models 5 to 10 s;
    # controls run to their trail under a deadline, not a budget);
    # docs/proof.md reports runs with the full budgets.
    MC_SCALE=0.5 tools/model-check.sh >build/model-check.log 2>&1 &
    model_pid=$!
fi
section "tests (release${stress:+, each run $stress times}${model_pid:+, beside the protocol model})"
run_ctest --test-dir build/release --output-on-failure -j"$ctest_jobs" -LE chaos \
    ${release_args[@]+"${release_args[@]}"}
if [ "$quick" = 1 ]; then
    [ -z "$stress" ] ||
        echo "stress: each test passed $stress times, $hogs busy loop(s)"
    return 0
fi

section "ASan + UBSan build${model_pid:+ (beside the protocol model)}"
# Configured with the stage's multiplier, as the TSan build is: ctest's
# time limits scale with the tests' own deadlines (unscaled,
# cli_completion's 60 s ran out under ASan with chaos beside it).
RL_TEST_TIMEOUT_MULTIPLIER=2 cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug \
    -DRL_ASAN=ON -DRL_UBSAN=ON -DRL_WERROR=ON >/dev/null
cmake --build build/asan -j"$jobs"

# The chaos suite (half a core: its profiles run for fixed durations,
# their nodes, contenders and faults mostly waiting) runs beside the
# ASan tests, and the model's last minutes (its searches run to fixed
# time budgets) too; their verdicts are read after them. The chaos
# checks are safety checks (no two holders, no lost update), which load
# must not change, and its negative controls showed their violations
# beside the model as well. It starts after the ASan build, which took
# 3 minutes beside it and under one alone, and ends (5.5 minutes) before
# the ASan tests do (7). (Beside the release tests it stretched
# install_deb, the packages' build and lintian, to 254 of its 300 s.)
ctest --test-dir build/release --output-on-failure -L chaos \
    >build/chaos.log 2>&1 &
chaos_pid=$!
section "tests (ASan + UBSan, beside the chaos suite)"
# The 60 s hold on a loaded machine is a timing test: the release stage
# runs it, and the other watchdog tests cover its code (half a minute).
# The "source" checks (tests/CMakeLists.txt) are the same in every build.
# So is cli_completion, a bash script checked against the binary's option
# tables by some 750 starts of it: under ASan beside chaos and the model
# it took 34 s to over 120 (its limit there), and the parsing it starts
# runs under ASan in every other cli test.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
RL_TEST_TIMEOUT_MULTIPLIER=2 \
    run_ctest --test-dir build/asan --output-on-failure -j"$ctest_jobs" \
    -LE 'chaos|source' -E 'holds_for_60s|^cli_completion$'

section "chaos suite, CI profile (release; started with the ASan tests)"
collect "chaos suite" "$chaos_pid" build/chaos.log
chaos_pid=

# Three programs per core at a time (each starts its own redis-server
# processes on free ports): under valgrind a program mostly waits (for
# keys to lapse, nodes to restart: integ_test_kinds used 18 s of CPU in
# 132 s), and its deadlines are scaled tenfold. Results are printed in
# program order.
vg_jobs=$((3 * jobs))
vg_one() {
    local t=$1 name rc=0 t0=$SECONDS
    name=$(basename "$t")
    RL_TEST_TIMEOUT_MULTIPLIER=10 RL_TEST_UNDER_VALGRIND=1 valgrind --quiet \
        --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --error-exitcode=99 --log-file="build/release/valgrind-$name.log" \
        "$t" >"build/release/$name.out" 2>&1 || rc=$?
    echo "$rc $((SECONDS - t0))" >"build/release/valgrind-$name.rc"
}
vg_programs=()
for t in build/release/tests/integ_*; do
    [ -x "$t" ] && vg_programs+=("$t")
done
# The valgrind programs run beside the TSan stage (both mostly wait, on
# deadlines scaled 10 and 3 times); their results are printed after it.
vg_all() {
    local t
    for t in "${vg_programs[@]}"; do
        while [ "$(jobs -pr | wc -l)" -ge "$vg_jobs" ]; do wait -n || true; done
        vg_one "$t" &
    done
    wait
}
vg_all &
vg_pid=$!
section "ThreadSanitizer build"
# The tests that run threads against one client: the blocking API from
# many threads, the watchdog, async calls, client create/free, the
# lifetime stress tests, and the node checks (a moved host name is looked
# up on a thread of its own; five clients share a node's checks). Only these are built and run. The 60 s
# loaded-machine hold is left to the other stages (TSan slows it down and
# it adds no interleaving the others lack).
tsan_tests="threads watchdog async reentrancy stress lifetimes lost_and_caps
    cancel election preconditions shared_check"
RL_TEST_TIMEOUT_MULTIPLIER=3 cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=Debug \
    -DRL_TSAN=ON -DRL_WERROR=ON >/dev/null
# shellcheck disable=SC2046 # one target per word
cmake --build build/tsan -j"$jobs" \
    --target $(printf 'integ_test_%s ' $tsan_tests)
section "threaded tests (ThreadSanitizer)"
# setarch -R: without address randomization, as TSan's shadow memory
# layout can clash with the randomized mappings of newer kernels
# (vm.mmap_rnd_bits 32: "FATAL: ThreadSanitizer: unexpected memory
# mapping").
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
RL_TEST_TIMEOUT_MULTIPLIER=3 \
    setarch "$(uname -m)" -R ctest --test-dir build/tsan --output-on-failure \
    -j2 -R "^integ_test_($(echo $tsan_tests | tr ' ' '|'))\." \
    -E 'holds_for_60s' 2>&1 | tee -a "$summary"

section "integration tests under valgrind (run beside the TSan stage)"
wait "$vg_pid" || true
vg_pid=
fails=0
vg_passed=0
for t in "${vg_programs[@]}"; do
    name=$(basename "$t")
    read -r rc secs <"build/release/valgrind-$name.rc"
    if [ "$rc" = 0 ]; then
        echo "valgrind: $name: 0 errors, 0 leaks (${secs} s)"
        vg_passed=$((vg_passed + 1))
    elif [ "$rc" = 77 ]; then
        echo "valgrind: $name: SKIP ($(grep -m1 SKIP "build/release/$name.out" || true))"
    elif grep -qE '^\[  (FAILED|ERROR) +\]' "build/release/$name.out"; then
        # A test failed: its output names the cause. Leaks valgrind found
        # after it are what the failed test left behind, shown second.
        echo "valgrind: $name: TEST FAILED (exit $rc); the test's output:"
        grep -E -B 30 '^\[  (FAILED|ERROR) +\]' "build/release/$name.out" |
            tail -n 60
        echo "valgrind: $name: valgrind's log after the failure:"
        tail -n 20 "build/release/valgrind-$name.log"
        fails=$((fails + 1))
    else
        echo "valgrind: $name: MEMORY ERRORS OR LEAKS (exit $rc)"
        tail -n 40 "build/release/valgrind-$name.log" "build/release/$name.out"
        fails=$((fails + 1))
    fi
done
[ "$fails" = 0 ] || { echo "valgrind: $fails program(s) failed"; exit 1; }

section "protocol model (SPIN, spec/*.pml; started with the release tests)"
collect "model-check" "$model_pid" build/model-check.log
model_pid=
total=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' \
    "$summary" | awk '{s += $1} END {print s + 0}')
echo "all test stages passed"
echo "$((total + vg_passed)) passed, 0 failed"
}

for round in $(seq 1 "$repeat"); do
    [ "$repeat" = 1 ] || printf '\n######## round %d of %d (%s) ########\n' \
        "$round" "$repeat" "$(date -u +%T)"
    start=$(date +%s)
    run_stages
    [ "$repeat" = 1 ] || echo "round $round of $repeat passed in $(( $(date +%s) - start )) s"
done
