//! Queries that name only what the database has: a sampling constraint
//! that, inside a query span of the model's answer (after ```sql or
//! <sql>, or an answer that starts with SELECT or WITH), refuses a token
//! that would write a name the schema lacks. After
//! FROM or JOIN (or a comma in a FROM clause) a word must be a table (the
//! first one of a FROM, one holding a column named bare before it); after
//! `X.` a column of X's table (of any table while X's alias is not yet
//! bound, as in `SELECT T1.x ... FROM t AS T1`); both are checked as
//! prefixes, letter by letter. Any other word is checked when it ends: a
//! keyword, a table, a column or an alias the query binds, unless a `.` or
//! `(` follows it (a qualifier, possibly an alias bound later, or a
//! function). Literals, quoted names, aliases being defined and numbers
//! stay free. A FROM may not end (WHERE, GROUP BY, ..., a closing
//! parenthesis or the query's end) while a column named before it (bare,
//! or under an alias of a table that lacks it) is in none of its tables;
//! after a table's alias only a join, a comma or a clause may follow (a
//! join's keywords in order), so no clause written as an alias ends it
//! (nor, while the FROM may not end, a word on the next line, a quoted one
//! or a comment), and no SQL keyword is a table's alias. A query that
//! named a column may not end without a FROM. A level that repeats the
//! two around it (a loop) is refused. What cannot be ruled out yet is
//! allowed; the name repairs check the whole query afterwards. Where none
//! of the model's likeliest tokens is allowed (it holds to a name the
//! schema lacks), the sampler looks for one among the tokens that are part
//! of a name.

mod join_syntax;
mod spans;
mod words;

use super::sql_text::{pieces, table_aliases, Piece, CLAUSES_AFTER_FROM};
use crate::db::Schema;
use crate::functions::DECLARED_PREFIX;
use crate::llm::constraint::{Constraint, TextChecker, TextConstraint};
use crate::llm::LanguageModel;
use join_syntax::{looks_like_a_clause, Next, JOIN_WORDS};
use spans::{as_aliases, quoted_ranges};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use words::{is_sql_word, FUNCTIONS, KEYWORDS, TYPES};

/// Characters SQLite reads as no token outside a literal or quoted name
/// (`^` is a small model's power operator).
const NEVER_IN_SQL: [char; 4] = ['^', '{', '}', '\\'];

/// Where a query span opens and where it closes, as the answer formats
/// write them (a closing tag from its first two characters on, since it is
/// written token by token); a bare query (an answer that is a query) also
/// ends at a blank line.
const OPENERS: [&str; 3] = ["```sqlite", "```sql", "<sql>"];
const CLOSERS: [&str; 3] = ["```", "</", ";"];
const BARE_STARTS: [&str; 2] = ["select", "with"];

/// The schema's names, lowercased, as the constraint checks them.
#[derive(Debug, Default)]
pub struct SchemaVocabulary {
    tables: HashMap<String, Vec<String>>,
    columns: HashSet<String>,
    /// How the model's tokenizer begins each table's name (the first
    /// token of ` Name` and of `Name`, trimmed and lowercased); empty
    /// where the tokenizer is not at hand.
    table_starts: HashMap<String, Vec<String>>,
    /// Whether a call may name a function the query declares
    /// (`crate::functions::DECLARED_PREFIX`), to be written for it.
    declared_functions: bool,
    /// The tables two keys at most from each table (declared or implied
    /// keys, `repair::key_links`), the table itself left out.
    reach: HashMap<String, HashSet<String>>,
    /// Whether a table's or column's name holds a letter beyond ASCII.
    names_beyond_ascii: bool,
    /// Every part of a table's or column's name, lowercased, up to
    /// [`MAX_FRAGMENT_CHARS`] long: the tokens worth trying when none of
    /// the likeliest is allowed. Made the first time that happens.
    fragments: OnceLock<HashSet<String>>,
}

/// The longest part of a name kept among the fragments: longer than
/// almost any one token.
const MAX_FRAGMENT_CHARS: usize = 16;

impl SchemaVocabulary {
    /// The names of `schema`, with how `model`'s tokenizer begins each
    /// table's name. With `declared_functions`, calls may also name
    /// functions the query declares, to be written for it
    /// (`crate::functions`).
    pub fn of(schema: &Schema, model: &dyn LanguageModel, declared_functions: bool) -> Arc<Self> {
        let mut vocabulary = Self::tables_of(
            schema
                .tables
                .iter()
                .map(|t| (t.name.as_str(), t.columns.iter().map(|c| c.name.as_str()))),
        );
        for table in &schema.tables {
            let starts = [format!(" {}", table.name), table.name.clone()]
                .iter()
                .filter_map(|text| model.first_token_text(text))
                .map(|start| start.trim().to_lowercase())
                .filter(|start| !start.is_empty())
                .collect();
            vocabulary
                .table_starts
                .insert(table.name.to_lowercase(), starts);
        }
        vocabulary.declared_functions = declared_functions;
        vocabulary.reach = Self::reach_of(schema);
        Arc::new(vocabulary)
    }

    /// The vocabulary of the tables `tables` alone, each with its columns.
    pub fn of_tables<'a, C>(tables: impl Iterator<Item = (&'a str, C)>) -> Arc<Self>
    where
        C: Iterator<Item = &'a str>,
    {
        Arc::new(Self::tables_of(tables))
    }

    fn tables_of<'a, C>(tables: impl Iterator<Item = (&'a str, C)>) -> Self
    where
        C: Iterator<Item = &'a str>,
    {
        let tables: HashMap<String, Vec<String>> = tables
            .map(|(table, columns)| {
                let columns = columns.map(str::to_lowercase).collect();
                (table.to_lowercase(), columns)
            })
            .collect();
        let columns: HashSet<String> = tables.values().flatten().cloned().collect();
        let names_beyond_ascii = tables.keys().chain(&columns).any(|n| !n.is_ascii());
        SchemaVocabulary {
            tables,
            columns,
            names_beyond_ascii,
            table_starts: HashMap::new(),
            declared_functions: false,
            reach: HashMap::new(),
            fragments: OnceLock::new(),
        }
    }

    /// The tables two keys at most from each table of `schema`.
    fn reach_of(schema: &Schema) -> HashMap<String, HashSet<String>> {
        let mut next: HashMap<String, HashSet<String>> = HashMap::new();
        for key in crate::search::repair::key_links(schema) {
            let (a, b) = (key.table.to_lowercase(), key.other.to_lowercase());
            next.entry(a.clone()).or_default().insert(b.clone());
            next.entry(b).or_default().insert(a);
        }
        next.iter()
            .map(|(table, near)| {
                let mut reach: HashSet<String> = near
                    .iter()
                    .flat_map(|n| next.get(n).into_iter().flatten().chain([n]))
                    .cloned()
                    .collect();
                reach.remove(table);
                (table.clone(), reach)
            })
            .collect()
    }

    /// Whether `piece` (its leading spaces aside) is part of a name of the
    /// schema.
    fn is_fragment(&self, piece: &str) -> bool {
        let piece = piece.trim_start();
        !piece.is_empty()
            && self
                .fragments
                .get_or_init(|| {
                    self.tables
                        .iter()
                        .flat_map(|(table, columns)| std::iter::once(table).chain(columns))
                        .flat_map(|name| fragments_of(name))
                        .collect()
                })
                .contains(&piece.to_lowercase())
    }

    fn is_table(&self, word: &str) -> bool {
        self.tables.contains_key(word)
    }

    /// Whether `word` names a function, or (`growing`) may still become
    /// one's name.
    fn is_function(&self, word: &str, growing: bool) -> bool {
        let declared = |w: &str| {
            self.declared_functions
                && (w.starts_with(DECLARED_PREFIX) || (growing && DECLARED_PREFIX.starts_with(w)))
        };
        // SQLite's own, then those the engine registers on every connection.
        let mut names = FUNCTIONS
            .iter()
            .copied()
            .chain(crate::functions::registered_names());
        let known = if growing {
            names.any(|f| f.starts_with(word))
        } else {
            names.any(|f| f == word)
        };
        known || declared(word)
    }

    /// Whether `word`, the first token of a table name being written, is
    /// how the tokenizer begins `table` (any prefix where that is unknown).
    /// A word begun otherwise (` car` for `cars_data`, which the tokenizer
    /// writes ` cars` `_data`) leads the model, whose likely continuations
    /// are all another table's (`_names`), into a corner.
    fn begins_as_tokenized(&self, table: &str, word: &str) -> bool {
        match self.table_starts.get(table) {
            Some(starts) if !starts.is_empty() => table == word || starts.iter().any(|s| s == word),
            _ => table.starts_with(word),
        }
    }
}

/// The constraint as sampling takes it: the vocabulary behind an Arc, so
/// every completion's checker shares it, and the answer already written
/// when a completion continues one.
pub struct NameConstraint {
    names: Arc<SchemaVocabulary>,
    written: String,
}

impl NameConstraint {
    /// The sampling setting for `schema` (see [`SchemaVocabulary::of`]).
    pub fn for_schema(
        schema: &Schema,
        model: &dyn LanguageModel,
        declared_functions: bool,
    ) -> Constraint {
        Self::continuing(SchemaVocabulary::of(schema, model, declared_functions), "")
    }

    /// The setting for completions that continue `written` (the start of
    /// an answer, given as the reply to continue): its query span and
    /// clauses count, its words are not judged again.
    pub fn continuing(names: Arc<SchemaVocabulary>, written: &str) -> Constraint {
        Constraint(Arc::new(NameConstraint {
            names,
            written: written.to_string(),
        }))
    }
}

impl TextConstraint for NameConstraint {
    fn checker(&self) -> Box<dyn TextChecker> {
        Box::new(NameChecker {
            names: Arc::clone(&self.names),
            text: self.written.clone(),
        })
    }
}

struct NameChecker {
    names: Arc<SchemaVocabulary>,
    text: String,
}

/// Every run of consecutive characters of `name`, up to
/// [`MAX_FRAGMENT_CHARS`] long.
fn fragments_of(name: &str) -> impl Iterator<Item = String> + '_ {
    name.char_indices().flat_map(move |(start, _)| {
        let rest = &name[start..];
        let ends = rest.char_indices().skip(1).map(|(end, _)| end);
        ends.chain([rest.len()])
            .take(MAX_FRAGMENT_CHARS)
            .map(move |end| rest[..end].to_string())
    })
}

impl NameChecker {
    /// Whether `piece` may follow, a bare column after its level's FROM
    /// being one of the tables `reach` takes in.
    fn judge(&self, piece: &str, reach: Reach) -> bool {
        let mut text = String::with_capacity(self.text.len() + piece.len());
        text.push_str(&self.text);
        text.push_str(piece);
        let Some((mut start, bare)) = open_span(&text) else {
            return true;
        };
        // A comment the query opens with (the functions block it carries,
        // `crate::functions`) holds no SQL names: free, and the query
        // starts after it.
        let opening = text[start..].trim_start();
        if opening.starts_with("/*") {
            match opening.find("*/") {
                Some(close) => start = text.len() - opening.len() + close + 2,
                None => return true,
            }
        }
        let query = &text[start..];
        let closer = CLOSERS
            .iter()
            .chain(bare.then_some(&"\n\n"))
            .filter_map(|c| query.find(c).map(|at| (at, c.len())))
            .min();
        // Only words that the new piece ends (or leaves unfinished) are judged.
        let new_from = self.text.len().saturating_sub(start);
        let (end, closes_now) = match closer {
            Some((at, len)) => (at, at + len > new_from),
            None => (query.len(), false),
        };
        self.names.query_allows(
            &query[..end],
            new_from,
            end == query.len(),
            closes_now,
            reach,
        )
    }
}

impl TextChecker for NameChecker {
    fn allows(&self, piece: &str) -> bool {
        self.judge(piece, Reach::Scope)
    }

    /// A column of a table the query forgot to join, two keys at most
    /// from one it binds: the join repair joins it.
    fn allows_as_last_resort(&self, piece: &str) -> bool {
        self.judge(piece, Reach::Keys)
    }

    /// Ending the completion closes its query: the last word must be
    /// whole. Drawn where no name can end (after `WHERE Material` when
    /// only `Material_Type` exists), the end would leave a query that
    /// cannot run.
    fn allows_end(&self) -> bool {
        self.allows(";")
    }

    fn push(&mut self, piece: &str) {
        self.text.push_str(piece);
    }

    fn worth_trying(&self, piece: &str) -> bool {
        self.names.is_fragment(piece)
    }

    /// Where the schema names nothing beyond ASCII, only a place that takes
    /// any word (a literal, a new alias) takes such a letter: elsewhere a
    /// first byte is a way around the rule, not the start of a name.
    fn allows_unfinished_letter(&self) -> bool {
        self.names.names_beyond_ascii || self.allows(ANY_LETTER)
    }
}

/// Which tables' columns a bare word may name once its level's FROM is
/// written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The tables in scope: where the model hesitates between a column in
    /// scope and one of a table it has not joined, the one in scope is
    /// usually meant (`ORDER BY Original_air_date`, not TV_series'
    /// `Air_Date`).
    Scope,
    /// Those, and the tables two keys at most from them, whose columns the
    /// join repair joins: where the model holds to such a column, refusing
    /// it left whatever the rule let through (`FROM expense WHERE
    /// t_shirt_size`, member's, became `triM(` or `tHeN`).
    Keys,
}

/// A letter beyond ASCII that no name is expected to hold: where it is
/// allowed, any word is.
const ANY_LETTER: &str = "\u{a66e}";

/// Where the last query span of `text` starts (the closing is judged by
/// the caller), and whether it is a bare query, without an opening tag.
fn open_span(text: &str) -> Option<(usize, bool)> {
    let lower = text.to_ascii_lowercase();
    let tagged = OPENERS
        .iter()
        .filter_map(|o| lower.rfind(o).map(|at| (at, *o)))
        .max_by_key(|&(at, o)| (at, o.len()));
    if let Some((at, opener)) = tagged {
        return Some((at + opener.len(), false));
    }
    let body = lower.trim_start();
    let starts_query = BARE_STARTS
        .iter()
        .any(|k| body.starts_with(k) || (k.starts_with(body) && !body.is_empty()));
    starts_query.then(|| (lower.len() - body.len(), true))
}

/// The context a word stands in.
#[derive(Debug, PartialEq)]
enum Slot<'a> {
    Table,
    ColumnOf(&'a str),
    NewAlias,
    Free,
}

impl SchemaVocabulary {
    /// Whether the words of `query` that end at or after `new_from` are
    /// names it may hold; with `open`, the last word may still grow; with
    /// `closes_now`, the query ends here, so its FROM must bind what it
    /// named before it.
    fn query_allows(
        &self,
        query: &str,
        new_from: usize,
        open: bool,
        closes_now: bool,
        reach: Reach,
    ) -> bool {
        let quoted = quoted_ranges(query);
        let mut spans = Vec::new();
        let mut offset = 0;
        for piece in pieces(query) {
            let text = piece.text();
            spans.push((piece, offset));
            offset += text.len();
        }
        let bound: Vec<(String, String)> = table_aliases(query)
            .into_iter()
            .map(|(n, t)| (n.to_lowercase(), t.to_lowercase()))
            .collect();
        let defined: HashSet<String> = as_aliases(&spans);
        let with_query = spans
            .iter()
            .any(|(p, _)| matches!(p, Piece::Word(w) if w.eq_ignore_ascii_case("with")));
        // One scope per level of parentheses: the tables its FROM bound.
        let mut scopes = vec![Scope::default()];
        // What the FROM's syntax lets the next word be (`Next`).
        let mut next = Next::Any;
        for (i, &(piece, at)) in spans.iter().enumerate() {
            let word = match piece {
                Piece::Word(word) => word,
                Piece::Other(text) if !text.starts_with('\'') => {
                    for (offset, c) in text.char_indices() {
                        let here = at + offset;
                        // Inside a quoted alias, or its closing quote.
                        let in_quoted_alias =
                            || quoted.iter().any(|r| r.start < here && here <= r.end);
                        if next != Next::Any && !c.is_whitespace() && !in_quoted_alias() {
                            if here >= new_from && !next.allows_sign(c) {
                                return false;
                            }
                            next = Next::Any;
                        }
                        let judged = here >= new_from && !quoted.iter().any(|r| r.contains(&here));
                        // Straight after a table, while the FROM may not
                        // end, no sign but a list's or a call's: a quoted
                        // alias or a comment (`FROM phones ``()`, `FROM
                        // phones -- ...`) is the model closing its answer,
                        // which the FROM refused.
                        let sign_after_table = here >= new_from
                            && !matches!(c, ',' | '.' | '(' | ')')
                            && !c.is_whitespace()
                            && text[..offset].trim().is_empty()
                            && matches!(spans.get(i.wrapping_sub(1)), Some((Piece::Word(w), _))
                                if scopes.last().and_then(|s| s.last_table.as_deref())
                                    == Some(w.to_lowercase().as_str()));
                        if sign_after_table && self.leaves_names_unbound(&scopes, with_query) {
                            return false;
                        }
                        // SQL has no use for these outside quotes, nor for a
                        // parenthesis that closes none (`Cast(x AS REAL) AS
                        // REAL)`).
                        if judged && (NEVER_IN_SQL.contains(&c) || (c == ')' && scopes.len() == 1))
                        {
                            return false;
                        }
                        if c == '(' {
                            let scope = scopes.last_mut().expect("a scope");
                            // A subquery as a FROM source: its columns are unknown.
                            scope.derived |= scope.in_from;
                            scopes.push(Scope::opened_at(at + offset + 1));
                        } else if c == ')' && scopes.len() > 1 {
                            if at + offset >= new_from
                                && self.leaves_names_unbound(&scopes, with_query)
                            {
                                return false;
                            }
                            let inner = scopes.pop().expect("an inner scope");
                            // A call's parentheses, not a subquery: its
                            // names are the enclosing level's.
                            let outer = scopes.last_mut().expect("a scope");
                            if !inner.from_seen && !outer.from_seen {
                                outer.bare_columns.extend(inner.bare_columns);
                                outer.qualified_columns.extend(inner.qualified_columns);
                            }
                        }
                    }
                    continue;
                }
                // A string literal.
                Piece::Other(_) => {
                    if next != Next::Any && at + piece.text().len() > new_from {
                        return false;
                    }
                    next = Next::Any;
                    continue;
                }
            };
            let lower = word.to_lowercase();
            let end = at + word.len();
            let inside_quotes = quoted.iter().any(|r| r.contains(&at));
            let growing = open && end == query.len();
            let judged = end >= new_from && !inside_quotes;
            if next != Next::Any && !inside_quotes {
                if judged
                    && !next.allows_word(&lower, growing, || {
                        !self.leaves_names_unbound(&scopes, with_query)
                    })
                {
                    return false;
                }
                next = Next::after_join_word(&lower);
            }
            // A FROM may end only once it binds what the level named
            // before it: refused, the model goes on to join the table
            // that holds the name. Before any FROM, a clause's word may
            // still grow into a column (` order` `_date`).
            let grows_into_a_column = || {
                growing
                    && self
                        .columns
                        .iter()
                        .any(|c| c.len() > lower.len() && c.starts_with(&lower))
            };
            if judged
                && CLAUSES_AFTER_FROM.contains(&lower.as_str())
                && (self.leaves_names_unbound(&scopes, with_query)
                    || names_without_from(&scopes) && !grows_into_a_column())
            {
                return false;
            }
            if judged && repeats_enclosing_levels(query, &scopes, end, lower == "select") {
                return false;
            }
            let scope = scopes.last_mut().expect("a scope");
            let slot = self.slot(&spans, i, scope.in_from, with_query);
            // This word is the alias of the table just named in a FROM.
            let mut binds_table_alias = false;
            match lower.as_str() {
                "select" => *scope = Scope::opened_at(scope.opened_at),
                "from" => {
                    scope.from_seen = true;
                    scope.in_from = true;
                }
                "join" => scope.in_on = false,
                w if CLAUSE_ENDS.contains(&w) => {
                    scope.in_from = false;
                    scope.in_on = w == "on";
                    scope.from_ended |= CLAUSES_AFTER_FROM.contains(&w);
                }
                _ if slot == Slot::Table => {
                    scope.tables.push(lower.clone());
                    scope.last_table = Some(lower.clone());
                }
                // `t AS x`: AS stands where an alias could (`t x`).
                "as" => {}
                _ if slot == Slot::NewAlias => {
                    if let Some(table) = scope.last_table.take() {
                        // `JOIN t USING`, `FROM t LEFT JOIN`: join syntax
                        // where an alias could stand.
                        next = match Next::after_join_word(&lower) {
                            Next::Any if !JOIN_WORDS.contains(&lower.as_str()) => {
                                binds_table_alias = true;
                                Next::AfterTableAlias
                            }
                            join => join,
                        };
                        scope.aliases.push((lower.clone(), table));
                    }
                }
                _ => {
                    scope.last_table = None;
                    let next = query[end..].trim_start().chars().next();
                    let bare_column = slot == Slot::Free
                        && !scope.from_seen
                        && !inside_quotes
                        && !matches!(next, Some('.' | '('))
                        && self.columns.contains(&lower)
                        && !KEYWORDS.contains(&lower.as_str())
                        && !TYPES.contains(&lower.as_str())
                        && !defined.contains(&lower);
                    if bare_column {
                        scope.bare_columns.push(lower.clone());
                    }
                    if let Slot::ColumnOf(qualifier) = slot {
                        if !scope.from_seen && !inside_quotes && self.columns.contains(&lower) {
                            let qualifier = qualifier.to_lowercase();
                            scope.qualified_columns.push((qualifier, lower.clone()));
                        }
                    }
                }
            }
            // A number is a value, except where a column must stand.
            let number = word.starts_with(|c: char| c.is_ascii_digit())
                && !matches!(slot, Slot::ColumnOf(_));
            if end < new_from || inside_quotes || number {
                continue;
            }
            // A name still being written fits as a prefix; a whole one exactly.
            let fits = |name: &str| {
                if growing {
                    name.starts_with(&lower)
                } else {
                    name == lower
                }
            };
            let ok = match slot {
                // No table's alias is a keyword, which stands for a clause
                // or join the model forgot (`FROM t EXPLAIN LEFT JOIN u`)
                // and leaves the table's name unusable as a qualifier
                // (judged once the word ends: ` in` may grow into
                // `inner`), nor, while the FROM may not end, a clause
                // spelt as an alias (`FROM t HAVIN x > 1`, `UNORDERED BY`)
                // or a word on a line of its own (`FROM phones\nUNPIVOT`):
                // an alias follows its table on the same line, and a line
                // that begins after the table begins a clause or a join.
                Slot::NewAlias => {
                    // (A join's word may still be growing there.)
                    let on_a_new_line = spans[i - 1].0.text().contains('\n')
                        && !(growing && JOIN_WORDS.iter().any(|w| w.starts_with(&lower)));
                    !(binds_table_alias
                        && (!growing && is_sql_word(&lower)
                            || (looks_like_a_clause(&lower) || on_a_new_line)
                                && self.leaves_names_unbound(&scopes, with_query)))
                }
                // A WITH query or a subquery source brings names the schema
                // lacks: nothing can be ruled out while the word grows.
                Slot::Free if growing && (with_query || scopes.iter().any(|s| s.derived)) => true,
                // Checked as a prefix: once this level's FROM is written,
                // of the names within `reach` (`columns_within_reach`);
                // before, of any column, and a short word may also be a
                // qualifier bound later (`SELECT T1.x ... FROM t AS T1`).
                // A longer word that starts no name is how an invented
                // name begins; left to grow, its end is refused and it
                // runs on for as long as the model lets it.
                Slot::Free if growing => {
                    let known = self.scope_known(&scopes, with_query);
                    let starts = |c: &String| c.starts_with(&lower);
                    (!known && lower.chars().count() <= LATER_ALIAS_CHARS)
                        || KEYWORDS.iter().any(|k| k.starts_with(&lower))
                        || self.is_function(&lower, true)
                        || self.tables.keys().any(|t| t.starts_with(&lower))
                        || defined.iter().any(|d| d.starts_with(&lower))
                        || bound.iter().any(|(n, _)| n.starts_with(&lower))
                        || if known {
                            self.columns_within_reach(&scopes, reach).any(starts)
                        } else {
                            self.columns.iter().any(starts)
                        }
                }
                Slot::Table if with_query => true,
                Slot::Table => {
                    let wanted = self.table_wants(&scopes, with_query);
                    let first_token = growing && at >= new_from;
                    self.tables.iter().any(|(t, columns)| {
                        fits(t)
                            && (wanted.is_empty()
                                || wanted.iter().any(|c| columns.contains(c))
                                    && (!first_token || self.begins_as_tokenized(t, &lower)))
                    })
                }
                Slot::ColumnOf(qualifier) => {
                    let qualifier = qualifier.to_lowercase();
                    let in_on = scopes.last().is_some_and(|s| s.in_on);
                    // The innermost binding of the alias (a subquery and
                    // its outer query often both bind T1), else the first.
                    let bound_to = scopes
                        .iter()
                        .rev()
                        .flat_map(|s| s.aliases.iter().rev())
                        .chain(&bound)
                        .find(|(n, _)| *n == qualifier);
                    let known: Vec<&Vec<String>> = match bound_to {
                        // Bound to a name the schema lacks (a common table):
                        // its columns are unknown.
                        Some((_, table)) if !self.is_table(table) => Vec::new(),
                        // A column of another table the query joins, under
                        // the wrong alias (`T2.x` for T1's x), is let
                        // through for the repair to requalify: refused, the
                        // model drops the dot and writes `T2 x`, which no
                        // repair can read. Not in a join condition, where
                        // the requalified `T2.x = T2.y` would name one table
                        // only: a join key belongs to the table it names.
                        Some(_) if !in_on => bound
                            .iter()
                            .filter_map(|(_, t)| self.tables.get(t))
                            .collect(),
                        Some((_, table)) => self.tables.get(table).into_iter().collect(),
                        None => self.tables.get(&qualifier).into_iter().collect(),
                    };
                    if known.is_empty() {
                        self.columns.iter().any(|c| fits(c)) || defined.iter().any(|d| fits(d))
                    } else {
                        known.into_iter().flatten().any(|c| fits(c))
                    }
                }
                Slot::Free => {
                    let next = query[end..].trim_start().chars().next();
                    let keyword = KEYWORDS.contains(&lower.as_str());
                    let alias = defined.contains(&lower) || bound.iter().any(|(n, _)| *n == lower);
                    match next {
                        // A qualifier: perhaps an alias bound later.
                        Some('.') => {
                            self.is_table(&lower) || alias || !self.scope_known(&scopes, with_query)
                        }
                        // A call, or a keyword before a parenthesis (IN, EXISTS).
                        Some('(') => keyword || self.is_function(&lower, false),
                        // A table's name on its own is not a value: SQLite
                        // reads `WHERE Paragraphs > 1` as a column.
                        _ => {
                            keyword
                                || alias
                                || (self.columns.contains(&lower)
                                    && (!self.scope_known(&scopes, with_query)
                                        || self
                                            .columns_within_reach(&scopes, reach)
                                            .any(|c| *c == lower)))
                        }
                    }
                }
            };
            if !ok {
                return false;
            }
        }
        !(closes_now
            && (self.leaves_names_unbound(&scopes, with_query) || names_without_from(&scopes)))
    }

    /// Whether the innermost level is ending its FROM while a column it
    /// named bare before it is in none of the tables in scope. Judged only
    /// where every level's sources are tables already written, and only
    /// while the level joins fewer than [`MAX_JOINED_FOR_COVER`] tables, so
    /// a model that keeps joining the wrong tables is not held forever.
    /// A qualified column counts where its qualifier is bound to a table
    /// that lacks it (`SELECT T1.Engine_ID FROM performance AS T1`): the
    /// model joins a table that has it, and the repairs requalify it. (A
    /// qualifier left unbound is not held: the repairs join the table that
    /// has its column.)
    fn leaves_names_unbound(&self, scopes: &[Scope], with_query: bool) -> bool {
        let here = scopes.last().expect("a scope");
        !self
            .columns_unbound(scopes, with_query, here.tables.len())
            .is_empty()
    }

    /// The columns the innermost level named before its FROM (bare, or
    /// under a qualifier bound to a table that lacks them) that neither
    /// the enclosing levels' tables nor the first `own_tables` of its own
    /// bind; empty where the FROM rule does not hold (the FROM has
    /// ended, `own_tables` reached [`MAX_JOINED_FOR_COVER`], or a source
    /// is not a table written already).
    fn columns_unbound<'s>(
        &self,
        scopes: &'s [Scope],
        with_query: bool,
        own_tables: usize,
    ) -> Vec<&'s String> {
        let here = scopes.last().expect("a scope");
        if here.from_ended
            || own_tables >= MAX_JOINED_FOR_COVER
            || !self.scope_known(scopes, with_query)
            || !scopes.iter().all(|s| s.from_seen)
        {
            return Vec::new();
        }
        let outer = scopes[..scopes.len() - 1].iter().flat_map(|s| &s.tables);
        let bound: HashSet<&String> = outer
            .chain(&here.tables[..own_tables])
            .filter_map(|t| self.tables.get(t))
            .flatten()
            .collect();
        let misqualified = here
            .qualified_columns
            .iter()
            .filter_map(|(qualifier, column)| {
                let table = here
                    .aliases
                    .iter()
                    .find(|(alias, _)| alias == qualifier)
                    .map(|(_, table)| table)
                    .or_else(|| here.tables.iter().find(|t| *t == qualifier))?;
                let lacks = self.tables.get(table).is_some_and(|c| !c.contains(column));
                lacks.then_some(column)
            });
        here.bare_columns
            .iter()
            .chain(misqualified)
            .filter(|c| !bound.contains(c))
            .collect()
    }

    /// Whether this level's sources are known: its FROM is written and
    /// names only tables (no subquery or WITH source, whose columns are
    /// not the schema's). Then a bare column must be one of these tables'
    /// or an enclosing level's (a correlated reference).
    fn scope_known(&self, scopes: &[Scope], with_query: bool) -> bool {
        let here = scopes.last().expect("a scope");
        here.from_seen && !with_query && !scopes.iter().any(|s| s.derived)
    }

    /// The columns of which the table being written in the innermost
    /// level's FROM (the last of its tables) must hold at least one. For
    /// the first, those the level named bare before it (`SELECT
    /// SUM(Weight) FROM` reads a table that has Weight). For a later one,
    /// while the FROM may not end yet (`leaves_names_unbound`), those the
    /// tables before it leave unbound: the model joins the table that
    /// holds `Model`, not one that only filters the rows. Empty, so any
    /// table, otherwise (a subquery source, every name bound).
    fn table_wants(&self, scopes: &[Scope], with_query: bool) -> Vec<String> {
        let here = scopes.last().expect("a scope");
        let count = here.tables.len();
        if count == 1 && !here.derived {
            return here.bare_columns.clone();
        }
        self.columns_unbound(scopes, with_query, count.saturating_sub(1))
            .into_iter()
            .cloned()
            .collect()
    }

    /// The columns of the tables every level so far has bound, and with
    /// `Reach::Keys` of the tables two keys at most from them.
    fn columns_within_reach<'s>(
        &'s self,
        scopes: &'s [Scope],
        reach: Reach,
    ) -> impl Iterator<Item = &'s String> {
        let bound = scopes.iter().flat_map(|s| &s.tables);
        let near = bound
            .clone()
            .filter(move |_| reach == Reach::Keys)
            .flat_map(|t| self.reach.get(t).into_iter().flatten());
        bound
            .chain(near)
            .filter_map(|t| self.tables.get(t))
            .flatten()
    }

    /// The slot of word `i` from what stands before it.
    fn slot<'a>(
        &self,
        spans: &[(Piece<'a>, usize)],
        i: usize,
        in_from: bool,
        with_query: bool,
    ) -> Slot<'a> {
        let before = |k: usize| i.checked_sub(k).map(|j| spans[j].0);
        let gap = match before(1) {
            Some(Piece::Other(t)) => {
                t.trim_matches(|c: char| c.is_whitespace() || c == '"' || c == '`')
            }
            _ => return Slot::Free,
        };
        let word_before = match before(2) {
            Some(Piece::Word(w)) => Some(w),
            _ => None,
        };
        match (gap, word_before) {
            // `0.6`'s fraction is no column.
            (".", Some(qualifier)) if !qualifier.starts_with(|c: char| c.is_ascii_digit()) => {
                Slot::ColumnOf(qualifier)
            }
            ("", Some(w)) if w.eq_ignore_ascii_case("from") || w.eq_ignore_ascii_case("join") => {
                Slot::Table
            }
            ("", Some(w)) if w.eq_ignore_ascii_case("as") => Slot::NewAlias,
            // `FROM t alias`: a word straight after a table reference.
            ("", Some(_)) if self.slot(spans, i - 2, in_from, with_query) == Slot::Table => {
                Slot::NewAlias
            }
            // A common table's name: `WITH [RECURSIVE] a AS (...), b AS (...)`.
            ("", Some(w))
                if w.eq_ignore_ascii_case("with") || w.eq_ignore_ascii_case("recursive") =>
            {
                Slot::NewAlias
            }
            ("),", _) if with_query => Slot::NewAlias,
            (",", _) if in_from => Slot::Table,
            _ => Slot::Free,
        }
    }
}

/// What one level of a query has bound so far.
#[derive(Debug, Default)]
struct Scope {
    /// Where its text begins: after its opening parenthesis.
    opened_at: usize,
    from_seen: bool,
    /// In the FROM clause now (a comma names another table).
    in_from: bool,
    /// In a join condition now (its keys belong to the tables they name).
    in_on: bool,
    /// A subquery is among the sources.
    derived: bool,
    tables: Vec<String>,
    /// The aliases its FROM bound, with their tables.
    aliases: Vec<(String, String)>,
    /// The table just named in FROM, until its alias (if any) is written.
    last_table: Option<String>,
    /// This level's FROM has ended (WHERE, GROUP BY, ...).
    from_ended: bool,
    /// Schema columns named bare before this level's FROM.
    bare_columns: Vec<String>,
    /// Schema columns named before this level's FROM under a qualifier,
    /// with it: `(t1, engine_id)`.
    qualified_columns: Vec<(String, String)>,
}

impl Scope {
    fn opened_at(at: usize) -> Self {
        Scope {
            opened_at: at,
            ..Scope::default()
        }
    }
}

/// Whether the query's outer level has named a column but written no
/// FROM: it may neither end nor go on to a clause that follows a FROM
/// (`SELECT SUM(T1.Total_Passengers) * 100` ends where the model forgot
/// its tables). Inner levels are left alone: a call's parentheses and a
/// window's `OVER (ORDER BY x)` name columns without a FROM.
fn names_without_from(scopes: &[Scope]) -> bool {
    let [outer] = scopes else {
        return false;
    };
    let named = !outer.bare_columns.is_empty() || !outer.qualified_columns.is_empty();
    named && !outer.from_seen
}

/// Whether the word ending at `end` repeats the levels around it, as a
/// model caught in a loop writes them: a subquery opened inside two levels
/// that read alike (`x IN (SELECT x FROM t WHERE x IN (SELECT x FROM t
/// WHERE x IN (SELECT`), or a call inside two calls of the same text
/// (`Cast(Cast(Cast`; two deep, `CAST(CAST(x AS INT) AS REAL)`, is a
/// real query). Whitespace and case do not count.
fn repeats_enclosing_levels(query: &str, scopes: &[Scope], end: usize, select: bool) -> bool {
    let n = scopes.len();
    if n < 3 {
        return false;
    }
    let text = |from: usize, to: usize| -> String {
        query
            .get(from..to)
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect()
    };
    // A level's text up to where the next one opens, its parenthesis left out.
    let up_to_inner = |k: usize| text(scopes[k].opened_at, scopes[k + 1].opened_at - 1);
    let parent = up_to_inner(n - 2);
    if parent.is_empty() || parent != up_to_inner(n - 3) {
        return false;
    }
    if select {
        parent.starts_with("select")
    } else {
        text(scopes[n - 1].opened_at, end) == parent
    }
}

/// The tables a level may join before its FROM may end with a bare column
/// still unbound, so that a model joining the wrong tables is let go.
const MAX_JOINED_FOR_COVER: usize = 4;

/// The longest qualifier written before its alias is bound that a word
/// starting no name may be (models write T1, t, emp).
const LATER_ALIAS_CHARS: usize = 3;

/// Words that end a FROM clause or its table list.
const CLAUSE_ENDS: [&str; 10] = [
    "where",
    "group",
    "order",
    "having",
    "limit",
    "on",
    "union",
    "except",
    "intersect",
    "select",
];

#[cfg(test)]
mod tests;
