#!/usr/bin/env python3
"""Writes a small multi-hot click data set as TFRecord files of tf.train.Example
(optionally gzip-compressed) and as tab-separated text with a header, the same
rows in both, for examples/configs/multihot_tfrecord.pbtxt (docs/data.md).

Columns / Example keys:
  label          float   click (0/1) drawn from a planted logistic model
  price          float   dense (the config takes log1p)
  age            float   dense
  hour           int64   dense, 0..23
  user_id        int64   raw id into a 2,000-row table (mapping ID)
  item_id        int64   raw id into a 5,000-row table
  item_category  bytes   a category name (hashed)
  history        int64[] up to 20 recently seen item ids (multi-hot)
  history_w      float[] one recency weight per history id (the COO values)
  tags           bytes[] 0..5 tag names (multi-hot, hashed)
  conversion     float   with --conversions only, after label: a purchase (0/1)
                         of a clicked row, from a second planted model; missing
                         (an empty field, the key absent) where label is 0 —
                         the second task of examples/configs/multitask.pbtxt

  scripts/gen_multihot_data.py --out data/multihot [--train_rows 20000]
      [--eval_rows 5000] [--seed 1] [--gzip] [--conversions]

Pure Python (no TensorFlow, numpy or protobuf module): the Example wire format
and the TFRecord framing with its masked CRC-32C are written by hand.
"""
import argparse
import gzip
import math
import os
import random
import struct

USERS, ITEMS, CATEGORIES, TAGS, MAX_HISTORY = 2000, 5000, 40, 30, 20


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    n &= (1 << 64) - 1  # int64 two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):  # length-delimited field
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def feature(kind, values):
    if kind == "float":
        body = field(1, b"".join(struct.pack("<f", v) for v in values))
        return field(2, body)
    if kind == "int64":
        body = field(1, b"".join(varint(v) for v in values))
        return field(3, body)
    body = b"".join(field(1, v.encode()) for v in values)
    return field(1, body)


def example(features):
    entries = b"".join(field(1, field(1, k.encode()) + field(2, feature(kind, v)))
                       for k, (kind, v) in features.items())
    return field(1, entries)


def tfrecord(payload):
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked_crc(length)) + payload + \
        struct.pack("<I", masked_crc(payload))


def rows(n, rng, weights, conversions=None):
    """`conversions`: None, or the random.Random the conversion labels are
    drawn from (apart from `rng`, so the other columns stay as without them)."""
    for _ in range(n):
        user = min(int(rng.paretovariate(1.2)) - 1, USERS - 1)
        item = rng.randrange(ITEMS)
        category = "cat%d" % (item % CATEGORIES)
        history = [rng.randrange(ITEMS) for _ in range(rng.randrange(MAX_HISTORY + 1))]
        history_w = [round(0.9 ** k, 4) for k in range(len(history))]
        tags = sorted({"tag%d" % rng.randrange(TAGS) for _ in range(rng.randrange(6))})
        price = round(rng.expovariate(1 / 30.0), 2)
        age = float(rng.randrange(18, 80))
        hour = rng.randrange(24)
        logit = (-0.6 + weights["user"][user % 97] + weights["item"][item % 211]
                 + weights["cat"][item % CATEGORIES]
                 + 0.4 * sum(w * weights["item"][h % 211] for h, w in zip(history, history_w))
                 / max(1.0, sum(history_w))
                 + sum(weights["tag"][int(t[3:])] for t in tags) / 3.0
                 - 0.3 * math.log1p(price) / 3.0 + 0.3 * math.sin(hour / 24 * 6.283))
        label = 1.0 if rng.random() < 1 / (1 + math.exp(-logit)) else 0.0
        extra = {}
        if conversions is not None:
            buy = (-1.0 + 1.5 * weights["cat"][item % CATEGORIES] - 0.5 * math.log1p(price)
                   + 0.04 * (age - 45) / 3.0)
            converted = 1.0 if conversions.random() < 1 / (1 + math.exp(-buy)) else 0.0
            extra = {"conversion": ("float", [converted] if label == 1.0 else [])}
        yield {**extra,
            "label": ("float", [label]), "price": ("float", [price]),
            "age": ("float", [age]), "hour": ("int64", [hour]),
            "user_id": ("int64", [user]), "item_id": ("int64", [item]),
            "item_category": ("bytes", [category]), "history": ("int64", history),
            "history_w": ("float", history_w), "tags": ("bytes", tags),
        }


COLUMNS = ["label", "price", "age", "hour", "user_id", "item_id", "item_category", "history",
           "history_w", "tags"]


def text_value(kind, values):
    def one(v):
        if kind == "float":
            return repr(float(struct.unpack("<f", struct.pack("<f", v))[0]))
        return str(v)
    return "|".join(one(v) for v in values)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--train_rows", type=int, default=20000)
    p.add_argument("--eval_rows", type=int, default=5000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gzip", action="store_true", help="gzip the TFRecord files")
    p.add_argument("--conversions", action="store_true",
                   help="add the conversion label (present on clicked rows only)")
    args = p.parse_args()
    columns = COLUMNS[:1] + ["conversion"] + COLUMNS[1:] if args.conversions else COLUMNS
    conversions = random.Random(args.seed + 1000) if args.conversions else None
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    weights = {"user": [rng.gauss(0, 0.6) for _ in range(97)],
               "item": [rng.gauss(0, 0.8) for _ in range(211)],
               "cat": [rng.gauss(0, 0.5) for _ in range(CATEGORIES)],
               "tag": [rng.gauss(0, 0.5) for _ in range(TAGS)]}
    for split, n in (("train", args.train_rows), ("eval", args.eval_rows)):
        name = os.path.join(args.out, split + ".tfrecord" + (".gz" if args.gzip else ""))
        opener = gzip.open if args.gzip else open
        with opener(name, "wb") as records, open(os.path.join(args.out, split + ".tsv"), "w") as tsv:
            tsv.write("\t".join(columns) + "\n")
            for row in rows(n, rng, weights, conversions):
                # A missing conversion is an absent key (an empty list would do too).
                present = {k: v for k, v in row.items() if k != "conversion" or v[1]}
                records.write(tfrecord(example(present)))
                tsv.write("\t".join(text_value(*row[c]) for c in columns) + "\n")
        print("wrote %s and %s: %d rows" % (name, os.path.join(args.out, split + ".tsv"), n))


if __name__ == "__main__":
    main()
