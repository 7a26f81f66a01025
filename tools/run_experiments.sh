#!/usr/bin/env bash
# Reproduce the experiment notebooks: runs their `#| slow` cells, writes results/<name>/ and saves the notebooks' outputs.
# Usage: bash tools/run_experiments.sh [NAME ...] [--full]
#   NAME    experiments to run (default: every one registered below)
#   --full  evaluate on the full suites instead of the committed subsample (sets GAPRUNE_FULL=1; a bigger machine)
# Finished evaluations are skipped (each notebook resumes from its result files); delete them to recompute.
# To register an experiment, append one line at the end: `exp <name> <notebook>  # what it reproduces`.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export GAPRUNE_DATA="${GAPRUNE_DATA:-$(cd .. && pwd)/shared/data}"
export GAPRUNE_MALLOC=asis   # every timing committed before 2026-11-27 07:00 ran in malloc's state as it was (no steady_allocator yet, 07c); the runs after it unset this
want=()
for a in "$@"; do case "$a" in --full) export GAPRUNE_FULL=1 ;; *) want+=("$a") ;; esac; done
exp() {
  local name=$1 nb=$2
  if [ ${#want[@]} -eq 0 ] || [[ " ${want[*]} " == *" $name "* ]]; then
    echo "== $name ($nb)"
    .venv/bin/python tools/run_nb.py --slow "$nb"
  fi
}

exp oneshot nbs/13_exp_oneshot.ipynb   # Table 1: one-shot MLP pruning of all-MiniLM-L6-v2 (results/oneshot/, --full: results/oneshot_full/)
exp layer_drop nbs/14_exp_layer_drop.ipynb   # EffiR drop study: attention vs MLP vs blocks, MiniLM + SmolLM2 (results/layer_drop/, --full: results/layer_drop_full/)
exp retrain nbs/15_exp_retrain.ipynb   # Table 2: 50% MLP pruning / L3Prune-small, one-shot and 100-step retrained (results/retrain/, --full: results/retrain_full/)
exp slimming nbs/16_exp_slimming.ipynb   # EffiR coarse / fine / coarse-to-fine vs unstructured, MiniLM and SmolLM2-135M, one-shot and fine-tuned (results/slimming/; SmolLM2: hours on a CPU)
exp geometry nbs/10_geometry.ipynb   # Table-3-style geometry, layer profiles and rank correlations of MiniLM pruned for finance (results/geometry/)
exp vocab nbs/07a_vocab.ipynb   # domain vocabulary pruning of MiniLM for finance: size and dev-suite cost (results/vocab/)
if [ ${#want[@]} -eq 0 ] || [[ " ${want[*]} " == *" domain "* ]]; then   # resumable: cells already in results/domain/ are skipped
  OMP_NUM_THREADS=1 .venv/bin/python bench/domain.py --grid methods && OMP_NUM_THREADS=1 .venv/bin/python bench/domain.py --grid shapes
fi
exp domain nbs/17_exp_your_domain.ipynb   # your domain: methods on full-length documents and held-out rows, domain-awareness, data shapes (results/domain/)
speed_beside() {   # FILE HEADER ONLY BESIDE KEEP: one speed pass timing ONLY's points (merged into speed.json) beside BESIDE's (printed, not merged; may be ''); KEEP: the lines kept
  { echo "$2"; OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --speed --only "$3" --beside "$4" | grep -E "$5"; } > "$1"
}
if [ ${#want[@]} -eq 0 ] || [[ " ${want[*]} " == *" frontier "* ]]; then   # resumable: points already in results/frontier/ are skipped; models kept in /tmp/frontier_work for the speed pass
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid select --seeds 0 && OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --seeds 1
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --seeds 1 --domain chemistry --targets 2   # MiniLM on chemistry
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --seeds 1 --model mpnet --targets 1.5 2 3     # mpnet on finance (~50-70 min a point on 2 shared cores)
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid recovery --seeds 0 1 --targets 2   # one slimmed structure per seed, each recovery on it
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid recovery --seeds 0 1 --targets 2 --steps 400 --only 'then-contrastive-400steps$'   # four times the steps
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid structure --seeds 0 --targets 2   # general texts in the importance (seed 0 decided)
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --seeds 1 --targets 1.5 --steps 400 --only 'slim1.5-importance-contrastive-400steps'   # the 1.5x point with 400 steps
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 2 --targets 2 --steps 400 --only 'dense-s2$|slim2-importance-contrastive-400steps-s2'   # seed 2, one job at a time (the plans timed on a quiet machine): 2x with 400 steps
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 2   # the second report seed, every point
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid recovery --seeds 0 --targets 2 --steps 800 --only 'then-contrastive-800steps$'   # eight times the steps (seed 0, the rule on the page)
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 2 --targets 2 --steps 800 --only 'slim2-importance-contrastive-800steps-s2$'   # by that rule: the report seeds at 800 steps
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 1 --targets 2 --steps 800 --only 'slim2-importance-contrastive-800steps-s1$'
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 1 --targets 2 --steps 800 --refine 2 --only '^slim2-importance-contrastive-800steps-refine2-s1$'   # the same with --speed-refine 2 (the rule on the page)
  speed_beside results/frontier/speed_refine_s1.txt "# --speed-refine 2 at 800 steps (seed 1), timed beside the unrefined point: bench/frontier.py --speed --only <refined> --beside <unrefined> (the refined point merged into speed.json)" '^slim2-importance-contrastive-800steps-refine2-s1$' '^slim2-importance-contrastive-800steps-s1$' '^(dense-s[12]|slim2-importance-contrastive-800steps(-refine2)?-s1) '
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 2 --targets 2 --steps 800 --recovery distill+contrastive --only '^slim2-importance-distill\+contrastive-800steps-s2$'   # distillation with the 800 steps (seed 2, the rule on the page)
  speed_beside results/frontier/speed_distill_s2.txt "# distill+contrastive at 800 steps (seed 2), timed beside the contrastive point: bench/frontier.py --speed --only <distill> --beside <contrastive> (the distill point merged into speed.json)" '^slim2-importance-distill\+contrastive-800steps-s2$' '^slim2-importance-contrastive-800steps-s2$' '^(dense-s[12]|slim2-importance-(distill\+)?contrastive-800steps-s2) '
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 1 --targets 2 --steps 800 --recovery distill+contrastive --only '^slim2-importance-distill\+contrastive-800steps-s1$'   # the same on seed 1 (the rule on the page)
  speed_beside results/frontier/speed_distill_s1.txt "# distill+contrastive at 800 steps (seed 1), timed beside the contrastive point: bench/frontier.py --speed --only <distill> --beside <contrastive> (the distill point merged into speed.json)" '^slim2-importance-distill\+contrastive-800steps-s1$' '^slim2-importance-contrastive-800steps-s1$' '^(dense-s[12]|slim2-importance-(distill\+)?contrastive-800steps-s1) '
  for s in 1 2; do OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --model mpnet --seeds $s --targets 2 --steps 400 --only "^mpnet-(dense-s$s\$|slim2-importance-contrastive-400steps-s$s)"; done   # mpnet at 400 steps, two report seeds (~40 min a point)
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --model mpnet --seeds 1 --targets 2.75 --steps 400 --only '^mpnet-slim2.75-importance-contrastive-400steps-s1'   # for the int8 goal (seed 1)
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --model mpnet --seeds 2 --targets 2 --steps 400 --only '^mpnet-mag2-400steps-s2$'   # neuron magnitude with the same 400 steps (seed 2, the rule on the page)
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --model mpnet --seeds 1 --targets 2 --steps 400 --only '^mpnet-mag2-400steps-s1$'   # and seed 1
  speed_beside results/frontier/speed_mpnet_mag400_s2.txt "# mpnet neuron magnitude at 400 steps (seed 2), timed beside slim at 400 steps: bench/frontier.py --speed --only <mag> --beside <slim> (the mag point merged into speed.json)" '^mpnet-mag2-400steps-s2$' '^mpnet-slim2-importance-contrastive-400steps-s2$' '^mpnet-(dense-s[12]|mag2-400steps-s2|slim2-importance-contrastive-400steps-s2) '
  speed_beside results/frontier/speed_mpnet_mag400_s1.txt "# mpnet neuron magnitude at 400 steps (seed 1), timed beside slim at 400 steps: bench/frontier.py --speed --only <mag> --beside <slim> (the mag point merged into speed.json)" '^mpnet-mag2-400steps-s1$' '^mpnet-slim2-importance-contrastive-400steps-s1$' '^mpnet-(dense-s[12]|mag2-400steps-s1|slim2-importance-contrastive-400steps-s1) '
  { echo "# mpnet, 400-step slim points: three speed passes of bench/frontier.py --speed --only '^mpnet-slim2.*-importance-contrastive-400steps' (the last is speed.json)"
    for i in 1 2 3; do echo "## pass $i"; OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --speed --only '^mpnet-slim2.*-importance-contrastive-400steps' | grep -E '^mpnet-(dense-s|slim2.*400steps)'; done; } > results/frontier/speed_passes_mpnet400.txt   # their run-to-run spread
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 2 --domain chemistry --targets 2   # chemistry's second report seed, one job at a time
  { echo "# chemistry seed 2: OMP_NUM_THREADS=2 python bench/frontier.py --speed --only '^chemistry-.*-s2' (merged into speed.json; each point against the median of MiniLM's dense points timed in the same run)"
    OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --speed --only '^chemistry-.*-s2' | grep -E '^(chemistry-.*-s2|dense-s[12]) '; } > results/frontier/speed_chemistry_s2.txt
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds 1 --targets 2 --steps 800 --recovery distill+contrastive --speed-at both --only '^slim2-importance-distill\+contrastive-800steps-at-both-s1$'   # planned for one text too (--speed-at both, the rule on the page; seed 1 decided it, seed 2 was not run)
  speed_beside results/frontier/speed_at_both.txt "# distill+contrastive at 800 steps planned with --speed-at both (seed 1), timed beside the batch-planned point: bench/frontier.py --speed --only <at-both> --beside <batch> (the at-both point merged into speed.json)" '^slim2-importance-distill\+contrastive-800steps-at-both-s1$' '^slim2-importance-distill\+contrastive-800steps-s1$' '^(dense-s[12]|slim2-importance-distill\+contrastive-800steps(-at-both)?-s1) '
  for s in 2 1; do   # chemistry's peer at 400 steps (the rule on the page), each seed made and then timed in its own speed pass
    OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --domain chemistry --seeds $s --targets 2 --steps 400 --only "^chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-s$s\$"
    speed_beside results/frontier/speed_chemistry_400_s$s.txt "# chemistry at 400 steps (seed $s): OMP_NUM_THREADS=2 python bench/frontier.py --speed --only '^chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-s$s\$' (merged into speed.json; against the median of MiniLM's dense points timed in the same run)" "^chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-s$s\$" '' "^(chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-s$s|dense-s[12]) "
  done
  { echo "# One speed pass (bench/frontier.py --speed --only '^none\$' --beside <points>: timed and printed, speed.json unchanged) run twice in fresh processes on the quiet machine, 2 threads:"
    echo "# first with glibc malloc's defaults, then with MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 (large buffers kept on the heap, as a process reaches after training)"
    for env in default raised; do echo "## $env"; [ $env = raised ] && export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824
      OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --speed --only '^none$' --beside '^(slim2-importance-(distill\+)?contrastive-800steps(-at-both)?-s[12]|mpnet-slim2-importance-contrastive-400steps-s[12])$' | grep -E 'beside: not merged|^(mpnet-)?dense-s[12] '; done
    unset MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_; } > results/frontier/speed_malloc.txt   # timing and the allocator (page 18)
  P=/tmp/frontier_work/chemistry-slim2-importance-contrastive-400steps-s2
  { echo "# bench/allocator_check.py $P (MiniLM, chemistry, 400 steps, seed 2), each line one measure_speedup in the same fresh process"
    OMP_NUM_THREADS=2 .venv/bin/python bench/allocator_check.py $P; MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 OMP_NUM_THREADS=2 .venv/bin/python bench/allocator_check.py $P; } > results/bench/allocator_check.txt
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --speed | tee results/frontier/speed.txt   # every saved point timed in one run
  OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --pairs 3 --only '^slim(1.5|2|3)-importance-contrastive(-400steps)?-s2$' | tee results/frontier/pairs.txt   # one pair's run-to-run spread
  OMP_NUM_THREADS=2 .venv/bin/python bench/plan_landing.py --runs 4 | tee results/bench/plan_landing.txt   # where slim --speedup plans land, one pair vs three per plan (quiet machine, ~20 min)
  OMP_NUM_THREADS=2 .venv/bin/python bench/plan_landing.py --compare refine --runs 3 | tee results/bench/plan_landing_refine.txt   # stop at the first plan in the window vs look for less removal
  OMP_NUM_THREADS=2 .venv/bin/python bench/plan_landing.py --compare correct --model mpnet --runs 2 | tee results/bench/plan_landing_correct.txt   # the ratio step vs the secant on mpnet (~14 min)
  unset GAPRUNE_MALLOC   # from here on: timed with malloc's buffers kept (steady_allocator), as the package times now
  { echo "# Every saved point timed with malloc's buffers kept (steady_allocator, the package's timing from now on): OMP_NUM_THREADS=2 python bench/frontier.py --speed --only '^none\$' --beside '.' (printed, speed.json unchanged), one fresh process, quiet machine"
    OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --speed --only '^none$' --beside '.' | grep 'buffers kept'; } > results/frontier/speed_steady.txt
  for s in 2 1; do   # the 800-step distilled points planned again with the steady timing (the rule on page 18), each made and then timed beside the earlier point
    OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --seeds $s --targets 2 --steps 800 --recovery distill+contrastive --tag steady --only "^slim2-importance-distill\+contrastive-800steps-steady-s$s\$"
    speed_beside results/frontier/speed_steady_s$s.txt "# distill+contrastive at 800 steps planned with the steady timing (seed $s), timed beside the earlier point: bench/frontier.py --speed --only <steady> --beside <earlier> (the steady point merged into speed.json)" "^slim2-importance-distill\+contrastive-800steps-steady-s$s\$" "^slim2-importance-distill\+contrastive-800steps-s$s\$" "^(dense-s[12]|slim2-importance-distill\+contrastive-800steps(-steady)?-s$s) "
  done
  for s in 2; do   # chemistry's peer at 400 steps, both planned again with the steady timing (the rule on page 18), made and then timed in one pass (seed 2 decided the rule; seed 1 was stopped)
    OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --domain chemistry --seeds $s --targets 2 --steps 400 --tag steady --only "^chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-steady-s$s\$"
    speed_beside results/frontier/speed_chemistry_steady_s$s.txt "# chemistry at 400 steps planned with the steady timing (seed $s): OMP_NUM_THREADS=2 python bench/frontier.py --speed --only '^chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-steady-s$s\$' (merged into speed.json; against the median of MiniLM's dense points timed in the same run)" "^chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-steady-s$s\$" '' "^(chemistry-(slim2-importance-contrastive-400steps|mag2-400steps)-steady-s$s|dense-s[12]) "
  done
  { echo "# bench/inprocess_check.py <steady seed-2 point> 100 (one process, 2 threads)"; OMP_NUM_THREADS=2 .venv/bin/python bench/inprocess_check.py /tmp/frontier_work/slim2-importance-distill+contrastive-800steps-steady-s2 100 | grep -E '^(fresh|after)'; } > results/bench/inprocess_check.txt   # does fine-tuning in the process move the timing after it?
  # the int8 graphs of the kept models exported again in the form onnxruntime runs fastest (07b, bench/onnx_forms.py; the rule on page 18): scored (two at a time: no timing), then one speed pass
  OMP_NUM_THREADS=2 .venv/bin/python bench/onnx_forms.py > results/bench/onnx_forms.txt   # the three export forms, one run
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --seeds 1 2 --targets 2 --steps 800 --recovery distill+contrastive --tag steady --only '\+int8-eager'
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --seeds 1 2 --targets 2 --steps 800 --recovery contrastive --only '^slim.*\+int8-eager'
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --domain chemistry --seeds 2 --targets 2 --steps 400 --tag steady --only '\+int8-eager'
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --model mpnet --seeds 1 2 --targets 2 --steps 400 --only '\+int8-eager'
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --model mpnet --seeds 1 --targets 2.75 --steps 400 --only '^mpnet-slim.*\+int8-eager'
  INT8_BASES='(slim2-importance-(distill\+contrastive-800steps-steady|contrastive-800steps)-s[12]|mpnet-slim2(\.75)?-importance-contrastive-400steps-s[12]|chemistry-slim2-importance-contrastive-400steps-steady-s2)'
  speed_beside results/frontier/speed_int8_eager.txt "# int8 graphs exported again (eager attention, TorchScript exporter): bench/frontier.py --speed --only '\+int8-eager' (merged into speed.json) --beside <their fp32 models and earlier int8 graphs> (printed, not merged), one pass, quiet machine" '\+int8-eager' "^($INT8_BASES(\+int8)?|(mpnet-|chemistry-)?dense\+int8-s[12])\$" "^(.*\+int8-eager(-s[12])?|(mpnet-)?dense-s[12]|chemistry-dense(\+int8)?-s2|$INT8_BASES(\+int8)?) "
  OMP_NUM_THREADS=2 .venv/bin/python bench/onnx_forms.py --quant > results/bench/onnx_int8_settings.txt   # per-tensor vs per-channel int8, one run
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --seeds 1 2 --targets 2 --steps 800 --recovery distill+contrastive --tag steady --int8 st --only '^slim.*\+int8-st'
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --model mpnet --seeds 1 2 --targets 2 --steps 400 --int8 st --only '^mpnet-slim.*\+int8-st'
  speed_beside results/frontier/speed_int8_st.txt "# int8 graphs quantized as the CLI writes them (ST_INT8): bench/frontier.py --speed --only '\+int8-st' (merged into speed.json) --beside <their fp32 models and +int8-eager graphs> (printed, not merged), one pass, quiet machine" '\+int8-st' '^(slim2-importance-distill\+contrastive-800steps-steady-s[12]|mpnet-slim2-importance-contrastive-400steps-s[12])(\+int8-eager)?$' '^(.*\+int8-st|(mpnet-)?dense-s[12]|(slim2-importance-distill\+contrastive-800steps-steady-s[12]|mpnet-slim2-importance-contrastive-400steps-s[12])(\+int8-eager)?) '
  OMP_NUM_THREADS=2 .venv/bin/python bench/st_int8_speed.py > results/bench/st_int8_speed.txt   # the files slim --export writes, timed as its report times them
  # the int8 goal with room (rule on page 18): mpnet planned for its int8 graph to run at 5x (slim --speed-of), two seeds, one at a time; its int8 graphs scored, then one speed pass and the CLI's files timed
  for s in 1 2; do OMP_NUM_THREADS=2 .venv/bin/python bench/frontier.py --threads 2 --grid report --model mpnet --seeds $s --targets 5 --steps 400 --speed-of onnx-int8-tensor --only "^mpnet-slim5-importance-contrastive-400steps-of-onnx-int8-tensor-s$s\$"; done
  OMP_NUM_THREADS=1 .venv/bin/python bench/frontier.py --grid report --model mpnet --seeds 1 2 --targets 5 --steps 400 --speed-of onnx-int8-tensor --only '^mpnet-slim5-.*\+int8-eager'
  speed_beside results/frontier/speed_int8_room.txt "# mpnet planned for a 5x int8 graph (slim --speedup 5 --speed-of onnx-int8-tensor, 400 steps) and its int8 graphs: bench/frontier.py --speed --only '^mpnet-slim5-' (merged into speed.json) --beside <the 2x points and their int8 graphs> (printed, not merged), one pass, quiet machine" '^mpnet-slim5-' '^mpnet-slim2-importance-contrastive-400steps-s[12](\+int8-eager)?$' '^mpnet-'
  OMP_NUM_THREADS=2 .venv/bin/python bench/st_int8_speed.py --points 'mpnet-slim5-importance-contrastive-400steps-of-onnx-int8-tensor-s{s}' > results/bench/st_int8_speed_room.txt
fi
exp frontier nbs/18_exp_frontier.ipynb   # faster on CPU: slim --speedup at several targets, fp32 and int8, vs dense, its int8 graph, L3Prune, neuron magnitude, model2vec (results/frontier/)
if [ ${#want[@]} -eq 0 ] || [[ " ${want[*]} " == *" hard "* ]]; then   # issue 52: the hard suites' proof (seeds 1, 2), the seed-0 selection and agreement; resumable (results/hard/)
  OMP_NUM_THREADS=1 .venv/bin/python bench/hard_sensitivity.py --seeds 1 2 && OMP_NUM_THREADS=1 .venv/bin/python bench/hard_select.py
  OMP_NUM_THREADS=1 .venv/bin/python bench/hard_sensitivity.py --seeds 1 2 --domains finance --extra sparsegpt && OMP_NUM_THREADS=1 .venv/bin/python bench/hard_sensitivity.py --report-only   # SparseGPT on both finance suites
  OMP_NUM_THREADS=2 .venv/bin/python bench/filings_points.py --threads 2   # the hard frontier's saved MiniLM points (and mpnet's dense int8 graph) on the filings suite
fi
exp hard nbs/09c_worst.ipynb   # what the default loses on the hard finance suite, query by query (reads results/hard/)
