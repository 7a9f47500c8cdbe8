//! Ranking columns by meaning: the question (with its hint and entities) and
//! every column's name and description are embedded with a small sentence
//! model, and columns are ranked by cosine similarity. This finds columns
//! that share no words with the question ("lift" and `Max_Disk_Loading`).

use crate::db::Schema;
use crate::error::Result;
use crate::llm::embed::{cosine, SentenceEncoder};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnScore {
    pub table: String,
    pub column: String,
    pub similarity: f32,
}

/// A database's columns, embedded once.
pub struct ColumnEmbeddings {
    encoder: SentenceEncoder,
    columns: Vec<(String, String)>,
    vectors: Vec<Vec<f32>>,
}

impl ColumnEmbeddings {
    pub fn build(encoder: SentenceEncoder, schema: &Schema) -> Result<Self> {
        let mut columns = Vec::new();
        let mut texts = Vec::new();
        for table in &schema.tables {
            for column in &table.columns {
                columns.push((table.name.clone(), column.name.clone()));
                texts.push(column_text(
                    &table.name,
                    &column.name,
                    column.description.as_deref(),
                ));
            }
        }
        let mut vectors = Vec::with_capacity(texts.len());
        // Batches keep padding (and memory) small on wide databases.
        for batch in texts.chunks(64) {
            vectors.extend(encoder.encode(batch)?);
        }
        Ok(ColumnEmbeddings {
            encoder,
            columns,
            vectors,
        })
    }

    /// The `top` columns most similar to `text`, at least `min` similar.
    pub fn rank(&self, text: &str, top: usize, min: f32) -> Result<Vec<ColumnScore>> {
        let query = self.encoder.encode(&[text.to_string()])?;
        let Some(query) = query.first() else {
            return Ok(Vec::new());
        };
        let mut scores: Vec<ColumnScore> = self
            .columns
            .iter()
            .zip(&self.vectors)
            .map(|((table, column), vector)| ColumnScore {
                table: table.clone(),
                column: column.clone(),
                similarity: cosine(query, vector),
            })
            .filter(|s| s.similarity >= min)
            .collect();
        scores.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
        scores.truncate(top);
        Ok(scores)
    }
}

/// "singer: song release year (the year the song came out)": names split
/// into words read better to a sentence model than `Song_release_year`.
fn column_text(table: &str, column: &str, description: Option<&str>) -> String {
    let words = |name: &str| super::text::words(name).join(" ");
    match description.filter(|d| !d.trim().is_empty()) {
        Some(d) => format!("{}: {} ({})", words(table), words(column), d.trim()),
        None => format!("{}: {}", words(table), words(column)),
    }
}
