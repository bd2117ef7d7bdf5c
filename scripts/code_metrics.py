#!/usr/bin/env python3
"""Measures a checkout as a newcomer reads it: the largest files, the
longest functions, the folders with the most files.

  scripts/code_metrics.py [ROOT] [--top N] [--no-tests]

Counts the C++ sources (.h, .cc) under ROOT (default: the current
directory), skipping build*/ and hidden folders. A function is a brace block
opened at namespace or class level after a parameter list (a ')' before the
'{', possibly with const/noexcept/override/an initializer list between);
its length runs from the line of its name to its closing brace, lambdas and
local classes included. Comments, strings and character literals are
skipped; preprocessor lines are ignored. A brace counter, not a parser:
good to about a line, enough to rank functions.
"""
import argparse
import os
import re
import sys

SKIP_DIRS = re.compile(r"^(build.*|\..*|third_party)$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|return)\s*$")


def sources(root):
  for d, dirs, files in os.walk(root):
    dirs[:] = sorted(x for x in dirs if not SKIP_DIRS.match(x))
    for f in sorted(files):
      if f.endswith((".h", ".cc")):
        yield os.path.join(d, f)


def strip(text):
  """Blanks comments, strings, chars and preprocessor lines; keeps newlines."""
  out, i, n = [], 0, len(text)
  line_start = True
  while i < n:
    c = text[i]
    if line_start and c == "#" :
      j = i
      while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
        j += 1
      out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
      i = j
      continue
    if c not in " \t":
      line_start = c == "\n"
    elif c == "\n":
      line_start = True
    if text.startswith("//", i):
      j = text.find("\n", i)
      j = n if j < 0 else j
      out.append(" " * (j - i))
      i = j
    elif text.startswith("/*", i):
      j = text.find("*/", i + 2)
      j = n if j < 0 else j + 2
      out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
      i = j
    elif c == 'R' and text.startswith('R"', i):
      m = re.match(r'R"([^(]*)\(', text[i:])
      end = text.find(")" + m.group(1) + '"', i) if m else -1
      j = n if end < 0 else end + len(m.group(1)) + 2
      out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
      i = j
    elif c in "\"'":
      j = i + 1
      while j < n and text[j] != c and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
      out.append(" " * (j + 1 - i))
      i = j + 1
    else:
      out.append(c)
      i += 1
  return "".join(out)


def functions(path):
  text = strip(open(path, encoding="utf-8", errors="replace").read())
  stack = []  # kinds of open braces: 'scope' (namespace/class), 'func', 'block'
  header_start = 0  # index where the current declaration began
  results = []
  func_start = None
  for i, c in enumerate(text):
    if c in ";}":
      if c == "}" and stack and stack[-1] == "inner":
        stack.pop()  # a brace initialiser inside a declaration's parentheses
        continue
      if c == "}" and stack:
        kind = stack.pop()
        if kind == "func" and "func" not in stack:
          start_line = text.count("\n", 0, func_start[0]) + 1
          end_line = text.count("\n", 0, i) + 1
          results.append((end_line - start_line + 1, func_start[1], path, start_line))
      if "func" not in stack:
        header_start = i + 1
    elif c == "{":
      if "func" in stack:
        stack.append("block")
        continue
      header = text[header_start:i]
      if header.count("(") > header.count(")"):
        stack.append("inner")  # e.g. a default argument `= {}`
        continue
      flat = " ".join(header.split())
      if re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", flat) or not flat:
        stack.append("scope")
      elif ")" in flat and not CONTROL.search(flat.split("(")[0]) and "=" not in flat.split("(")[0]:
        name = re.search(r"([~\w:<>]+)\s*\(", flat)
        stack.append("func")
        lead = len(header) - len(header.lstrip())
        func_start = (header_start + lead, name.group(1) if name else flat[:40])
      else:
        stack.append("block")  # an initializer or array at namespace level
      header_start = i + 1
  return results


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("root", nargs="?", default=".")
  ap.add_argument("--top", type=int, default=15)
  ap.add_argument("--no-tests", action="store_true",
                  help="leave out tests/, benchmarks/ and *_test.cc")
  args = ap.parse_args()
  files = list(sources(args.root))
  if args.no_tests:
    files = [f for f in files if not (f.endswith("_test.cc") or
             os.path.relpath(f, args.root).split(os.sep)[0] in ("tests", "benchmarks"))]
  sizes = sorted(((sum(1 for _ in open(f, errors="replace")), f) for f in files), reverse=True)
  folders = {}
  for f in files:
    folders.setdefault(os.path.dirname(os.path.relpath(f, args.root)), []).append(f)
  funcs = sorted((r for f in files for r in functions(f)), key=lambda r: (-r[0], r[2], r[3]))
  rel = lambda p: os.path.relpath(p, args.root)
  print(f"C++ files: {len(files)}, lines: {sum(s for s, _ in sizes)}")
  print("largest files (lines):")
  for s, f in sizes[:5]:
    print(f"  {s:6d}  {rel(f)}")
  print("folders with the most C++ files:")
  for d, fs in sorted(folders.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:5]:
    print(f"  {len(fs):6d}  {d or '.'}")
  print(f"functions: {len(funcs)}; over 60 lines: {sum(1 for r in funcs if r[0] > 60)}")
  print(f"longest {args.top} functions (lines):")
  for n, name, f, line in funcs[:args.top]:
    print(f"  {n:6d}  {name}  {rel(f)}:{line}")


if __name__ == "__main__":
  sys.exit(main())
