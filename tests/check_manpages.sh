#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The man 3 reference must not drift from include/redlock.h:
#   - every exported rl_ function (RL_API in the header, and, when the
#     library is given, every rl_ symbol it exports) has a page named
#     after it (the group's page, or a symbolic link to it) whose NAME lists
#     it and whose SYNOPSIS declares it;
#   - every declaration in a SYNOPSIS (.Ft/.Fo/.Fa/.Fc, and .Vt typedefs
#     with a parameter list) is one of the header's, whitespace aside;
#   - every page has the sections a reader looks for, every link and every
#     .Xr to one of our pages resolves, and redlock(3) lists every page;
#   - with mandoc installed, `mandoc -T lint -W warning` finds nothing and
#     tools/man-html.sh renders every page to HTML without a warning (the
#     HTML is built, not committed).
# Only bash, awk and (for the library) nm are needed.
#   check_manpages.sh HEADER MANDIR [LIBRARY]
set -euo pipefail
header=$1
mandir=$2
lib=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Whitespace is not significant, nor is it around * ( ) , -- so
# "const char *rl_x(void)" and "const char * rl_x( void )" are one.
norm_awk='function norm(s) {
    gsub(/[ \t\n]+/, " ", s); gsub(/ ?\* ?/, "*", s);
    gsub(/ ?\( ?/, "(", s); gsub(/ ?\) ?/, ")", s); gsub(/ ?, ?/, ",", s);
    sub(/^ /, "", s); sub(/ $/, "", s); return s }'

# The header's declarations that have a parameter list, one a line,
# without comments and preprocessor lines; RL_API marks the exported ones.
awk "$norm_awk"'
    { text = text $0 "\n" }
    END {
        while ((i = index(text, "/*")) > 0) {
            rest = substr(text, i + 2); j = index(rest, "*/")
            text = substr(text, 1, i - 1) " " substr(rest, j + 2)
        }
        n = split(text, lines, "\n"); code = ""; cont = 0
        for (k = 1; k <= n; k++) {
            l = lines[k]
            if (cont || l ~ /^[ \t]*#/) { cont = (l ~ /\\$/); continue }
            code = code " " l
        }
        m = split(code, stmts, ";")
        for (k = 1; k <= m; k++) {
            s = norm(stmts[k]); sub(/^.*[{}] ?/, "", s)
            if (s ~ /\(/) print s
        }
    }' "$header" | sort -u >"$tmp/api"
sed 's/^RL_API //' "$tmp/api" >"$tmp/decls"
sed -n 's/^RL_API \([^(]*\)(.*/\1/p' "$tmp/api" | sed 's/.*[ *]//' |
    sort -u >"$tmp/names"
if [ -n "$lib" ]; then
    nm -D --defined-only "$lib" | awk '$3 ~ /^rl_/ {print $3}' |
        sort -u >"$tmp/libnames"
    comm -13 "$tmp/names" "$tmp/libnames" | while read -r s; do
        echo "note: $s is exported but not declared with RL_API"
    done
    sort -u "$tmp/names" "$tmp/libnames" -o "$tmp/names"
fi
[ -s "$tmp/names" ] || { fail "no RL_API functions found in $header"; }

# A page's target: itself, or the page its symbolic link names (one of
# its group's, in the same directory, as ln -s rl_acquire.3 rl_x.3 makes).
resolve() {
    local f=$1
    if [ -L "$f" ]; then
        echo "$(dirname "$f")/$(readlink "$f")"
    else
        echo "$f"
    fi
}

# Per real page: its NAME entries ("nm NAME") and SYNOPSIS declarations
# ("decl NAME<TAB>DECLARATION"), and its section names ("sh NAME").
parse_page() {
    awk "$norm_awk"'
        /^\.Sh / { sec = substr($0, 5); gsub(/"/, "", sec)
                   print "sh " sec; next }
        sec == "NAME" && /^\.Nm / { print "nm " $2; next }
        sec != "SYNOPSIS" { next }
        /^\.Ft / { ft = substr($0, 5); next }
        /^\.Fo / { fn = $2; args = ""; next }
        /^\.Fa / { a = substr($0, 5); gsub(/^"|"$/, "", a)
                   args = args (args == "" ? "" : ", ") a; next }
        /^\.Fc/  { d = norm(ft " " fn "(" args ")"); print "decl " fn "\t" d
                   ft = ""; next }
        /^\.Vt .*\(/ { d = substr($0, 5); sub(/ *;? *$/, "", d); d = norm(d)
                   n = d; sub(/\).*/, "", n); sub(/.*[(*]/, "", n)
                   print "decl " n "\t" d }
    ' "$1"
}

pages=0
real=()
: >"$tmp/declared"
: >"$tmp/named"
for f in "$mandir"/man3/*.3 "$mandir"/man7/*.7; do
    [ -e "$f" ] || continue
    page=${f#"$mandir"/}
    target=$(resolve "$f")
    if [ "$target" != "$f" ]; then
        case $(readlink "$f") in
        */*) fail "$page: links outside its directory: $(readlink "$f")" ;;
        *) if [ ! -f "$target" ] || [ -L "$target" ]; then
               fail "$page: link target ${target#"$mandir"/} is not a page"
           fi ;;
        esac
        continue
    fi
    real+=("$page")
    pages=$((pages + 1))
    parse_page "$f" >"$tmp/page"
    for s in NAME DESCRIPTION "SEE ALSO"; do
        grep -qx "sh $s" "$tmp/page" || fail "$page: no $s section"
    done
    [ "${page%%/*}" != man3 ] || grep -qx "sh SYNOPSIS" "$tmp/page" ||
        fail "$page: no SYNOPSIS section"
    if grep -q '^decl ' "$tmp/page" && [ "${page%%/*}" = man3 ]; then
        for s in "RETURN VALUES" EXAMPLES; do
            grep -qx "sh $s" "$tmp/page" || fail "$page: no $s section"
        done
    fi
    while IFS=$'\t' read -r name decl; do
        name=${name#decl }
        if grep -qxF -- "$decl" "$tmp/decls"; then
            printf '%s\t%s\n' "$name" "$f" >>"$tmp/declared"
        else
            fail "$page: SYNOPSIS differs from $header:"
            echo "  page:   $decl"
            grep -E "[ *]$name\(" "$tmp/decls" | sed 's/^/  header: /' ||
                echo "  header: (no declaration of $name)"
        fi
    done < <(grep '^decl ' "$tmp/page")
    # Cross-references to our own pages must resolve.
    while read -r x; do
        [ -e "$mandir/man${x##*.}/$x" ] ||
            fail "$page: .Xr ${x%.*} ${x##*.}: no such page"
    done < <(awk '/^\./ { for (i = 1; i < NF - 1; i++)
                   if (($i == "Xr" || $i == ".Xr") &&
                       $(i + 1) ~ /^(rl_|redlock)/ && $(i + 2) ~ /^[37]/) {
                       sec = $(i + 2); sub(/[^0-9].*/, "", sec)
                       print $(i + 1) "." sec } }' "$f" | sort -u)
    grep -q '^nm ' "$tmp/page" || fail "$page: NAME lists no .Nm"
    sed -n 's/^nm //p' "$tmp/page" | while read -r n; do
        printf '%s\t%s\n' "$n" "$f"
    done >>"$tmp/named"
done

# Every exported function: a page of its name, which lists and declares it.
while read -r s; do
    f="$mandir/man3/$s.3"
    if [ ! -e "$f" ]; then
        fail "$s: exported, but man3/$s.3 does not exist"; continue
    fi
    target=$(resolve "$f")
    grep -qxF "$s"$'\t'"$target" "$tmp/named" ||
        fail "$s: not in NAME of ${target#"$mandir"/}"
    grep -qxF "$s"$'\t'"$target" "$tmp/declared" ||
        fail "$s: not declared in SYNOPSIS of ${target#"$mandir"/}"
done <"$tmp/names"

# redlock(3) is the list of pages: it must name every other one.
overview="$mandir/man3/redlock.3"
if [ -f "$overview" ]; then
    for page in "${real[@]}"; do
        name=${page##*/}
        [ "$name" = redlock.3 ] && continue
        grep -qE "^\.(It )?Xr ${name%.*} ${name##*.}( |\$)" "$overview" ||
            fail "man3/redlock.3 does not list $page"
    done
else
    fail "man3/redlock.3 (the overview) is missing"
fi

if command -v mandoc >/dev/null; then
    lint=$(cd "$mandir" && mandoc -T lint -W warning "${real[@]}" 2>&1) ||
        true
    [ -z "$lint" ] || { fail "mandoc -T lint -W warning:"; echo "$lint"; }
    # Every page renders to HTML (tools/man-html.sh) without a warning.
    "$(dirname "$0")/../tools/man-html.sh" "$tmp/html" >/dev/null 2>"$tmp/html.err" ||
        { fail "tools/man-html.sh:"; cat "$tmp/html.err"; }
else
    echo "note: mandoc not installed, pages not linted nor rendered"
fi

total=$(wc -l <"$tmp/names")
if [ "$fails" -gt 0 ]; then
    echo "0 passed, $fails failed"; exit 1
fi
echo "1 passed, 0 failed: $total exported functions on $pages pages," \
    "every synopsis as in the header"
