#!/usr/bin/env bash
# What the GPU check (scripts/device/gpu.sh) carries, made here before the device call: .carry/ (git-ignored) with
#   wheels/        the packages the GPU machine's Python 3.12 lacks, at this machine's versions (its torch,
#                  transformers and sacrebleu are its own: gpu.sh records their versions)
#   base-train/    base-ende's training data, xz -9 (about 20 MB; the shipped gzip files are 47)
#   valid/         the first 500 lines of newstest2018, to choose the best checkpoint by BLEU
#   base-ende-tok/ base-ende's tokenizer, reused by the new model (train.tokenizer)
#   bc.tsv         the first ARTICLES Business Central test articles, for the comparison
# and checks that the tree and the carry fit in what one call may send (64 MiB). Then, with the device tool:
#   run(command="bash scripts/device/gpu.sh", carry=[".carry"], timeout_s=600)   (docs/development.md, "The GPU check")
# Settings (environment): SHARED [../shared], ARTICLES [3], CARRY [.carry]
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
ARTICLES=${ARTICLES:-3}
CARRY=${CARRY:-.carry}
LIMIT_MIB=64
SPARE_MIB=8  # kept free for what a call brings back to commit (tests/test_compressed_records.py)
mkdir -p "$CARRY/wheels" "$CARRY/base-train" "$CARRY/valid" "$CARRY/base-ende-tok"
for f in "$SHARED/data/base-train/train.en.gz" "$SHARED/models/base-ende/source.spm" \
         "$SHARED/data/business-central/test.tsv" "$SHARED/data/general/dev.en"; do
  [ -f "$f" ] || { echo "pack.sh: $f: missing (SHARED=$SHARED)" >&2; exit 1; }
done

# the wheels: what the device's image lacks (docs/performance.md lists what it has), pinned to this machine's versions
version() { python -c "import importlib.metadata as m; print(m.version('$1'))"; }
pure=(hydra-core omegaconf sacremoses stopwordsiso hydra-joblib-launcher)
for name in "${pure[@]}" rapidfuzz; do
  spec="$name==$(version "$name")"
  python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$CARRY/wheels" "$spec"
done
antlr="antlr4-python3-runtime==$(version antlr4-python3-runtime)"  # published as a source archive only
ls "$CARRY"/wheels/antlr4_python3_runtime-* >/dev/null 2>&1 || python -m pip wheel -q --no-deps -w "$CARRY/wheels" "$antlr"

for side in en de; do  # xz -9: its 64 MiB window also folds the corpus's repeated copies of the general parts
  out="$CARRY/base-train/train.$side.xz"
  [ -s "$out" ] || (gzip -dc "$SHARED/data/base-train/train.$side.gz" | xz -9 -T1 > "$out.tmp" && mv "$out.tmp" "$out") &
done
wait
for side in en de; do head -n 500 "$SHARED/data/general/dev.$side" > "$CARRY/valid/dev.$side"; done
cp "$SHARED"/models/base-ende/{source.spm,target.spm,vocab.json,tokenizer_config.json} "$CARRY/base-ende-tok/"
awk -F'\t' -v n="$ARTICLES" 'NR == 1 { print; next } $1 != last { last = $1; k++ } k <= n' \
  "$SHARED/data/business-central/test.tsv" > "$CARRY/bc.tsv"
git rev-parse HEAD > "$CARRY/commit.txt" 2>/dev/null || true

# what travels: the files git tracks (those deleted but not yet committed do not) and those it does not ignore
tree=$( (git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null || true) | awk '{s += $1} END {print s + 0}')
carry=$(du -sb "$CARRY" | cut -f1)
total=$((tree + carry))
awk -v t="$tree" -v c="$carry" -v l="$LIMIT_MIB" -v d="$CARRY" -v a="$ARTICLES" -v s="$(($(wc -l < "$CARRY/bc.tsv") - 1))" \
  'BEGIN { m = 1048576; printf "pack.sh: tree %.1f MiB + %s %.1f MiB = %.1f of %d MiB (%.1f to spare); %d segments of %d articles\n", t / m, d, c / m, (t + c) / m, l, l - (t + c) / m, s, a }'
[ "$total" -le $(((LIMIT_MIB - SPARE_MIB) * 1048576)) ] ||
  echo "pack.sh: under $SPARE_MIB MiB to spare (tests/test_compressed_records.py keeps the tree's share)" >&2
[ "$total" -le $((LIMIT_MIB * 1048576)) ] || { echo "pack.sh: over the $LIMIT_MIB MiB a device call may send" >&2; exit 1; }
