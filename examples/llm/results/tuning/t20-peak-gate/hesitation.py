"""How much the policy's hesitation stands out in a tree (t20), from hesitation_lm.py's JSON
lines and hesitation_sim.ts's JSON: per tree-plan, the mean next-turn entropy of the 2 nodes
entropy forking would pick (unforked first, highest entropy) over the mean of every node with
entropy > 0 that a base share could use; its median and 10th-90th percentiles; the share of
tree-plans where it reaches 1.5 (where the peak gate opens); and the picks' depth over the
tree's mean finished depth.

    python3 examples/llm/results/tuning/t20-peak-gate/hesitation.py /tmp/sim.json calculator.jsonl.gz recipe.jsonl.gz

(from the folder; /tmp/sim.json as hesitation_sim.ts writes it)
"""

import gzip
import json
import statistics
import sys


def ratios(records):
    peak, depth = [], []
    for r in records:
        e = r["ents"]
        pos = [i for i in range(len(e)) if e[i] > 0]
        if not pos:
            continue
        mean = sum(e[i] for i in pos) / len(pos)
        picks = sorted(pos, key=lambda i: (r["forked"][i], -e[i]))[:2]
        peak.append(sum(e[i] for i in picks) / len(picks) / mean)
        depth.append(sum(r["depth"][i] for i in picks) / len(picks) / r["leaf_depth"])
    return peak, depth


def spread(x):
    s = sorted(x)
    return "%.2f [%.2f, %.2f]" % (statistics.median(s), s[len(s) // 10], s[9 * len(s) // 10])


def main():
    print("| where | tree-plans | top 2 / mean entropy | share ≥ 1.5 | depth of the picks / finished depth |")
    print("|---|---|---|---|---|")
    for path in sys.argv[1:]:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as fh:
            data = [json.loads(x) for x in fh] if ".jsonl" in path else json.load(fh)
        groups = data.items() if isinstance(data, dict) else [(path.rsplit("/", 1)[-1].split(".")[0], data)]
        for name, records in groups:
            peak, depth = ratios(records)
            print("| %s | %d | %s | %.3f | %s |" % (name, len(peak), spread(peak), sum(p >= 1.5 for p in peak) / len(peak), spread(depth)))


if __name__ == "__main__":
    main()
