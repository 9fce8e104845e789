"""The tiny test model: a random 2-layer Llama and a character tokenizer, built in code, for fast tests."""

from __future__ import annotations

import tempfile

import torch

from minipods.model import add_lora, check_quantize, load_policy

TINY_CHARS = [chr(c) for c in range(32, 127)] + ["\n"]
TINY_SPECIALS = ["<pad>", "<eos>", "<unk>"]
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}]\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]\n{% endif %}")


def tiny_tokenizer():
    """One token per printable ASCII character."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast
    vocab = {t: i for i, t in enumerate(TINY_SPECIALS + TINY_CHARS)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                  unk_token="<unk>", padding_side="left")
    tok.chat_template = TINY_CHAT_TEMPLATE
    return tok


def tiny_policy(seed: int = 0, lora_r: int = 8, lora_alpha: int = 16, hidden: int = 64, layers: int = 2,
                quantize: str | None = None, lora: bool = True, gradient_checkpointing: bool = False):
    """(policy, tokenizer): a randomly initialised 2-layer Llama (~0.1M params) with LoRA."""
    from transformers import LlamaConfig, LlamaForCausalLM
    quantize, tok = check_quantize(quantize), tiny_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=1024, tie_word_embeddings=True,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)  # its generation_config takes cfg's pad and eos
    if quantize == "4bit":
        # quantised by from_pretrained, as load_policy does, from a temporary folder
        with tempfile.TemporaryDirectory() as d:
            model.save_pretrained(d)
            tok.save_pretrained(d)
            model, _ = load_policy(d, quantize="4bit", lora=False, dtype="float32", device="cpu")
    if lora:
        model = add_lora(model, lora_r, lora_alpha, gradient_checkpointing=gradient_checkpointing,
                         quantized=quantize == "4bit")
    return model, tok
