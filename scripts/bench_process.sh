#!/usr/bin/env bash
# adaptsim's whole process against the straightforward loop's (scripts/bench_loop.py --alone), user + system CPU:
# `full` on the first 40 TED segments with small-ende-probe, one thread (docs/performance.md, "As a whole process").
#
#   bash scripts/bench_process.sh                  # alternating: one process at a time
#   SIDE_BY_SIDE=1 bash scripts/bench_process.sh   # both at once, each pinned to a core, cores swapped every round
#   LOOP=naive bash scripts/bench_process.sh       # against ../shared/bench/naive_loop.py, a leaner loop (no perplexity
#                                                  # after the last update; it writes no hypotheses to compare)
#
# Prints each round's CPU seconds and ratio, then the medians; checks that the hypotheses are the same.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
export ADAPTSIM_SHARED=$SHARED
MODEL=$SHARED/models/small-ende-probe DATA=$SHARED/data/ted/iwslt17.tst2016.en-de.tsv
ROUNDS=${ROUNDS:-8} SEGMENTS=${SEGMENTS:-40}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
cpu() { /usr/bin/time -f "%U %S" -o "$1" "${@:2}" >/dev/null 2>&1; }
for i in $(seq "$ROUNDS"); do
  a=(); b=()
  if [ "${SIDE_BY_SIDE:-0}" = 1 ]; then a=(taskset -c $((i % 2))); b=(taskset -c $((1 - i % 2))); fi
  adaptsim=(cpu "$OUT/adaptsim" "${a[@]}" python -m adaptsim bench model=small-ende-probe dataset=ted segments="$SEGMENTS"
            threads=1 method=full progress=false hydra.run.dir="$OUT/run$i")
  if [ "${LOOP:-}" = naive ]; then
    loop=(cpu "$OUT/loop" "${b[@]}" env OMP_NUM_THREADS=1 python "$SHARED/bench/naive_loop.py" "$MODEL" "$DATA" "$SEGMENTS" 5)
  else
    loop=(cpu "$OUT/loop" "${b[@]}" python scripts/bench_loop.py --model "$MODEL" --data "$DATA" --segments "$SEGMENTS"
          --alone "$OUT/loop$i.txt")
  fi
  if [ "${SIDE_BY_SIDE:-0}" = 1 ]; then "${adaptsim[@]}" & "${loop[@]}" & wait; else "${adaptsim[@]}"; "${loop[@]}"; fi
  [ "${LOOP:-}" = naive ] || cmp -s "$OUT/run$i/hyps.txt" "$OUT/loop$i.txt" || echo "round $i: the hypotheses differ" >&2
  awk -v i="$i" 'FNR == 1 { t[++n] = $1 + $2 } END { printf "round %d: adaptsim %.2f s, loop %.2f s, ratio %.3f\n", i, t[1], t[2], t[1] / t[2] }' \
    "$OUT/adaptsim" "$OUT/loop" | tee -a "$OUT/rounds"
done
awk '{ a[NR] = $4; l[NR] = $7; r[NR] = $10 } function med(x, n,  i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
     return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
     END { printf "medians: adaptsim %.2f s, loop %.2f s, ratio %.3f (%d rounds)\n", med(a, NR), med(l, NR), med(r, NR), NR }' "$OUT/rounds"
