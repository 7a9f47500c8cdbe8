//! Finding the SQL in a model's answer: a fenced ```sql block, an
//! <sql>...</sql> or <final_sql> tag, or failing those, the text from the
//! first SELECT or WITH. Never panics, whatever the text.

/// The last SQL query in `text`, without trailing semicolons, if any.
pub fn extract_sql(text: &str) -> Option<String> {
    let candidates = fenced_blocks(text)
        .into_iter()
        .chain(tagged(text, "final_sql"))
        .chain(tagged(text, "sql"))
        .filter(|sql| looks_like_query(sql))
        .collect::<Vec<_>>();
    let chosen = match candidates.last() {
        Some(sql) => sql.clone(),
        None => from_first_keyword(text)?,
    };
    let cleaned = chosen.trim().trim_end_matches(';').trim().to_string();
    (!cleaned.is_empty()).then_some(cleaned)
}

/// Whether `sql` is a query, behind the functions block it may open with
/// (`crate::functions`).
fn looks_like_query(sql: &str) -> bool {
    let (_, body) = crate::functions::split(sql);
    let upper = body.trim_start().to_ascii_uppercase();
    upper.starts_with("SELECT") || upper.starts_with("WITH") || upper.starts_with("VALUES")
}

/// Contents of ``` blocks tagged as SQL or not tagged; an unclosed final
/// block runs to the end of the text (generation may stop early).
fn fenced_blocks(text: &str) -> Vec<String> {
    fenced_with_tags(text)
        .into_iter()
        .filter(|(tag, _)| {
            tag.is_empty() || tag.eq_ignore_ascii_case("sql") || tag.eq_ignore_ascii_case("sqlite")
        })
        .map(|(_, body)| body.to_string())
        .collect()
}

/// Every ``` block of `text` as (its language tag, its contents); an
/// unclosed final block runs to the end of the text.
pub(crate) fn fenced_with_tags(text: &str) -> Vec<(&str, &str)> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let tag = after[..body_start].trim();
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                blocks.push((tag, &body[..close]));
                rest = &body[close + 3..];
            }
            None => {
                blocks.push((tag, body));
                break;
            }
        }
    }
    blocks
}

fn tagged(text: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        match body.find(&close) {
            Some(end) => {
                found.push(body[..end].to_string());
                rest = &body[end + close.len()..];
            }
            None => {
                found.push(body.to_string());
                break;
            }
        }
    }
    found
}

/// Without fences or tags: from the first word SELECT (or WITH followed by
/// `name AS (`, so that prose such as "with the new values" is not taken
/// for SQL) to the first semicolon, blank line or stray code fence.
fn from_first_keyword(text: &str) -> Option<String> {
    let upper = text.to_ascii_uppercase();
    let start = keyword_positions(&upper, "SELECT")
        .chain(keyword_positions(&upper, "WITH").filter(|&i| opens_cte(&upper[i + 4..])))
        .min()?;
    let tail = &text[start..];
    let end = [tail.find(';'), tail.find("\n\n"), tail.find("```")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(tail.len());
    Some(tail[..end].to_string())
}

/// Byte offsets where `word` stands as a whole word in `upper`.
fn keyword_positions<'a>(upper: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    upper.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        let before = upper[..i].chars().next_back();
        let after = upper[i + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        boundary(before) && boundary(after)
    })
}

/// Whether text after WITH reads `[RECURSIVE] name AS (`.
fn opens_cte(after: &str) -> bool {
    let mut words = after.split_whitespace();
    let mut name = words.next();
    if name == Some("RECURSIVE") {
        name = words.next();
    }
    let name_ok = name.is_some_and(|n| {
        n.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '"')
    });
    let rest: String = words.collect::<Vec<_>>().join(" ");
    name_ok && (rest.starts_with("AS (") || rest.starts_with("AS("))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_keeps_the_functions_block_it_opens_with() {
        let text = "```sql\n/*js\nfunction fn_double(x) { return 2 * x; }\n*/\nSELECT fn_double(a) FROM t;\n```";
        assert_eq!(
            extract_sql(text).as_deref(),
            Some("/*js\nfunction fn_double(x) { return 2 * x; }\n*/\nSELECT fn_double(a) FROM t")
        );
    }

    #[test]
    fn a_closing_fence_without_an_opening_one_is_not_part_of_the_query() {
        let text = "Check: \nSELECT a\nFROM t\nWHERE b = 1\n```";
        assert_eq!(
            extract_sql(text).as_deref(),
            Some("SELECT a\nFROM t\nWHERE b = 1")
        );
    }

    #[test]
    fn real_and_malformed_outputs() {
        let cases: &[(&str, Option<&str>)] = &[
            ("```sql\nSELECT count(*) FROM singer;\n```", Some("SELECT count(*) FROM singer")),
            (
                "To count rows:\n\n```sql\nSELECT COUNT(*) FROM singer;\n```\n\nThis returns the total.",
                Some("SELECT COUNT(*) FROM singer"),
            ),
            ("```\nSELECT 1\n```", Some("SELECT 1")),
            ("<sql>SELECT a FROM t</sql>", Some("SELECT a FROM t")),
            ("first ```sql\nSELECT 1\n``` then fixed ```sql\nSELECT 2\n```", Some("SELECT 2")),
            ("```sql\nSELECT name FROM singer WHERE age >", Some("SELECT name FROM singer WHERE age >")),
            ("The answer is SELECT max(age) FROM singer; done", Some("SELECT max(age) FROM singer")),
            ("```python\nprint('hi')\n```", None),
            ("I cannot answer that.", None),
            ("", None),
            ("```", None),
            ("<sql>", None),
            ("with x as (select 1) select * from x", Some("with x as (select 1) select * from x")),
            (
                "Compute it with the new volumes. SELECT a FROM t",
                Some("SELECT a FROM t"),
            ),
            ("Start with the new international and domestic passenger volumes.", None),
            ("the reselection of rows", None),
            ("```sql\n\n```", None),
            ("ünïcödé ```sql\nSELECT 'é'\n```", Some("SELECT 'é'")),
        ];
        for (text, expected) in cases {
            assert_eq!(extract_sql(text).as_deref(), *expected, "{text:?}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let samples = [
            "```",
            "``````",
            "<sql></sql>",
            "SELECT",
            "\u{0}```sql\n",
            "WITH",
            "<final_sql>x",
        ];
        for a in samples {
            for b in samples {
                let _ = extract_sql(&format!("{a}{b}"));
                let _ = extract_sql(&format!("{a} {b}\n\n"));
            }
        }
    }
}
