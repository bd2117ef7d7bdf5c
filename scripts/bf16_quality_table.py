#!/usr/bin/python3
"""The tables of scripts/bf16_quality.sh from its summaries (OUT/V_SEED.json,
V with '@' written '_np'): per seed the final eval AUC of each variant and its
difference to its reference, and the log losses; then per variant the mean
difference (with its standard error: sd / sqrt(seeds)), the median, the spread,
how many seeds lie within TOLERANCE (0.001 AUC), and whether the mean does.

The reference of a variant NAME@N is fp32@N when VARIANTS has it, else fp32;
of any other variant, fp32.

Usage: scripts/bf16_quality_table.py OUT "VARIANTS" SEED [SEED ...]
"""
import json
import statistics
import sys

TOLERANCE = 0.001


def reference(variant, variants):
    if "@" in variant and variant != "fp32@" + variant.split("@")[1]:
        same_size = "fp32@" + variant.split("@")[1]
        if same_size in variants:
            return same_size
    return "fp32"


def summary_line(variant, ref, aucs, losses, seeds):
    d = [aucs[(variant, k)] - aucs[(ref, k)] for k in seeds]
    dl = [losses[(variant, k)] - losses[(ref, k)] for k in seeds]
    mean = statistics.mean(d)
    sd = statistics.stdev(d) if len(d) > 1 else 0.0
    within = sum(abs(x) <= TOLERANCE for x in d)
    verdict = "within" if abs(mean) <= TOLERANCE else "NOT within"
    return ("%s - %s AUC: mean %+.5f (standard error %.5f), median %+.5f, sd %.5f, min %+.5f, "
            "max %+.5f; %d of %d seeds within %g; log loss mean %+.5f; mean %s %g" %
            (variant, ref, mean, sd / len(d)**0.5, statistics.median(d), sd, min(d), max(d), within,
             len(d), TOLERANCE, statistics.mean(dl), verdict, TOLERANCE))


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("\n\n")[-1].strip())
    out, variants, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
    aucs, losses = {}, {}
    for v in variants:
        for k in seeds:
            path = "%s/%s_%s.json" % (out, v.replace("@", "_np"), k)
            try:
                e = json.load(open(path))["eval"]
            except (OSError, ValueError, KeyError) as err:
                sys.exit("%s: no eval result (%s)" % (path, err))
            if "auc" not in e:  # absent: a stopped run, or a one-class / empty eval set
                sys.exit("%s: no eval AUC (the run was stopped, or its eval set has one class "
                         "or no rows)" % path)
            aucs[(v, k)], losses[(v, k)] = e["auc"], e["logloss"]
    others = [v for v in variants if v != "fp32"]
    print("| seed | fp32 AUC | " + " | ".join("%s AUC (diff)" % v for v in others) +
          " | log loss " + " / ".join(variants) + " |")
    print("| --- " * (len(others) + 3) + "|")
    for k in seeds:
        cells = ["%.4f (%+.4f)" % (aucs[(v, k)], aucs[(v, k)] - aucs[(reference(v, variants), k)])
                 for v in others]
        print("| %s | %.4f | %s | %s |" % (k, aucs[("fp32", k)], " | ".join(cells),
                                          " / ".join("%.4f" % losses[(v, k)] for v in variants)))
    for v in others:
        print(summary_line(v, reference(v, variants), aucs, losses, seeds))


if __name__ == "__main__":
    main()
