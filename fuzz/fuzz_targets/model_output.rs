//! Readers of a model's answer: SQL extraction, literal dicts, the
//! semantic state and every action's output.
#![no_main]

use iesr::action::ActionSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = iesr::search::extract::extract_sql(text);
    let _ = iesr::understand::literal::parse_object(text);
    let _ = iesr::understand::literal::parse_value(text);
    let _ = iesr::understand::state::parse_semantic_state(text);
    for action in ActionSet::builtin().iter() {
        let _ = action.parse(text);
    }
});
