"""Does fine-tuning in the same process change the timing that follows? (page 18, "One allocator state ...")
Times dense MiniLM against a saved slimmed point (`measure_speedup`, batch 32 x 128 tokens and one text, 2 threads) in one
process: fresh, then after N full fine-tuning steps of the slimmed model (contrastive, finance triplets), then with fresh
copies of both models, then once more. Run: OMP_NUM_THREADS=2 python bench/inprocess_check.py POINT_FOLDER N"""
import copy, sys, torch
from gaprune_nb.core import Encoder
from gaprune_nb.data import domain_triplets
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.retraining import RetrainConfig, retrain
from gaprune_nb.speed import allocator, measure_speedup
torch.set_num_threads(2)
dense, enc = Encoder.from_pretrained(minilm_path()), Encoder.from_pretrained(sys.argv[1])
def show(tag, d, m):
    r = measure_speedup(d, m, 128, 32, 2)
    print(f"{tag}: batch {r['batch_speedup']:.2f}x (dense {r['batch_seconds']['dense']*1000:.0f} ms, model {r['batch_seconds']['model']*1000:.0f} ms), one text {r['single_speedup']:.2f}x (dense {r['single_seconds']['dense']*1000:.1f} ms, model {r['single_seconds']['model']*1000:.1f} ms)  {allocator()}", flush=True)
show('fresh', dense, enc)
trip = domain_triplets('finance', limit=400)
retrain(enc, trip, int(sys.argv[2]), config=RetrainConfig(method='full', progress=False), inplace=True)
show(f'after {sys.argv[2]} steps', dense, enc)
show('after, fresh copies', copy.deepcopy(dense), copy.deepcopy(enc))
show('after, again', dense, enc)
