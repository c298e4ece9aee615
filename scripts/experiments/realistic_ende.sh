#!/usr/bin/env bash
# The paper's comparison on real English–German data, in the paper's setting, with adaptsim's own commands.
#
#   bash scripts/experiments/realistic_ende.sh            # from the repository root, ../shared beside it
#
# 0. data splits (scripts/experiments/prepare_ende.py): ape-it (WMT16/17 APE, IT; the post-edit is the reference)
#    in file order, in blocks of APE_BLOCK triplets: the first APE_TEST_BLOCKS are a test stream, the next
#    APE_HELDOUT_BLOCKS held out for choosing settings, the rest joins general/ as training pairs (source →
#    post-edit); held-out GNOME help topics (GNOME_HELDOUT, HELDOUT_SEGMENTS each) plus those ape-it blocks
#    make heldout.tsv;
# 1. train an en→de base model on general/train + the ape-it training pairs (validation: newstest2018), and
#    translate all of newstest2018 with it (its BLEU, beam 5);
# 2. choose on heldout.tsv only, never on a test stream: `fixed`'s tensor list (select-fixed) and `lasso`'s λ
#    and budget (a grid, one stream, by R0+1: lasso's aim); what was tried goes to $RESULTS/selection.md;
# 3. the six methods (+experiment=paper_methods: one stream per test set, reset=never, corpus scope) on the
#    whole TED talks, on GNOME help as one stream of topics (GNOME_TEST) and on the ape-it test blocks, in
#    lockstep (one process per data set, JOBS of them at once);
# 4. tables (absolute, relative; † = paired bootstrap p < 0.05 over documents: talks, topics, ape-it blocks;
#    ms per update and bytes per stored document) and curves with 95% bands into $RESULTS.
# Model weights go to the cache directory (MODEL_PATH), never into git; run outputs to $SWEEPS (they hold the
# test text: not committed). Every step is seeded. Run it again after an interruption: training resumes from its
# last checkpoint, finished runs are left alone and interrupted ones resume where they stopped. The wall time of
# each stage of the last invocation goes to $RESULTS/timing.tsv (an uninterrupted run's is the total).
#
# Settings (environment), defaults in brackets:
#   MODEL            a configs/model entry with an arch block [realistic-cpu; on a GPU: paper-transformer]
#   MODEL_NAME       the model's name in the outputs, and the fixed list's: configs/fixed_lists/<name>.yaml, or
#                    a path ending in .yaml [$MODEL]
#   MODEL_OVERRIDES  more overrides of the model for training and every run, e.g. a joint tied vocabulary:
#                    "model.vocab.shared=true model.arch.share_encoder_decoder_embeddings=true
#                    model.arch.tie_word_embeddings=true" [none]
#   TRAIN_OVERRIDES  more overrides for training only, e.g. "train.batch_tokens=8192" [none]
#   VOCAB            sentencepiece pieces (per side, or joint) [8000]
#   MAX_STEPS        training updates [7500: about two hours of two cores for realistic-cpu, by bench_train.py]
#   LR, WARMUP       peak learning rate and the steps of warm-up to it [1e-3, 1000]
#   VALID_EVERY      validate and checkpoint every N steps [500]
#   TRAIN_PAIRS      use only the first N ape-it training pairs [all]
#   MODEL_PATH       where the model is saved [~/.cache/adaptsim/models/realistic_ende-$MODEL]
#   DEVICE           cpu | cuda [cpu]
#   APE_BLOCK, APE_TEST_BLOCKS, APE_HELDOUT_BLOCKS   [100, 20, 5: a 2,000-segment test stream]
#   GNOME_TEST       the GNOME help topics of the test stream, in file order [printing,power,color,disk,mouse]
#   GNOME_HELDOUT    held-out GNOME topics [a11y,user,bluetooth,sound,backup,sharing]
#   HELDOUT_SEGMENTS segments of each held-out GNOME topic [60]
#   LASSO_LAMS, LASSO_BUDGETS   lasso's grid: λ and method.budget_fraction [0.01,0.1,0.5 and 0.065,0.13,0.26]
#   MAX_SEGMENTS     first N segments of each talk / topic / block (quick trials) [all]
#   DEV_SEGMENTS     first N segments of newstest2018 for the base model's BLEU (quick trials) [all]
#   JOBS             data sets swept at once, one thread each [2]
#   RESULTS, SWEEPS  where tables, plots and figures go / where the runs go [docs/results, outputs/realistic_ende]
set -euo pipefail
cd "$(dirname "$0")/../.."

SHARED=${ADAPTSIM_SHARED:-$(cd .. && pwd)/shared}
MODEL=${MODEL:-realistic-cpu}
MODEL_NAME=${MODEL_NAME:-$MODEL}
read -r -a MODEL_OVERRIDES <<<"${MODEL_OVERRIDES:-}"
read -r -a TRAIN_OVERRIDES <<<"${TRAIN_OVERRIDES:-}"
VOCAB=${VOCAB:-8000}
MAX_STEPS=${MAX_STEPS:-7500}
LR=${LR:-1e-3}
WARMUP=${WARMUP:-1000}
VALID_EVERY=${VALID_EVERY:-500}
DEVICE=${DEVICE:-cpu}
APE_BLOCK=${APE_BLOCK:-100}
APE_TEST_BLOCKS=${APE_TEST_BLOCKS:-20}
APE_HELDOUT_BLOCKS=${APE_HELDOUT_BLOCKS:-5}
GNOME_TEST=${GNOME_TEST:-printing,power,color,disk,mouse}
GNOME_HELDOUT=${GNOME_HELDOUT:-a11y,user,bluetooth,sound,backup,sharing}
HELDOUT_SEGMENTS=${HELDOUT_SEGMENTS:-60}
LASSO_LAMS=${LASSO_LAMS:-0.01,0.1,0.5}
LASSO_BUDGETS=${LASSO_BUDGETS:-0.065,0.13,0.26}
JOBS=${JOBS:-2}
RESULTS=${RESULTS:-docs/results}
SWEEPS=${SWEEPS:-outputs/realistic_ende}
export ADAPTSIM_SHARED=$SHARED

[ -d "$SHARED/data/general" ] || { echo "realistic_ende.sh: $SHARED/data/general not found (set ADAPTSIM_SHARED)" >&2; exit 1; }
mkdir -p "$RESULTS" "$SWEEPS"
RESULTS=$(cd "$RESULTS" && pwd)
SWEEPS=$(cd "$SWEEPS" && pwd)
DATA=$SWEEPS/data
MODEL_PATH=${MODEL_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/adaptsim/models/realistic_ende-$MODEL}
COMMON=(model="$MODEL" model.name="$MODEL_NAME" model.path="$MODEL_PATH" "${MODEL_OVERRIDES[@]}"
        model.vocab.size="$VOCAB" device="$DEVICE" progress=false)
SKIP=(dataset.on_too_long=skip)  # GNOME help has a 288-token reference; skipped segments are counted in summary.json
LIMIT=(${MAX_SEGMENTS:+dataset.max_segments=$MAX_SEGMENTS})
METHODS=none,full,bias,fixed,top,lasso_heldout  # lasso with the λ and budget of step 2
STAGE_START=$SECONDS
printf 'stage\tseconds\n' >"$RESULTS/timing.tsv"
stage_done() { printf '%s\t%d\n' "$1" $((SECONDS - STAGE_START)) >>"$RESULTS/timing.tsv"; STAGE_START=$SECONDS; }

echo "== 0. data splits → $DATA"
python scripts/experiments/prepare_ende.py "$DATA" --ape-block "$APE_BLOCK" --ape-test-blocks "$APE_TEST_BLOCKS" \
  --ape-heldout-blocks "$APE_HELDOUT_BLOCKS" --heldout-topics "$GNOME_HELDOUT" \
  --heldout-segments "$HELDOUT_SEGMENTS" ${TRAIN_PAIRS:+--train-pairs "$TRAIN_PAIRS"}
cp "$DATA/split.json" "$RESULTS/split.json"
HELDOUT=(dataset=tsv dataset.name=heldout dataset.path="$DATA/heldout.tsv" dataset.on_duplicate_id=keep "${SKIP[@]}")
stage_done data

echo "== 1. base model: $MODEL → $MODEL_PATH"
python -m adaptsim train "${COMMON[@]}" train.source="$DATA/train.en" train.target="$DATA/train.de" \
  train.valid_source="$SHARED/data/general/dev.en" train.valid_target="$SHARED/data/general/dev.de" \
  train.max_steps="$MAX_STEPS" train.lr="$LR" train.warmup="$WARMUP" train.valid_every="$VALID_EVERY" \
  train.resume=true "${TRAIN_OVERRIDES[@]}" hydra.run.dir="$SWEEPS/train/$(date +%Y-%m-%d_%H-%M-%S)"
stage_done train

echo "== 1b. the base model on general/dev (newstest2018, beam 5, no adaptation), beside step 2"
{ python -m adaptsim run "${COMMON[@]}" threads=1 method=none dataset=plain dataset.path="$SHARED/data/general/dev" \
    dataset.name=general_dev ${DEV_SEGMENTS:+dataset.max_segments=$DEV_SEGMENTS} "${SKIP[@]}" resume=true \
    hydra.run.dir="$SWEEPS/general_dev" >"$SWEEPS/general_dev.log" 2>&1
  python -c "import json,sys; print('general/dev BLEU %.1f' % json.load(open(sys.argv[1]))['scores']['BLEU'])" \
    "$SWEEPS/general_dev/summary.json" >"$RESULTS/general_dev_bleu.txt"; } &
DEV=$!

echo "== 2. settings chosen on held-out data ($DATA/heldout.tsv)"
# fixed: writes configs/fixed_lists/$MODEL_NAME.yaml, which method=fixed reads for this model (it checks names and
# shapes)
if ! grep -qs '"status": "finished"' "$SWEEPS/select_fixed/summary.json"; then
  rm -rf "$SWEEPS/select_fixed"
  python -m adaptsim select-fixed "${COMMON[@]}" "${HELDOUT[@]}" threads=1 hydra.run.dir="$SWEEPS/select_fixed"
fi
python -m adaptsim run -m +experiment=paper_methods method=lasso method.lam="$LASSO_LAMS" \
  method.budget_fraction="$LASSO_BUDGETS" "${COMMON[@]}" "${HELDOUT[@]}" hydra/launcher=lockstep threads=1 \
  resume=true hydra.sweep.dir="$SWEEPS/lasso_grid"
# the chosen λ and budget: a method config of their own (method=lasso_heldout, named lasso), so that the sweep over
# methods can give them to lasso alone
python - "$SWEEPS/lasso_grid" "$RESULTS/selection.md" "$SWEEPS/select_fixed/summary.json" \
  "$SWEEPS/configs/method/lasso_heldout.yaml" <<'PY'
import json, sys
from pathlib import Path
from omegaconf import OmegaConf
rows = []
for run in sorted(Path(sys.argv[1]).glob("*_lasso")):
    method = OmegaConf.load(run / ".hydra" / "config.yaml").method
    scores = json.loads((run / "summary.json").read_text())["scores"]
    rows.append((scores["R0+1"], -method.lam, -method.budget_fraction, method.lam, method.budget_fraction, scores))
best = max(rows)  # the best R0+1; ties to the smaller λ and budget
fixed = json.loads(Path(sys.argv[3]).read_text())
lines = ["# Settings chosen on held-out data", "", "Held-out data: heldout.tsv of scripts/experiments/prepare_ende.py "
         "(held-out GNOME help topics, held-out ape-it blocks; see split.json).", "",
         "`lasso` (one stream, reset=never), chosen by R0+1:", "",
         "| λ | budget_fraction | R0 | R1 | R0+1 | BLEU |", "|--:|--:|--:|--:|--:|--:|"]
lines += [f"| {r[3]:g} | {r[4]:g} | {r[5]['R0']:.1f} | {r[5]['R1']:.1f} | {r[5]['R0+1']:.1f} | {r[5]['BLEU']:.1f} |"
          + (" ← chosen" if r is best else "") for r in sorted(rows, key=lambda r: (r[3], r[4]))]
lines += ["", f"`fixed`: select-fixed's list of {len(fixed['params'])} tensors, {fixed['parameters']:,} parameters; held-out "
          f"prequential cross-entropy {fixed['loss']:.3f} nats/token (unadapted {fixed['baseline_loss']:.3f})"]
Path(sys.argv[2]).write_text("\n".join(lines) + "\n")
Path(sys.argv[4]).parent.mkdir(parents=True, exist_ok=True)
Path(sys.argv[4]).write_text(f"# chosen on held-out data: {sys.argv[2]}\ndefaults:\n  - lasso\n  - _self_\n\n"
                             f"lam: {best[3]!r}\nbudget_fraction: {best[4]!r}\n")
print(f"lasso: λ {best[3]:g}, budget_fraction {best[4]:g} (R0+1 {best[0]:.1f} on held-out data)")
PY
stage_done selection

echo "== 3. sweeps: the six methods, one stream per data set, in lockstep"
sweep() {  # name, dataset overrides…
  local name=$1; shift
  python -m adaptsim run -m +experiment=paper_methods "hydra.searchpath=[file://$SWEEPS/configs]" method=$METHODS \
    "${COMMON[@]}" "${SKIP[@]}" hydra/launcher=lockstep threads=1 resume=true "$@" "${LIMIT[@]}" \
    hydra.sweep.dir="$SWEEPS/$name" \
    >"$SWEEPS/$name.log" 2>&1 || { echo "realistic_ende.sh: the $name sweep failed, see $SWEEPS/$name.log" >&2; return 1; }
}
pids=()
start() {  # a sweep in the background, once fewer than JOBS are running (the dev translation counts as one)
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 5; done
  sweep "$@" & pids+=($!)
}
start ted dataset=ted
start gnome_help dataset=gnome_help "dataset.documents=[$GNOME_TEST]"
start ape_it dataset=ape_it dataset.split_every="$APE_BLOCK" dataset.max_documents="$APE_TEST_BLOCKS"
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
wait $DEV || { echo "realistic_ende.sh: general/dev failed, see $SWEEPS/general_dev.log" >&2; failed=1; }
[ $failed = 0 ] || exit 1
cat "$RESULTS/general_dev_bleu.txt"
stage_done sweeps

echo "== 4. tables and curves → $RESULTS"
TABLE=(--significance --cost)
python -m adaptsim table "$SWEEPS/ted" "$SWEEPS/gnome_help" "$SWEEPS/ape_it" "${TABLE[@]}" | tee "$RESULTS/tables_absolute.md"
python -m adaptsim table "$SWEEPS/ted" "$SWEEPS/gnome_help" "$SWEEPS/ape_it" --relative "${TABLE[@]}" \
  | tee "$RESULTS/tables_relative.md"
for name in ted gnome_help ape_it; do
  python -m adaptsim plot "$SWEEPS/$name" --bands --out "$RESULTS/curves_$name.png"
done
# the training record without paths or example sentences (those are from ../shared, which stays out of git)
python - "$MODEL_PATH" "$RESULTS/training.json" <<'PY'
import json, sys
from pathlib import Path
model = Path(sys.argv[1])
summary = json.loads((model / "training.json").read_text())
keep = ("steps", "epochs", "best_step", "best_score", "best_metric", "train_seconds", "parameters", "training_pairs",
        "validation_pairs", "vocab_size")
out = {k: summary[k] for k in keep} | {"train": {k: v for k, v in summary["config"]["train"].items() if "source" not in k
                                               and "target" not in k and k != "out"},
                                      "arch": summary["config"]["model"]["arch"], "vocab": summary["config"]["model"]["vocab"]}
out["validations"] = [{k: r[k] for k in ("step", "epoch", "train_nll", "valid_loss", "valid_bleu", "elapsed_s") if k in r}
                      for r in map(json.loads, (model / "train_log.jsonl").read_text().splitlines())]
Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
PY
stage_done reports
awk -F'\t' 'NR > 1 { t += $2 } END { printf "total %d s\n", t }' "$RESULTS/timing.tsv" | tee -a "$RESULTS/timing.tsv"
