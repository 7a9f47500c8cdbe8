//! The safetensors (Hugging Face layout) backend on tiny random checkpoints
//! the test writes itself: our transformer must compute the same logits as
//! candle-transformers' reference Qwen2, Qwen3 and Llama on the same
//! weights, and generate through the common trait. The same weights written
//! as GGUF (with llama.cpp's conventions) must give the same logits again.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use iesr::llm::hub::{self, CheckpointFiles};
use iesr::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use iesr::Error;
use std::collections::HashMap;
use std::path::Path;

const HIDDEN: usize = 32;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const LAYERS: usize = 2;
const VOCAB: usize = 24;
const INTERMEDIATE: usize = 48;

#[derive(Clone, Copy, PartialEq)]
enum Family {
    Qwen2,
    Qwen3,
    Llama,
}

impl Family {
    fn head_dim(self) -> usize {
        // Qwen3 decouples the head size from hidden / heads.
        if self == Family::Qwen3 {
            16
        } else {
            HIDDEN / HEADS
        }
    }
}

/// Writes config.json, tokenizer files and random weights into `dir`.
fn write_checkpoint(dir: &Path, family: Family) {
    let model_type = match family {
        Family::Qwen2 => "qwen2",
        Family::Qwen3 => "qwen3",
        Family::Llama => "llama",
    };
    let config = serde_json::json!({
        "model_type": model_type,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": family.head_dim(),
        "vocab_size": VOCAB,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "max_position_embeddings": 64,
        "sliding_window": 64,
        "max_window_layers": LAYERS,
        "use_sliding_window": false,
        "tie_word_embeddings": false,
        "attention_bias": false,
        "hidden_act": "silu",
        "eos_token_id": 1,
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();

    let mut words: Vec<String> = vec!["[UNK]".into(), "<|im_end|>".into()];
    words.extend(
        [
            "select", "from", "where", "count", "name", "age", "singer", "hello", "world",
        ]
        .map(String::from),
    );
    words.extend((words.len()..VOCAB).map(|i| format!("w{i}")));
    let vocab: HashMap<String, u32> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.clone(), i as u32))
        .collect();
    let model = tokenizers::models::wordlevel::WordLevel::builder()
        .vocab(vocab.into_iter().collect())
        .unk_token("[UNK]".into())
        .build()
        .unwrap();
    let mut tokenizer = tokenizers::Tokenizer::new(model);
    tokenizer.with_pre_tokenizer(Some(tokenizers::pre_tokenizers::whitespace::Whitespace {}));
    tokenizer
        .add_special_tokens([tokenizers::AddedToken::from("<|im_end|>", true)])
        .unwrap();
    tokenizer.save(dir.join("tokenizer.json"), false).unwrap();
    let tokenizer_config = serde_json::json!({
        "eos_token": "<|im_end|>",
        "chat_template": "{% for m in messages %}{{ m.content }} {% endfor %}",
    });
    std::fs::write(
        dir.join("tokenizer_config.json"),
        tokenizer_config.to_string(),
    )
    .unwrap();

    let device = Device::Cpu;
    let hd = family.head_dim();
    let mut tensors: HashMap<String, Tensor> = HashMap::new();
    let mut seed = 0u64;
    let mut random = |shape: &[usize], scale: f64| {
        seed += 1;
        // Deterministic pseudo-random values without a global RNG.
        let n: usize = shape.iter().product();
        let values: Vec<f32> = (0..n)
            .map(|i| {
                let x = ((i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03))
                    >> 40;
                ((x as f64 / (1u64 << 24) as f64) * 2.0 - 1.0) as f32 * scale as f32
            })
            .collect();
        Tensor::from_vec(values, shape, &device).unwrap()
    };
    tensors.insert(
        "model.embed_tokens.weight".into(),
        random(&[VOCAB, HIDDEN], 1.0),
    );
    tensors.insert("lm_head.weight".into(), random(&[VOCAB, HIDDEN], 0.3));
    tensors.insert(
        "model.norm.weight".into(),
        (random(&[HIDDEN], 0.1) + 1.0).unwrap(),
    );
    for i in 0..LAYERS {
        let p = |part: &str| format!("model.layers.{i}.{part}");
        let mut put = |name: String, t: Tensor| {
            tensors.insert(name, t);
        };
        put(
            p("input_layernorm.weight"),
            (random(&[HIDDEN], 0.1) + 1.0).unwrap(),
        );
        put(
            p("post_attention_layernorm.weight"),
            (random(&[HIDDEN], 0.1) + 1.0).unwrap(),
        );
        put(
            p("self_attn.q_proj.weight"),
            random(&[HEADS * hd, HIDDEN], 0.3),
        );
        put(
            p("self_attn.k_proj.weight"),
            random(&[KV_HEADS * hd, HIDDEN], 0.3),
        );
        put(
            p("self_attn.v_proj.weight"),
            random(&[KV_HEADS * hd, HIDDEN], 0.3),
        );
        put(
            p("self_attn.o_proj.weight"),
            random(&[HIDDEN, HEADS * hd], 0.3),
        );
        put(
            p("mlp.gate_proj.weight"),
            random(&[INTERMEDIATE, HIDDEN], 0.3),
        );
        put(
            p("mlp.up_proj.weight"),
            random(&[INTERMEDIATE, HIDDEN], 0.3),
        );
        put(
            p("mlp.down_proj.weight"),
            random(&[HIDDEN, INTERMEDIATE], 0.3),
        );
        if family == Family::Qwen2 {
            put(p("self_attn.q_proj.bias"), random(&[HEADS * hd], 0.2));
            put(p("self_attn.k_proj.bias"), random(&[KV_HEADS * hd], 0.2));
            put(p("self_attn.v_proj.bias"), random(&[KV_HEADS * hd], 0.2));
        }
        if family == Family::Qwen3 {
            put(
                p("self_attn.q_norm.weight"),
                (random(&[hd], 0.1) + 1.0).unwrap(),
            );
            put(
                p("self_attn.k_norm.weight"),
                (random(&[hd], 0.1) + 1.0).unwrap(),
            );
        }
    }
    candle_core::safetensors::save(&tensors, dir.join("model.safetensors")).unwrap();
}

/// Writes the checkpoint in `dir` as a GGUF file the way llama.cpp's
/// converter does: GGUF tensor names, and for Llama the query and key rows
/// permuted for its interleaved rotary embedding.
fn write_gguf(dir: &Path, family: Family) -> std::path::PathBuf {
    use candle_core::quantized::gguf_file::{write, Value};
    use candle_core::quantized::{GgmlDType, QTensor};
    let tensors =
        candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu).unwrap();
    let arch = match family {
        Family::Qwen2 => "qwen2",
        Family::Qwen3 => "qwen3",
        Family::Llama => "llama",
    };
    let hd = family.head_dim();
    let interleave = |w: &Tensor, heads: usize| -> Tensor {
        if family != Family::Llama {
            return w.clone();
        }
        let (out, inp) = w.dims2().unwrap();
        w.reshape((heads, 2, hd / 2, inp))
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .reshape((out, inp))
            .unwrap()
            .contiguous()
            .unwrap()
    };
    let mut named: Vec<(String, QTensor)> = Vec::new();
    for (hf, t) in &tensors {
        let name = if let Some(rest) = hf.strip_prefix("model.layers.") {
            let (layer, part) = rest.split_once('.').unwrap();
            let (gguf_part, t) = match part {
                "input_layernorm.weight" => ("attn_norm.weight", t.clone()),
                "post_attention_layernorm.weight" => ("ffn_norm.weight", t.clone()),
                "self_attn.q_proj.weight" => ("attn_q.weight", interleave(t, HEADS)),
                "self_attn.k_proj.weight" => ("attn_k.weight", interleave(t, KV_HEADS)),
                "self_attn.v_proj.weight" => ("attn_v.weight", t.clone()),
                "self_attn.o_proj.weight" => ("attn_output.weight", t.clone()),
                "self_attn.q_proj.bias" => ("attn_q.bias", t.clone()),
                "self_attn.k_proj.bias" => ("attn_k.bias", t.clone()),
                "self_attn.v_proj.bias" => ("attn_v.bias", t.clone()),
                "self_attn.q_norm.weight" => ("attn_q_norm.weight", t.clone()),
                "self_attn.k_norm.weight" => ("attn_k_norm.weight", t.clone()),
                "mlp.gate_proj.weight" => ("ffn_gate.weight", t.clone()),
                "mlp.up_proj.weight" => ("ffn_up.weight", t.clone()),
                "mlp.down_proj.weight" => ("ffn_down.weight", t.clone()),
                other => panic!("unexpected tensor {other}"),
            };
            named.push((
                format!("blk.{layer}.{gguf_part}"),
                QTensor::quantize(&t, GgmlDType::F32).unwrap(),
            ));
            continue;
        } else {
            match hf.as_str() {
                "model.embed_tokens.weight" => "token_embd.weight",
                "lm_head.weight" => "output.weight",
                "model.norm.weight" => "output_norm.weight",
                other => panic!("unexpected tensor {other}"),
            }
        };
        named.push((
            name.to_string(),
            QTensor::quantize(t, GgmlDType::F32).unwrap(),
        ));
    }
    let key = |k: &str| format!("{arch}.{k}");
    let tokens: Vec<Value> = (0..VOCAB).map(|i| Value::String(format!("t{i}"))).collect();
    let metadata: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(arch.into())),
        (key("attention.head_count"), Value::U32(HEADS as u32)),
        (key("attention.head_count_kv"), Value::U32(KV_HEADS as u32)),
        (key("attention.key_length"), Value::U32(hd as u32)),
        (key("embedding_length"), Value::U32(HIDDEN as u32)),
        (key("block_count"), Value::U32(LAYERS as u32)),
        (key("context_length"), Value::U32(64)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        (key("rope.freq_base"), Value::F32(10000.0)),
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        ("tokenizer.ggml.tokens".into(), Value::Array(tokens)),
        ("tokenizer.ggml.merges".into(), Value::Array(Vec::new())),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(1)),
    ];
    let path = dir.join(format!("{arch}.gguf"));
    let mut file = std::fs::File::create(&path).unwrap();
    let metadata_refs: Vec<(&str, &Value)> =
        metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> = named.iter().map(|(k, t)| (k.as_str(), t)).collect();
    write(&mut file, &metadata_refs, &tensor_refs).unwrap();
    path
}

/// Logits of the last position from candle-transformers' implementation.
fn reference_logits(dir: &Path, family: Family, tokens: &[u32]) -> Vec<f32> {
    let device = Device::Cpu;
    let config_text = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let vb = unsafe {
        VarBuilder::from_mmaped_safetensors(&[dir.join("model.safetensors")], DType::F32, &device)
    }
    .unwrap();
    let input = Tensor::new(tokens, &device).unwrap().unsqueeze(0).unwrap();
    use candle_transformers::models::{llama, qwen2, qwen3};
    let logits = match family {
        Family::Qwen2 => {
            let cfg: qwen2::Config = serde_json::from_str(&config_text).unwrap();
            let mut model = qwen2::ModelForCausalLM::new(&cfg, vb).unwrap();
            model.forward(&input, 0).unwrap()
        }
        Family::Qwen3 => {
            let cfg: qwen3::Config = serde_json::from_str(&config_text).unwrap();
            let mut model = qwen3::ModelForCausalLM::new(&cfg, vb).unwrap();
            model.forward(&input, 0).unwrap()
        }
        Family::Llama => {
            let cfg: llama::LlamaConfig = serde_json::from_str(&config_text).unwrap();
            let cfg = cfg.into_config(false);
            let model = llama::Llama::load(vb, &cfg).unwrap();
            let mut cache = llama::Cache::new(false, DType::F32, &cfg, &device).unwrap();
            model.forward(&input, 0, &mut cache).unwrap()
        }
    };
    logits.flatten_all().unwrap().to_vec1().unwrap()
}

fn our_logits(model: &iesr::llm::local::LocalModel, tokens: &[u32]) -> Vec<f32> {
    let transformer = model.transformer();
    let mut cache = transformer.new_cache(1, tokens.len()).unwrap();
    let input = Tensor::new(tokens, transformer.device())
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let logits = transformer.forward(&input, &mut cache).unwrap();
    logits.flatten_all().unwrap().to_vec1().unwrap()
}

fn check_family(family: Family) {
    let dir = tempfile::tempdir().unwrap();
    write_checkpoint(dir.path(), family);
    let files = CheckpointFiles::in_dir(dir.path()).unwrap();
    let model = hub::load(&files, &Device::Cpu, DType::F32).unwrap();
    let tokens = [2u32, 5, 7, 3, 9, 4, 11, 6];
    let ours = our_logits(&model, &tokens);
    let reference = reference_logits(dir.path(), family, &tokens);
    assert_eq!(ours.len(), VOCAB);
    let worst = ours
        .iter()
        .zip(&reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-4, "largest logit difference {worst}");

    let from_gguf = write_gguf(dir.path(), family);
    let gguf_model = iesr::llm::gguf::load(&from_gguf).unwrap();
    let via_gguf = our_logits(&gguf_model, &tokens);
    let worst = via_gguf
        .iter()
        .zip(&reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-4, "GGUF: largest logit difference {worst}");

    // Through the common trait, with the checkpoint's chat template.
    let prompt = Prompt::Chat(vec![ChatMessage::new("user", "select name from singer")]);
    let sampling = Sampling {
        max_tokens: 6,
        seed: 1,
        temperature: 0.7,
        n: 2,
        ..Sampling::default()
    };
    let first = model.generate(&prompt, &sampling).unwrap();
    let again = model.generate(&prompt, &sampling).unwrap();
    assert_eq!(first.completions, again.completions);
    assert_eq!(first.completions.len(), 2);
    assert_eq!(first.usage.prompt_tokens, 4);
}

#[test]
fn qwen2_matches_the_reference() {
    check_family(Family::Qwen2);
}

#[test]
fn qwen3_matches_the_reference() {
    check_family(Family::Qwen3);
}

#[test]
fn llama_matches_the_reference() {
    check_family(Family::Llama);
}

#[test]
fn incomplete_checkpoints_name_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    write_checkpoint(dir.path(), Family::Qwen2);
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    let err = CheckpointFiles::in_dir(dir.path()).err().unwrap();
    assert!(
        matches!(err, Error::ModelMissing(ref p) if p.ends_with("model.safetensors")),
        "{err}"
    );

    write_checkpoint(dir.path(), Family::Qwen2);
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        config.replace("\"qwen2\"", "\"gpt_neox\""),
    )
    .unwrap();
    let files = CheckpointFiles::in_dir(dir.path()).unwrap();
    let err = hub::load(&files, &Device::Cpu, DType::F32).err().unwrap();
    assert!(matches!(err, Error::UnknownArchitecture { .. }), "{err}");
}
