#!/usr/bin/env bash
# Checks that the C++ files listed in scripts/format_files.txt are formatted
# as .clang-format says (clang-format-14): prints each misformatted file with
# the command that fixes it and exits 1. Most of the tree predates the
# committed settings (Google style at 100 columns), so only the listed files,
# which conform, are checked; a file joins the list once formatted (a
# commit of its own), and new files should start in it.
#   scripts/format_check.sh            check the listed files
#   scripts/format_check.sh FILE...    check these files
#   scripts/format_check.sh --list     print every tracked .cc/.h that conforms
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$LEMRT_ROOT"
# One version: another clang-format may format the same settings differently.
formatter=clang-format-14
command -v "$formatter" >/dev/null || { echo "format_check: $formatter not found (scripts/install_deps.sh)"; exit 1; }
conforms() { "$formatter" --style=file "$1" | cmp -s - "$1"; }

if [ "${1:-}" = "--list" ]; then
  git ls-files '*.cc' '*.h' | while read -r f; do conforms "$f" && echo "$f"; done
  exit 0
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(grep -v '^#' scripts/format_files.txt | grep -v '^$')
fi
status=0
for f in "${files[@]}"; do
  if [ ! -f "$f" ]; then
    echo "format_check: $f is listed in scripts/format_files.txt but does not exist"
    status=1
  elif ! conforms "$f"; then
    echo "format_check: $f is not formatted; fix with: $formatter -i $f"
    status=1
  fi
done
[ "$status" = 0 ] && echo "format_check: ${#files[@]} files formatted as .clang-format says"
exit "$status"
