//! Word-level edits of SQL text: the words of a query outside string
//! literals, the aliases its FROM and JOIN clauses give, and replacements
//! of a name or a qualified name. Enough to fix a misspelt name without
//! re-printing the query (which would change its layout and quoting).

/// A piece of SQL text: a word (letters, digits, `_`) or anything else,
/// string literals included whole.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Piece<'a> {
    Word(&'a str),
    Other(&'a str),
}

impl<'a> Piece<'a> {
    /// The piece's text, whatever its kind.
    pub(super) fn text(&self) -> &'a str {
        match self {
            Piece::Word(w) | Piece::Other(w) => w,
        }
    }
}

/// Whether `c` belongs to a word: letters, digits and `_`.
pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

pub(super) fn pieces(sql: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut chars = sql.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        if c == '\'' {
            // Through the closing quote ('' escapes a quote).
            while let Some((i, d)) = chars.next() {
                end = i + d.len_utf8();
                if d == '\'' {
                    if chars.peek().map(|&(_, e)| e) != Some('\'') {
                        break;
                    }
                    chars.next();
                    end += 1;
                }
            }
            out.push(Piece::Other(&sql[start..end]));
        } else if is_word_char(c) {
            while let Some(&(i, d)) = chars.peek() {
                if !is_word_char(d) {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            out.push(Piece::Word(&sql[start..end]));
        } else {
            // A run of punctuation and spaces, as one piece.
            while let Some(&(i, d)) = chars.peek() {
                if is_word_char(d) || d == '\'' {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            out.push(Piece::Other(&sql[start..end]));
        }
    }
    out
}

/// One unit of a query's text: a word, a string literal (quotes
/// included), or one sign (punctuation or space) outside literals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Unit<'a> {
    Word(&'a str),
    Literal(&'a str),
    Sign(char),
}

impl Unit<'_> {
    /// Whether the unit belongs to a (possibly qualified) name or a number.
    pub(super) fn is_name_part(&self) -> bool {
        matches!(self, Unit::Word(_) | Unit::Sign('.'))
    }

    pub(super) fn is_space(&self) -> bool {
        matches!(self, Unit::Sign(c) if c.is_whitespace())
    }
}

/// The index of the first unit at or after `at` that is not a space.
pub(super) fn skip_spaces(units: &[(usize, Unit<'_>)], mut at: usize) -> usize {
    while units.get(at).is_some_and(|(_, u)| u.is_space()) {
        at += 1;
    }
    at
}

/// The byte offset where unit `at` of `sql`'s `units` starts (the text's
/// end past the last unit).
pub(super) fn unit_offset(sql: &str, units: &[(usize, Unit<'_>)], at: usize) -> usize {
    units.get(at).map_or(sql.len(), |&(offset, _)| offset)
}

/// The units of `sql`, each with its byte offset: what walkers that track
/// parentheses or signs read, so a sign inside a literal is never taken
/// for one of the query's own.
pub(super) fn units(sql: &str) -> Vec<(usize, Unit<'_>)> {
    let mut out = Vec::with_capacity(sql.len());
    let mut offset = 0;
    for piece in pieces(sql) {
        match piece {
            Piece::Word(word) => out.push((offset, Unit::Word(word))),
            Piece::Other(text) if text.starts_with('\'') => out.push((offset, Unit::Literal(text))),
            Piece::Other(text) => {
                out.extend(
                    text.char_indices()
                        .map(|(i, c)| (offset + i, Unit::Sign(c))),
                );
            }
        }
        offset += piece.text().len();
    }
    out
}

/// The text of each string literal of `sql`, unquoted (`''` is a quote).
pub fn string_literals(sql: &str) -> Vec<String> {
    pieces(sql)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Other(text) if text.starts_with('\'') => Some(unquote(text)),
            _ => None,
        })
        .collect()
}

/// A string literal's text: quotes dropped, `''` read as one quote.
pub(super) fn unquote(literal: &str) -> String {
    let inner = literal.strip_prefix('\'').unwrap_or(literal);
    let inner = inner.strip_suffix('\'').unwrap_or(inner);
    inner.replace("''", "'")
}

fn join(pieces: &[Piece<'_>]) -> String {
    pieces.iter().map(Piece::text).collect()
}

/// `sql` with every occurrence of the word `old` outside string literals
/// replaced by `new`; None when there is none.
pub fn replace_identifier(sql: &str, old: &str, new: &str) -> Option<String> {
    let mut pieces = pieces(sql);
    let mut replaced = false;
    for piece in &mut pieces {
        if matches!(piece, Piece::Word(w) if w.eq_ignore_ascii_case(old)) {
            *piece = Piece::Word(new);
            replaced = true;
        }
    }
    replaced.then(|| join(&pieces))
}

/// `sql` with every quoted `name` (in backquotes, double quotes or
/// brackets, outside string literals) written `new`: a name with a space
/// in it is no word to `replace_identifier`. None when there is none.
pub fn replace_quoted_name(sql: &str, name: &str, new: &str) -> Option<String> {
    let quoted = [('`', '`'), ('"', '"'), ('[', ']')].map(|(o, c)| format!("{o}{name}{c}"));
    let is_literal = |p: &Piece<'_>| p.text().starts_with('\'');
    let pieces = pieces(sql);
    let mut out = String::with_capacity(sql.len());
    for run in pieces.chunk_by(|a, b| is_literal(a) == is_literal(b)) {
        let text = join(run);
        if is_literal(&run[0]) {
            out.push_str(&text);
        } else {
            out.push_str(&quoted.iter().fold(text, |t, q| t.replace(q.as_str(), new)));
        }
    }
    (out != sql).then_some(out)
}

/// `sql` with every `qualifier.column` (either part may be quoted) written
/// `new_qualifier.new_column`; None when there is none.
pub fn replace_qualified(
    sql: &str,
    (qualifier, column): (&str, &str),
    (new_qualifier, new_column): (&str, &str),
) -> Option<String> {
    let mut pieces = pieces(sql);
    let mut replaced = false;
    for i in 0..pieces.len() {
        let Piece::Word(first) = pieces[i] else {
            continue;
        };
        let is_match = first.eq_ignore_ascii_case(qualifier)
            && pieces.get(i + 1).is_some_and(is_dot)
            && matches!(pieces.get(i + 2), Some(Piece::Word(w)) if w.eq_ignore_ascii_case(column));
        if is_match {
            pieces[i] = Piece::Word(new_qualifier);
            pieces[i + 2] = Piece::Word(new_column);
            replaced = true;
        }
    }
    replaced.then(|| join(&pieces))
}

/// The columns `sql` writes as `qualifier.column`, each once (case-blind),
/// in order.
pub fn columns_under<'a>(sql: &'a str, qualifier: &str) -> Vec<&'a str> {
    let pieces = pieces(sql);
    let mut columns: Vec<&str> = Vec::new();
    for i in 0..pieces.len().saturating_sub(2) {
        let is_qualifier = matches!(pieces[i], Piece::Word(q) if q.eq_ignore_ascii_case(qualifier));
        if let (true, true, Piece::Word(column)) =
            (is_qualifier, is_dot(&pieces[i + 1]), pieces[i + 2])
        {
            if !columns.iter().any(|c| c.eq_ignore_ascii_case(column)) {
                columns.push(column);
            }
        }
    }
    columns
}

/// Words that open a clause after a query's FROM, or another query: a FROM
/// binds no more tables after them.
pub(super) const CLAUSES_AFTER_FROM: [&str; 8] = [
    "where",
    "group",
    "order",
    "having",
    "limit",
    "union",
    "except",
    "intersect",
];

/// Words that end a table reference instead of naming its alias.
const NOT_ALIASES: &[&str] = &[
    "on",
    "using",
    "where",
    "join",
    "inner",
    "left",
    "right",
    "full",
    "cross",
    "natural",
    "outer",
    "group",
    "order",
    "limit",
    "having",
    "union",
    "except",
    "intersect",
    "window",
    "as",
    "select",
    "from",
];

/// How many parenthesised queries (`(SELECT ...`, `(WITH ...`) enclose
/// each piece: 0 for the words of the outer query.
fn subquery_depths(pieces: &[Piece<'_>]) -> Vec<usize> {
    // One entry per open parenthesis: whether it opens a query.
    let mut open: Vec<bool> = Vec::new();
    let mut depths = Vec::with_capacity(pieces.len());
    for (i, piece) in pieces.iter().enumerate() {
        depths.push(open.iter().filter(|&&query| query).count());
        let Piece::Other(text) = piece else {
            continue;
        };
        if text.starts_with('\'') {
            continue;
        }
        let query_follows = pieces
            .get(i + 1)
            .is_some_and(|p| is_word_piece(p, "select") || is_word_piece(p, "with"));
        for (at, c) in text.char_indices() {
            match c {
                '(' => open.push(query_follows && text[at + 1..].trim().is_empty()),
                ')' => {
                    open.pop();
                }
                _ => {}
            }
        }
    }
    depths
}

/// One name a FROM or JOIN clause binds, and how deep in subqueries.
struct Binding {
    name: String,
    table: String,
    depth: usize,
}

fn bindings(sql: &str) -> Vec<Binding> {
    let pieces = pieces(sql);
    let depths = subquery_depths(&pieces);
    // (word, subquery depth, whether only spaces separate it from the word before)
    let mut words: Vec<(&str, usize, bool)> = Vec::new();
    let mut spaced = true;
    for (piece, depth) in pieces.iter().zip(depths) {
        match piece {
            Piece::Word(w) => {
                words.push((w, depth, spaced));
                spaced = true;
            }
            // Quotes around a name (`"t" AS a`, `` `t` a ``) are part of
            // it, not a sign between it and its alias.
            Piece::Other(text) => {
                spaced &= text
                    .chars()
                    .all(|c| c.is_whitespace() || matches!(c, '"' | '`' | '[' | ']'))
            }
        }
    }
    let mut out = Vec::new();
    for (i, &(word, depth, _)) in words.iter().enumerate() {
        if !(word.eq_ignore_ascii_case("from") || word.eq_ignore_ascii_case("join")) {
            continue;
        }
        let Some(&(table, _, _)) = words.get(i + 1) else {
            continue;
        };
        let bind = |name: &str| Binding {
            name: name.to_string(),
            table: table.to_string(),
            depth,
        };
        out.push(bind(table));
        let mut next = i + 2;
        if words
            .get(next)
            .is_some_and(|(w, _, spaced)| *spaced && w.eq_ignore_ascii_case("as"))
        {
            next += 1;
        }
        // An alias follows its table after spaces alone: after `t)` or
        // `t,` the next word is no alias of `t`.
        if let Some(&(alias, _, true)) = words.get(next) {
            if !NOT_ALIASES.iter().any(|k| alias.eq_ignore_ascii_case(k)) {
                out.push(bind(alias));
            }
        }
    }
    out
}

/// The `(name, table)` pairs a query's FROM and JOIN clauses bind: each
/// alias, and each table under its own name.
pub fn table_aliases(sql: &str) -> Vec<(String, String)> {
    bindings(sql)
        .into_iter()
        .map(|b| (b.name, b.table))
        .collect()
}

/// The `(name, table)` pairs the outer query binds, leaving out those of
/// its subqueries, which the outer query cannot see.
pub fn outer_table_aliases(sql: &str) -> Vec<(String, String)> {
    bindings(sql)
        .into_iter()
        .filter(|b| b.depth == 0)
        .map(|b| (b.name, b.table))
        .collect()
}

/// Whether `column` (after `qualifier.` when given, else bare) is written
/// in the outer query, outside every subquery.
pub fn written_in_outer_query(sql: &str, qualifier: Option<&str>, column: &str) -> bool {
    let pieces = pieces(sql);
    let depths = subquery_depths(&pieces);
    (0..pieces.len()).any(|i| {
        let after_dot = i >= 1 && is_dot(&pieces[i - 1]);
        let qualified_as_written = match qualifier {
            Some(q) => after_dot && i >= 2 && is_word_piece(&pieces[i - 2], q),
            None => !after_dot,
        };
        depths[i] == 0 && is_word_piece(&pieces[i], column) && qualified_as_written
    })
}

/// Byte offset in `sql` of the first reference to `column` written as
/// named: after `qualifier.` (the offset of the qualifier) when given, else
/// bare (neither after a dot nor a qualifier itself).
pub fn reference_at(sql: &str, qualifier: Option<&str>, column: &str) -> Option<usize> {
    let pieces = pieces(sql);
    let word_at = |i: usize| offset_in(sql, pieces[i].text());
    (0..pieces.len()).find_map(|i| {
        if !is_word_piece(&pieces[i], column) {
            return None;
        }
        let after_dot = i >= 1 && is_dot(&pieces[i - 1]);
        match qualifier {
            Some(q) if after_dot && i >= 2 && is_word_piece(&pieces[i - 2], q) => {
                Some(word_at(i - 2))
            }
            None if !after_dot && !pieces.get(i + 1).is_some_and(is_dot) => Some(word_at(i)),
            _ => None,
        }
    })
}

/// Byte offset in `sql` where the name written before the token at
/// `offset` starts, its qualifiers included (`T1.x` starts at `T1`): where
/// to write again from when SQLite stops at that token. None when no word
/// comes before it.
pub fn name_before(sql: &str, offset: usize) -> Option<usize> {
    let pieces = pieces(sql);
    let start = |p: &Piece<'_>| offset_in(sql, p.text());
    let at = pieces
        .iter()
        .position(|p| start(p) + p.text().len() > offset)?;
    let mut word = (0..at)
        .rev()
        .find(|&i| matches!(pieces[i], Piece::Word(_)))?;
    while word >= 2 && is_dot(&pieces[word - 1]) && matches!(pieces[word - 2], Piece::Word(_)) {
        word -= 2;
    }
    Some(start(&pieces[word]))
}

/// The table `name` (an alias or a table's own name) stands for among
/// `bound`, the bindings `table_aliases` returns.
pub fn table_bound_to<'a>(bound: &'a [(String, String)], name: &str) -> Option<&'a str> {
    bound
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, table)| table.as_str())
}

/// The name a query uses for `table`, given its `table_aliases`: the
/// table's one alias, or its own name when it has none; None when the
/// query does not bind it, or binds it under two aliases (a self-join),
/// which leaves the choice open.
pub fn name_in_query<'a>(bound: &'a [(String, String)], table: &str) -> Option<&'a str> {
    let binds = |(_, t): &&(String, String)| t.eq_ignore_ascii_case(table);
    let mut aliases: Vec<&str> = bound
        .iter()
        .filter(binds)
        .map(|(n, _)| n.as_str())
        .filter(|n| !n.eq_ignore_ascii_case(table))
        .collect();
    aliases.sort_unstable();
    aliases.dedup();
    match aliases[..] {
        [] => bound.iter().find(binds).map(|(n, _)| n.as_str()),
        [alias] => Some(alias),
        _ => None,
    }
}

/// Byte offset of `piece` (a slice of `sql`) in `sql`.
fn offset_in(sql: &str, piece: &str) -> usize {
    piece.as_ptr() as usize - sql.as_ptr() as usize
}

/// The dot of a qualified name, with any quotes or spaces around it:
/// `T1.x`, `"T1"."x"`, `T1."x"`, `T1. x` (SQLite reads that as `T1.x`).
pub(super) fn is_dot(piece: &Piece<'_>) -> bool {
    matches!(piece, Piece::Other(t)
        if t.trim_matches(|c: char| c == '"' || c == '`' || c.is_whitespace()) == ".")
}

/// Nothing but whitespace between two pieces.
pub(super) fn is_gap(piece: &Piece<'_>) -> bool {
    matches!(piece, Piece::Other(t) if t.trim().is_empty())
}

pub(super) fn is_word_piece(piece: &Piece<'_>, word: &str) -> bool {
    matches!(piece, Piece::Word(w) if w.eq_ignore_ascii_case(word))
}

/// `sql` with every bare `column` (not qualified, not a qualifier, not a
/// table or alias being bound, not a function name), in the outer query
/// alone when `outer_only`, written `qualifier.column`; None when there is
/// none.
pub fn qualify_bare(sql: &str, column: &str, qualifier: &str, outer_only: bool) -> Option<String> {
    let mut pieces = pieces(sql);
    let depths = subquery_depths(&pieces);
    let qualified = format!("{qualifier}.{column}");
    let mut replaced = false;
    for i in 0..pieces.len() {
        if !is_word_piece(&pieces[i], column) || (outer_only && depths[i] > 0) {
            continue;
        }
        let before = i.checked_sub(1).map(|j| pieces[j]);
        let after = pieces.get(i + 1).copied();
        let opens_call = matches!(after, Some(Piece::Other(t)) if t.trim_start().starts_with('('));
        let binds = i >= 2
            && ["from", "join", "as"]
                .iter()
                .any(|k| is_word_piece(&pieces[i - 2], k));
        let quotes = ['"', '`'];
        let is_qualifier =
            matches!(after, Some(Piece::Other(t)) if t.trim_start_matches(quotes).starts_with('.'));
        let is_qualified =
            matches!(before, Some(Piece::Other(t)) if t.trim_end_matches(quotes).ends_with('.'));
        if is_qualifier || is_qualified || opens_call || binds {
            continue;
        }
        pieces[i] = Piece::Word(&qualified);
        replaced = true;
    }
    replaced.then(|| join(&pieces))
}

/// `sql` with the first `word` that follows a name `is_bound` accepts
/// across nothing but spaces joined to it by a dot (`T2 x` to `T2.x`);
/// None when there is no such place.
pub fn dot_between(sql: &str, word: &str, is_bound: impl Fn(&str) -> bool) -> Option<String> {
    let mut pieces = pieces(sql);
    let at = (2..pieces.len()).find(|&i| {
        is_word_piece(&pieces[i], word)
            && is_gap(&pieces[i - 1])
            && matches!(pieces[i - 2], Piece::Word(name) if is_bound(name))
    })?;
    pieces[at - 1] = Piece::Other(".");
    Some(join(&pieces))
}

/// `sql` with the first `word` that follows another word across nothing but
/// spaces, where `joined` makes one name of the two (`Com pressionRatio` to
/// `Compression_Ratio`), written as that name; None when there is no such
/// place.
pub fn join_split_name(
    sql: &str,
    word: &str,
    joined: impl Fn(&str, &str) -> Option<String>,
) -> Option<String> {
    let pieces = pieces(sql);
    (2..pieces.len()).find_map(|i| {
        let gap = is_gap(&pieces[i - 1]);
        match (&pieces[i - 2], gap && is_word_piece(&pieces[i], word)) {
            (Piece::Word(first), true) => joined(first, word).map(|name| {
                let mut out = join(&pieces[..i - 2]);
                out.push_str(&name);
                out.push_str(&join(&pieces[i + 1..]));
                out
            }),
            _ => None,
        }
    })
}

/// Where `a.x = b.y` begins (the piece of `a`), for every such equality
/// between two qualified columns.
pub fn equalities(pieces: &[Piece<'_>]) -> Vec<usize> {
    let is_word = |i: usize| matches!(pieces.get(i), Some(Piece::Word(_)));
    let is_dot = |i: usize| pieces.get(i).is_some_and(is_dot);
    let is_equals = |i: usize| matches!(pieces.get(i), Some(Piece::Other(t)) if t.trim() == "=");
    (0..pieces.len())
        .filter(|&i| {
            is_word(i)
                && is_dot(i + 1)
                && is_word(i + 2)
                && is_equals(i + 3)
                && is_word(i + 4)
                && is_dot(i + 5)
                && is_word(i + 6)
        })
        .collect()
}

/// Words that end a FROM clause at its own level.
const FROM_CLAUSE_ENDS: &[&str] = &[
    "where",
    "group",
    "order",
    "limit",
    "having",
    "union",
    "except",
    "intersect",
    "window",
];

/// `sql` with `join` (a whole `JOIN ... ON ...` clause) added at the end of
/// the one FROM clause that binds `name` (an alias, or a table under its
/// own name), only the outer query's clauses counting when `outer_only`.
/// None when no clause, or more than one, binds `name`.
pub fn add_join(sql: &str, name: &str, join: &str, outer_only: bool) -> Option<String> {
    let pieces = pieces(sql);
    let depths = subquery_depths(&pieces);
    let words: Vec<usize> = (0..pieces.len())
        .filter(|&i| matches!(pieces[i], Piece::Word(_)))
        .collect();
    let word = |k: usize| match words.get(k).map(|&i| pieces[i]) {
        Some(Piece::Word(w)) => Some(w),
        _ => None,
    };
    let mut binding = None;
    for k in 0..words.len() {
        let opens = word(k)
            .is_some_and(|w| w.eq_ignore_ascii_case("from") || w.eq_ignore_ascii_case("join"));
        if !opens || (outer_only && depths[words[k]] > 0) {
            continue;
        }
        let alias_at = if word(k + 2).is_some_and(|w| w.eq_ignore_ascii_case("as")) {
            k + 3
        } else {
            k + 2
        };
        let binds = |at: usize| word(at).is_some_and(|w| w.eq_ignore_ascii_case(name));
        if binds(k + 1) || binds(alias_at) {
            if binding.is_some() {
                return None;
            }
            binding = Some(words[k + 1]);
        }
    }
    // Forward from the bound table to where its FROM clause ends: a
    // clause word at the same depth, the parenthesis that closes the
    // level, a semicolon, or the end.
    let mut depth = 0i32;
    let mut end = sql.len();
    'scan: for piece in &pieces[binding? + 1..] {
        match piece {
            Piece::Word(w)
                if depth == 0 && FROM_CLAUSE_ENDS.iter().any(|k| w.eq_ignore_ascii_case(k)) =>
            {
                end = offset_in(sql, w);
                break;
            }
            Piece::Other(t) if !t.starts_with('\'') => {
                for (at, c) in t.char_indices() {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    if depth < 0 || (c == ';' && depth == 0) {
                        end = offset_in(sql, t) + at;
                        break 'scan;
                    }
                }
            }
            _ => {}
        }
    }
    let head = sql[..end].trim_end();
    let tail = sql[end..].trim_start();
    let gap = if tail.is_empty() || tail.starts_with([')', ';']) {
        ""
    } else {
        " "
    };
    Some(format!("{head} {join}{gap}{tail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_keep_signs_inside_a_literal_out_of_the_signs() {
        let sql = "f(a.b, 'it''s (x)')";
        let signs: Vec<(usize, char)> = units(sql)
            .into_iter()
            .filter_map(|(at, unit)| match unit {
                Unit::Sign(c) if !c.is_whitespace() => Some((at, c)),
                _ => None,
            })
            .collect();
        assert_eq!(signs, [(1, '('), (3, '.'), (5, ','), (18, ')')]);
        assert!(units(sql).contains(&(7, Unit::Literal("'it''s (x)'"))));
    }

    #[test]
    fn string_literals_are_unquoted_with_doubled_quotes_kept() {
        assert_eq!(
            string_literals("SELECT 'a', x FROM t WHERE y = 'O''Brien' AND z = ''"),
            ["a", "O'Brien", ""]
        );
    }

    #[test]
    fn identifiers_are_replaced_outside_literals_only() {
        assert_eq!(
            replace_identifier(
                "SELECT Agee FROM t WHERE x = 'Agee''s' AND Agee > 1",
                "agee",
                "Age"
            )
            .as_deref(),
            Some("SELECT Age FROM t WHERE x = 'Agee''s' AND Age > 1")
        );
        assert_eq!(replace_identifier("SELECT a FROM t", "b", "c"), None);
    }

    #[test]
    fn qualified_names_are_replaced_with_their_quotes_kept() {
        let sql = r#"SELECT T2.Total, "T2"."Total", T2.Totals FROM a AS T1 JOIN b AS T2"#;
        assert_eq!(
            replace_qualified(sql, ("T2", "Total"), ("T1", "Total")).as_deref(),
            Some(r#"SELECT T1.Total, "T1"."Total", T2.Totals FROM a AS T1 JOIN b AS T2"#)
        );
        // Spaces around the dot: SQLite reads the same name.
        assert_eq!(
            replace_qualified(
                "SELECT e. eff FROM t WHERE e .eff < 1",
                ("e", "eff"),
                ("t", "eff")
            )
            .as_deref(),
            Some("SELECT t. eff FROM t WHERE t .eff < 1")
        );
    }

    #[test]
    fn aliases_come_from_from_and_join_clauses() {
        let sql = "SELECT * FROM airport AS T1 INNER JOIN airport_aircraft T2 ON T1.id = T2.id JOIN pilot WHERE 1";
        let pairs = table_aliases(sql);
        let has = |name: &str, table: &str| pairs.contains(&(name.into(), table.into()));
        assert!(
            has("T1", "airport") && has("airport", "airport"),
            "{pairs:?}"
        );
        assert!(has("T2", "airport_aircraft"), "{pairs:?}");
        assert!(
            has("pilot", "pilot") && !pairs.iter().any(|(n, _)| n == "WHERE"),
            "{pairs:?}"
        );
        // The word after a subquery's closing parenthesis or a comma is no
        // alias of the table before it.
        let sql = "SELECT T1.a FROM t AS T1 WHERE T1.b = (SELECT MAX(b) FROM t) AND T1.c, u";
        let pairs = table_aliases(sql);
        assert_eq!(
            pairs,
            [("t", "t"), ("T1", "t"), ("t", "t")].map(|(n, t)| (n.to_string(), t.to_string()))
        );
        let pairs = table_aliases("SELECT * FROM a, b WHERE 1");
        assert!(!pairs.iter().any(|(n, _)| n == "b"), "{pairs:?}");
    }

    #[test]
    fn a_quoted_table_binds_its_alias() {
        let sql = "SELECT * FROM `a` AS T1 JOIN \"b\" T2 ON T1.k = T2.k JOIN [c] AS `T3` ON 1";
        let pairs = table_aliases(sql);
        let has = |name: &str, table: &str| pairs.contains(&(name.into(), table.into()));
        assert!(
            has("T1", "a") && has("T2", "b") && has("T3", "c"),
            "{pairs:?}"
        );
        // A quote does not join a name to the word after a parenthesis.
        let pairs = table_aliases("SELECT * FROM (SELECT * FROM `a`) \"x\"");
        assert!(!pairs.contains(&("x".into(), "a".into())), "{pairs:?}");
    }

    #[test]
    fn bare_names_are_qualified_where_they_are_column_references() {
        let sql = "SELECT Course, T.Course, count(Course) FROM Course AS Course WHERE Course(1) = 'Course'";
        assert_eq!(
            qualify_bare(sql, "course", "c", false).as_deref(),
            Some("SELECT c.course, T.Course, count(c.course) FROM Course AS Course WHERE Course(1) = 'Course'")
        );
        let nested = "SELECT v FROM a WHERE v IN (SELECT v FROM b)";
        assert_eq!(
            qualify_bare(nested, "v", "a", true).as_deref(),
            Some("SELECT a.v FROM a WHERE a.v IN (SELECT v FROM b)")
        );
    }

    #[test]
    fn a_join_goes_at_the_end_of_its_own_from_clause() {
        let join = "JOIN x ON T2.k = x.k";
        let sql =
            "SELECT * FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id\nWHERE (T1.v > 1) ORDER BY 1;";
        assert_eq!(
            add_join(sql, "T2", join, false).as_deref(),
            Some("SELECT * FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id JOIN x ON T2.k = x.k WHERE (T1.v > 1) ORDER BY 1;")
        );
        let nested = "SELECT * FROM a WHERE id IN (SELECT id FROM b)";
        assert_eq!(
            add_join(nested, "b", "JOIN x ON b.k = x.k", false).as_deref(),
            Some("SELECT * FROM a WHERE id IN (SELECT id FROM b JOIN x ON b.k = x.k)")
        );
        // A table bound twice leaves the place open.
        assert_eq!(
            add_join("SELECT * FROM b JOIN b AS c", "b", join, false),
            None
        );
        // Unless only the outer query's clause counts.
        let twice = "SELECT v FROM b WHERE k IN (SELECT k FROM b WHERE v > 1)";
        assert_eq!(
            add_join(twice, "b", "JOIN x ON b.k = x.k", true).as_deref(),
            Some("SELECT v FROM b JOIN x ON b.k = x.k WHERE k IN (SELECT k FROM b WHERE v > 1)")
        );
        assert_eq!(add_join(twice, "b", "JOIN x ON b.k = x.k", false), None);
    }

    #[test]
    fn a_subquery_binds_its_tables_for_itself_only() {
        let sql = "SELECT a.v, (SELECT max(w) FROM c) FROM a JOIN b AS B1 ON a.k = B1.k \
                   WHERE a.k IN (SELECT k FROM (SELECT k FROM d) AS e) AND f(a.v) > 0";
        assert_eq!(
            outer_table_aliases(sql),
            [("a", "a"), ("b", "b"), ("B1", "b")].map(|(n, t)| (n.to_string(), t.to_string()))
        );
        let all = table_aliases(sql);
        assert!(["c", "d"]
            .iter()
            .all(|t| all.iter().any(|(_, bound)| bound == t)));
    }

    #[test]
    fn a_dropped_dot_goes_back_after_a_bound_name_only() {
        let bound = |name: &str| ["T1", "T2"].contains(&name);
        let sql = "SELECT x FROM a AS T1 JOIN b AS T2 ON T1.k = T2 k WHERE y k = 1";
        assert_eq!(
            dot_between(sql, "k", bound).as_deref(),
            Some("SELECT x FROM a AS T1 JOIN b AS T2 ON T1.k = T2.k WHERE y k = 1")
        );
        assert_eq!(dot_between("SELECT y k FROM a AS T1", "k", bound), None);
    }

    #[test]
    fn a_reference_is_found_in_the_outer_query_or_not() {
        let sql =
            "SELECT T1.v, w FROM a AS T1 WHERE k IN (SELECT k FROM b WHERE T1.u = x AND y > 0)";
        assert!(written_in_outer_query(sql, Some("T1"), "v"));
        assert!(!written_in_outer_query(sql, Some("T1"), "u"));
        assert!(written_in_outer_query(sql, None, "w"));
        assert!(!written_in_outer_query(sql, None, "y"));
        // A qualified name is not its column written bare.
        assert!(!written_in_outer_query(sql, None, "v"));
        // Parentheses that open no query leave the words outside.
        assert!(written_in_outer_query(
            "SELECT count(x) FROM t WHERE (z > 1)",
            None,
            "z"
        ));
    }

    #[test]
    fn a_reference_starts_at_its_qualifier_or_where_it_stands_bare() {
        let sql = "SELECT T1.cost, cost FROM t AS T1";
        assert_eq!(reference_at(sql, Some("T1"), "cost"), Some(7));
        assert_eq!(reference_at(sql, None, "cost"), Some(16));
        assert_eq!(reference_at(sql, Some("T2"), "cost"), None);
    }

    #[test]
    fn the_name_before_a_bad_token_starts_at_its_first_qualifier() {
        let sql = "SELECT AVG(Syn.(d)) FROM t WHERE T1 x > 1";
        let paren = sql.find(".(").unwrap() + 1;
        assert_eq!(name_before(sql, paren), sql.find("Syn"));
        let x = sql.find(" x ").unwrap() + 1;
        assert_eq!(name_before(sql, x), sql.find("T1"));
        let dotted = "SELECT a.b.c d FROM t";
        assert_eq!(name_before(dotted, dotted.find(" d").unwrap() + 1), Some(7));
        assert_eq!(name_before("(x", 0), None);
    }
}
