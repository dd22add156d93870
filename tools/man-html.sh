#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Render the library's man pages (docs/man/man3, docs/man/man7) and
# redlock-cli(1) to HTML in docs/man/html, so the reference can be browsed
# without man: one NAME.SECTION.html per page, a small redirect for each
# function whose page is its group's (the symbolic links), and index.html
# leading to redlock.3.html. Cross-references to these pages link to each
# other; others (poll(2), ...) to man7.org. The HTML is built, not kept
# in git (.gitignore); `cmake --build <build> --target man-html` runs this
# into <build>/man/html. Fails (1) when mandoc warns about a page
# (tests/check_manpages.sh renders them all this way).
# Needs mandoc (apt-get install mandoc).
#   tools/man-html.sh [OUTDIR]     OUTDIR: docs/man/html by default
set -euo pipefail
out=$(realpath -m "${1:-$(dirname "$0")/../docs/man/html}")
cd "$(dirname "$0")/.."
command -v mandoc >/dev/null ||
    { echo "man-html.sh: mandoc not found (apt-get install mandoc)" >&2; exit 1; }
pages=(docs/man/man3/*.3 docs/man/man7/*.7 tools/redlock-cli/redlock-cli.1)

# mandoc links .Xr NAME SEC to the first format when NAME.SEC exists in
# the current directory, so render from a directory holding every page.
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
for p in "${pages[@]}"; do ln -s "$PWD/$p" "$src/${p##*/}"; done
rm -rf "$out"
mkdir -p "$out"
n=0
warned=0
for p in "${pages[@]}"; do
    name=${p##*/}
    if [ -L "$p" ]; then
        target=$(readlink "$p")
        printf '%s\n' '<!DOCTYPE html>' \
            "<meta charset=\"utf-8\"><title>${name%.*}</title>" \
            "<meta http-equiv=\"refresh\" content=\"0; url=$target.html\">" \
            "<p>${name%.*}(${name##*.}) is described in" \
            "<a href=\"$target.html\">${target%.*}(${target##*.})</a>.</p>" \
            >"$out/$name.html"
        continue
    fi
    (cd "$src" && mandoc -T html -W warning \
        -O 'man=%N.%S.html;https://man7.org/linux/man-pages/man%S/%N.%S.html' \
        "$name") >"$out/$name.html" 2>"$src/.warnings" || true
    if [ -s "$src/.warnings" ] || [ ! -s "$out/$name.html" ]; then
        echo "man-html.sh: $p does not render cleanly:" >&2
        cat "$src/.warnings" >&2
        warned=$((warned + 1))
    fi
    n=$((n + 1))
done
printf '%s\n' '<!DOCTYPE html>' '<meta charset="utf-8"><title>redlock</title>' \
    '<meta http-equiv="refresh" content="0; url=redlock.3.html">' \
    '<p>The library reference starts at <a href="redlock.3.html">redlock(3)</a>.</p>' \
    >"$out/index.html"
echo "man-html.sh: $n pages and $((${#pages[@]} - n)) links in $out"
[ "$warned" -eq 0 ] || { echo "man-html.sh: $warned pages with warnings" >&2; exit 1; }
