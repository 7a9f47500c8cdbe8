//! When a query names a table or column that does not exist, or a column
//! name that is ambiguous, the revision step is told which real names come
//! closest (from the full schema, so a table the compressed view dropped can
//! come back) instead of guessing again from the error alone. Where one fix
//! is clearly right it is also made in place (`SchemaNames::fixes`), since
//! small models often repeat their mistake: a misspelt name becomes the one
//! real name clearly closest to it, a column of a table the query did not
//! join gets that table joined along one key or two (`join`), a table
//! named by itself where the query gave it an alias takes the alias, a
//! query that orders or filters by an aggregate without grouping is
//! grouped and a HAVING in one that does not aggregate joins its WHERE
//! (`grouping`), and a power operator (`**`, `^`) becomes a POWER call
//! (`power`). A missing column no fix finds is written again by the
//! model from just before it, among the query's own tables' columns
//! (`redecode`). A query whose text ended too soon is ended where it last
//! could be (`cut`), or, when it looped before its FROM, written on from a
//! FROM after the loop's first turn (`looped`). A type cast inside another
//! call, a filter joined to the FROM clause by AND, or an AS where
//! SQLite takes none (opening a condition, naming a CASE branch), is
//! mended (`syntax`); a comparison with ALL, ANY or SOME over a subquery, which
//! SQLite lacks, compares with the subquery's extreme or becomes an IN
//! (`quantified`); an aggregate of aggregates (`MAX(COUNT(*))`) is
//! computed over a derived table of the groups (`nested`); of a reply's
//! several statements the first runs alone (`statements`). A query that
//! equates two tables' keys that meet only
//! through a third table is joined through it (`bridge`). A query that
//! finds no value is joined on columns that meet
//! (`meeting`), given the stored spelling of a value it compares a column
//! with or the row a key's compared name belongs to (`respell`), or rid of
//! a filter on a text the question never mentions (`unasked`); the values
//! such a query compares with that no row holds are named for the model's
//! correction, with the values their columns hold (`unmatched`). A Unix
//! time handed to a date function bare is read with 'unixepoch'
//! (`unix_times`), a date written `MM/DD/YYYY` that a query orders,
//! compares with an ISO date or hands to a date function is read as one
//! (`written_dates`), and one value required to equal two dates is
//! required to lie between them (`date_range`). A whole number divided by
//! a whole number is divided as a real one unless the query means whole
//! quotients (`fractions`).

mod bridge;
mod clause_order;
mod comparison;
mod cut;
mod date_range;
mod day_bounds;
mod fractions;
mod grouping;
mod join;
mod looped;
mod meeting;
mod nested;
mod power;
mod quantified;
mod redecode;
mod respell;
mod rewrite;
mod statements;
mod syntax;
mod text_numbers;
mod text_results;
mod unasked;
mod unix_times;
mod unmatched;
mod written_dates;

pub(super) use join::key_links;

use super::sql_text::{
    columns_under, dot_between, is_word_char, join_split_name, name_in_query, outer_table_aliases,
    pieces, qualify_bare, replace_identifier, replace_qualified, replace_quoted_name,
    table_aliases, table_bound_to, written_in_outer_query, Piece,
};
use crate::db::{Executor, QueryOutcome, QueryResult, Schema};
use crate::error::QueryError;
use crate::understand::text::{similarity, truncate_chars};
use std::collections::HashSet;
use std::sync::Arc;

/// Least trigram similarity for a name to be suggested.
const MIN_SIMILARITY: f64 = 0.3;
const MAX_SUGGESTIONS: usize = 4;
/// Longest note, in characters, so one error cannot crowd the prompt.
const MAX_CHARS: usize = 320;
/// Least edit-distance similarity (1 - distance / longer length) for a name
/// to replace a missing one without asking: one typo in a 4-letter name.
const MIN_FIX_SIMILARITY: f64 = 0.7;
/// Fixes chained on one query at most: a query whose columns went to the
/// wrong aliases needs one fix per column (seven in a LogicCat sample).
const MAX_FIXES: usize = 8;
/// Fixed queries executed for one failed query at most.
const MAX_TRIES: usize = 10;

/// The names a failed column reference can see, and whether they are the
/// outer query's alone.
struct Scope {
    bound: Vec<(String, String)>,
    outer_only: bool,
}

/// `T1.x` as `(Some("T1"), "x")`, `x` as `(None, "x")`.
fn split_qualified(name: &str) -> (Option<&str>, &str) {
    match name.rsplit_once('.') {
        Some((qualifier, column)) => (Some(qualifier), column),
        None => (None, name),
    }
}

/// `sql` and its result when it runs and finds a value: the test a
/// rewrite of a query that found none must pass to be kept.
fn kept_if_it_finds_a_value(
    executor: &Executor,
    sql: String,
) -> Option<(String, Arc<QueryResult>)> {
    let result = executor.query(&sql).ok()?;
    result.digest.has_non_null().then_some((sql, result))
}

/// A question with its hint, the text in which a filter's value must appear
/// for the no-value repairs to keep the filter.
pub fn asked(question: &str, hint: Option<&str>) -> String {
    match hint {
        Some(hint) => format!("{question}\n{hint}"),
        None => question.to_string(),
    }
}

/// A rewrite of a query's text; None when it changes nothing.
type QueryRewrite<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The table and column names of a database, and its foreign keys.
#[derive(Debug, Clone, Default)]
pub struct SchemaNames {
    tables: Vec<(String, Vec<String>)>,
    keys: Vec<join::KeyLink>,
    unix_times: unix_times::UnixColumns,
    written_dates: written_dates::WrittenDates,
    date_times: day_bounds::DateTimes,
    numbers_as_text: text_numbers::NumbersAsText,
    whole_numbers: fractions::WholeNumbers,
}

impl SchemaNames {
    pub fn of(schema: &Schema) -> Self {
        SchemaNames {
            tables: schema
                .tables
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        t.columns.iter().map(|c| c.name.clone()).collect(),
                    )
                })
                .collect(),
            keys: join::key_links(schema),
            unix_times: unix_times::UnixColumns::of(schema),
            written_dates: written_dates::WrittenDates::of(schema),
            date_times: day_bounds::DateTimes::of(schema),
            numbers_as_text: text_numbers::NumbersAsText::of(schema),
            whole_numbers: fractions::WholeNumbers::of(schema),
        }
    }

    /// A note on SQLite's error `error` for the query `sql`, or None when the
    /// error is not about names.
    pub fn suggest(&self, error: &str, sql: &str) -> Option<String> {
        let note = if let Some(name) = after(error, "no such column:") {
            self.missing_column(name, sql)
        } else if let Some(name) = table_after(error) {
            self.missing_table(name)
        } else if let Some(name) = after(error, "ambiguous column name:") {
            self.ambiguous_column(name)
        } else {
            return None;
        };
        Some(truncate_chars(&note, MAX_CHARS))
    }

    fn missing_column(&self, name: &str, sql: &str) -> String {
        let (qualifier, column) = split_qualified(name);
        let all = self
            .tables
            .iter()
            .flat_map(|(t, cols)| cols.iter().map(move |c| (c.as_str(), format!("{t}.{c}"))));
        let close = closest(column, all);
        if !close.is_empty() {
            return format!("no column `{column}`; the closest are {}", close.join(", "));
        }
        // Nothing is spelled alike: show what the query's own tables hold.
        let scope = self.scope_of(sql, qualifier, column);
        let used: Vec<String> = self
            .tables_used(&scope, sql)
            .into_iter()
            .map(|(t, cols)| format!("{t}({})", cols.join(", ")))
            .collect();
        if used.is_empty() {
            format!("no table has a column `{column}`")
        } else {
            format!(
                "no table has a column `{column}`; the query's tables have {}",
                used.join("; ")
            )
        }
    }

    fn missing_table(&self, name: &str) -> String {
        let close = closest(
            name,
            self.tables.iter().map(|(t, _)| (t.as_str(), t.clone())),
        );
        let listed = if close.is_empty() {
            self.tables.iter().map(|(t, _)| t.clone()).collect()
        } else {
            close
        };
        format!(
            "no table `{name}`; the tables include {}",
            listed.join(", ")
        )
    }

    fn ambiguous_column(&self, name: &str) -> String {
        let owners: Vec<&str> = self
            .tables
            .iter()
            .filter(|(_, cols)| cols.iter().any(|c| c.eq_ignore_ascii_case(name)))
            .map(|(t, _)| t.as_str())
            .collect();
        format!(
            "`{name}` is a column of {}; qualify it with its table or alias",
            owners.join(" and ")
        )
    }

    /// Fixed versions of `sql` for the name or grouping `error` complains of, the likeliest
    /// first: a misspelt table or column replaced by the one real name
    /// clearly closest to it (a column of the query's own tables first), a
    /// one-table query pointed at the one other table that has the column,
    /// the table holding the column joined along a foreign key, a table's
    /// own name replaced by its alias, an ambiguous column qualified, a
    /// query that aggregates aggregates computed in two steps, one that
    /// orders or filters by an aggregate without grouping grouped, a
    /// HAVING without aggregates made a filter, a comparison
    /// with ALL or ANY over a subquery made one SQLite runs, the first of
    /// several statements taken alone, a syntax slip
    /// mended (a dot or a name broken apart, a cast's type inside another
    /// call or after its parenthesis, AND for WHERE, an AS opening a
    /// condition or naming a CASE branch, an alias holding signs, a quoted
    /// name left open, clauses out of order, a power operator).
    /// Empty when there is no such fix.
    pub fn fixes(&self, error: &str, sql: &str) -> Vec<String> {
        if let Some(name) = after(error, "no such column:") {
            self.column_fixes(name, sql)
        } else if let Some(name) = table_after(error) {
            let tables = self.tables.iter().map(|(t, _)| (t.as_str(), ()));
            clearly_closest(name, tables)
                .and_then(|(real, ())| {
                    replace_identifier(sql, name, real)
                        .or_else(|| replace_quoted_name(sql, name, real))
                })
                .into_iter()
                .collect()
        } else if let Some(name) = after(error, "ambiguous column name:") {
            self.qualify_ambiguous(name, sql).into_iter().collect()
        } else if error.contains("misuse of aggregate") {
            nested::fix(sql)
                .into_iter()
                .chain(grouping::group_aggregates(sql))
                .collect()
        } else if error.contains("HAVING clause on a non-aggregate query") {
            grouping::having_as_filter(sql).into_iter().collect()
        } else if error.contains("near \"*\": syntax error")
            || error.contains("unrecognized token: \"^\"")
        {
            power::power_calls(sql).into_iter().collect()
        } else if let Some(rewritten) = quantified::fix(sql, error) {
            vec![rewritten]
        } else if let Some(first) = statements::first_statement(sql, error) {
            vec![first]
        } else if let Some(quote) = unclosed_quote(error) {
            syntax::close_quote(sql, quote).into_iter().collect()
        } else if let Some(near) = syntax_error_near(error) {
            let mut fixes = Vec::new();
            // The name repairs read words; signs have only the syntax fixes.
            if near.chars().all(is_word_char) {
                fixes.extend(self.restore_dot(sql, near));
                fixes.extend(self.join_split_name(sql, near));
            }
            fixes.extend(syntax::fix_near(sql, near));
            fixes
        } else {
            Vec::new()
        }
    }

    fn column_fixes(&self, name: &str, sql: &str) -> Vec<String> {
        let (qualifier, column) = split_qualified(name);
        let scope = self.scope_of(sql, qualifier, column);
        let mut fixes = Vec::new();
        fixes.extend(qualifier.and_then(|q| self.alias_for_table_name(sql, &scope, q, column)));
        fixes.extend(qualifier.and_then(|q| {
            self.requalify(sql, &scope, q, column)
                .or_else(|| self.requalify_unbound(sql, &scope, q))
        }));
        let names_unjoined_table = qualifier.is_some_and(|q| {
            !scope.bound.iter().any(|(n, _)| n.eq_ignore_ascii_case(q))
                && self.tables.iter().any(|(t, _)| t.eq_ignore_ascii_case(q))
        });
        if names_unjoined_table {
            fixes.extend(self.join_missing(sql, &scope, qualifier, column));
            return fixes;
        }
        let used = self.tables_used(&scope, sql);
        let own = used
            .iter()
            .flat_map(|(_, cols)| cols.iter().map(|c| (c.as_str(), ())));
        if let Some((real, ())) = clearly_closest(column, own) {
            // Present under this spelling: the error lies elsewhere.
            if !real.eq_ignore_ascii_case(column) {
                fixes.extend(replace_identifier(sql, column, real));
            }
            return fixes;
        }
        if let [(only, _)] = used.as_slice() {
            fixes.extend(self.move_to_table(sql, only, column));
        }
        fixes.extend(self.join_missing(sql, &scope, qualifier, column));
        fixes
    }

    /// What a missing `qualifier.column` (or bare `column`) can see: when
    /// it is written in the outer query, only the outer query's bindings (a
    /// table read inside a subquery is out of the outer query's sight) if
    /// none of the outer query's tables has the column or the outer query
    /// binds the qualifier (so a subquery that reads the same table again
    /// under another alias leaves the choice of alias clear); else every
    /// binding of the query.
    fn scope_of(&self, sql: &str, qualifier: Option<&str>, column: &str) -> Scope {
        let outer = outer_table_aliases(sql);
        let outer_has_column = outer
            .iter()
            .any(|(_, table)| self.has_column(table, column));
        let outer_binds_qualifier = qualifier.is_some_and(|q| table_bound_to(&outer, q).is_some());
        if !outer.is_empty()
            && (!outer_has_column || outer_binds_qualifier)
            && written_in_outer_query(sql, qualifier, column)
        {
            Scope {
                bound: outer,
                outer_only: true,
            }
        } else {
            Scope {
                bound: table_aliases(sql),
                outer_only: false,
            }
        }
    }

    /// A one-table query on `only` pointed at the one other table with a
    /// column clearly closest to `column`, when that table also has every
    /// column of `only` the query reads (else the join is the fix).
    fn move_to_table(&self, sql: &str, only: &str, column: &str) -> Option<String> {
        let elsewhere = self
            .tables
            .iter()
            .filter(|(t, _)| t != only)
            .flat_map(|(t, cols)| cols.iter().map(move |c| (c.as_str(), t.as_str())));
        let (real, table) = clearly_closest(column, elsewhere)?;
        let columns_of = |name: &str| {
            self.tables
                .iter()
                .find(|(t, _)| t == name)
                .map(|(_, cols)| cols.as_slice())
                .unwrap_or_default()
        };
        let words: HashSet<String> = pieces(sql)
            .into_iter()
            .filter_map(|p| match p {
                Piece::Word(w) => Some(w.to_lowercase()),
                Piece::Other(_) => None,
            })
            .collect();
        let target = columns_of(table);
        let loses_a_column = columns_of(only).iter().any(|c| {
            words.contains(&c.to_lowercase()) && !target.iter().any(|t| t.eq_ignore_ascii_case(c))
        });
        if loses_a_column {
            return None;
        }
        let moved = replace_identifier(sql, only, table)?;
        if real.eq_ignore_ascii_case(column) {
            Some(moved)
        } else {
            replace_identifier(&moved, column, real)
        }
    }

    /// Bare `column` qualified with the first of the query's tables that
    /// has it (inner joins on it give every side the same value).
    /// When two of the outer query's own tables have it and it is written
    /// there, only the outer query's bare `column`s are qualified: those in
    /// a subquery may belong to the subquery's table.
    fn qualify_ambiguous(&self, column: &str, sql: &str) -> Option<String> {
        let outer = outer_table_aliases(sql);
        let outer_holders = outer
            .iter()
            .filter(|(name, t)| name == t && self.has_column(t, column))
            .count();
        let outer_only = outer_holders > 1 && written_in_outer_query(sql, None, column);
        let bound = if outer_only {
            outer
        } else {
            table_aliases(sql)
        };
        let owner = bound
            .iter()
            .map(|(_, t)| t)
            .find(|t| self.has_column(t, column))?;
        qualify_bare(sql, column, name_in_query(&bound, owner)?, outer_only)
    }

    /// `sql` with the dot put back between a name the query binds and the
    /// `column` that SQLite stumbled on after it (`T2 Shop_ID` for
    /// `T2.Shop_ID`): a small model, refused a column under one alias,
    /// sometimes drops the dot instead of changing the alias.
    fn restore_dot(&self, sql: &str, column: &str) -> Option<String> {
        let is_column = self
            .tables
            .iter()
            .any(|(_, cols)| cols.iter().any(|c| c.eq_ignore_ascii_case(column)));
        if !is_column {
            return None;
        }
        let bound = table_aliases(sql);
        let is_bound = |name: &str| bound.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        dot_between(sql, column, is_bound)
    }

    /// `sql` with a column name the model broke in two with a space
    /// (`Com pressionRatio`, `Material ID`), where SQLite stops at the
    /// second half, written whole: the one column clearly closest to the
    /// two halves joined, with or without an underscore.
    fn join_split_name(&self, sql: &str, second: &str) -> Option<String> {
        // Each name once: a key two tables share is not two candidates.
        let distinct: std::collections::HashMap<String, &str> = self
            .tables
            .iter()
            .flat_map(|(_, cols)| cols.iter().map(|c| (c.to_lowercase(), c.as_str())))
            .collect();
        let columns = || distinct.values().map(|c| (*c, ()));
        join_split_name(sql, second, |first, second| {
            [format!("{first}{second}"), format!("{first}_{second}")]
                .iter()
                .find_map(|joined| clearly_closest(joined, columns()))
                .map(|(real, ())| real.to_string())
        })
    }

    /// The columns of the database's `table` (none when it has no such
    /// table).
    fn columns_of<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a str> {
        self.tables
            .iter()
            .filter(move |(t, _)| t.eq_ignore_ascii_case(table))
            .flat_map(|(_, columns)| columns.iter().map(String::as_str))
    }

    /// Whether `text` is, apart from case, the name of one of the
    /// database's tables or columns.
    fn is_schema_name(&self, text: &str) -> bool {
        self.tables.iter().any(|(table, columns)| {
            table.eq_ignore_ascii_case(text) || columns.iter().any(|c| c.eq_ignore_ascii_case(text))
        })
    }

    /// Whether the database's `table` has `column`.
    fn has_column(&self, table: &str, column: &str) -> bool {
        self.columns_of(table)
            .any(|c| c.eq_ignore_ascii_case(column))
    }

    /// `sql` executed and, when it fails, fixed until it runs (ended where
    /// it last could be first if the model was `cut` off in it), or when
    /// it finds no value, mended (`mend`): the query that ran (else `sql`)
    /// and its outcome.
    pub fn query_or_fix(
        &self,
        executor: &Executor,
        sql: &str,
        cut: bool,
        asked: &str,
    ) -> (String, QueryOutcome) {
        let outcome = executor.query(sql);
        match self.mend(executor, sql, &outcome, cut, asked) {
            Some((fixed, result)) => (fixed, Ok(result)),
            None => (sql.to_string(), outcome),
        }
    }

    /// `sql`, which ran to `outcome`, mended when that outcome falls short:
    /// a Unix time handed to a date function bare, a written date
    /// ordered as text, a value equated with two dates, or a time of day
    /// compared with a bare day, read as a time or day, and a function's
    /// text compared with a number read as a number
    /// (`reread_before_running`), and then a
    /// failed query fixed until it runs (`fix_until_it_runs`, `cut` as
    /// there); one that equates keys past the table linking them (as
    /// written or as fixed) routed through it (`bridge_keys`); else, if it
    /// found no value, rejoined (`rejoin`), else
    /// respelled (`respell`), else rid of a filter on a text the question
    /// and hint, `asked`, never mention (`unasked`); if it counted nothing,
    /// a text compared where it is not stored moved to where it is
    /// (`relocate_counted`). Last, the query (as mended) read as SQLite
    /// would otherwise not read it where that changes its answer
    /// (`read_as_meant`). None when it needs no mending or none works.
    pub fn mend(
        &self,
        executor: &Executor,
        sql: &str,
        outcome: &QueryOutcome,
        cut: bool,
        asked: &str,
    ) -> Option<(String, Arc<QueryResult>)> {
        let mended = self.mend_but_readings(executor, sql, outcome, cut, asked);
        let (now, result) = match &mended {
            Some((now, result)) => (now.as_str(), result),
            None => (sql, outcome.as_ref().ok()?),
        };
        self.read_as_meant(executor, now, result).or(mended)
    }

    /// `sql`, which ran to `result`, with its numbers stored as text read
    /// as numbers (`text_numbers`) and its divisions of whole numbers made
    /// real (`fractions`), and what that answers; None when it reads none
    /// so, fails, or answers the same.
    fn read_as_meant(
        &self,
        executor: &Executor,
        sql: &str,
        result: &QueryResult,
    ) -> Option<(String, Arc<QueryResult>)> {
        let readings: [&QueryRewrite; 2] = [
            &|text| text_numbers::read_as_numbers(text, &self.numbers_as_text),
            &|text| fractions::divide_as_reals(text, &self.whole_numbers),
        ];
        let read = rewritten_in_turn(sql, &readings)?;
        let answer = executor.query(&read).ok()?;
        text_numbers::answers_differ(result, &answer).then_some((read, answer))
    }

    /// `mend` but for `read_as_meant`.
    fn mend_but_readings(
        &self,
        executor: &Executor,
        sql: &str,
        outcome: &QueryOutcome,
        cut: bool,
        asked: &str,
    ) -> Option<(String, Arc<QueryResult>)> {
        // A Unix time read bare gives NULL, written dates ordered as text
        // sort by month, a time compared with its bare day sorts after it,
        // and a text compared with a number never equals it, whatever else
        // the query does.
        if let Some(read) = self.reread_before_running(sql) {
            if let Ok(result) = executor.query(&read) {
                let ran = Ok(result.clone());
                return self
                    .mend_but_readings(executor, &read, &ran, cut, asked)
                    .or(Some((read, result)));
            }
        }
        match outcome {
            Err(e) => {
                let (fixed, result) = self.fix_until_it_runs(executor, sql, &e.to_string(), cut)?;
                Some(
                    self.bridge_keys(executor, &fixed)
                        .unwrap_or((fixed, result)),
                )
            }
            Ok(result) if !result.digest.has_non_null() => self
                .bridge_keys(executor, sql)
                .or_else(|| self.rejoin(executor, sql))
                .or_else(|| self.respell(executor, sql))
                .or_else(|| {
                    unasked::drop_unasked_filter(executor, sql, asked, |text| {
                        self.is_schema_name(text)
                    })
                }),
            Ok(result) if respell::counts_nothing(result) => self
                .bridge_keys(executor, sql)
                .or_else(|| self.relocate_counted(executor, sql)),
            Ok(_) => self.bridge_keys(executor, sql),
        }
    }

    /// `sql` with two dates one value must equal made a range
    /// (`date_range`), its Unix times and written dates read as times
    /// (`unix_times`, `written_dates`), a time of day compared with a bare
    /// day read as its day (`day_bounds`), and a date part or other
    /// function's text compared with a number read as one (`text_results`);
    /// None when it reads none wrongly.
    fn reread_before_running(&self, sql: &str) -> Option<String> {
        let rewrites: [&QueryRewrite; 5] = [
            &date_range::as_ranges,
            &|text| unix_times::read_as_unix_times(text, &self.unix_times),
            &|text| written_dates::in_date_order(text, &self.written_dates),
            &|text| day_bounds::read_as_days(text, &self.date_times),
            &text_results::read_as_numbers,
        ];
        rewritten_in_turn(sql, &rewrites)
    }

    /// `sql`, which failed with `error`, fixed until it runs (a chain of at
    /// most [`MAX_FIXES`] fixes, trying the alternatives of each step in
    /// order, [`MAX_TRIES`] executions in all), and its result; None when
    /// no chain runs. A text the model was `cut` off in is first ended where
    /// it last could be (`end_cut_query`); one SQLite says ended too soon
    /// is only ended so.
    pub fn fix_until_it_runs(
        &self,
        executor: &Executor,
        sql: &str,
        error: &str,
        cut: bool,
    ) -> Option<(String, Arc<QueryResult>)> {
        let too_soon = cut::ended_too_soon(error);
        if cut || too_soon {
            let ended = self.end_cut_query(executor, sql);
            if ended.is_some() || too_soon {
                return ended;
            }
        }
        let mut tried = HashSet::from([sql.to_string()]);
        self.fix_chain(executor, sql, error, MAX_FIXES, &mut tried)
    }

    /// `sql`, whose text ended before the query did (the model was cut
    /// off, or stopped mid-query), ended at the latest point where it runs
    /// (see `cut`), and its result. The latest end that is a whole query but
    /// fails on a name is fixed as any failed query is, before shorter ends
    /// (which only filter less) are tried. None when nothing runs, or when an
    /// end runs out of time or memory.
    fn end_cut_query(&self, executor: &Executor, sql: &str) -> Option<(String, Arc<QueryResult>)> {
        let mut fixed_one = false;
        for ended in cut::endings(sql) {
            let error = match executor.query(&ended) {
                Ok(result) => return Some((ended, result)),
                Err(QueryError::Timeout { .. } | QueryError::OutOfMemory { .. }) => return None,
                Err(error) => error.to_string(),
            };
            if !fixed_one && !error.contains("syntax error") && !cut::ended_too_soon(&error) {
                fixed_one = true;
                let mut tried = HashSet::from([ended.clone()]);
                let fixed = self.fix_chain(executor, &ended, &error, MAX_FIXES, &mut tried);
                if fixed.is_some() {
                    return fixed;
                }
            }
        }
        None
    }

    /// One step of [`SchemaNames::fix_until_it_runs`]; `tried` holds every
    /// query executed so far, so a fix that undoes another is not retried.
    fn fix_chain(
        &self,
        executor: &Executor,
        sql: &str,
        error: &str,
        depth: usize,
        tried: &mut HashSet<String>,
    ) -> Option<(String, Arc<QueryResult>)> {
        if depth == 0 {
            return None;
        }
        for fixed in self.fixes(error, sql) {
            // The original query is in `tried` too: one more than the tries.
            if tried.len() > MAX_TRIES {
                return None;
            }
            if !tried.insert(fixed.clone()) {
                continue;
            }
            match executor.query(&fixed) {
                Ok(result) => return Some((fixed, result)),
                Err(e) => {
                    let chained =
                        self.fix_chain(executor, &fixed, &e.to_string(), depth - 1, tried);
                    if chained.is_some() {
                        return chained;
                    }
                }
            }
        }
        None
    }

    /// `qualifier.column` rewritten as `alias.real` when exactly one of the
    /// query's tables has a column clearly closest to `column` and the query
    /// binds that table to one name: a column taken from the wrong side of
    /// a join.
    fn requalify(&self, sql: &str, scope: &Scope, qualifier: &str, column: &str) -> Option<String> {
        let bound = &scope.bound;
        let bound_tables = self
            .tables
            .iter()
            .filter(|(t, _)| bound.iter().any(|(_, b)| b.eq_ignore_ascii_case(t)));
        let columns =
            bound_tables.flat_map(|(t, cols)| cols.iter().map(move |c| (c.as_str(), t.as_str())));
        let (real, table) = clearly_closest(column, columns)?;
        let name = name_in_query(bound, table)?;
        if name.eq_ignore_ascii_case(qualifier) && real.eq_ignore_ascii_case(column) {
            return None;
        }
        replace_qualified(sql, (qualifier, column), (name, real))
    }

    /// `sql` with every column under `qualifier`, a table's own name, put
    /// under the one alias the query gives that table, when the table has
    /// `column`: SQLite knows an aliased table by its alias alone, and a
    /// small model writes `FROM t x JOIN u ON t.id = u.id` (often with a
    /// stray word as the alias).
    fn alias_for_table_name(
        &self,
        sql: &str,
        scope: &Scope,
        qualifier: &str,
        column: &str,
    ) -> Option<String> {
        let bound = &scope.bound;
        let is = |name: &str| name.eq_ignore_ascii_case(qualifier);
        // Each table a FROM names is bound under its own name, and again
        // under its alias when it has one: aliased wherever it is read
        // when its bindings are twice its own-name ones.
        let own = bound.iter().filter(|(n, _)| is(n)).count();
        let all = bound.iter().filter(|(_, t)| is(t)).count();
        if own == 0 || all != 2 * own || !self.has_column(qualifier, column) {
            return None;
        }
        let alias = name_in_query(bound, qualifier)?;
        moved_under(sql, qualifier, &columns_under(sql, qualifier), alias)
    }

    /// `sql` with every column under `qualifier`, an alias bound nowhere,
    /// moved to the one joined table that has them all: `T2.name,
    /// T2.result` over `battle AS T1 JOIN ship AS T3` is battle's, though
    /// ship has a name too (which leaves `requalify` without a clear
    /// choice).
    fn requalify_unbound(&self, sql: &str, scope: &Scope, qualifier: &str) -> Option<String> {
        let bound = &scope.bound;
        let is = |name: &str| name.eq_ignore_ascii_case(qualifier);
        if bound.iter().any(|(n, _)| is(n)) || self.tables.iter().any(|(t, _)| is(t)) {
            return None;
        }
        let wanted = columns_under(sql, qualifier);
        let mut holders = self.tables.iter().filter(|(t, cols)| {
            bound.iter().any(|(_, b)| b.eq_ignore_ascii_case(t))
                && wanted
                    .iter()
                    .all(|w| cols.iter().any(|c| c.eq_ignore_ascii_case(w)))
        });
        let (table, _) = holders.next()?;
        if holders.next().is_some() {
            return None;
        }
        let name = name_in_query(bound, table)?;
        moved_under(sql, qualifier, &wanted, name)
    }

    /// The tables `sql` reads in `scope`: those bound there, or, when the
    /// query binds none, every table it names.
    fn tables_used(&self, scope: &Scope, sql: &str) -> Vec<&(String, Vec<String>)> {
        let bound = &scope.bound;
        let identifiers: Vec<&str> = if bound.is_empty() {
            sql.split(|c: char| !is_word_char(c)).collect()
        } else {
            bound.iter().map(|(_, t)| t.as_str()).collect()
        };
        self.tables
            .iter()
            .filter(|(t, _)| identifiers.iter().any(|i| i.eq_ignore_ascii_case(t)))
            .collect()
    }
}

/// The name most like `wanted` (with what it came with), if similar enough
/// and strictly ahead of every other one; a name met twice (a column of two
/// tables) ties with itself, so it is not chosen.
/// `sql` passed through each of `rewrites` in turn, each given what the
/// ones before it made; None when none of them changed it.
fn rewritten_in_turn(sql: &str, rewrites: &[&QueryRewrite]) -> Option<String> {
    rewrites.iter().fold(None, |changed, rewrite| {
        rewrite(changed.as_deref().unwrap_or(sql)).or(changed)
    })
}

fn clearly_closest<'a, T: Copy>(
    wanted: &str,
    names: impl Iterator<Item = (&'a str, T)>,
) -> Option<(&'a str, T)> {
    let mut scored: Vec<(f64, &str, T)> = names
        .map(|(name, with)| (spelling_similarity(name, wanted), name, with))
        .filter(|(s, _, _)| *s >= MIN_FIX_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let &(best_score, best, with) = scored.first()?;
    let tied = scored.iter().skip(1).any(|&(s, _, _)| s >= best_score);
    (!tied).then_some((best, with))
}

/// Case-blind Damerau-Levenshtein similarity: trigrams undervalue one typo
/// in a short name ("Agee" and "Age" share 2 of 5).
fn spelling_similarity(a: &str, b: &str) -> f64 {
    strsim::normalized_damerau_levenshtein(&a.to_lowercase(), &b.to_lowercase())
}

/// The quote the query's parser found never closed (`Expected close
/// delimiter '`' before EOF`).
fn unclosed_quote(error: &str) -> Option<char> {
    let start = error.find("Expected close delimiter '")? + "Expected close delimiter '".len();
    let mut rest = error[start..].chars();
    let quote = rest.next()?;
    (rest.next() == Some('\'')).then_some(quote)
}

/// The token of SQLite's `near "token": syntax error`: a word or signs.
fn syntax_error_near(error: &str) -> Option<&str> {
    let start = error.find("near \"")? + "near \"".len();
    let rest = &error[start..];
    Some(&rest[..rest.find("\": syntax error")?])
}

/// The text after `marker` in `error`, trimmed of quotes and spaces.
fn after<'a>(error: &'a str, marker: &str) -> Option<&'a str> {
    let start = error.find(marker)? + marker.len();
    let rest = error[start..].trim();
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    Some(rest[..end].trim_matches(|c| c == '"' || c == '`' || c == '\''))
}

/// `sql` with each of `columns` written under `qualifier` written under
/// `name` instead; None when one of them is not there.
fn moved_under(sql: &str, qualifier: &str, columns: &[&str], name: &str) -> Option<String> {
    columns.iter().try_fold(sql.to_string(), |sql, column| {
        replace_qualified(&sql, (qualifier, column), (name, column))
    })
}

/// The table SQLite's "no such table" `error` names: the rest of the
/// error, since a table's name may hold a space.
fn table_after(error: &str) -> Option<&str> {
    let marker = "no such table:";
    let start = error.find(marker)? + marker.len();
    Some(error[start..].trim())
}

/// Up to [`MAX_SUGGESTIONS`] labels whose name is most like `wanted`.
fn closest<'a>(wanted: &str, names: impl Iterator<Item = (&'a str, String)>) -> Vec<String> {
    let mut scored: Vec<(f64, String)> = names
        .map(|(name, label)| (similarity(name, wanted), label))
        .filter(|(s, _)| *s >= MIN_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, label)| label)
        .collect()
}

/// A database made from `statements` in a temporary folder (kept alive
/// by the guard), with an executor over it and its names, for the repairs'
/// tests that run queries.
#[cfg(test)]
fn database_from(statements: &str) -> (tempfile::TempDir, Executor, SchemaNames) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(statements).unwrap();
    drop(conn);
    let schema = Schema::load(&path, &crate::db::IntrospectOptions::default()).unwrap();
    let executor = Executor::open(&path, crate::db::ExecConfig::default()).unwrap();
    (dir, executor, SchemaNames::of(&schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl SchemaNames {
        fn fix(&self, error: &str, sql: &str) -> Option<String> {
            self.fixes(error, sql).into_iter().next()
        }
    }

    fn names() -> SchemaNames {
        SchemaNames {
            tables: vec![
                (
                    "aircraft".into(),
                    vec![
                        "Aircraft_ID".into(),
                        "Max_Gross_Weight".into(),
                        "Total_Disk_Area".into(),
                    ],
                ),
                (
                    "airport_aircraft".into(),
                    vec!["ID".into(), "Airport_ID".into(), "Aircraft_ID".into()],
                ),
            ],
            ..SchemaNames::default()
        }
    }

    #[test]
    fn a_misspelt_column_gets_the_closest_real_ones() {
        let note = names()
            .suggest("SQL error: no such column: T1.Max_Disk_Area", "SELECT ...")
            .unwrap();
        assert!(
            note.starts_with("no column `Max_Disk_Area`; the closest are aircraft.Total_Disk_Area"),
            "{note}"
        );
    }

    #[test]
    fn an_invented_column_gets_the_columns_of_the_querys_tables() {
        let sql = "SELECT T2.Lift FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID";
        let note = names().suggest("no such column: T2.Lift", sql).unwrap();
        assert_eq!(
            note,
            "no table has a column `Lift`; the query's tables have aircraft(Aircraft_ID, Max_Gross_Weight, Total_Disk_Area); airport_aircraft(ID, Airport_ID, Aircraft_ID)"
        );
    }

    #[test]
    fn missing_tables_and_ambiguous_columns_are_explained() {
        let n = names();
        let note = n.suggest("no such table: aircrafts", "").unwrap();
        assert!(note.contains("aircraft"), "{note}");
        let note = n.suggest("ambiguous column name: Aircraft_ID", "").unwrap();
        assert_eq!(
            note,
            "`Aircraft_ID` is a column of aircraft and airport_aircraft; qualify it with its table or alias"
        );
        assert_eq!(n.suggest("near \"FROM\": syntax error", ""), None);
    }

    #[test]
    fn a_clearly_closest_name_is_fixed_in_place_outside_literals() {
        let n = names();
        let sql = "SELECT Max_Gros_Weight FROM aircraft WHERE Max_Gros_Weight > 1 AND Aircraft_ID = 'Max_Gros_Weight'";
        assert_eq!(
            n.fix("no such column: Max_Gros_Weight", sql).as_deref(),
            Some("SELECT Max_Gross_Weight FROM aircraft WHERE Max_Gross_Weight > 1 AND Aircraft_ID = 'Max_Gros_Weight'")
        );
        assert_eq!(
            n.fix("no such table: aircrafts", "SELECT * FROM aircrafts AS a")
                .as_deref(),
            Some("SELECT * FROM aircraft AS a")
        );
        // A quoted name with a space in it, outside literals only.
        assert_eq!(
            n.fix(
                "no such table: airport aircraft",
                "SELECT '`airport aircraft`' FROM `airport aircraft` AS a"
            )
            .as_deref(),
            Some("SELECT '`airport aircraft`' FROM airport_aircraft AS a")
        );
        // A qualified name keeps its qualifier; quoted identifiers keep their quotes.
        assert_eq!(
            n.fix(
                "no such column: T1.Total_Disc_Area",
                "SELECT T1.\"Total_Disc_Area\" FROM aircraft AS T1"
            )
            .as_deref(),
            Some("SELECT T1.\"Total_Disk_Area\" FROM aircraft AS T1")
        );
    }

    #[test]
    fn names_that_are_far_or_equally_close_to_two_are_not_fixed() {
        let n = names();
        assert_eq!(
            n.fix("no such column: Lift", "SELECT Lift FROM aircraft"),
            None
        );
        // Two names equally close: no guess.
        let two = SchemaNames {
            tables: vec![("t".into(), vec!["Speed_Max".into(), "Speed_Min".into()])],
            ..SchemaNames::default()
        };
        assert_eq!(
            two.fix("no such column: Speed_M", "SELECT Speed_M FROM t"),
            None
        );
        assert_eq!(n.fix("near \"FROM\": syntax error", "SELECT FROM"), None);
    }

    #[test]
    fn an_unbound_alias_moves_to_the_one_joined_table_with_all_its_columns() {
        let n = names();
        let joined = "SELECT T3.Aircraft_ID, T3.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID";
        assert_eq!(
            n.fix("no such column: T3.Aircraft_ID", joined).as_deref(),
            Some("SELECT T1.Aircraft_ID, T1.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID")
        );
        // A column both tables have, and nothing else under T3: no choice.
        let shared = "SELECT T3.Aircraft_ID FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID";
        assert_eq!(
            n.fixes("no such column: T3.Aircraft_ID", shared)
                .iter()
                .find(
                    |f| f.contains("SELECT T1.Aircraft_ID") || f.contains("SELECT T2.Aircraft_ID")
                ),
            None
        );
    }

    #[test]
    fn a_name_broken_by_a_space_is_joined_again() {
        let n = names();
        assert_eq!(
            n.fix(
                "near \"Disk_Area\": syntax error",
                "SELECT Total Disk_Area FROM aircraft"
            )
            .as_deref(),
            Some("SELECT Total_Disk_Area FROM aircraft")
        );
        // After the dropped dot, the likelier slip, is tried.
        assert_eq!(
            n.fixes(
                "near \"ID\": syntax error",
                "SELECT * FROM aircraft WHERE Aircraft\tID = 1"
            ),
            [
                "SELECT * FROM aircraft WHERE Aircraft.ID = 1",
                "SELECT * FROM aircraft WHERE Aircraft_ID = 1"
            ]
        );
        // Two words that make no name stay as they are.
        assert_eq!(
            n.fix(
                "near \"Area\": syntax error",
                "SELECT Lift Area FROM aircraft"
            ),
            None
        );
    }

    #[test]
    fn a_syntax_error_near_a_sign_reaches_the_sign_fixes() {
        assert_eq!(
            names()
                .fix(
                    "near \"&\": syntax error",
                    "SELECT Name, Range AS R&D.Range FROM aircraft"
                )
                .as_deref(),
            Some("SELECT Name, Range AS \"R&D.Range\" FROM aircraft")
        );
    }

    #[test]
    fn a_quoted_name_the_parser_found_open_is_closed() {
        assert_eq!(
            names()
                .fix(
                    "Expected close delimiter '`' before EOF. at Line: 1, Column: 18",
                    "SELECT Name FROM `aircraft WHERE Range > 1"
                )
                .as_deref(),
            Some("SELECT Name FROM `aircraft` WHERE Range > 1")
        );
    }

    #[test]
    fn a_one_table_query_is_pointed_at_the_table_that_has_the_column() {
        let n = names();
        assert_eq!(
            n.fix(
                "no such column: Max_Gross_Weight",
                "SELECT AVG(Max_Gross_Weight) FROM airport_aircraft WHERE airport_aircraft.Aircraft_ID = 1"
            )
            .as_deref(),
            Some("SELECT AVG(Max_Gross_Weight) FROM aircraft WHERE aircraft.Aircraft_ID = 1")
        );
    }

    #[test]
    fn a_table_named_by_itself_under_an_alias_takes_the_alias() {
        let n = names();
        let stray = "SELECT Max_Gross_Weight FROM aircraft STRAY JOIN airport_aircraft ON aircraft.Aircraft_ID = airport_aircraft.Aircraft_ID WHERE aircraft.Total_Disk_Area > 1";
        assert_eq!(
            n.fix("no such column: aircraft.Aircraft_ID", stray).as_deref(),
            Some("SELECT Max_Gross_Weight FROM aircraft STRAY JOIN airport_aircraft ON STRAY.Aircraft_ID = airport_aircraft.Aircraft_ID WHERE STRAY.Total_Disk_Area > 1")
        );
        // Bound under its own name too (a self-join): the name is no error.
        let twice = "SELECT 1 FROM aircraft JOIN aircraft AS A2 ON aircraft.Lift = A2.Aircraft_ID";
        assert!(!n
            .fixes("no such column: aircraft.Lift", twice)
            .iter()
            .any(|f| f.contains("A2.Lift")));
    }

    #[test]
    fn a_column_taken_from_the_wrong_side_of_a_join_is_requalified() {
        let n = names();
        let joined = "SELECT T2.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID";
        assert_eq!(
            n.fix("no such column: T2.Total_Disk_Area", joined).as_deref(),
            Some("SELECT T1.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID")
        );
        // A column both sides have is not moved.
        let both = "SELECT T2.Aircraft_IDs FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON 1";
        assert_eq!(n.fix("no such column: T2.Aircraft_IDs", both), None);
    }

    #[test]
    fn an_outer_column_goes_to_the_outer_alias_when_a_subquery_reads_its_table_again() {
        let n = names();
        // aircraft is bound as T1 outside and as S inside: only T1 is in
        // the outer reference's sight.
        let sql = "SELECT T2.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID WHERE T1.Aircraft_ID IN (SELECT S.Aircraft_ID FROM aircraft AS S WHERE S.Max_Gross_Weight > 10)";
        assert_eq!(
            n.fix("no such column: T2.Total_Disk_Area", sql).as_deref(),
            Some("SELECT T1.Total_Disk_Area FROM aircraft AS T1 JOIN airport_aircraft AS T2 ON T1.Aircraft_ID = T2.Aircraft_ID WHERE T1.Aircraft_ID IN (SELECT S.Aircraft_ID FROM aircraft AS S WHERE S.Max_Gross_Weight > 10)")
        );
    }
}
