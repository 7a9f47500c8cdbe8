//! Our tokenizer, built from the GGUF's own metadata, gives exactly the ids
//! llama.cpp gives for the same file (fixture recorded with
//! scripts/record_llamacpp_token_ids.py; its command is in the fixture).

mod common;

use common::model_path;

use iesr::llm::gguf::load_tokenizer;
use serde_json::Value;

fn fixture() -> Value {
    let text = include_str!("fixtures/llamacpp_token_ids.json");
    serde_json::from_str(text).unwrap()
}

fn ids(value: &Value) -> Vec<u32> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn token_ids_equal_llama_cpp() {
    let tokenizer = load_tokenizer(&model_path()).unwrap();
    let fixture = fixture();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let ours = tokenizer.encode(text, false).unwrap().get_ids().to_vec();
        assert_eq!(ours, ids(&case["ids"]), "{text:?}");
        // And back again.
        assert_eq!(tokenizer.decode(&ours, false).unwrap(), text);
    }
}

#[test]
fn decomposed_accents_are_the_one_known_difference() {
    let tokenizer = load_tokenizer(&model_path()).unwrap();
    let fixture = fixture();
    let case = &fixture["decomposed_accents"];
    let text = case["text"].as_str().unwrap();
    let ours = tokenizer.encode(text, false).unwrap().get_ids().to_vec();
    // We normalise to NFC (as Hugging Face does); llama.cpp keeps the
    // combining marks, so its ids differ. Ours equal those of the
    // precomposed text.
    assert_ne!(ours, ids(&case["ids"]));
    let composed: String = "Caf\u{e9} and cr\u{e8}me".into();
    assert_eq!(
        ours,
        tokenizer
            .encode(composed, false)
            .unwrap()
            .get_ids()
            .to_vec()
    );
}
