//! Stage 1: understanding the question before the search: a semantic state
//! from one model call, checked against a rule base and the schema, and
//! schema linking that finds the columns and stored values the question
//! refers to and compresses the schema around them.

pub mod compress;
pub mod embedding;
pub mod focus;
pub mod linking;
pub mod literal;
pub mod rules;
pub mod state;
pub mod text;
pub mod verify;

/// The demo database the crate ships, for unit tests.
#[cfg(test)]
pub(crate) mod demo {
    pub fn database() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("datasets/concert_singer/concert_singer.sqlite")
    }

    pub fn schema() -> crate::db::Schema {
        crate::db::Schema::load(&database(), &Default::default()).unwrap()
    }
}

use crate::db::{quote_literal, render_schema, Schema};
use crate::error::Result;
use crate::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use crate::prompts::{REASONING_SYSTEM, REASONING_USER, UNDERSTANDING};
use crate::trace::CallRecord;
use embedding::{ColumnEmbeddings, ColumnScore};
use linking::{LinkMatch, ValueIndex};
use rules::RuleBase;
use serde::Serialize;
use state::{parse_semantic_state, SemanticState};
use std::fmt::Write;
use verify::{Checked, Thresholds, Verified};

#[derive(Debug, Clone, Serialize)]
pub struct UnderstandConfig {
    /// Check the semantic state against the schema and rule base.
    pub verification: bool,
    /// Show later stages only the relevant tables.
    pub compression: bool,
    pub thresholds: Thresholds,
    /// Least trigram similarity for a linked value or column name.
    pub link_similarity: f64,
    /// Rank columns by sentence-embedding similarity (all-MiniLM-L6-v2).
    pub embedding: bool,
    /// Columns kept from the embedding ranking, and their least similarity.
    pub embedding_top: usize,
    pub embedding_min: f32,
    pub max_tokens: usize,
}

impl Default for UnderstandConfig {
    fn default() -> Self {
        UnderstandConfig {
            verification: true,
            compression: true,
            thresholds: Thresholds::default(),
            link_similarity: 0.6,
            embedding: true,
            embedding_top: 5,
            embedding_min: 0.35,
            max_tokens: 320,
        }
    }
}

/// What stage 1 hands to the search.
#[derive(Debug, Clone)]
pub struct Understanding {
    /// The (possibly compressed) schema as prompts show it.
    pub schema_text: String,
    /// Checked notes for every later prompt; empty when there are none.
    pub notes: String,
}

/// Stage 1 as recorded in the trace.
#[derive(Debug, Clone, Serialize)]
pub struct UnderstandingRecord {
    pub state: SemanticState,
    pub parse_error: Option<String>,
    pub verification: Option<Verified>,
    pub links: Vec<LinkMatch>,
    /// Columns ranked by embedding similarity to the question.
    pub ranked_columns: Vec<ColumnScore>,
    /// Why the embedding ranking did not run, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_error: Option<String>,
    /// The tables kept by compression; None when the full schema was used.
    pub kept_tables: Option<Vec<String>>,
    pub notes: String,
}

pub struct Inputs<'a> {
    pub schema: &'a Schema,
    /// `schema` rendered within `schema_chars`, as the engine already has it.
    pub full_schema: &'a str,
    pub index: &'a ValueIndex,
    /// The database's embedded columns, or why they are unavailable.
    pub embeddings: std::result::Result<&'a ColumnEmbeddings, String>,
    pub rules: &'a RuleBase,
    pub question: &'a str,
    pub hint: Option<&'a str>,
    pub schema_chars: usize,
}

pub fn understand(
    model: &dyn LanguageModel,
    inputs: &Inputs<'_>,
    config: &UnderstandConfig,
    seed: u64,
) -> Result<(Understanding, UnderstandingRecord, CallRecord)> {
    let hint = crate::prompts::hint_line(inputs.hint);
    let instruction = UNDERSTANDING.render(&[]);
    let prompt = vec![
        ChatMessage::new("system", REASONING_SYSTEM.render(&[])),
        ChatMessage::new(
            "user",
            REASONING_USER.render(&[
                ("schema", inputs.full_schema),
                ("hint", hint.as_str()),
                ("question", inputs.question),
                ("understanding", ""),
                ("steps", ""),
                ("instruction", instruction.as_str()),
            ]),
        ),
    ];
    let sampling = Sampling {
        max_tokens: config.max_tokens,
        seed,
        ..Sampling::default()
    };
    let generation = model.generate(&Prompt::Chat(prompt.clone()), &sampling)?;
    let call = CallRecord::new("understanding", prompt, &sampling, generation);
    let output = call.outputs.first().cloned().unwrap_or_default();
    let (state, parse_error) = parse_semantic_state(&output);

    let question_text = format!("{} {}", inputs.question, inputs.hint.unwrap_or_default());
    let mut link_text = question_text.clone();
    for entity in &state.entities {
        link_text.push_str(" \"");
        link_text.push_str(entity);
        link_text.push('"');
    }
    let links: Vec<LinkMatch> = inputs
        .index
        .lookup(&link_text, config.link_similarity)
        .into_iter()
        .take(12)
        .collect();
    let (ranked_columns, embedding_error) = match &inputs.embeddings {
        Ok(embeddings) => {
            match embeddings.rank(&link_text, config.embedding_top, config.embedding_min) {
                Ok(ranked) => (ranked, None),
                Err(e) => (Vec::new(), Some(e.to_string())),
            }
        }
        Err(reason) => (Vec::new(), Some(reason.clone())),
    };
    let verified = if config.verification {
        verify::verify(
            &state,
            inputs.schema,
            &question_text,
            inputs.rules,
            config.thresholds,
        )
    } else {
        unverified(&state)
    };
    let compressed = if config.compression {
        let ranked_tables: Vec<String> = ranked_columns.iter().map(|c| c.table.clone()).collect();
        compress::compress(
            inputs.schema,
            &question_text,
            &verified,
            &links,
            &ranked_tables,
        )
    } else {
        None
    };
    let schema_text = match &compressed {
        Some((schema, _)) => render_schema(schema, inputs.schema_chars),
        None => inputs.full_schema.to_string(),
    };
    let notes = render_notes(&verified, &links, &ranked_columns);
    let understanding = Understanding {
        schema_text,
        notes: notes.clone(),
    };
    let record = UnderstandingRecord {
        state,
        parse_error,
        verification: config.verification.then_some(verified),
        links,
        ranked_columns,
        embedding_error,
        kept_tables: compressed.map(|(_, names)| names),
        notes,
    };
    Ok((understanding, record, call))
}

/// Without verification every claim is kept as the model wrote it.
fn unverified(state: &SemanticState) -> Verified {
    let claim = |kind: &'static str, text: String| Checked {
        kind,
        resolved: Some(text.clone()),
        claim: text,
        score: 1.0,
    };
    let mut kept = Vec::new();
    kept.extend(state.tables.iter().map(|t| claim("table", t.clone())));
    kept.extend(state.columns.iter().map(|c| claim("column", c.clone())));
    kept.extend(state.keys.iter().map(|k| claim("key", k.clone())));
    kept.extend(state.units.iter().map(|u| {
        let formula = u.formula.as_deref().unwrap_or("?");
        claim("conversion", format!("{} to {}: {formula}", u.from, u.to))
    }));
    kept.extend(
        state
            .relations
            .iter()
            .map(|r| claim("relation", r.object.clone())),
    );
    Verified {
        kept,
        dropped: Vec::new(),
    }
}

/// Columns ranked by embedding similarity that the notes name.
const RANKED_IN_NOTES: usize = 3;

/// The notes every later prompt carries: what stage 1 found and kept.
fn render_notes(verified: &Verified, links: &[LinkMatch], ranked: &[ColumnScore]) -> String {
    let mut lines = Vec::new();
    let list = |kind: &str| -> Vec<String> {
        let mut items: Vec<String> = verified
            .kept_of(kind)
            .filter_map(|c| c.resolved.clone())
            .collect();
        items.sort();
        items.dedup();
        items
    };
    let mut columns = list("column");
    columns.extend(list("relation").into_iter().filter(|r| !r.contains(':')));
    // What linking found by name and by meaning, though the model named
    // neither: a small model often misses the column that holds a quantity.
    columns.extend(
        links
            .iter()
            .filter(|l| l.value.is_none())
            .map(|l| format!("{}.{}", l.table, l.column)),
    );
    columns.extend(
        ranked
            .iter()
            .take(RANKED_IN_NOTES)
            .map(|c| format!("{}.{}", c.table, c.column)),
    );
    columns.sort();
    columns.dedup();
    if !columns.is_empty() {
        lines.push(format!("- Columns: {}", columns.join(", ")));
    }
    let keys = list("key");
    if !keys.is_empty() {
        lines.push(format!("- Join keys: {}", keys.join(", ")));
    }
    let values: Vec<String> = links
        .iter()
        .filter_map(|l| {
            l.value
                .as_ref()
                .map(|v| format!("{}.{} = {}", l.table, l.column, quote_literal(v)))
        })
        .take(6)
        .collect();
    if !values.is_empty() {
        lines.push(format!("- Stored values: {}", values.join(", ")));
    }
    let conversions = list("conversion");
    if !conversions.is_empty() {
        lines.push(format!("- Unit conversions: {}", conversions.join("; ")));
    }
    let formulas: Vec<String> = list("relation")
        .into_iter()
        .filter(|r| r.contains(':'))
        .collect();
    if !formulas.is_empty() {
        lines.push(format!("- Formulas: {}", formulas.join("; ")));
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nNotes checked against the database:\n");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    out
}
