//! llama.cpp in this process (`cargo test --release --features llama-cpp`)
//! with the real default model: our tokenizer, template and sampling on its
//! forward pass, its cache reused across calls and shared by a call's rows.
#![cfg(feature = "llama-cpp")]

mod common;

use common::{check_answer_states_are_reused, greedy, model_path, sql_prompt};

use iesr::llm::{load_llamacpp, LanguageModel, Prompt, Sampling};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The model, loaded once, and a lock that keeps the tests from mixing
/// their calls into the one prompt cache.
fn model() -> (MutexGuard<'static, ()>, &'static Arc<dyn LanguageModel>) {
    static MODEL: OnceLock<Arc<dyn LanguageModel>> = OnceLock::new();
    static TURN: Mutex<()> = Mutex::new(());
    let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let model = MODEL.get_or_init(|| load_llamacpp(model_path().to_str().unwrap(), 2).unwrap());
    (turn, model)
}

#[test]
fn answers_with_sql_and_reuses_the_last_prompt() {
    let (_turn, model) = model();
    let prompt = sql_prompt("How many singers are there?");
    let first = model.generate(&prompt, &greedy(48)).unwrap();
    let text = &first.completions[0].text;
    assert!(
        text.to_uppercase().contains("SELECT COUNT(*) FROM SINGER"),
        "{text}"
    );

    let again = model.generate(&prompt, &greedy(48)).unwrap();
    assert_eq!(
        again.usage.cached_prompt_tokens,
        again.usage.prompt_tokens - 1
    );
    assert_eq!(again.completions[0].text, *text);

    let other = model
        .generate(
            &sql_prompt("Which country has the most singers?"),
            &greedy(8),
        )
        .unwrap();
    assert!(other.usage.cached_prompt_tokens > 40, "{:?}", other.usage);
    assert!(other.usage.cached_prompt_tokens < other.usage.prompt_tokens - 1);
}

#[test]
fn the_next_turn_reuses_the_answer() {
    let (_turn, model) = model();
    check_answer_states_are_reused(model.as_ref());
}

/// The rows of one call share the prompt's cells: greedy rows equal the
/// single greedy answer, and seeded samples repeat exactly.
#[test]
fn rows_of_a_call_share_the_prompt() {
    let (_turn, model) = model();
    let prompt = sql_prompt("What is the average age of singers from France?");
    let single = model.generate(&prompt, &greedy(40)).unwrap();
    let batched = model
        .generate(&prompt, &Sampling { n: 3, ..greedy(40) })
        .unwrap();
    assert_eq!(batched.completions.len(), 3);
    for completion in &batched.completions {
        assert_eq!(completion.text, single.completions[0].text);
    }

    let sampling = Sampling {
        temperature: 1.0,
        top_p: 0.95,
        max_tokens: 24,
        seed: 42,
        n: 3,
        ..Sampling::default()
    };
    let texts = |sampling: &Sampling| {
        model
            .generate(&prompt, sampling)
            .unwrap()
            .completions
            .into_iter()
            .map(|c| c.text)
            .collect::<Vec<_>>()
    };
    let first = texts(&sampling);
    assert_eq!(first, texts(&sampling));
    let distinct: std::collections::HashSet<_> = first.iter().collect();
    assert!(distinct.len() > 1, "identical samples: {first:?}");
}

#[test]
fn to_limit_decodes_exactly_max_tokens() {
    let (_turn, model) = model();
    let sampling = Sampling {
        to_limit: true,
        n: 2,
        ..greedy(20)
    };
    let generation = model
        .generate(&Prompt::Raw("SELECT 1;".into()), &sampling)
        .unwrap();
    assert_eq!(generation.usage.generated_tokens, 40);
    for completion in &generation.completions {
        assert_eq!(completion.generated_tokens, 20);
    }
}
