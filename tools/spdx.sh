#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every source, header, script and test file names its license at the top:
#   SPDX-License-Identifier: BSD-3-Clause
# on its first line, or its second when the first is a shebang (#!), in the
# file's own comment syntax.
#   tools/spdx.sh --check [SOURCE_DIR]   list the files without it; exit 1
#                                        if there is one (ctest spdx_headers)
#   tools/spdx.sh --add [SOURCE_DIR]     add it to every file without it
# The files counted (those git tracks, and new ones it does not ignore;
# without git, every file outside build/ and .git/):
#   /* */  C sources and headers (*.c, *.h), the SPIN models (*.pml)
#   #      shell (*.sh, *.bash), Python (*.py), CMake (CMakeLists.txt,
#          *.cmake, *.cmake.in), Dockerfiles (*Dockerfile), and any other
#          file that starts with a shebang (.ci/run, debian/rules)
#   //     JavaScript (*.js: the node-redlock benchmark peer)
#   --     Lua (*.lua)
# Not counted: documentation (*.md, the man pages and their HTML), data
# (test corpora, saved benchmark runs, *.json, *.jsonl, *.txt, images),
# generated files, and metadata whose format has its own license field or
# no comments (debian/copyright, control, changelog, *.install,
# redlock.pc.in, compose.yml, .gitignore, .dockerignore).
set -euo pipefail

ID="SPDX-License-Identifier: BSD-3-Clause"
mode=${1:-}
src=${2:-$(cd "$(dirname "$0")/.." && pwd)}
case "$mode" in
    --check|--add) ;;
    *) echo "usage: tools/spdx.sh --check|--add [SOURCE_DIR]" >&2; exit 2 ;;
esac
cd "$src"

files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z --cached --others --exclude-standard
    else
        find . -path ./build -prune -o -path ./.git -prune -o -type f \
            -printf '%P\0'
    fi
}

# style FILE: sets line to the line that names the license in FILE's
# comment syntax, or to nothing when the file is not counted. Builtins
# only (no process per file): the suite runs it on a loaded machine.
style() {
    local start=
    case "$1" in
        *.c|*.h|*.pml) line="/* $ID */" ;;
        *.sh|*.bash|*.py|*.cmake|*.cmake.in|CMakeLists.txt|*/CMakeLists.txt|\
        *Dockerfile) line="# $ID" ;;
        *.js) line="// $ID" ;;
        *.lua) line="-- $ID" ;;
        *) IFS= read -r -n 2 start <"$1" || true
           line=
           [ "$start" != "#!" ] || line="# $ID" ;;
    esac
}

# has_id FILE: the identifier is on line 1, or on line 2 after a shebang.
has_id() {
    local first second
    { IFS= read -r first || true; IFS= read -r second || true; } <"$1"
    [[ $first == *"$ID"* ]] ||
        { [[ $first == "#!"* ]] && [[ $second == *"$ID"* ]]; }
}

# add_id FILE LINE: LINE at the top of FILE, after its shebang if any. The
# file is rewritten in place (its mode and links stay).
add_id() {
    local tmp
    tmp=$(mktemp)
    awk -v line="$2" 'NR == 1 && /^#!/ { print; print line; next }
                      NR == 1 { print line } { print }' "$1" >"$tmp"
    cat "$tmp" >"$1"
    rm -f "$tmp"
}

# The body is one function, read whole before it runs: --add rewrites
# this script too, and bash reads a script as it runs it.
main() {
    local counted=0 missing=() f line
    while IFS= read -r -d '' f; do
        [ -f "$f" ] || continue
        style "$f"
        [ -n "$line" ] || continue
        counted=$((counted + 1))
        has_id "$f" && continue
        if [ "$mode" = --add ]; then
            add_id "$f" "$line"
        fi
        missing+=("$f")
    done < <(files)

    if [ "$mode" = --add ]; then
        echo "spdx: added the line to ${#missing[@]} of $counted files"
        exit 0
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        printf '%s\n' "${missing[@]}"
        echo "spdx: ${#missing[@]} of $counted files lack '$ID'" \
             "(tools/spdx.sh --add adds it)"
        exit 1
    fi
    echo "spdx: all $counted files carry '$ID'"
}
main; exit
