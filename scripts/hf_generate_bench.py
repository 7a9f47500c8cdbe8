"""Writes a Qwen2.5-7B-shaped Qwen2 checkpoint with random bf16 weights to
DIR and times Hugging Face transformers' generate() on it, on the GPU, for
comparison with `iesr bench-llm --model DIR --device cuda:0` on the same
machine (docs/performance.md).

Usage: hf_generate_bench.py DIR PROMPT_TOKENS GEN_TOKENS BATCHES RESULT_JSON
(BATCHES comma-separated; DIR then needs the model's tokenizer.json and
tokenizer_config.json copied in for iesr)."""
import json, os, sys, time
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

out, prompt_tokens, gen_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
batches = [int(b) for b in sys.argv[4].split(",")]
result_path = sys.argv[5]
cfg = Qwen2Config(vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                  num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                  max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                  tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151645)
torch.manual_seed(0)
t = time.time()
with torch.device("cuda"):
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
print(f"init {time.time()-t:.1f}s, params {sum(p.numel() for p in model.parameters())/1e9:.2f}B", flush=True)
t = time.time()
model.save_pretrained(out, safe_serialization=True, max_shard_size="5GB")
c = json.load(open(os.path.join(out, "config.json")))
c.update(rope_theta=1000000.0, torch_dtype="bfloat16", model_type="qwen2")
json.dump(c, open(os.path.join(out, "config.json"), "w"), indent=1)
print(f"saved {time.time()-t:.1f}s", flush=True)

def timed(fn, reps=3, warm=True):
    if warm:
        fn(); torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize(); t = time.perf_counter(); fn(); torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best

g = torch.Generator(device="cuda").manual_seed(1)
ids = torch.randint(0, 151000, (1, prompt_tokens), device="cuda", generator=g)
res = {"engine": "transformers " + __import__("transformers").__version__ + ", torch " + torch.__version__,
       "gpu": torch.cuda.get_device_name(0), "prompt_tokens": prompt_tokens, "gen_tokens": gen_tokens}
with torch.inference_mode():
    prefill = timed(lambda: model(ids))
    res["prefill_tok_s"] = prompt_tokens / prefill
    res["batches"] = []
    for b in batches:
        x = ids.expand(b, -1).contiguous()
        kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
        first = timed(lambda: model.generate(x, max_new_tokens=1, min_new_tokens=1, **kw), reps=2)
        full = timed(lambda: model.generate(x, max_new_tokens=gen_tokens, min_new_tokens=gen_tokens, **kw), reps=1, warm=False)
        rate = b * (gen_tokens - 1) / (full - first)
        res["batches"].append({"batch": b, "aggregate_tok_s": rate, "seconds": full})
        print(json.dumps(res["batches"][-1]), flush=True)
print(json.dumps(res))
json.dump(res, open(result_path, "w"), indent=1)
