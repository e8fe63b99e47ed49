# record_trace.py - record a PyTorch profiler trace of a small Llama-style
# model for `kiln task from-trace` (issue 38): a config at real dims (hidden
# 4096, 32 heads, MLP 11008, vocabulary 32000) with few layers and random
# weights, eager attention (so softmax shows as its own op), labels (so the
# loss shows), one forward and backward in bf16 on the GPU, recorded with
# record_shapes=True and with_modules=True and exported as a Chrome trace.
#   python3 bench/record_trace.py OUT.json [LAYERS] [BATCH] [SEQ]
import sys

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    out = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    seq = int(sys.argv[4]) if len(sys.argv) > 4 else 1024
    cfg = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_attention_heads=32,
                      num_key_value_heads=32, num_hidden_layers=layers, vocab_size=32000,
                      max_position_embeddings=4096)
    cfg._attn_implementation = "eager"
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    for _ in range(2):   # warm up: the trace holds steady-state kernels
        model(input_ids=ids, labels=ids).loss.backward()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True, with_modules=True) as prof:
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.cuda.synchronize()
    prof.export_chrome_trace(out)
    print("torch", torch.__version__, "layers", layers, "batch", batch, "seq", seq,
          "loss", float(loss))


if __name__ == "__main__":
    main()
