#!/usr/bin/env bash
# Replays the files of each DIR (a seed corpus, a regressions folder; a
# missing DIR is skipped) through a libFuzzer binary, which runs every file
# named on its command line once and exits: non-zero on a crash, a leak or a
# sanitizer report. The builds without libFuzzer replay through
# replay_main.cc instead. Usage: replay_files.sh FUZZER DIR...
set -euo pipefail
fuzzer="$1"
shift
files=()
for dir in "$@"; do
  [ -d "$dir" ] || continue
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$dir" -type f -print0 | sort -z)
done
if [ ${#files[@]} -eq 0 ]; then
  echo "replay_files.sh: no input files in $*" >&2
  exit 1
fi
exec "$fuzzer" "${files[@]}"
