//! `iesr trace view`: a trace written by `--trace` as one self-contained
//! HTML page (no network): the search tree with each step's action, visits,
//! values, query and execution, the candidates with their score terms and
//! the winner, and every model call with its prompt on demand.

use crate::{Error, Result};
use serde_json::Value;

const PAGE: &str = include_str!("page.html");
const SLOT: &str = "/*TRACE*/";

/// The page for the trace JSON `text` (read from `source`, named in errors).
pub fn page(text: &str, source: &str) -> Result<String> {
    let trace: Value = serde_json::from_str(text).map_err(|e| {
        Error::InvalidArgument(format!(
            "{source} is not JSON ({e}); pass a file written by `iesr search --trace FILE`"
        ))
    })?;
    let is_trace = trace.get("question").is_some_and(Value::is_string)
        && trace.get("candidates").is_some_and(Value::is_array);
    if !is_trace {
        return Err(Error::InvalidArgument(format!(
            "{source} is not an iesr trace (no question and candidates); pass a file written by `iesr search --trace FILE`"
        )));
    }
    // `<` only occurs inside JSON strings, where \u003c reads the same; so
    // no text of the trace can close the script element that holds it.
    let embedded = serde_json::to_string(&trace)
        .expect("a parsed value serializes")
        .replace('<', "\\u003c");
    Ok(PAGE.replacen(SLOT, &embedded, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_is_embedded_so_that_no_text_of_it_ends_the_script() {
        let trace =
            r#"{"question": "q</script><script>alert(1)</script>", "candidates": [], "tree": []}"#;
        let html = page(trace, "t.json").unwrap();
        assert!(!html.contains(SLOT));
        assert_eq!(html.matches("</script>").count(), 2, "only the page's own");
        assert!(html.contains(r"q\u003c/script>\u003cscript>alert(1)\u003c/script>"));
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "no network"
        );
    }

    #[test]
    fn a_file_that_is_not_a_trace_is_refused_in_one_line() {
        for (text, says) in [
            ("{not json", "is not JSON"),
            (r#"{"rows": []}"#, "is not an iesr trace"),
        ] {
            let message = page(text, "x.json").unwrap_err().to_string();
            assert!(
                message.contains(says) && message.contains("--trace"),
                "{message}"
            );
            assert!(!message.contains('\n'));
        }
    }
}
