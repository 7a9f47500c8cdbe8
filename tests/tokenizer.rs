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

/// The tokens the name constraint lets a greedy row write when the model
/// wants `wanted`, one after another, after `written`, over a database of
/// a table `销售` (sales), a table `Café` and a table `糕点` (pastries),
/// whose first letter shares its first two bytes with `糖` (sugar).
fn written_under_the_constraint(written: &str, wanted: &str) -> Vec<u32> {
    use iesr::llm::decoding::{RowState, TextCodec};
    use iesr::llm::Sampling;
    use iesr::search::name_constraint::{NameConstraint, SchemaVocabulary};

    let tokenizer = load_tokenizer(&model_path()).unwrap();
    let wanted = tokenizer.encode(wanted, false).unwrap().get_ids().to_vec();
    let vocab = tokenizer.get_vocab_size(true);
    let codec = TextCodec::new("qwen".into(), tokenizer, None, Vec::new(), 4096);
    let names = SchemaVocabulary::of_tables(
        [
            ("销售", ["编号", "数量"]),
            ("Café", ["id", "Nom"]),
            ("糕点", ["id", "Nom"]),
        ]
        .into_iter()
        .map(|(table, columns)| (table, columns.into_iter())),
    );
    let sampling = Sampling {
        constraint: Some(NameConstraint::continuing(names, written)),
        ..Sampling::default()
    };
    let mut row = RowState::new(&sampling, 0, 64);
    for &token in &wanted {
        let mut logits = vec![0.0f32; vocab];
        logits[token as usize] = 10.0;
        codec.sample_next(&mut row, &logits).unwrap();
    }
    row.tokens().to_vec()
}

#[test]
fn the_name_constraint_reads_letters_split_over_tokens_whole() {
    let tokenizer = load_tokenizer(&model_path()).unwrap();
    let ids = |text: &str| tokenizer.encode(text, false).unwrap().get_ids().to_vec();
    // Qwen2's tokenizer writes 销 and 糖 as pieces of their bytes, each
    // of which alone decodes to U+FFFD.
    assert!(ids(" 销售").len() > 2 && ids(" 糖").len() > 1);
    let after_from = "```sql\nSELECT * FROM";
    // A table the schema has, written in pieces of letters, is allowed...
    assert_eq!(
        written_under_the_constraint(after_from, " 销售"),
        ids(" 销售")
    );
    assert_eq!(
        written_under_the_constraint(after_from, " Café"),
        ids(" Café")
    );
    // ...and one it lacks is refused once its first letter is whole: the
    // letter's last byte is drawn again, and the table that shares its
    // first bytes is written.
    let invented = ids(" 糖咖啡");
    let written = written_under_the_constraint(after_from, " 糖咖啡");
    assert_ne!(written, invented);
    assert_eq!(
        written[0], invented[0],
        "a letter's first byte cannot be judged"
    );
    let text = tokenizer.decode(&written, false).unwrap();
    assert!(text.starts_with(" 糕"), "{text:?}");
}

/// A greedy row under the name constraint over the one table `table`
/// with `columns`, after `written`, when the model likes `logits` (token,
/// logit) at every step, for `steps` steps.
fn written_liking(
    (table, columns): (&str, [&str; 2]),
    written: &str,
    logits: &[(u32, f32)],
    steps: usize,
) -> Vec<u32> {
    use iesr::llm::decoding::{RowState, TextCodec};
    use iesr::llm::Sampling;
    use iesr::search::name_constraint::{NameConstraint, SchemaVocabulary};

    let tokenizer = load_tokenizer(&model_path()).unwrap();
    let vocab = tokenizer.get_vocab_size(true);
    let codec = TextCodec::new("qwen".into(), tokenizer, None, Vec::new(), 4096);
    let names = SchemaVocabulary::of_tables([(table, columns.into_iter())].into_iter());
    let sampling = Sampling {
        constraint: Some(NameConstraint::continuing(names, written)),
        ..Sampling::default()
    };
    let mut row = RowState::new(&sampling, 0, 64);
    for _ in 0..steps {
        let mut scores = vec![0.0f32; vocab];
        for &(token, logit) in logits {
            scores[token as usize] = logit;
        }
        codec.sample_next(&mut row, &scores).unwrap();
    }
    row.tokens().to_vec()
}

#[test]
fn a_first_byte_is_no_way_around_the_rule_where_no_name_goes_beyond_ascii() {
    let tokenizer = load_tokenizer(&model_path()).unwrap();
    // The byte E2 alone: the first of three bytes of a letter such as `€`.
    let first_byte = tokenizer.token_to_id("â").unwrap();
    let invented = tokenizer.encode(" tshirt", false).unwrap().get_ids()[0];
    // The model holds to a column the table lacks, refused, and next
    // likes the lone byte: no name can hold the letter it starts.
    let expense = ("expense", ["cost", "approved"]);
    let written = written_liking(
        expense,
        "```sql\nSELECT cost FROM expense WHERE",
        &[(invented, 10.0), (first_byte, 9.0)],
        4,
    );
    assert!(!written.contains(&first_byte), "{written:?}");
    // In a literal any letter goes, written over several tokens.
    let sugar = tokenizer.encode(" 糖", false).unwrap().get_ids().to_vec();
    assert!(sugar.len() > 1, "{sugar:?}");
    let written = written_liking(
        expense,
        "```sql\nSELECT cost FROM expense WHERE approved = '",
        &[(sugar[0], 10.0)],
        1,
    );
    assert_eq!(written, [sugar[0]]);
}

#[test]
fn bytes_that_make_no_letter_are_refused_once_they_show_it() {
    let tokenizer = load_tokenizer(&model_path()).unwrap();
    let first_byte = tokenizer.token_to_id("â").unwrap();
    let invented = tokenizer.encode(" tshirt", false).unwrap().get_ids()[0];
    // Names beyond ASCII: a first byte may start one of them, but a
    // second first byte after it makes no letter.
    let written = written_liking(
        ("销售", ["编号", "数量"]),
        "```sql\nSELECT 数量 FROM 销售 WHERE",
        &[(invented, 10.0), (first_byte, 9.0)],
        4,
    );
    let bytes = written.iter().filter(|&&t| t == first_byte).count();
    assert!(bytes <= 1, "{written:?}");
}
