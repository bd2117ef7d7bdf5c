#!/usr/bin/env bash
# The include graph follows the layers (docs/architecture.md, "Layers"):
#   base <- proto <- layout <- {host, device} <- runtime <- {examples, tests, benchmarks}
# A file may include its own folder's headers and those of lower layers
# only: no include from a layer into a higher one (device -> runtime,
# proto -> host, ...) and none sideways between host and device. Prints
# every offending `#include` as FILE:LINE and fails; passes when none.
# Inside runtime/ the same holds for its libraries (runtime/CMakeLists.txt):
#   comm/ <- {step/, threads/, hot_rows/} <- observability/ <- checkpoint/
#   <- {eval/, the trainer at runtime/'s top}
# and no library inside runtime/ (eval/ included) includes a header at
# runtime/'s top (the Trainer composes them, not the other way round);
# and inside host/, input/ + formats/ (reading) and preprocess/ meet only at
# host/batch.h: neither includes the other. MPI itself is reached through
# runtime/comm/ only (MpiSession, the communicators): no MPI call and no
# <mpi.h> in runtime/ outside comm/ nor in tools/.
set -euo pipefail
: "${LEMRT_SRC:?}"
cd "$LEMRT_SRC"
python3 - <<'PY'
import os, re, sys
rank = {'base': 0, 'proto': 1, 'layout': 2, 'host': 3, 'device': 3, 'runtime': 4,
        'examples': 5, 'tools': 5, 'tests': 5, 'benchmarks': 5}
files = sorted(os.path.join(d, f) for top in rank for d, _, fs in os.walk(top)
               for f in fs if f.endswith(('.h', '.cc', '.proto')))
include = re.compile(r'^\s*(?:#\s*include|import)\s+"([a-z_]+)/[^"]*"')
sub_include = re.compile(r'^\s*#\s*include\s+"(runtime|host)/([a-z_]+)/')
top_include = re.compile(r'^\s*#\s*include\s+"runtime/[a-z_]+\.h"')
# The libraries inside runtime/ (a file at runtime/'s top is the trainer's).
runtime_rank = {'comm': 0, 'step': 1, 'threads': 1, 'hot_rows': 1, 'observability': 2,
                'checkpoint': 3, 'eval': 4, '': 4}
host_side = {'input': 'read', 'formats': 'read', 'preprocess': 'preprocess'}
def sub_of(path):
    parts = path.split('/')
    return parts[1] if len(parts) > 2 else ''
bad, checked = [], 0
for path in files:
    top = path.split('/')[0]
    if top not in rank:
        continue
    for n, line in enumerate(open(path, encoding='utf-8', errors='replace'), 1):
        sm = sub_include.match(line)
        if sm and sm.group(1) == top:
            mine, dep_sub = sub_of(path), sm.group(2)
            if top == 'runtime' and runtime_rank.get(dep_sub, 4) > runtime_rank.get(mine, 4):
                bad.append(f'{path}:{n}: runtime/{mine or "(top)"} includes runtime/{dep_sub}/ '
                           f'(a higher library): {line.strip()}')
            if top == 'host' and mine in host_side and dep_sub in host_side and \
                    host_side[mine] != host_side[dep_sub]:
                bad.append(f'{path}:{n}: host/{mine} includes host/{dep_sub}/ (reading and '
                           f'preprocessing meet at host/batch.h only): {line.strip()}')
        if top == 'runtime' and sub_of(path) and top_include.match(line):
            bad.append(f'{path}:{n}: runtime/{sub_of(path)} includes a header at runtime/\'s top '
                       f'(the trainer composes the libraries): {line.strip()}')
        m = include.match(line)
        if not m or m.group(1) not in rank:
            continue
        checked += 1
        dep = m.group(1)
        if dep != top and rank[dep] >= rank[top]:
            kind = 'sideways' if rank[dep] == rank[top] else 'upward'
            bad.append(f'{path}:{n}: {top}/ includes {dep}/ ({kind}): {line.strip()}')
mpi_call = re.compile(r'\bMPI_[A-Za-z_]+\s*\(|\bMPI_COMM_WORLD\b|#\s*include\s*<mpi\.h>')
for path in files:
    if not (path.startswith('tools/') or (path.startswith('runtime/') and
                                          not path.startswith('runtime/comm/'))):
        continue
    for n, line in enumerate(open(path, encoding='utf-8', errors='replace'), 1):
        code = re.sub(r'"(\\.|[^"\\])*"', '""', line.split('//')[0])
        if mpi_call.search(code) or line.lstrip().startswith('#include <mpi.h>'):
            bad.append(f'{path}:{n}: MPI outside runtime/comm/ (use MpiSession or a '
                       f'Communicator): {line.strip()}')
if bad:
    print('\n'.join(bad))
    sys.exit(f'{len(bad)} includes break the layering (docs/architecture.md, "Layers")')
if checked < 500:
    sys.exit(f'only {checked} includes found: is the extraction broken?')
print(f'PASS: {checked} includes follow base <- proto <- layout <- {{host, device}} <- runtime')
PY
