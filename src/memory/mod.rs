//! Demonstration memory: worked examples (a question, the tables and
//! columns its query uses, the query) that the engine itself wrote and
//! execution proved right, kept with the question's sentence embedding.
//! The query-writing prompts show the examples most similar to a new
//! question, never one of the same database (method.md section 6).

mod record;

pub use record::{used_tables, Record, Task};

use crate::error::{first_line, Error, Result};
use crate::llm::embed::{self, cosine, SentenceEncoder};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// K: the most examples one prompt shows.
pub const DEFAULT_EXAMPLES: usize = 10;

/// Prompt tokens the examples of one prompt may take at most (estimated
/// from their characters): on a 2-core CPU each 100 prompt tokens cost the
/// 0.5B model about half a second of prefill.
pub const DEFAULT_EXAMPLE_TOKENS: usize = 400;

/// Characters per token of schema and SQL text, for the budget.
const CHARS_PER_TOKEN: usize = 3;

/// A store of worked examples, read from a file of JSON lines.
pub struct Memory {
    path: PathBuf,
    records: Vec<Record>,
    /// Embeds new questions; loaded on first use.
    encoder: OnceLock<std::result::Result<SentenceEncoder, String>>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("path", &self.path)
            .field("records", &self.records.len())
            .finish()
    }
}

/// A memory and how the query-writing prompts draw on it.
#[derive(Debug, Clone)]
pub struct Demonstrations {
    pub memory: Arc<Memory>,
    pub retrieval: Retrieval,
}

/// How a prompt draws on a memory.
#[derive(Debug, Clone)]
pub struct Retrieval {
    /// At most this many examples.
    pub examples: usize,
    /// At most about this many prompt tokens of examples.
    pub tokens: usize,
}

impl Default for Retrieval {
    fn default() -> Self {
        Retrieval {
            examples: DEFAULT_EXAMPLES,
            tokens: DEFAULT_EXAMPLE_TOKENS,
        }
    }
}

impl Memory {
    /// An empty store that will be written to `path`.
    pub fn empty(path: &Path) -> Self {
        Memory {
            path: path.to_path_buf(),
            records: Vec::new(),
            encoder: OnceLock::new(),
        }
    }

    /// Reads a store written by [`Memory::append`].
    pub fn open(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut memory = Memory::empty(path);
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| Error::io(path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            let bad = |detail: String| Error::Memory {
                path: path.to_path_buf(),
                line: i + 1,
                detail,
            };
            let record: Record = serde_json::from_str(&line).map_err(|e| bad(first_line(e)))?;
            if record.embedding.len() != embed::DIMENSIONS {
                return Err(bad(format!(
                    "the embedding has {} numbers, the sentence encoder makes {}",
                    record.embedding.len(),
                    embed::DIMENSIONS
                )));
            }
            memory.records.push(record);
        }
        Ok(memory)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Adds `record` to the store and to its file (one line, flushed, so
    /// that an interrupted build keeps what it made).
    pub fn append(&mut self, record: Record) -> Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| Error::write(&self.path, e))?;
        let line = serde_json::to_string(&record).expect("records serialize");
        writeln!(file, "{line}")
            .and_then(|_| file.flush())
            .map_err(|e| Error::write(&self.path, e))?;
        self.records.push(record);
        Ok(())
    }

    /// The sentence embedding of `text`.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let encoder = self
            .encoder
            .get_or_init(|| {
                let dir = embed::pull_default().map_err(|e| e.to_string())?;
                SentenceEncoder::load(&dir, &candle_core::Device::Cpu).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| Error::Inference(format!("sentence encoder: {e}")))?;
        let mut rows = encoder.encode(&[text.to_string()])?;
        Ok(rows.pop().unwrap_or_default())
    }

    /// The examples for `question` on database `db_id`, most similar last
    /// (nearest the question in the prompt): at most `retrieval.examples`
    /// within `retrieval.tokens`, none of the same database or question.
    pub fn nearest(
        &self,
        question: &str,
        db_id: &str,
        retrieval: &Retrieval,
    ) -> Result<Vec<&Record>> {
        if self.records.is_empty() || retrieval.examples == 0 {
            return Ok(Vec::new());
        }
        let query = self.embed(question)?;
        Ok(self.closest(&query, question, db_id, retrieval))
    }

    /// [`Memory::nearest`] for a question already embedded as `query`.
    fn closest(
        &self,
        query: &[f32],
        question: &str,
        db_id: &str,
        retrieval: &Retrieval,
    ) -> Vec<&Record> {
        let asked = normalised(question);
        let mut ranked: Vec<(f32, &Record)> = self
            .records
            .iter()
            .filter(|r| !r.db_id.eq_ignore_ascii_case(db_id) && normalised(&r.question) != asked)
            .map(|r| (cosine(query, &r.embedding), r))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut chosen = Vec::new();
        let mut chars = 0;
        for (_, record) in ranked {
            if chosen.len() == retrieval.examples {
                break;
            }
            let size = record.shown().chars().count();
            if (chars + size) / CHARS_PER_TOKEN > retrieval.tokens {
                break;
            }
            chars += size;
            chosen.push(record);
        }
        chosen.reverse();
        chosen
    }
}

/// The examples as a prompt paragraph after a blank line, or nothing when
/// there are none.
pub fn render(examples: &[&Record]) -> String {
    if examples.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = examples.iter().map(|r| r.shown()).collect();
    format!(
        "\nSolved questions on other databases, for reference:\n\n{}",
        shown.join("\n")
    )
}

/// Lowercase words only, so that spacing and punctuation do not hide a
/// repeated question.
fn normalised(question: &str) -> String {
    question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(db: &str, question: &str, embedding: Vec<f32>) -> Record {
        let mut padded = embedding;
        padded.resize(embed::DIMENSIONS, 0.0);
        Record {
            task: Task::TextToSql,
            dataset: "spider".into(),
            db_id: db.into(),
            question_id: question.into(),
            question: question.into(),
            hint: None,
            tables: "singer(name, age)".into(),
            query: "SELECT name FROM singer".into(),
            embedding: padded,
        }
    }

    #[test]
    fn a_store_round_trips_through_its_file_and_rejects_a_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.jsonl");
        let mut memory = Memory::empty(&path);
        memory.append(record("a", "How many?", vec![1.0])).unwrap();
        memory.append(record("b", "Who?", vec![0.0, 1.0])).unwrap();
        let read = Memory::open(&path).unwrap();
        assert_eq!(read.records(), memory.records());

        std::fs::write(&path, "{\"task\": \"text_to_sql\"}\n").unwrap();
        let error = Memory::open(&path).unwrap_err().to_string();
        assert!(
            error.contains("line 1") && error.contains("iesr memory build"),
            "{error}"
        );
        assert_eq!(error.lines().count(), 1);
    }

    #[test]
    fn examples_are_rendered_with_their_tables_question_and_query() {
        let r = record("a", "Name every singer.", vec![1.0]);
        let text = render(&[&r]);
        assert!(text.contains("Tables: singer(name, age)\nQuestion: Name every singer.\nSQL: SELECT name FROM singer"), "{text}");
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn the_nearest_examples_come_from_other_databases_and_questions_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Memory::empty(&dir.path().join("m.jsonl"));
        memory.records = vec![
            record("concert_singer", "Same database?", vec![1.0]),
            record("pets", "How many pets?", vec![0.9, 0.1]),
            record("cars", "Far away", vec![0.0, 1.0]),
            record("flights", "How many flights?", vec![0.8, 0.2]),
            record("pets", "the question itself", vec![1.0]),
        ];
        let query = {
            let mut q = vec![1.0];
            q.resize(embed::DIMENSIONS, 0.0);
            q
        };
        let ask = |examples, tokens| {
            let retrieval = Retrieval { examples, tokens };
            memory
                .closest(&query, "The question itself!", "concert_singer", &retrieval)
                .iter()
                .map(|r| r.question.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(ask(2, 1000), ["How many flights?", "How many pets?"]);
        assert_eq!(
            ask(10, 1000),
            ["Far away", "How many flights?", "How many pets?"]
        );
        // One example is about 30 tokens: a budget of 40 holds one.
        assert_eq!(ask(10, 40), ["How many pets?"]);
        assert!(ask(0, 1000).is_empty());
    }

    #[test]
    fn question_words_ignore_case_and_punctuation() {
        assert_eq!(
            normalised("How many  singers?"),
            normalised("how many singers")
        );
        assert_ne!(
            normalised("How many singers?"),
            normalised("How many songs?")
        );
    }
}
