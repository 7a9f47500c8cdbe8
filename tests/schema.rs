//! Schema introspection and rendering on real benchmark databases.

mod common;

use common::{concert_singer, datasets, student_club};
use iesr::db::json_shape::JsonShape;
use iesr::db::{render_schema, IntrospectOptions, Schema, Value};

#[test]
fn introspects_tables_keys_counts_examples_and_descriptions() {
    let schema = Schema::load(&student_club(), &IntrospectOptions::default()).unwrap();
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "event",
            "major",
            "zip_code",
            "attendance",
            "budget",
            "expense",
            "income",
            "member"
        ]
    );
    let event = schema.table("event").unwrap();
    assert_eq!(event.row_count, Some(42));
    let event_id = &event.columns[0];
    assert_eq!(event_id.name, "event_id");
    assert!(event_id.primary_key);
    assert_eq!(
        event_id.description.as_deref(),
        Some("A unique identifier for the event")
    );
    let status = event.columns.iter().find(|c| c.name == "status").unwrap();
    assert_eq!(status.examples.len(), 3);
    assert!(status.examples.contains(&Value::Text("Open".into())));

    let attendance = schema.table("attendance").unwrap();
    let targets: Vec<(&str, &str)> = attendance
        .foreign_keys
        .iter()
        .map(|fk| (fk.column.as_str(), fk.foreign_table.as_str()))
        .collect();
    assert!(targets.contains(&("link_to_event", "event")));
    assert!(targets.contains(&("link_to_member", "member")));
}

#[test]
fn renders_within_budget_and_keeps_keys() {
    let schema = Schema::load(&concert_singer(), &IntrospectOptions::default()).unwrap();
    let full = render_schema(&schema, 100_000);
    assert!(full.contains("CREATE TABLE singer ("));
    assert!(full.contains("REFERENCES"), "{full}");
    assert!(full.contains("e.g."));
    let small = render_schema(&schema, full.chars().count() / 2);
    assert!(small.chars().count() <= full.chars().count() / 2);
    assert!(small.contains("REFERENCES"), "{small}");
}

#[test]
fn keys_of_generated_codes_are_shown_without_examples() {
    let schema = Schema::load(&student_club(), &IntrospectOptions::default()).unwrap();
    let text = render_schema(&schema, 100_000);
    let line = |start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no line {start} in {text}"))
            .to_string()
    };
    // Record ids such as 'rec0akZnLLpGUloLH', on both ends of a key.
    assert!(
        !line("event_id TEXT PRIMARY KEY").contains("e.g."),
        "{text}"
    );
    assert!(
        !line("link_to_event TEXT REFERENCES").contains("e.g."),
        "{text}"
    );
    // Names and categories keep theirs.
    assert!(line("event_name TEXT").contains("e.g. '"), "{text}");
    assert!(line("status TEXT").contains("e.g. 'Open'"), "{text}");
}

#[test]
fn a_column_of_json_objects_is_shown_with_its_keys() {
    let yacht = datasets().join("logiccat/databases/yacht/yacht.sqlite");
    let schema = Schema::load(&yacht, &IntrospectOptions::default()).unwrap();
    let charters = schema.table("charters").unwrap();
    let services = charters
        .columns
        .iter()
        .find(|c| c.name == "Additional_Services")
        .unwrap();
    let Some(JsonShape::Object(keys)) = &services.json else {
        panic!("{:?}", services.json)
    };
    assert!(keys.iter().any(|(key, _)| key == "Catering"), "{keys:?}");
    let rendered = render_schema(&schema, 100_000);
    assert!(
        rendered.contains("Additional_Services TEXT, -- JSON object; keys: Catering (e.g. "),
        "{rendered}"
    );
    // A column of plain text has no shape.
    let status = charters
        .columns
        .iter()
        .find(|c| c.name == "Payment_Status")
        .unwrap();
    assert_eq!(status.json, None);
}
