#!/usr/bin/env bash
# The emulated chip's numerics and start-up knobs end to end on 2 ranks
# (docs/chip.md). Same model checksum as the default
# run for: on-device table initialisation (sequential and parallel), two
# serialized tables (whose plan stack is lower), narrow-table packing (whose
# plan is smaller); with stacked tables (tests/testdata/stacked_dlrm.pbtxt:
# stacks a+b+c and d+e) serializing 1 or 2 stacks gives the unserialized
# checksum on 1 and 2 ranks, the summary's memory.stacks names each stack's
# tables and its peak stack follows the serialized stacks; simulated quantization trains to a different model;
# --eval_quantized reports the int8 AUC change and bytes saved; Adam with
# forced minibatching trains the same model as without (one Adam step per
# training step); model.dense_dtype: BF16 trains (the loss falls) to one
# checksum in two runs, or, on a CPU without avx512_bf16 or AMX, stops with
# the sentence saying so. Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
small="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
base="training { steps: 10 eval_samples: 384 }"
narrow='tables { name: "n" vocab_size: 4000 dim: 2 combiner: SUM } features { name: "n1" table: "n" max_sequence_length: 2 }'
# Variants of the small config: table a quantized; every table with Adam.
sed 's/name: "a" vocab_size: 20000 dim: 16 combiner: SUM/& quantization { num_buckets: 16 low: -0.04 high: 0.04 }/' \
  "$small" > "$work/quantized.pbtxt"
sed -e 's/optimizer { adagrad {} }//' -e 's/combiner: \([A-Z]*\)/combiner: \1 optimizer { adam {} learning_rate: 0.01 }/' \
  "$small" > "$work/adam.pbtxt"
grep -q "quantization {" "$work/quantized.pbtxt" && [ "$(grep -c 'adam {}' "$work/adam.pbtxt")" -eq 3 ] \
  || { echo "FAIL could not derive the test configs"; exit 1; }
failed=0
run() {  # run NAME CONFIG OVERRIDE [FLAGS...]: trains on $NP (default 2) ranks
  local name="$1" config="$2" override="$3"; shift 3
  if ! timeout 200 mpirun --oversubscribe --bind-to none -np "${NP:-2}" "$LEMRT_BIN/lemrt_train" \
       --config="$config" --override="$base $override" --summary_json="$work/$name.json" "$@" \
       > "$work/$name.log" 2>&1; then
    echo "FAIL run $name"; cat "$work/$name.log"; failed=$((failed + 1))
  fi
}
run base "$small" "" --eval_quantized
run device "$small" "sparse_core { initialize_tables_on_host: false }"
run fast "$small" "sparse_core { enable_fast_table_initialization: true tile_threads: 2 }"
run serialized "$small" "sparse_core { xla_sc_num_serialized_tables_to_optimize_hbm: 2 }"
run narrow "$small" "$narrow"
run packed "$small" "$narrow sparse_core { pack_narrow_tables: true }"
run quantized "$work/quantized.pbtxt" ""
run adam "$work/adam.pbtxt" "data { synthetic { zipf_fraction: 0.2 } }"
run adam_split "$work/adam.pbtxt" "data { synthetic { zipf_fraction: 0.2 } } sparse_core { max_unique_ids_per_partition: 8 }"
stacked="$LEMRT_SRC/tests/testdata/stacked_dlrm.pbtxt"
for np in 1 2; do
  NP=$np run "stacked_np$np" "$stacked" ""
  NP=$np run "stacked_ser1_np$np" "$stacked" "sparse_core { xla_sc_num_serialized_tables_to_optimize_hbm: 1 }"
done
NP=2 run stacked_ser2_np2 "$stacked" "sparse_core { xla_sc_num_serialized_tables_to_optimize_hbm: 2 }"
if timeout 100 mpirun --oversubscribe --bind-to none -np 1 "$LEMRT_BIN/lemrt_train" --config="$small" \
     --override="$narrow sparse_core { pack_narrow_tables: true }" --dry_run > "$work/dry.log" 2> "$work/dry.err" \
   && grep -q "Narrow-table packing (pack_narrow_tables) saves" "$work/dry.log" \
   && grep -q "(packed, 4 rows per line)" "$work/dry.log"; then
  echo "ok   --dry_run shows the packed table and $(grep -o 'saves [0-9]* B' "$work/dry.log")"
else
  echo "FAIL --dry_run with pack_narrow_tables"; cat "$work/dry.log" "$work/dry.err"; failed=$((failed + 1))
fi
# bf16 dense products: twice the same run where the CPU has them; the
# refusal with oneDNN held below avx512_bf16 (DNNL_MAX_CPU_ISA), on any CPU.
bf16dense="model { dense_dtype: BF16 } training { steps: 40 log_every: 10 }"
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  run bf16dense "$small" "$bf16dense" --metrics_csv="$work/bf16dense.csv"
  run bf16dense_again "$small" "$bf16dense"
  python3 - "$work" <<'PY' || failed=$((failed + 1))
import csv, json, sys
w = sys.argv[1]
a, b = (json.load(open(f"{w}/{n}.json")) for n in ("bf16dense", "bf16dense_again"))
loss = [float(r["loss"]) for r in csv.DictReader(open(f"{w}/bf16dense.csv"))]
ok = (a["model_checksum"] == b["model_checksum"] and len(loss) == 4 and loss[-1] < loss[0] - 0.03
      and "bf16 products" in a["threads"]["gemm_backend"])
print(("ok   " if ok else "FAIL ") + f"bf16 dense: checksum {a['model_checksum']} twice "
      f"({b['model_checksum']}), loss {loss}, backend {a['threads']['gemm_backend']!r}")
sys.exit(0 if ok else 1)
PY
else
  echo "note this CPU lacks avx512_bf16 and AMX: bf16 dense training not run"
fi
if DNNL_MAX_CPU_ISA=AVX512_CORE timeout 100 mpirun --oversubscribe --bind-to none -x DNNL_MAX_CPU_ISA \
       -np 2 "$LEMRT_BIN/lemrt_train" --config="$small" --override="$base $bf16dense" \
       > "$work/bf16refused.log" 2>&1 \
   || [ "$(grep -c "error: model.dense_dtype: BF16 needs a CPU with avx512_bf16 or AMX" \
          "$work/bf16refused.log")" -ne 2 ]; then
  echo "FAIL bf16 dense below avx512_bf16: no refusal on both ranks"; cat "$work/bf16refused.log"
  failed=$((failed + 1))
else
  echo "ok   bf16 dense below avx512_bf16: both ranks refuse with the sentence"
fi
grep -q "int8 tables (int8 per row" "$work/base.log" \
  || { echo "FAIL --eval_quantized logged no int8 line"; cat "$work/base.log"; failed=$((failed + 1)); }
grep -q "tables initialised (host) in" "$work/base.log" \
  || { echo "FAIL no start-up line"; failed=$((failed + 1)); }
grep -q "start-up [0-9.]* s to the first step (slowest rank [01]): launch [0-9.]* s, plan" "$work/base.log" \
  || { echo "FAIL no start-up breakdown line"; failed=$((failed + 1)); }
[ "$failed" -eq 0 ] || exit 1

python3 - "$work" "$small" <<'PY'
import json, math, re, sys
w, small = sys.argv[1], sys.argv[2]
s = {n: json.load(open(f"{w}/{n}.json")) for n in
     ["base", "device", "fast", "serialized", "narrow", "packed", "quantized", "adam", "adam_split",
      "stacked_np1", "stacked_ser1_np1", "stacked_np2", "stacked_ser1_np2", "stacked_ser2_np2"]}
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fails.append(what)
b = s["base"]["model_checksum"]
for n, mode in [("base", "host"), ("device", "device"), ("fast", "device_parallel")]:
    st = s[n].get("startup", {})
    check(st.get("table_init_mode") == mode and st.get("table_init_ms", -1) >= 0,
          f"{n}: startup {st}")
    # The breakdown (docs/observability.md "Start-up"): phases >= 0 adding up
    # to the total, launch (the process's start to the trainer) included.
    phases = [st.get(p + "_ms", 0) for p in
              ["launch", "plan", "data_source", "allocation", "table_fill", "step_buffers", "run_start"]]
    check(min(phases) >= 0 and st.get("launch_ms", 0) > 0 and st.get("total_ms", 0) > 0
          and abs(sum(phases) - st["total_ms"]) <= 1e-9 * st["total_ms"]
          and st.get("slowest_rank", 0) in (0, 1) and st.get("threads", 0) >= 1,
          f"{n}: start-up phases {phases} add up to total_ms {st.get('total_ms')}")
    check(s[n]["model_checksum"] == b, f"{n}: checksum {s[n]['model_checksum']} == default {b}")
check(s["serialized"]["model_checksum"] == b,
      f"2 serialized tables: checksum {s['serialized']['model_checksum']} == {b}")
m0, m1 = s["base"]["memory"], s["serialized"]["memory"]
check(m1["hbm_stack_bytes"] < m0["hbm_stack_bytes"],
      f"serialized plan stack {m1['hbm_stack_bytes']:.0f} B < {m0['hbm_stack_bytes']:.0f} B")
check(s["packed"]["model_checksum"] == s["narrow"]["model_checksum"],
      f"packing: checksum {s['packed']['model_checksum']} == unpacked {s['narrow']['model_checksum']}")
saved = s["packed"]["memory"].get("packing_saved_bytes", 0)
# Table n: vocab 4000 on 2 chips x 4 SparseCores = 2000 rows per chip, one
# 32-byte line each unpacked, 4 per line packed; SGD has no slots.
check(saved == 2000 * 32 - 500 * 32, f"packing saves {saved:.0f} B per chip (dim-2 table)")
check(s["narrow"]["memory"]["hbm_bytes_per_chip"] - s["packed"]["memory"]["hbm_bytes_per_chip"] == saved,
      "the plan's HBM per chip goes down by the saved bytes")
q = s["quantized"]
check(q["model_checksum"] != b and math.isfinite(q["train"]["loss_last"]) and q["eval"]["auc"] > 0.5,
      f"simulated quantization trains (auc {q['eval']['auc']:.4f}, loss {q['train']['loss_last']:.4f}) "
      f"to another model ({q['model_checksum']} != {b})")
e = s["base"].get("quantized_eval", {})
fp32 = sum(int(v) * int(d) * 4 for v, d in re.findall(r'vocab_size: (\d+)\s+dim: (\d+)', open(small).read()))
int8 = sum(int(v) * (int(d) + 8) for v, d in re.findall(r'vocab_size: (\d+)\s+dim: (\d+)', open(small).read()))
check(e.get("table_bytes_fp32") == fp32 and e.get("table_bytes_int8") == int8
      and e.get("bytes_saved") == fp32 - int8, f"int8 bytes {e.get('table_bytes_fp32')} -> "
      f"{e.get('table_bytes_int8')} (saved {e.get('bytes_saved')})")
check("auc" in e and abs(e["auc"] - (s["base"]["eval"]["auc"] + e.get("auc_change", 0))) < 1e-9
      and abs(e.get("auc_change", 1)) < 0.02 and 0 < e.get("max_abs_error", 0) < 0.01,
      f"int8 eval auc {e.get('auc')} change {e.get('auc_change')} max error {e.get('max_abs_error')}")
a, sp = s["adam"], s["adam_split"]
mb = sp.get("preprocess", {}).get("max_minibatches", 1)
check(mb > 1, f"forced limits split steps into up to {mb} minibatches")
for key, get in [("params_l2", lambda j: j["params_l2"]), ("eval.logloss", lambda j: j["eval"]["logloss"])]:
    x, y = get(a), get(sp)
    rel = abs(x - y) / max(abs(x), abs(y), 1e-30)
    check(rel < 1e-5, f"Adam, minibatched vs not: {key} {x!r} vs {y!r} (rel {rel:.1e})")
# Serialization runs whole stacks: same model as the stacks together, on 1
# and 2 ranks; the plan's peak stack follows the same grouping.
def peak(stacks):
    out = 0
    for key in ("stack_forward_bytes", "stack_backward_bytes"):
        together = sum(x[key] for x in stacks if not x.get("serialized", False))
        alone = max([x[key] for x in stacks if x.get("serialized", False)] or [0])
        out = max(out, together, alone)
    return out
for np, runs in [(1, ["stacked_ser1_np1"]), (2, ["stacked_ser1_np2", "stacked_ser2_np2"])]:
    ref = s[f"stacked_np{np}"]
    for n in runs:
        check(s[n]["model_checksum"] == ref["model_checksum"],
              f"{n}: checksum {s[n]['model_checksum']} == unserialized stacked {ref['model_checksum']}")
for n in ["stacked_np2", "stacked_ser1_np2", "stacked_ser2_np2"]:
    m = s[n]["memory"]
    st = m.get("stacks", [])
    names = [(x["name"], x["tables"], x.get("serialized", False)) for x in st]
    check([x["tables"] for x in st] == [["a", "b", "c"], ["d", "e"]] and
          m["hbm_stack_bytes"] == peak(st),
          f"{n}: memory.stacks {names}, peak stack {m['hbm_stack_bytes']:.0f} B")
ser = [x.get("serialized", False) for x in s["stacked_ser1_np2"]["memory"]["stacks"]]
check(ser == [True, False], f"1 serialized stack is a+b+c (largest stack term): {ser}")
check(s["stacked_ser1_np2"]["memory"]["hbm_stack_bytes"] < s["stacked_np2"]["memory"]["hbm_stack_bytes"],
      "serializing a stack lowers the plan's peak stack")
a3 = s["stacked_np2"]["memory"]["stacks"][0]
# a+b+c on 2 chips x 4 SCs: features a1, a2, b1, c1 (1 + 4 + 2 + 1 ids), batch 192
# = 24 samples per SparseCore.
check(a3["features"] == 4 and a3["ids_per_sample"] == 8 and a3["padded_dim"] == 16
      and a3["gather_operand_bytes"] == 192 // 8 * 4 * 16 * 4 / 16,
      f"stack a+b+c: {a3['features']} features, {a3['ids_per_sample']} ids per sample, "
      f"gather operand {a3['gather_operand_bytes']:.0f} B per tile")
sys.exit(1 if fails else 0)
PY
