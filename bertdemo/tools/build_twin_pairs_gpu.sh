#!/usr/bin/env bash
# The shipped twin pairs, built on a GPU: three models of one shape (3 layers, hidden 256, 4 heads: 9.5 MB each in
# fp16, so a pair stays under 20 MB) trained at once on one GPU for 6,000 steps of 128 x 128 tokens (98 M tokens
# each), then measured along their log-spaced checkpoints. On one NVIDIA H200 the whole script took 259 s.
#
#   here (a CPU, once):  python -m bertdemo.tools.build_twin_pairs --work runs/twin-pairs --prepare
#                        (the mixed corpus: add --tatoeba DIR/tatoeba/*.txt --stories DIR/stories.txt, DIR from
#                        python -m bertdemo.tools.gather_everyday_text; the files stay here)
#   there (the GPU):     bash bertdemo/tools/build_twin_pairs_gpu.sh runs/twin-pairs OUTDIR    # runs/twin-pairs carried
#                        (PYTHON=.venv/bin/python to use a virtualenv; by default python3)
#   here again:          unpack OUTDIR's archives into bertdemo/assets/twins, then
#                        python -m bertdemo.tools.measure_twin_pairs --table5-shipped --work runs/twin-pairs-gpu
#
# The corpus and its vocabulary are built on the CPU machine (the everyday text comes from Debian packages, which a
# GPU machine without a network lacks). The three runs (mlm, ltr-masked, ltr-all) share the GPU, one seed, the same
# batches in the same order; each ends at STEPS or after BUDGET seconds of training, whichever comes first (its
# schedule ends there too). measure_twin_pairs then reads every log-spaced checkpoint on the same held-out words and
# the right-context cloze, and exports the final models (fp16) with curve.json, heldout.npz and build.json.
# Everything lands in OUTDIR (one archive per model, curve.tgz, measure.json, logs.tgz), whatever stage stops; the
# script exits with the code of the first stage that failed.
# Table 5's cells are fine-tuned afterwards on a CPU (their tasks' splits are made with the datasets package).
# PRESET=bert-mini trains the larger shape instead (4 layers: 11.1 MB a model, docs/benchmarks.md).
set -uo pipefail
SRC=${1:-runs/twin-pairs}
DEST=${2:-runs/twin-pairs-gpu-out}
WORK=${WORK:-runs/twin-pairs-gpu}
STEPS=${STEPS:-6000}
BATCH=${BATCH:-128}
EVERY=${EVERY:-90}
BUDGET=${BUDGET:-240}
DEVICE=${DEVICE:-cuda}
PRESET=${PRESET:-3,256,4,1024}
PYTHON=${PYTHON:-python3}
BLOCK_STARTS=${BLOCK_STARTS:-text}  # each block begins at a text's start (the twins shipped until 2026-12-07: anywhere)
export PYTHONUNBUFFERED=1
mkdir -p "$WORK" "$DEST"
DEST=$(cd "$DEST" && pwd)
cp -r "$SRC/corpus.jsonl" "$SRC/tokenizer" "$WORK/"
[ -f "$SRC/build_record.json" ] && cp "$SRC/build_record.json" "$WORK/"

collect() {  # whatever exists, into DEST: six files at most
    cp "$WORK"/measure.json "$DEST/" 2>/dev/null
    (cd "$WORK" && tar czf "$DEST/logs.tgz" ./*.log build_record.json) 2>/dev/null
    for model in mlm ltr-masked ltr; do
        [ -d "$WORK/assets/$model" ] && tar czf "$DEST/$model.tgz" -C "$WORK/assets" "$model"
    done
    [ -d "$WORK/assets" ] && tar czf "$DEST/curve.tgz" -C "$WORK/assets" --exclude mlm --exclude ltr-masked --exclude ltr .
}
trap collect EXIT

"$PYTHON" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, \
'cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv -l 20 > "$WORK/gpu.log" 2>&1 &
began=$(date +%s)
"$PYTHON" -m bertdemo.tools.build_twin_pairs --work "$WORK" --device "$DEVICE" --preset "$PRESET" --dropout 0.1 \
    --batch-size "$BATCH" --steps "$STEPS" --lr 5e-4 --warmup-steps 200 --checkpoint-every "$EVERY" \
    --time-budget-s "$BUDGET" --block-starts "$BLOCK_STARTS"
code=$?
echo "build: $(( $(date +%s) - began )) s (exit $code)"
kill %1 2>/dev/null
for run in mlm ltr-masked ltr-all; do tail -n 2 "$WORK/$run.log"; done
began=$(date +%s)
"$PYTHON" -m bertdemo.tools.measure_twin_pairs --work "$WORK" --threads 4 --export --assets "$WORK/assets"
measured=$?
echo "measure: $(( $(date +%s) - began )) s (exit $measured)"
[ "$code" -ne 0 ] && exit "$code"  # the first stage that failed names the script's exit; the archives still come
exit "$measured"
