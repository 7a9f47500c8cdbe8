#!/usr/bin/env bash
# Makes the KIT folder scripts/gpu_figures.sh runs from, on a machine
# without a GPU, for a GPU machine that reaches nothing and takes a small
# upload:
#
#   scripts/gpu_kit.sh KIT [TOOLKIT_DIR]
#
# KIT gets iesr.xz (the CUDA build, stripped and xz-compressed: the
# binary is about 80 MB, compressed about 15 MB; scripts/gpu_figures.sh
# unpacks it), Qwen2.5's tokenizer.json and
# tokenizer_config.json written from the default model's GGUF file, and
# the Spider subset's data. TOOLKIT_DIR (default ~/cuda13) holds the CUDA
# toolkit of scripts/cuda_toolkit.sh, made there if missing. The CUDA
# build takes 11 to 20 minutes on 2 cores; its build folder is
# target/cuda.
set -euo pipefail
kit=${1:?usage: scripts/gpu_kit.sh KIT [TOOLKIT_DIR]}
toolkit=${2:-$HOME/cuda13}
data=../shared/datasets
mkdir -p "$kit/spider"
kit=$(cd "$kit" && pwd)

[ -f "$toolkit/env.sh" ] || scripts/cuda_toolkit.sh "$toolkit" 90
(
    # shellcheck disable=SC1091
    source "$toolkit/env.sh"
    cargo build --release --locked --features cuda --target-dir target/cuda
)
strip -o "$kit/iesr" target/cuda/release/iesr
xz -T0 -f "$kit/iesr"

cp "$data/spider/dev.json" "$kit/spider/"
cp -r "$data/spider/database" "$kit/spider/"
cp "$data/subsets/spider_dev_random100.json" "$kit/"
chmod -R u+w "$kit"

# The tokenizer: read from the GGUF file's metadata the way iesr reads it
# (candle's Tokenizer::from_gguf), by a small program built against the
# crates already in Cargo.lock.
cargo run --release --locked --quiet -- model pull qwen2.5-coder-1.5b-instruct >/dev/null
gguf=$(ls ~/.cache/iesr/models/qwen2.5-coder-1.5b-instruct-*.gguf | head -1)
tool=$(mktemp -d)
mkdir -p "$tool/src"
cp Cargo.lock "$tool/"
cat >"$tool/Cargo.toml" <<'EOF'
[package]
name = "gguf-tokenizer"
version = "0.1.0"
edition = "2021"
[dependencies]
candle-core = "0.11.1"
tokenizers = { version = "0.23.2", default-features = false, features = ["onig"] }
serde_json = "1"
EOF
cat >"$tool/src/main.rs" <<'EOF'
// gguf-tokenizer FILE.gguf DIR: DIR/tokenizer.json and tokenizer_config.json.
use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::tokenizer::TokenizerFromGguf;
use tokenizers::Tokenizer;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut file = std::fs::File::open(&args[1]).expect("the GGUF file");
    let content = Content::read(&mut file).expect("a GGUF file");
    let tokenizer = Tokenizer::from_gguf(&content).expect("a tokenizer in the file");
    tokenizer
        .save(format!("{}/tokenizer.json", args[2]), false)
        .expect("tokenizer.json written");
    let template = content.metadata["tokenizer.chat_template"]
        .to_string()
        .expect("a chat template")
        .clone();
    let config = serde_json::json!({"chat_template": template, "eos_token": "<|im_end|>"});
    std::fs::write(format!("{}/tokenizer_config.json", args[2]), config.to_string())
        .expect("tokenizer_config.json written");
}
EOF
cargo build --offline --release --quiet --manifest-path "$tool/Cargo.toml"
"$tool/target/release/gguf-tokenizer" "$gguf" "$kit"
rm -rf "$tool"
du -sh "$kit"
echo "on the GPU machine, from the repository root with KIT carried:"
echo "  scripts/gpu_figures.sh KIT OUT"
