//! Prompt templates: plain text files in `prompts/` with `{placeholders}`,
//! compiled into the binary so that tuning a prompt needs no Rust change.

/// A named template.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    pub name: &'static str,
    pub text: &'static str,
}

pub const SQL_GENERATION_SYSTEM: Template = Template {
    name: "sql_generation.system",
    text: include_str!("../prompts/sql_generation.system.txt"),
};

pub const SQL_GENERATION_USER: Template = Template {
    name: "sql_generation.user",
    text: include_str!("../prompts/sql_generation.user.txt"),
};

/// Execution guidance: a query that failed, told why.
pub const FEEDBACK_ERROR: Template = Template {
    name: "feedback_error.user",
    text: include_str!("../prompts/feedback_error.user.txt"),
};

/// Annotation: a query that ran but was not the answer, shown its result.
pub const FEEDBACK_WRONG: Template = Template {
    name: "feedback_wrong.user",
    text: include_str!("../prompts/feedback_wrong.user.txt"),
};

/// Execution guidance: a query that ran without a value, told so.
pub const FEEDBACK_EMPTY: Template = Template {
    name: "feedback_empty.user",
    text: include_str!("../prompts/feedback_empty.user.txt"),
};

/// Execution guidance: the values a query without a value compares with
/// that no row holds, each with what its column holds.
pub const FEEDBACK_UNMATCHED: Template = Template {
    name: "feedback_unmatched.user",
    text: include_str!("../prompts/feedback_unmatched.user.txt"),
};

/// The reviewer's request: the schema, the hint and one query, asking for
/// the question (scored, not generated). It is sent after
/// [`SQL_GENERATION_SYSTEM`] and opens as [`SQL_GENERATION_USER`] does, so
/// that its prefill starts from the question's own prompt states instead
/// of computing the schema a second time.
pub const REVIEW_USER: Template = Template {
    name: "review.user",
    text: include_str!("../prompts/review.user.txt"),
};

pub const REASONING_SYSTEM: Template = Template {
    name: "reasoning.system",
    text: include_str!("../prompts/reasoning.system.txt"),
};

/// The first message of every reasoning prompt: schema, hint, question,
/// stage 1's notes, then the first step's instruction. Later steps follow
/// as chat turns.
pub const REASONING_USER: Template = Template {
    name: "reasoning.user",
    text: include_str!("../prompts/reasoning.user.txt"),
};

/// Stage 1's request for the semantic state, asked in the reasoning frame
/// so that its schema prefix is shared with the search's prompts.
pub const UNDERSTANDING: Template = Template {
    name: "understanding",
    text: include_str!("../prompts/understanding.user.txt"),
};

/// Reading instead of querying: the data as text, answered directly (the
/// plain baseline the query-writing methods are measured against).
pub const READ_ANSWER_SYSTEM: Template = Template {
    name: "read_answer.system",
    text: include_str!("../prompts/read_answer.system.txt"),
};

pub const READ_ANSWER_USER: Template = Template {
    name: "read_answer.user",
    text: include_str!("../prompts/read_answer.user.txt"),
};

/// What the direct prompts say about functions, when they are on.
pub const FUNCTIONS: Template = Template {
    name: "functions.user",
    text: include_str!("../prompts/functions.user.txt"),
};

/// What the direct prompts say over a database that stores dates as text.
pub const DATES: Template = Template {
    name: "dates.user",
    text: include_str!("../prompts/dates.user.txt"),
};

/// What the direct prompts say over a database that stores dates as text
/// in a written form (`MM/DD/YYYY`).
pub const WRITTEN_DATES: Template = Template {
    name: "written_dates.user",
    text: include_str!("../prompts/written_dates.user.txt"),
};

/// What the direct prompts say over a database that stores dates as eight
/// digits (20230315).
pub const DIGIT_DATES: Template = Template {
    name: "digit_dates.user",
    text: include_str!("../prompts/digit_dates.user.txt"),
};

/// What the direct prompts say over a database that stores times as Unix
/// times.
pub const UNIX_TIMES: Template = Template {
    name: "unix_times.user",
    text: include_str!("../prompts/unix_times.user.txt"),
};

/// What the direct prompts say over a database with columns of JSON
/// objects, and with columns of JSON arrays.
pub const JSON_OBJECTS: Template = Template {
    name: "json_objects.user",
    text: include_str!("../prompts/json_objects.user.txt"),
};

pub const JSON_ARRAYS: Template = Template {
    name: "json_arrays.user",
    text: include_str!("../prompts/json_arrays.user.txt"),
};

/// Greedy's and sc's frame when the question's calculation is written as
/// a function first (`FunctionUse::First`), with one worked exchange.
pub const FUNCTION_FIRST_SYSTEM: Template = Template {
    name: "function_first.system",
    text: include_str!("../prompts/function_first.system.txt"),
};

pub const FUNCTION_FIRST_EXAMPLE_USER: Template = Template {
    name: "function_first_example.user",
    text: include_str!("../prompts/function_first_example.user.txt"),
};

pub const FUNCTION_FIRST_EXAMPLE_ASSISTANT: Template = Template {
    name: "function_first_example.assistant",
    text: include_str!("../prompts/function_first_example.assistant.txt"),
};

/// A function SQLite lacks, asked for in JavaScript.
pub const FUNCTION_WRITING_SYSTEM: Template = Template {
    name: "function_writing.system",
    text: include_str!("../prompts/function_writing.system.txt"),
};

pub const FUNCTION_WRITING_USER: Template = Template {
    name: "function_writing.user",
    text: include_str!("../prompts/function_writing.user.txt"),
};

/// The hint as a prompt line, or nothing when there is none.
pub fn hint_line(hint: Option<&str>) -> String {
    hint.filter(|h| !h.trim().is_empty())
        .map(|h| format!("Hint: {h}\n"))
        .unwrap_or_default()
}

/// The hint as a paragraph of its own (a blank line before it), as the
/// one-call prompts show it, or nothing when there is none.
pub fn hint_paragraph(hint: Option<&str>) -> String {
    match hint_line(hint) {
        line if line.is_empty() => line,
        line => format!("\n{line}"),
    }
}

impl Template {
    /// Fills every `{key}` with its value; unknown placeholders stay as
    /// they are, so literal braces in a template survive.
    pub fn render(&self, values: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(self.text.len() + 256);
        let mut rest = self.text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let value = after.find('}').and_then(|close| {
                let key = &after[..close];
                values
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| (*v, close))
            });
            match value {
                Some((v, close)) => {
                    out.push_str(v);
                    rest = &after[close + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_known_placeholders_and_keeps_the_rest() {
        let t = Template {
            name: "t",
            text: "Q: {question}\n{hint}JSON: {\"a\": 1} {unknown}\n",
        };
        assert_eq!(
            t.render(&[("question", "How many?"), ("hint", "")]),
            "Q: How many?\nJSON: {\"a\": 1} {unknown}"
        );
    }
}
