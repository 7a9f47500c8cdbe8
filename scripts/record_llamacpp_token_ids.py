"""Records llama.cpp's token ids for a fixed set of strings, as the fixture
that tests/tokenizer.rs compares our GGUF tokenizer against.

Usage: python3 scripts/record_llamacpp_token_ids.py MODEL.gguf > tests/fixtures/llamacpp_token_ids.json
Needs llama-cpp-python (pip install llama-cpp-python).
"""
import json
import sys

import llama_cpp
from llama_cpp import Llama

STRINGS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "   leading spaces and\ttabs\n\nand blank lines\n",
    "SELECT name, COUNT(*) AS n FROM singer WHERE age >= 30 GROUP BY name ORDER BY n DESC LIMIT 5;",
    "SELECT T1.first_name FROM member AS T1 INNER JOIN major AS T2 ON T1.link_to_major = T2.major_id WHERE T2.major_name = 'Business'",
    "def area(r):\n    return 3.14159 * r ** 2  # circle\n",
    "fn main() { println!(\"{}\", 1_000_000u64.pow(2)); }",
    "Numbers 12345 678.9 -0.001 1e-9 3,141,592",
    "数据库中有多少位歌手？",
    "東京都の人口は約1400万人です。",
    "Emoji: 🚀🔥 👩‍💻 ✅",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "Crème brûlée costs €5 at the café.",
    "don't won't I'm we'll they've",
]

# Decomposed accents (e + U+0301): candle normalises to NFC like Hugging Face,
# llama.cpp does not; recorded so the test can show the known difference.
DECOMPOSED = "Cafe\u0301 and cre\u0300me"

def main():
    path = sys.argv[1]
    llm = Llama(path, vocab_only=True, verbose=False)
    def ids(text):
        return llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
    out = {
        "command": "python3 scripts/record_llamacpp_token_ids.py qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "llama_cpp_python": llama_cpp.__version__,
        "cases": [{"text": s, "ids": ids(s)} for s in STRINGS],
        "decomposed_accents": {"text": DECOMPOSED, "ids": ids(DECOMPOSED)},
    }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    print()

if __name__ == "__main__":
    main()
