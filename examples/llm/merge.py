"""Adds the runs of one `run.py` folder to another made with the same settings, as `--resume` would
have, had the second run been pointed at the first folder.

    python3 examples/llm/merge.py INTO FROM

Use it when a new sampler was run on the seeds of a committed run into a folder of its own (so the
committed folder stayed untouched while it ran): every run of FROM must have been trained with
INTO's settings (all but the seed, checked as `--resume` checks them) and no (seed, sampler) pair
may be in both. INTO's results.json, summary.md and charts are rewritten with every run of both;
its invocations gain FROM's, each marked with the folder it wrote to, so the file still says which
command made which run and on which machine state.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import as_run, summarize  # noqa: E402
from run import report, resumable  # noqa: E402
from train import Config  # noqa: E402


def merge(into: Path, src: Path) -> dict:
    base = json.loads((into / "results.json").read_text())
    added = json.loads((src / "results.json").read_text())
    if base.get("task") != added.get("task") or base.get("profile") != added.get("profile"):
        raise SystemExit("%s and %s ran different tasks or profiles" % (into, src))
    settings = {k: v for k, v in as_run(base["config"]).items() if k != "seed"}
    # Every run of both folders against INTO's settings, as run.py --resume checks a kept run.
    resumable(base, Config(seed=base["config"]["seed"], **settings), into, default_rows=False)
    resumable(added, Config(seed=base["config"]["seed"], **settings), src, default_rows=False)
    # One row name, one rule: a row that follows the library's default ran under whatever rule
    # that was, and the two folders may have run at either side of a change of default.
    rules: dict[str, str] = {}
    for r in base["runs"] + added["runs"]:
        if rules.setdefault(r["sampler"], r.get("rule")) != r.get("rule"):
            raise SystemExit("the %s row ran under rule %s in one folder and %s in the other (seed %d)" % (
                r["sampler"], rules[r["sampler"]], r.get("rule"), r["seed"]))
    have = {(r["seed"], r["sampler"]) for r in base["runs"]}
    both = sorted(p for p in ((r["seed"], r["sampler"]) for r in added["runs"]) if p in have)
    if both:
        raise SystemExit("seed %d's %s run is in both folders" % both[0])
    if not added.get("finished"):
        raise SystemExit("%s: the run did not finish (results.json says finished: false)" % src)
    samplers = list(dict.fromkeys([r["sampler"] for r in base["runs"]] + [r["sampler"] for r in added["runs"]]))
    runs = sorted(base["runs"] + added["runs"], key=lambda r: (r["seed"], samplers.index(r["sampler"])))
    invocations = (base.get("invocations") or [{"command": base["command"], "machine": base["machine"]}])
    more = added.get("invocations") or [{"command": added["command"], "machine": added["machine"]}]
    invocations = invocations + [{**i, "merged_from": str(src)} for i in more]
    base.update(
        command=" ; ".join([i["command"] for i in invocations] + ["python3 examples/llm/merge.py %s %s" % (into, src)]),
        invocations=invocations,
        machine=invocations[-1]["machine"],  # the summary's machine line names the last invocation, as run.py's does
        seeds_asked=max(base.get("seeds_asked", 0), added.get("seeds_asked", 0)),
        decoder_gap=max(r["decoder_gap"] for r in runs),
        runs=runs,
        summary=summarize(runs, samplers),
    )
    return base


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("into", type=Path)
    ap.add_argument("src", type=Path, metavar="from")
    args = ap.parse_args()
    result = merge(args.into, args.src)
    (args.into / "results.json").write_text(json.dumps(result, separators=(",", ":")) + "\n")
    return report(args.into, result)


if __name__ == "__main__":
    sys.exit(main())
