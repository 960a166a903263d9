"""t26 in the simulations: v5 and independent chains under TreeRL's published per-leaf credit
(`treerl-leaf`) and under the same credit with branch-mean values (`treerl-branch`), paired by
seed; points of final success, mean [95% t-interval], * separable.

    python3 examples/llm/results/tuning/t26-sim-branch-credit/compare.py            # both seed sets

Tuning seeds 300–319: the branch rows are this folder's `tuning-*.json`, the TreeRL rows the
released v5 and chains of the same seeds (`../t16-sim-gate/gate-visits2.json`,
`../t10-sim-base-share/indep.json`). Seeds 1–40 (the evaluation's reported seeds, trained here
as the tuning scripts train, 400 final episodes): `seeds-1-40-*.json` hold both credits.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from stats import mean_interval, signed  # noqa: E402

ORDER = ["maze", "navigation", "dependency", "toolagent", "twochoice", "midchoice", "mixed", "twoclean"]


def load(path: Path, learner: str) -> dict:
    return {(r["env"], r["seed"]): r["final"] for r in json.loads(path.read_text()) if r["learner"] == learner}


def cell(a: dict, b: dict, env: str) -> str:
    return signed(mean_interval([100 * (a[k] - b[k]) for k in a if k[0] == env and k in b]))


def table(title: str, v5: dict, chains: dict, v5b: dict, chainsb: dict) -> None:
    same = sum(chains[k] == chainsb[k] for k in chainsb)
    print("%s (chains: %d of %d finals identical under both credits)\n" % (title, same, len(chainsb)))
    print("| task | v5 − chains, TreeRL's credit | v5 − chains, branch means | v5, branch means − TreeRL's |")
    print("|---|---|---|---|")
    for env in ORDER:
        print("| %s | %s | %s | %s |" % (env, cell(v5, chains, env), cell(v5b, chainsb, env), cell(v5b, v5, env)))
    print()


def main() -> None:
    t16, t10 = HERE.parent / "t16-sim-gate" / "gate-visits2.json", HERE.parent / "t10-sim-base-share" / "indep.json"
    table("Tuning seeds 300–319, TreeRL learners", load(t16, "treerl-leaf"), load(t10, "treerl-leaf"),
          load(HERE / "tuning-v5-branch.json", "treerl-branch"), load(HERE / "tuning-indep-branch.json", "treerl-branch"))
    v5, ch = HERE / "seeds-1-40-v5.json", HERE / "seeds-1-40-indep.json"
    table("Seeds 1–40", load(v5, "treerl-leaf"), load(ch, "treerl-leaf"), load(v5, "treerl-branch"), load(ch, "treerl-branch"))


if __name__ == "__main__":
    main()
