#!/bin/sh
# errors.sh — the one-error-table check of ../shared/STYLE.md "Errors":
# every error answer a client can get comes from src/util/err.h's table, so
# no code under src/ pairs an HTTP status with a CouchDB error name itself.
# http/hreq.c writes the body for a code (hres_errw) and err.h holds the
# table; anywhere else, outside comments, each of these is a violation:
#   hres_errs( / hres_errf(     the old calls taking a status and an error
#   404, "not_found"            a status beside a quoted error name
#   "error" then a literal      a JSON "error" member written by hand:
#                               json_w_keyz(w, "error") followed by
#                               json_w_strz(w, "…"), or \"error\":\"name\"
#                               inside a string (%s from dv_err_couch is fine)
# Prints each violation; exits 1 when there is one.
# Usage: scripts/errors.sh [ROOT] (default: this checkout).
cd "${1:-$(dirname "$0")/..}" || exit 2
n=0
for f in src/*.c src/*/*.c src/*/*.h src/*/*.cc; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  case "$f" in
  src/util/err.h | src/http/hreq.c) continue ;; # the table, and the one writer
  esac
  # a line is code unless it starts a comment or continues one (" * …")
  awk -v f="$f" '
    function bad_(what) { print "errors: " f ":" FNR ": " what; bad = 1 }
    /^[ \t]*(\/\*|\*|\/\/)/ { prev = ""; next }
    /hres_err[sf][ \t]*\(/ { bad_("a status and an error name by hand (hres_errs/hres_errf): use a DV_E* code") }
    /(^|[^0-9A-Za-z_])[1-5][0-9][0-9],[ \t]*"[A-Za-z_0-9]+"/ { bad_("an HTTP status beside an error name: add a row to util/err.h") }
    /\\"error\\":[ \t]*\\"[A-Za-z_]/ { bad_("an \"error\" member written by hand: use dv_err_couch(code)") }
    prev ~ /"error"[ \t]*\)/ && /json_w_str[a-z]*\([^,]*,[ \t]*"/ { bad_("an \"error\" member written by hand: use dv_err_couch(code)") }
    { prev = $0 }
    END { exit bad }
  ' "$f" || bad=1
done
[ "$n" -gt 0 ] || { echo "errors: no files under src/: wrong directory?"; exit 2; }
exit ${bad:-0}
