#!/usr/bin/env bash
# Every repository path the README and docs/*.md name in backquotes exists
# (`host/preprocess/coo.h`, `tests/fuzz/fuzz_common.{h,cc}`, `device/plan/memory_plan`
# for memory_plan.*), so moving or renaming a file fails here until the docs
# follow. Placeholders (`<target>`, NAME, *) are skipped.
set -euo pipefail
: "${LEMRT_SRC:?}"
cd "$LEMRT_SRC"
python3 - <<'PY'
import glob, os, re, sys
roots = ('base/', 'proto/', 'layout/', 'host/', 'device/', 'runtime/', 'examples/', 'tools/', 'tests/', 'scripts/',
         'benchmarks/', 'docs/', '.ci/')
missing, checked = [], 0
for doc in ['README.md'] + sorted(glob.glob('docs/*.md')):
    for n, line in enumerate(open(doc), 1):
        for quoted in re.findall(r'`([^`]+)`', line):
            # Split on separators outside braces, so a.{h,cc} stays one word.
            for word in re.findall(r'(?:[^\s,;()={}]|\{[^}]*\})+', quoted):
                word = word.strip('.:')
                if not word.startswith(roots) or re.search(r'[<*]|NAME', word):
                    continue
                m = re.match(r'(.*)\{([^}]*)\}(.*)$', word)
                paths = [m.group(1) + x + m.group(3) for x in m.group(2).split(',')] if m else [word]
                for p in paths:
                    checked += 1
                    if not (os.path.exists(p) or glob.glob(p + '.*')):
                        missing.append(f'{doc}:{n}: `{p}` does not exist in the repository '
                                       '(moved or renamed? update the doc)')
if missing:
    print('\n'.join(missing))
    sys.exit(1)
if checked < 50:
    sys.exit(f'only {checked} paths found in the docs: is the extraction broken?')
print(f'PASS: {checked} paths named in README.md and docs/*.md exist')
PY
