//! Pulling one structured value out of a model's answer: JSON or a
//! Python-literal dict, inside code fences or surrounded by prose. Models
//! write either, so both are read; nothing here may panic, whatever the text.

use serde_json::Value;

/// The last `{...}` object in `text` that parses as JSON or as a Python
/// literal; the error says why none did.
pub fn parse_object(text: &str) -> Result<Value, String> {
    parse_last(text, '{', '}')
}

/// Like [`parse_object`], for a top-level object or array, whichever parses
/// last.
pub fn parse_value(text: &str) -> Result<Value, String> {
    let object = parse_last(text, '{', '}');
    let array = parse_last(text, '[', ']');
    match (object, array) {
        (Ok(o), Ok(a)) => {
            // Prefer the outer one: an array inside an object parses too.
            let o_len = o.to_string().len();
            let a_len = a.to_string().len();
            Ok(if a_len > o_len { a } else { o })
        }
        (Ok(v), Err(_)) | (Err(_), Ok(v)) => Ok(v),
        (Err(e), Err(_)) => Err(e),
    }
}

fn parse_last(text: &str, open: char, close: char) -> Result<Value, String> {
    let spans = balanced_spans(text, open, close);
    if spans.is_empty() {
        return Err(format!("no {open}...{close} found in the output"));
    }
    let mut last_error = String::new();
    // Outermost spans first, the last one in the text preferred.
    for (start, end) in spans.into_iter().rev() {
        let candidate = &text[start..end];
        match serde_json::from_str::<Value>(candidate) {
            Ok(v) => return Ok(v),
            Err(json_error) => match python_to_json(candidate)
                .and_then(|j| serde_json::from_str::<Value>(&j).map_err(|e| e.to_string()))
            {
                Ok(v) => return Ok(v),
                Err(_) => last_error = format!("not JSON or a Python literal: {json_error}"),
            },
        }
    }
    Err(last_error)
}

/// Byte ranges of outermost balanced `open ... close` spans, skipping
/// brackets inside quoted strings. An unclosed span runs to the end.
fn balanced_spans(text: &str, open: char, close: char) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' if depth > 0 => quote = Some(c),
            c if c == open => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            c if c == close && depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    spans.push((start, i + c.len_utf8()));
                }
            }
            _ => {}
        }
    }
    if depth > 0 {
        // A cut-off answer: close what is open and let the parsers try.
        spans.push((start, text.len()));
    }
    spans
}

/// Rewrites a Python literal (single-quoted strings, True/False/None,
/// tuples, trailing commas) as JSON text.
fn python_to_json(text: &str) -> Result<String, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut stack: Vec<char> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' => {
                let (string, next) = read_string(&chars, i)?;
                out.push_str(&serde_json::to_string(&string).map_err(|e| e.to_string())?);
                i = next;
                continue;
            }
            '{' | '[' | '(' => {
                stack.push(c);
                out.push(if c == '(' { '[' } else { c });
            }
            '}' | ']' | ')' => {
                stack.pop();
                trim_trailing_comma(&mut out);
                out.push(if c == ')' { ']' } else { c });
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push_str(match word.as_str() {
                    "True" | "true" => "true",
                    "False" | "false" => "false",
                    "None" | "null" => "null",
                    _ => return Err(format!("unexpected name `{word}`")),
                });
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    // Close whatever a cut-off answer left open.
    while let Some(open) = stack.pop() {
        trim_trailing_comma(&mut out);
        out.push(if open == '{' { '}' } else { ']' });
    }
    Ok(out)
}

/// Reads a quoted string starting at `start`; returns its value and the
/// index after the closing quote.
fn read_string(chars: &[char], start: usize) -> Result<(String, usize), String> {
    let quote = chars[start];
    let mut value = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                value.push(match chars[i + 1] {
                    'n' => '\n',
                    't' => '\t',
                    other => other,
                });
                i += 2;
            }
            c if c == quote => return Ok((value, i + 1)),
            c => {
                value.push(c);
                i += 1;
            }
        }
    }
    Err("unterminated string".into())
}

fn trim_trailing_comma(out: &mut String) {
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if out.ends_with(',') {
        out.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_json_in_fences_and_prose() {
        let text = "Here it is:\n```json\n{\"intent\": \"count_singers\", \"tables\": [\"singer\"]}\n```\nDone.";
        assert_eq!(
            parse_object(text).unwrap(),
            json!({"intent": "count_singers", "tables": ["singer"]})
        );
    }

    #[test]
    fn reads_python_literals() {
        let text =
            "{'intent': 'avg_age', 'numbers': (3, 4.5,), 'ok': True, 'unit': None, 'q': \"it's\",}";
        assert_eq!(
            parse_object(text).unwrap(),
            json!({"intent": "avg_age", "numbers": [3, 4.5], "ok": true, "unit": null, "q": "it's"})
        );
    }

    #[test]
    fn prefers_the_last_object_and_closes_a_cut_off_one() {
        assert_eq!(
            parse_object("{\"a\": 1} then {\"b\": [1, 2").unwrap(),
            json!({"b": [1, 2]})
        );
        assert_eq!(
            parse_value("tables: [\"a\", \"b\"]").unwrap(),
            json!(["a", "b"])
        );
    }

    #[test]
    fn braces_inside_strings_do_not_count() {
        assert_eq!(
            parse_object("{\"f\": \"x } y\", \"g\": 1}").unwrap(),
            json!({"f": "x } y", "g": 1})
        );
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        let inputs = [
            "",
            "{",
            "}",
            "{'",
            "{\"a\": }",
            "{a: b}",
            "[[[[",
            "{'a': 'b\\",
            "]]{{",
            "{\u{0}}",
            "{é: ü}",
            "((",
            "{'a': (1, 2}",
            "{\"\\",
        ];
        for input in inputs {
            let _ = parse_object(input);
            let _ = parse_value(input);
        }
        assert!(parse_object("no structure here").is_err());
        assert!(parse_object("{a: b}").is_err());
    }

    #[test]
    fn every_prefix_and_byte_cut_is_handled() {
        let text = "```python\n{'intent': 'x', 'relations': [{'s': 'a', 'o': \"t.c\"}], 'n': [1, 2.5]}\n```";
        for end in 0..=text.len() {
            if text.is_char_boundary(end) {
                let _ = parse_object(&text[..end]);
            }
        }
    }
}
