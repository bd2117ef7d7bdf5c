#!/usr/bin/env python3
"""The public SparseCore library's host preprocessing on lemrt's workload.

Reads a workload file written by `bench_preprocess --write_workload=FILE`
(the ids BM_Preprocess/N preprocesses: features, samples, SparseCores and
vocabulary in its header) and preprocesses that batch as one chip of the
workload's chips with jax_tpu_embedding's
preprocess_sparse_dense_matmul_input (its C++ core through its Python
binding): one table per feature, SUM, MOD sharding, no minibatching, each
table's max_ids_per_partition at the batch's observed maximum (so no id is
dropped, as lemrt's benchmark sets its limits). Times ROUNDS calls after one
warm-up call in CPU seconds of the process (all its threads) and prints one
JSON object: the ids (before dedup, as lemrt counts them), each round's CPU
and wall seconds, minor page faults, and ids per CPU second (median, best).

Run by scripts/compare_preprocess.sh in the environment of
scripts/install_jax_sc.sh; SPARSECORE_INPUT_PREPROCESSING_THREADS sets the
library's thread count.

  python jax_sc_preprocess.py WORKLOAD [--rounds 5]
"""
import argparse
import json
import resource
import statistics
import time

import numpy as np

DIM = 8  # the tables' width; preprocessing does not read it


def read_workload(path):
  """(features, samples, local_sc, total_sc, vocab, [(offsets, ids)] per feature)."""
  words = np.fromfile(path, dtype="<i8")
  features, samples, local_sc, total_sc, vocab = (int(x) for x in words[:5])
  pos, batch = 5, []
  for _ in range(features):
    offsets = words[pos:pos + samples + 1]
    pos += samples + 1
    ids = words[pos:pos + int(offsets[-1])]
    pos += int(offsets[-1])
    batch.append((offsets, ids))
  if pos != len(words):
    raise SystemExit(f"{path}: {len(words) - pos} words after the last feature; "
                     "not a bench_preprocess workload")
  return features, samples, local_sc, total_sc, vocab, batch


def max_partition_ids(offsets, ids, samples, local_sc, total_sc):
  """The most ids (duplicates included) any (source SC, destination SC) holds."""
  rows = np.repeat(np.arange(samples), np.diff(offsets))
  source = rows // (samples // local_sc)
  return int(np.bincount(source * total_sc + ids % total_sc).max())


def main():
  # Imported here: tests/preprocess_peer_scripts_test.sh checks the readers
  # above without the library.
  from jax_tpu_embedding.sparsecore.lib.core import pybind_input_preprocessing as pre
  from jax_tpu_embedding.sparsecore.lib.nn import embedding
  from jax_tpu_embedding.sparsecore.lib.nn import embedding_spec

  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("workload")
  parser.add_argument("--rounds", type=int, default=5)
  args = parser.parse_args()
  features, samples, local_sc, total_sc, vocab, batch = read_workload(args.workload)
  chips = total_sc // local_sc
  specs, inputs = [], []
  for f, (offsets, ids) in enumerate(batch):
    limit = max_partition_ids(offsets, ids, samples, local_sc, total_sc)
    table = embedding_spec.TableSpec(
        vocabulary_size=vocab, embedding_dim=DIM, initializer=lambda *unused: None,
        optimizer=embedding_spec.SGDOptimizerSpec(), combiner="sum", name=f"t{f}",
        max_ids_per_partition=limit, max_unique_ids_per_partition=limit)
    specs.append(embedding_spec.FeatureSpec(
        name=f"f{f}", table_spec=table, input_shape=[samples * chips, 1],
        output_shape=[samples * chips, DIM]))
    values = ids.astype(np.int32)
    # Ragged: one array of ids per sample (the library's input for
    # variable-length features).
    inputs.append(np.array(np.split(values, offsets[1:-1]), dtype=object))
  embedding.prepare_feature_specs_for_training(specs, global_device_count=chips,
                                               num_sc_per_device=local_sc)

  def call():
    return pre.preprocess_sparse_dense_matmul_input(
        inputs, None, specs, 1, chips, num_sc_per_device=local_sc, allow_id_dropping=False)

  call()  # warm-up
  total_ids = int(sum(int(o[-1]) for o, _ in batch))
  rounds = []
  for _ in range(args.rounds):
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    cpu, wall = time.process_time(), time.perf_counter()
    result = call()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    del result
    rounds.append({"cpu_s": cpu, "wall_s": wall,
                   "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults})
  rates = [total_ids / r["cpu_s"] for r in rounds]
  print(json.dumps({"ids": total_ids, "rounds": rounds,
                    "ids_per_cpu_s_median": statistics.median(rates),
                    "ids_per_cpu_s_best": max(rates)}))


if __name__ == "__main__":
  main()
