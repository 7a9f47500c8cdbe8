//! The GGUF backend with the real default model (run `iesr model pull`
//! first, or point IESR_MODEL at the GGUF file).

mod common;

use common::{check_answer_states_are_reused, greedy, model_path, sql_prompt};

use iesr::llm::gguf;
use iesr::llm::local::LocalModel;
use iesr::llm::{ChatMessage, FinishReason, LanguageModel, Prompt, Sampling};
use iesr::Error;
use std::sync::OnceLock;

/// One loaded model shared by the tests that do not care about the cache.
fn shared() -> &'static LocalModel {
    static MODEL: OnceLock<LocalModel> = OnceLock::new();
    MODEL.get_or_init(|| gguf::load(&model_path()).unwrap())
}

#[test]
fn chat_completion_answers_with_sql() {
    let generation = shared()
        .generate(&sql_prompt("How many singers are there?"), &greedy(48))
        .unwrap();
    let text = &generation.completions[0].text;
    assert!(
        text.to_uppercase().contains("SELECT COUNT(*) FROM SINGER"),
        "{text}"
    );
    assert_eq!(
        generation.usage.generated_tokens,
        generation.completions[0].generated_tokens
    );
    assert!(generation.usage.prompt_tokens > 40);
}

#[test]
fn chat_template_comes_from_the_gguf() {
    let text = shared()
        .render(&Prompt::Chat(vec![ChatMessage::new("user", "hi")]))
        .unwrap();
    // Qwen's template adds a default system turn and opens the assistant's.
    assert!(text.starts_with("<|im_start|>system\n"), "{text}");
    assert!(
        text.ends_with("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"),
        "{text}"
    );
}

#[test]
fn prompt_tokens_are_counted_by_the_models_tokenizer() {
    let text = "  level REAL, -- e.g. 209458.7919, 314187.15838\n  city TEXT -- e.g. 'Porto'";
    let tokenizer = gguf::load_tokenizer(&model_path()).unwrap();
    let ids = tokenizer.encode(text, false).unwrap().get_ids().len();
    assert_eq!(shared().count_tokens(text), ids);
    // Each digit is a token of its own, which the estimate for backends
    // without a tokenizer relies on.
    assert_eq!(shared().count_tokens("209458"), 6);
}

#[test]
fn same_seed_same_samples_and_rows_differ() {
    let sampling = Sampling {
        temperature: 1.0,
        top_p: 0.95,
        max_tokens: 24,
        seed: 42,
        n: 3,
        ..Sampling::default()
    };
    let prompt = sql_prompt("List the names of singers older than 30, oldest first.");
    // A fresh model: the first call computes the prompt, the second reuses
    // its cached states, and the samples must not change.
    let model = gguf::load(&model_path()).unwrap();
    let first = model.generate(&prompt, &sampling).unwrap();
    let again = model.generate(&prompt, &sampling).unwrap();
    assert_eq!(first.usage.cached_prompt_tokens, 0);
    assert!(again.usage.cached_prompt_tokens > 0);
    let texts = |g: &iesr::llm::Generation| {
        g.completions
            .iter()
            .map(|c| c.text.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&first), texts(&again));
    assert_eq!(first.completions.len(), 3);
    let distinct: std::collections::HashSet<_> = texts(&first).into_iter().collect();
    assert!(
        distinct.len() > 1,
        "three samples at temperature 1 were identical: {:?}",
        texts(&first)
    );
}

#[test]
fn the_next_turn_reuses_the_answer() {
    // A fresh model, so no other test's entries serve the prompt.
    check_answer_states_are_reused(&gguf::load(&model_path()).unwrap());
}

/// Batched rows and cached prefixes must not change what the model computes:
/// greedy text is the same cold, from the prefix cache, and in a batch.
#[test]
fn prefix_cache_and_batching_preserve_greedy_output() {
    let model = gguf::load(&model_path()).unwrap();
    let prompt = sql_prompt("What is the average age of singers from France?");
    let cold = model.generate(&prompt, &greedy(40)).unwrap();
    assert_eq!(cold.usage.cached_prompt_tokens, 0);

    let warm = model.generate(&prompt, &greedy(40)).unwrap();
    assert_eq!(
        warm.usage.cached_prompt_tokens,
        warm.usage.prompt_tokens - 1
    );
    assert_eq!(warm.completions[0].text, cold.completions[0].text);

    // A different question after the same system text and schema.
    let other = model
        .generate(
            &sql_prompt("Which country has the most singers?"),
            &greedy(8),
        )
        .unwrap();
    assert!(other.usage.cached_prompt_tokens > 40, "{:?}", other.usage);

    // Four rows decode as one batch (calls of up to three decode row by row).
    let batched = model
        .generate(&prompt, &Sampling { n: 4, ..greedy(40) })
        .unwrap();
    assert_eq!(batched.usage.guessed_tokens, 0);
    for completion in &batched.completions {
        assert_eq!(completion.text, cold.completions[0].text);
    }
}

/// Checking guessed tokens several at a time must not change greedy text,
/// and on a prompt the answer copies from, most guesses must be kept.
#[test]
fn guessed_tokens_keep_greedy_output() {
    let prompt = Prompt::Chat(vec![ChatMessage::new(
        "user",
        "Copy this query exactly, in a ```sql block:\nSELECT name, country, age FROM singer WHERE age > 30 AND country = 'France' ORDER BY age DESC, name",
    )]);
    let plain = gguf::load(&model_path()).unwrap().with_max_draft(0);
    let drafted = gguf::load(&model_path()).unwrap().with_max_draft(3);
    let one_by_one = plain.generate(&prompt, &greedy(48)).unwrap();
    let guessed = drafted.generate(&prompt, &greedy(48)).unwrap();
    assert_eq!(guessed.completions[0].text, one_by_one.completions[0].text);
    assert_eq!(one_by_one.usage.guessed_tokens, 0);
    let usage = &guessed.usage;
    assert!(
        usage.kept_guesses * 2 > usage.generated_tokens,
        "{usage:?}: {}",
        guessed.completions[0].text
    );
    // Several rows, each drafted: the same greedy text in every row.
    let rows = drafted
        .generate(&prompt, &Sampling { n: 2, ..greedy(48) })
        .unwrap();
    assert!(rows.usage.kept_guesses > 0, "{:?}", rows.usage);
    for completion in &rows.completions {
        assert_eq!(completion.text, one_by_one.completions[0].text);
    }
}

#[test]
fn stop_strings_and_length_limits_end_generation() {
    let sampling = Sampling {
        stop: vec!["FROM".into()],
        ..greedy(48)
    };
    let generation = shared()
        .generate(&sql_prompt("How many singers are there?"), &sampling)
        .unwrap();
    let completion = &generation.completions[0];
    assert_eq!(completion.finish_reason, FinishReason::Stop);
    assert!(!completion.text.contains("FROM"), "{}", completion.text);

    let short = shared()
        .generate(&sql_prompt("How many singers are there?"), &greedy(3))
        .unwrap();
    assert_eq!(short.completions[0].finish_reason, FinishReason::Length);
    assert_eq!(short.completions[0].generated_tokens, 3);
}

#[test]
fn prompt_longer_than_the_context_is_refused() {
    let huge = "SELECT 1; ".repeat(40_000);
    let err = shared()
        .generate(&Prompt::Raw(huge), &greedy(4))
        .unwrap_err();
    assert!(matches!(err, Error::PromptTooLong { .. }), "{err}");
}

#[test]
fn broken_model_files_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.gguf");
    assert!(matches!(gguf::load(&missing), Err(Error::ModelMissing(_))));

    let garbage = dir.path().join("garbage.gguf");
    std::fs::write(&garbage, b"this is not a gguf file at all").unwrap();
    assert!(matches!(
        gguf::load(&garbage),
        Err(Error::ModelCorrupt { .. })
    ));

    // The real file cut short: header and metadata intact, tensors missing.
    let truncated = dir.path().join("truncated.gguf");
    let mut source = std::fs::File::open(model_path()).unwrap();
    let mut head = vec![0u8; 8 << 20];
    std::io::Read::read_exact(&mut source, &mut head).unwrap();
    std::fs::write(&truncated, &head).unwrap();
    let err = gguf::load(&truncated).err().unwrap();
    assert!(matches!(err, Error::ModelCorrupt { .. }), "{err}");
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn unknown_architecture_is_named() {
    use candle_core::quantized::gguf_file::{write, Value};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mamba.gguf");
    let mut file = std::fs::File::create(&path).unwrap();
    let arch = Value::String("mamba".into());
    write(&mut file, &[("general.architecture", &arch)], &[]).unwrap();
    drop(file);
    let err = gguf::load(&path).err().unwrap();
    assert!(matches!(err, Error::UnknownArchitecture { .. }), "{err}");
    assert!(err.to_string().contains("mamba"));
}

/// Prompts of unequal length decoded in one left-padded batch give the
/// same greedy text as each decoded alone. (Batched and single products
/// round differently in the last bits, so a question whose top two tokens
/// are nearly tied, such as "Oldest singer?" with or without DESC, could
/// flip; these are not.)
#[test]
fn unequal_prompts_batch_like_single_requests() {
    let questions = [
        "How many singers are there?",
        "What are the names and ages of all singers from France, youngest first, skipping anyone without an age?",
        "Singer names?",
    ];
    let requests: Vec<(Prompt, Sampling)> = questions
        .iter()
        .map(|q| (sql_prompt(q), greedy(32)))
        .collect();
    let batched = shared().generate_many(&requests).unwrap();
    assert_eq!(batched.len(), 3);
    let lengths: Vec<usize> = batched.iter().map(|g| g.usage.prompt_tokens).collect();
    assert!(
        lengths[1] > lengths[0] && lengths[0] > lengths[2],
        "{lengths:?}"
    );
    for ((prompt, sampling), together) in requests.iter().zip(&batched) {
        let alone = shared().generate(prompt, sampling).unwrap();
        assert_eq!(together.completions[0].text, alone.completions[0].text);
    }
}

/// Largest absolute difference between two rows of logits.
fn distance(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn hidden_positions_leave_rows_as_if_never_fed() {
    use candle_core::Tensor;
    use iesr::llm::kv::KvCache;
    use iesr::llm::transformer::row_logits;

    let model = shared();
    let t = model.transformer();
    let ids = model
        .encode("SELECT name, country FROM singer WHERE age > 30 ORDER BY")
        .unwrap();
    let tokens = model.encode(" age name DESC country LIMIT").unwrap();
    let [a, b, c, d, e] = tokens[..] else {
        panic!("expected 5 tokens, got {tokens:?}")
    };
    let feed = |cache: &mut KvCache, rows: &[&[u32]]| -> Vec<Vec<f32>> {
        let width = rows[0].len();
        let input = Tensor::from_vec(rows.concat(), (rows.len(), width), t.device()).unwrap();
        let logits = t.forward(&input, cache).unwrap();
        (0..rows.len())
            .map(|r| row_logits(&logits, r).unwrap())
            .collect()
    };
    // What one row computes when fed only the tokens it keeps.
    let alone = |tail: &[u32]| -> Vec<f32> {
        let mut cache = t.new_cache(1, 64).unwrap();
        feed(&mut cache, &[&[ids.as_slice(), tail].concat()]).remove(0)
    };
    let single = model.prefill(&ids, 64).unwrap().cache;
    let prompt = single.snapshot(0, ids.len()).unwrap();
    let mut batch = KvCache::from_snapshot(&prompt, 2, 64, t.device()).unwrap();
    // Row 0 keeps a b, row 1 keeps a: the last position goes, and row 1
    // hides the one before.
    feed(&mut batch, &[&[a, b, e], &[a, e, e]]);
    batch.discard(&[1, 2]);
    assert_eq!(batch.hidden(), [vec![], vec![1]]);
    let next = feed(&mut batch, &[&[d], &[c]]);
    let row1 = alone(&[a, c]);
    assert!(distance(&next[0], &alone(&[a, b, d])) < 1.0);
    assert!(distance(&next[1], &row1) < 1.0);
    // The test can tell: attending to the hidden tokens changes the logits.
    assert!(distance(&alone(&[a, e, e, c]), &row1) > 3.0);

    // Compaction moves row 1's hidden positions out of the way.
    batch.compact().unwrap();
    assert_eq!(batch.hidden(), [vec![], vec![0]]);
    let last = feed(&mut batch, &[&[e], &[e]]);
    assert!(distance(&last[0], &alone(&[a, b, d, e])) < 1.0);
    assert!(distance(&last[1], &alone(&[a, c, e])) < 1.0);
}

#[test]
fn the_reviewer_finds_the_question_likelier_after_the_query_that_answers_it() {
    let schema = "CREATE TABLE singer (\n  Singer_ID INT PRIMARY KEY,\n  Name TEXT,\n  Age INT,\n  Country TEXT\n);";
    let queries = [
        "SELECT count(*) FROM singer",
        "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1",
    ];
    let review = |question: &str| {
        let asked = iesr::select::review::Asked {
            schema,
            hint: None,
            question,
        };
        iesr::select::review::review(shared(), asked, &queries)
            .unwrap()
            .expect("an in-process model scores")
            .records
    };
    let count = review("How many singers are there?");
    let oldest = review("What is the name of the oldest singer?");
    assert!(count[0].log_prob > count[1].log_prob + 1.0, "{count:?}");
    assert!(oldest[1].log_prob > oldest[0].log_prob + 1.0, "{oldest:?}");
    // The second time the prompts' prefixes come from the cache; the
    // scores stay the same.
    let again = review("How many singers are there?");
    for (a, b) in count.iter().zip(&again) {
        assert!((a.log_prob - b.log_prob).abs() < 1e-3, "{a:?} {b:?}");
    }
}

/// A prompt whose long schema part is shared with other questions.
fn wide_schema_prompt(question: &str) -> Prompt {
    let tables: String = (0..24)
        .map(|i| {
            format!("CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name{i} TEXT, value{i} REAL);\n")
        })
        .collect();
    Prompt::Chat(vec![
        ChatMessage::new("system", "Answer with one SQLite query."),
        ChatMessage::new("user", format!("{tables}\nQuestion: {question}")),
    ])
}

/// Whether a greedy answer changes with the questions before it is
/// checked end to end in `tests/bench.rs`
/// (`a_resumed_run_answers_each_question_as_the_whole_run_did`); here, that
/// the prefix cache still serves later questions and gives the fresh
/// result.
#[test]
fn an_answer_does_not_depend_on_the_questions_before_it() {
    let later = wide_schema_prompt("How many rows does t3 have?");
    let earlier = wide_schema_prompt("How many rows does t3 have, counting all of them?");
    let score = |model: &LocalModel| {
        model
            .score(&later, "SELECT COUNT(*) FROM t3")
            .unwrap()
            .unwrap()
    };
    let fresh = score(&gguf::load(&model_path()).unwrap());

    // After another question on the same schema, the shared prefix comes
    // from the cache, and the result is bit for bit the fresh one.
    let model = gguf::load(&model_path()).unwrap();
    model.generate(&earlier, &greedy(8)).unwrap();
    model.begin_question();
    let after = score(&model);
    assert!(after.usage.cached_prompt_tokens >= 128, "{after:?}");
    assert_eq!(after.log_prob, fresh.log_prob);

    // Within one question, every shared position is reused.
    let model = gguf::load(&model_path()).unwrap();
    model.generate(&earlier, &greedy(8)).unwrap();
    let unbounded = score(&model);
    assert!(unbounded.usage.cached_prompt_tokens > after.usage.cached_prompt_tokens);
}
