#!/usr/bin/python3
"""Sets scalar fields in every top-level `tables { ... }` entry of a run config
(protobuf text format), one line or many: the variants of
scripts/bf16_quality.sh (`--set 'dtype: BF16 slot_dtype: BF16'`). A field the
entry already sets is replaced, not repeated; every other byte of the file is
kept. `--override` cannot do this: text-format merge appends repeated entries
(a new table) instead of changing the file's.

Usage: scripts/table_fields.py --set 'NAME: VALUE [NAME: VALUE ...]' IN OUT

Errors (exit status 1, one sentence on stderr naming IN[:LINE]): an unterminated
string, an unbalanced brace, `tables` in list syntax, no top-level tables entry,
a malformed --set.
"""
import argparse
import os
import sys

PUNCT = "{}<>[]:,;"


class ConfigError(Exception):
    """An error at a line of the config (0: the config as a whole)."""

    def __init__(self, line, message):
        super().__init__(message)
        self.line = line


def tokenize(text):
    """(kind, text, start, end) per token; kind is 'str', a punctuation
    character or 'word'. Comments and whitespace are skipped."""
    tokens, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j >= n or text[j] != c:
                raise ConfigError(line_of(text, i), "unterminated string")
            tokens.append(("str", text[i:j + 1], i, j + 1))
            i = j + 1
        elif c in PUNCT:
            tokens.append((c, c, i, i + 1))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in PUNCT + "#\"'":
                j += 1
            tokens.append(("word", text[i:j], i, j))
            i = j
    return tokens


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def parse_fields(spec):
    """'a: X b: Y' -> [('a', 'X'), ('b', 'Y')]."""
    toks = tokenize(spec)
    if not toks or len(toks) % 3 or any(
            toks[k][0] != "word" or toks[k + 1][0] != ":" or toks[k + 2][0] not in ("word", "str")
            for k in range(0, len(toks), 3)):
        raise ConfigError(0, "--set must be 'NAME: VALUE' pairs, got %r" % spec)
    return [(toks[k][1], toks[k + 2][1]) for k in range(0, len(toks), 3)]


def table_edits(text, toks, names):
    """(start, end, replacement) edits: each top-level tables entry's fields in
    `names` removed, and a marker (replacement None) at each entry's closing
    brace."""
    edits, opens = [], []  # opens: per open brace, whether it starts a tables entry
    for k, (kind, word, start, end) in enumerate(toks):
        prev = [t[1] for t in toks[max(0, k - 2):k]]
        if kind in "{<":
            opens.append(not opens and (prev[-1:] == ["tables"] or prev == ["tables", ":"]))
        elif kind in "}>":
            if not opens:
                raise ConfigError(line_of(text, start), "'%s' closes nothing" % word)
            if opens.pop():
                edits.append((start, start, None))
        elif kind == "[" and not opens and "tables" in prev:
            raise ConfigError(line_of(text, start), "tables in list syntax ([...]) is not supported; "
                              "write one 'tables { ... }' per table")
        elif (kind == "word" and word in names and len(opens) == 1 and opens[0]
              and prev[-1:] != [":"] and k + 2 < len(toks) and toks[k + 1][0] == ":"):
            edits.append((start, toks[k + 2][3], ""))
    if opens:
        raise ConfigError(line_of(text, len(text)), "%d brace(s) never closed" % len(opens))
    return edits


def set_table_fields(text, fields):
    """`text` with `fields` ([(name, value)]) set in every top-level tables
    entry. Raises ConfigError."""
    edits = table_edits(text, tokenize(text), {name for name, _ in fields})
    if not any(r is None for _, _, r in edits):
        raise ConfigError(0, "no top-level 'tables { ... }' entry")
    added = " ".join("%s: %s" % f for f in fields)
    out, pos = [], 0
    for start, end, replacement in edits:
        out.append(text[pos:start])
        if replacement is None:  # the entry's closing brace: the fields go before it
            out.append(("" if text[start - 1:start].isspace() else " ") + added + " ")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", required=True, help="'NAME: VALUE ...' set in every tables entry")
    p.add_argument("input")
    p.add_argument("output")
    a = p.parse_args()
    try:
        fields = parse_fields(a.set)
        with open(a.input) as f:
            out = set_table_fields(f.read(), fields)
    except ConfigError as e:
        sys.exit("%s%s: %s" % (a.input, ":%d" % e.line if e.line else "", e))
    except OSError as e:
        sys.exit("cannot read %s: %s" % (a.input, e.strerror))
    # Written whole, then renamed: a run reading OUTPUT never sees half of it.
    try:
        with open(a.output + ".tmp", "w") as f:
            f.write(out)
        os.replace(a.output + ".tmp", a.output)
    except OSError as e:
        sys.exit("cannot write %s: %s" % (a.output, e.strerror))


if __name__ == "__main__":
    main()
