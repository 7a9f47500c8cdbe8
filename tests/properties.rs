//! Property tests of every reader of untrusted text: model output (SQL
//! extraction, semantic state, literal dicts, action outputs), the guard's
//! statement check, cell values, table files, dataset files and GGUF
//! headers. Whatever the input, none may panic; where a reader has a
//! simple contract, it holds on generated inputs. The case counts are
//! fixed, so the run takes the same few seconds every time.

use iesr::action::ActionSet;
use iesr::db::guard::check_single_read;
use iesr::eval::dataset::{self, DatasetKind, Filters};
use iesr::search::extract::extract_sql;
use iesr::sources::cells::{parse_date, parse_number};
use iesr::sources::read_table;
use iesr::understand::literal::{parse_object, parse_value};
use iesr::understand::state::parse_semantic_state;
use proptest::prelude::*;
use std::path::Path;

/// Text that looks like what a model writes: SQL words, fences, tags,
/// brackets, quotes and Python literals mixed with arbitrary characters.
fn model_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("```sql\n".to_string()),
        Just("```".to_string()),
        Just("<sql>".to_string()),
        Just("</sql>".to_string()),
        Just("<final_sql>".to_string()),
        Just("SELECT ".to_string()),
        Just("WITH ".to_string()),
        Just(" FROM t".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just(": ".to_string()),
        Just(", ".to_string()),
        Just("None".to_string()),
        Just("True".to_string()),
        Just("\\".to_string()),
        Just(";".to_string()),
        Just("\n".to_string()),
        "\\PC{0,8}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn model_output_readers_never_panic(text in model_text()) {
        let _ = extract_sql(&text);
        let _ = parse_object(&text);
        let _ = parse_value(&text);
        let _ = parse_semantic_state(&text);
        for action in ActionSet::builtin().iter() {
            let _ = action.parse(&text);
        }
    }

    #[test]
    fn a_fenced_query_is_extracted_as_written(
        prose in "[a-zA-Z ,.]{0,40}",
        columns in prop::collection::vec("[a-z][a-z0-9_]{0,8}", 1..4),
        table in "[a-z][a-z0-9_]{0,8}",
    ) {
        let sql = format!("SELECT {} FROM {table}", columns.join(", "));
        let text = format!("{prose}\n```sql\n{sql};\n```\n{prose}");
        prop_assert_eq!(extract_sql(&text), Some(sql));
    }

    #[test]
    fn a_python_dict_reads_like_its_json(
        entries in prop::collection::btree_map("[a-z_]{1,8}", prop_oneof![
            any::<i32>().prop_map(|n| (n.to_string(), serde_json::json!(n))),
            "[a-zA-Z0-9 ]{0,12}".prop_map(|s| (format!("'{s}'"), serde_json::json!(s))),
            any::<bool>().prop_map(|b| (if b { "True" } else { "False" }.to_string(), serde_json::json!(b))),
            Just(("None".to_string(), serde_json::Value::Null)),
        ], 0..6),
        prose in "[a-zA-Z ]{0,20}",
    ) {
        let literal = entries
            .iter()
            .map(|(key, (text, _))| format!("'{key}': {text}"))
            .collect::<Vec<_>>()
            .join(", ");
        let expected: serde_json::Map<String, serde_json::Value> = entries
            .into_iter()
            .map(|(key, (_, value))| (key, value))
            .collect();
        let parsed = parse_object(&format!("{prose} {{{literal}}} {prose}"));
        prop_assert_eq!(parsed, Ok(serde_json::Value::Object(expected)));
    }

    #[test]
    fn the_guard_never_panics_and_refuses_a_second_statement(
        text in model_text(),
        n in any::<i64>(),
    ) {
        let _ = check_single_read(&text);
        let one = format!("SELECT {n}");
        let two = format!("SELECT {n}; DELETE FROM t");
        prop_assert!(check_single_read(&one).is_ok());
        prop_assert!(check_single_read(&two).is_err());
    }

    #[test]
    fn cell_readers_never_panic(text in "\\PC{0,24}") {
        let _ = parse_number(&text);
        let _ = parse_date(&text);
    }

    #[test]
    fn numbers_with_thousands_separators_read_as_numbers(n in 0i64..1_000_000_000_000) {
        let plain = n.to_string();
        let mut grouped = String::new();
        for (i, digit) in plain.chars().enumerate() {
            if i > 0 && (plain.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        let number = parse_number(&grouped).expect("a grouped integer is a number");
        prop_assert_eq!(number.value, n as f64);
    }
}

/// Writes `text` to `name` in a fresh folder and hands the path over.
fn with_file<T>(name: &str, text: &[u8], read: impl FnOnce(&Path) -> T) -> T {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    read(&path)
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn table_files_never_panic(text in model_text(), ext in prop_oneof![
        Just("csv"), Just("tsv"), Just("json"), Just("jsonl"), Just("txt"),
    ]) {
        with_file(&format!("t.{ext}"), text.as_bytes(), |path| {
            let _ = read_table(path);
        });
    }

    #[test]
    fn dataset_files_never_panic(text in model_text(), which in 0usize..5) {
        let (kind, file) = [
            (DatasetKind::Spider, "dev.json"),
            (DatasetKind::Logiccat, "dev.json"),
            (DatasetKind::Wikitablequestions, "data/random-split-1-dev.tsv"),
            (DatasetKind::Tablebench, "TableBench.jsonl"),
            (DatasetKind::Metaqa, "qa_dev_1hop.txt"),
        ][which];
        with_file(file, text.as_bytes(), |path| {
            let mut dir = path.parent().unwrap();
            if file.contains('/') {
                dir = dir.parent().unwrap();
            }
            let _ = dataset::load(kind, dir, &Filters::default());
        });
    }

    #[test]
    fn gguf_headers_never_panic(
        version in 0u32..5,
        counts in (any::<u64>(), any::<u64>()),
        tail in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = b"GGUF".to_vec();
        bytes.extend(version.to_le_bytes());
        bytes.extend(counts.0.to_le_bytes());
        bytes.extend(counts.1.to_le_bytes());
        bytes.extend(tail);
        with_file("m.gguf", &bytes, |path| {
            prop_assert!(iesr::llm::gguf::load(path).is_err());
            Ok(())
        })?;
    }
}
