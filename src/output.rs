//! Turning results and reports into text for a terminal.

use comfy_table::Table;
use iesr::db::QueryResult;
use iesr::eval::bench::BenchSummary;
use iesr::eval::memory_build::BuildSummary;
use iesr::eval::paired::RESAMPLES;
use iesr::eval::report::{PairRow, RunRow};
use iesr::eval::{Report, Tally};
use iesr::llm::bench::{BackendFigures, BenchReport};
use iesr::llm::Generation;
use iesr::search::Answer;
use iesr::trace::{Execution, Trace};
use iesr::{Error, Result};
use std::io::Write;

/// Writes to stdout; a closed pipe (`| head`) ends quietly.
pub fn print_text(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|_| {
            if text.ends_with('\n') {
                Ok(())
            } else {
                stdout.write_all(b"\n")
            }
        })
        .and_then(|_| stdout.flush());
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::io("standard output", e))
        }
        _ => Ok(()),
    }
}

/// Prints `value` as JSON when asked to, else as text.
pub fn print<T: serde::Serialize>(
    json: bool,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<()> {
    if json {
        print_json(value)
    } else {
        print_text(&text(value))
    }
}

pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("report types serialize");
    print_text(&text)
}

pub fn result_table(result: &QueryResult) -> String {
    let mut table = Table::new();
    table.set_header(&result.columns);
    for row in &result.rows {
        table.add_row(row.iter().map(|v| v.to_string()));
    }
    let shown = if result.truncated() {
        format!("first {} of {} rows", result.rows.len(), result.total_rows)
    } else if result.total_rows == 1 {
        "1 row".to_string()
    } else {
        format!("{} rows", result.total_rows)
    };
    format!("{table}\n{shown} in {:.1} ms\n", result.elapsed_ms)
}

fn tally_cells(tally: &Tally) -> [String; 4] {
    [
        tally.scored.to_string(),
        format!("{:.2}", tally.ex()),
        tally.nonempty_scored.to_string(),
        format!("{:.2}", tally.ex_nonempty()),
    ]
}

pub fn report_text(report: &Report) -> String {
    let mut out = String::new();
    let dataset = &report.dataset;
    out.push_str(&format!(
        "{:?} (split {:?}): {} questions, {:?} semantics\n",
        dataset.kind, dataset.split, dataset.questions, report.semantics
    ));
    let skipped: usize = dataset.skipped_missing_db.values().sum();
    if skipped > 0 {
        let dbs: Vec<String> = dataset
            .skipped_missing_db
            .iter()
            .map(|(db, n)| format!("{db} ({n})"))
            .collect();
        out.push_str(&format!(
            "skipped {skipped} questions whose database is missing: {}\n",
            dbs.join(", ")
        ));
    }
    if report.gold_failed > 0 {
        out.push_str(&format!(
            "gold SQL failed for {} questions: not counted\n",
            report.gold_failed
        ));
    }
    if report.missing_predictions > 0 {
        out.push_str(&format!(
            "{} questions have no prediction: counted wrong\n",
            report.missing_predictions
        ));
    }
    if report.prediction_failed > 0 {
        out.push_str(&format!(
            "{} predictions failed to execute: counted wrong\n",
            report.prediction_failed
        ));
    }
    let mut table = Table::new();
    table.set_header([
        "slice",
        "scored",
        "EX %",
        "non-empty gold",
        "EX % (non-empty)",
    ]);
    for (group, tally) in &report.by_group {
        let mut row = vec![group.clone()];
        row.extend(tally_cells(tally));
        table.add_row(row);
    }
    let mut row = vec!["all".to_string()];
    row.extend(tally_cells(&report.overall));
    table.add_row(row);
    out.push_str(&table.to_string());
    out.push('\n');
    out
}

pub fn generation_text(generation: &Generation) -> String {
    let mut out = String::new();
    let many = generation.completions.len() > 1;
    for (i, completion) in generation.completions.iter().enumerate() {
        if many {
            out.push_str(&format!(
                "--- completion {} ({:?})\n",
                i + 1,
                completion.finish_reason
            ));
        }
        out.push_str(&completion.text);
        out.push('\n');
    }
    let u = &generation.usage;
    out.push_str(&format!(
        "[prompt {} tokens ({} cached), generated {}, prefill {:.2} s, decode {:.2} s]\n",
        u.prompt_tokens,
        u.cached_prompt_tokens,
        u.generated_tokens,
        u.prefill_seconds,
        u.decode_seconds
    ));
    out
}

pub fn bench_text(report: &BenchReport) -> String {
    let mut out = format!(
        "model {} on {}, {} threads, SIMD {}, packed-matrix kernel {}, prompt {} tokens, {} generated per row\n",
        report.model,
        report.device,
        report.threads,
        report.simd,
        report.packed_kernel,
        report.prompt_tokens,
        report.gen_tokens
    );
    let backends = &report.backends;
    let mut table = Table::new();
    let mut header = vec!["measure".to_string()];
    header.extend(backends.iter().map(|b| b.backend.clone()));
    // Each later backend against the first.
    header.extend(
        backends
            .iter()
            .skip(1)
            .map(|b| format!("{} / {}", backends[0].backend, b.backend)),
    );
    table.set_header(header);
    let mut row = |label: String, value: &dyn Fn(&BackendFigures) -> f64, digits: usize| {
        let values: Vec<f64> = backends.iter().map(value).collect();
        let mut cells = vec![label];
        cells.extend(values.iter().map(|v| format!("{v:.digits$}")));
        cells.extend(
            values
                .iter()
                .skip(1)
                .map(|v| format!("{:.2}", values[0] / v)),
        );
        table.add_row(cells);
    };
    row("prefill tok/s".into(), &|b| b.prefill_tok_s, 1);
    row("decode tok/s (batch 1)".into(), &|b| b.decode_tok_s, 1);
    let batches: Vec<usize> = backends
        .first()
        .map(|b| {
            b.batches
                .iter()
                .map(|f| f.batch)
                .filter(|&batch| batch > 1)
                .collect()
        })
        .unwrap_or_default();
    for batch in batches {
        let aggregate = move |b: &BackendFigures| {
            b.batches
                .iter()
                .find(|f| f.batch == batch)
                .map_or(f64::NAN, |f| f.aggregate_tok_s)
        };
        row(
            format!("decode batch {batch} aggregate tok/s"),
            &aggregate,
            1,
        );
        let speedup = move |b: &BackendFigures| aggregate(b) / b.decode_tok_s;
        row(format!("batch {batch} / batch 1"), &speedup, 2);
    }
    row("first token, cold (s)".into(), &|b| b.cold_first_token_s, 3);
    row(
        "first token, cached prefix (s)".into(),
        &|b| b.cached_first_token_s,
        3,
    );
    row(
        "cached-prefix speedup".into(),
        &|b| b.cached_prefix_speedup,
        1,
    );
    out.push_str(&format!("{table}\n"));
    if !report.constraint.is_empty() {
        let mut table = Table::new();
        table.set_header([
            "sampling a query (first backend)",
            "tokens, free",
            "tok/s, free",
            "tokens, name constraint",
            "tok/s, name constraint",
            "constrained / free",
        ]);
        for f in &report.constraint {
            table.add_row([
                format!("batch {}", f.batch),
                f.free_tokens.to_string(),
                format!("{:.1}", f.free_tok_s),
                f.constrained_tokens.to_string(),
                format!("{:.1}", f.constrained_tok_s),
                format!("{:.2}", f.ratio),
            ]);
        }
        out.push_str(&format!("{table}\n"));
    }
    out.push_str(&format!(
        "peak RSS of this process: {:.0} MB\n",
        report.peak_rss_mb
    ));
    out
}

pub fn answer_text(answer: &Answer) -> String {
    let mut out = String::new();
    match &answer.sql {
        Some(sql) => out.push_str(&format!("{sql}\n\n")),
        None => out.push_str("no SQL could be found in the model's answers\n"),
    }
    if let Some(result) = &answer.result {
        out.push_str(&result_table(result));
    }
    if let Some(error) = &answer.error {
        out.push_str(&format!("the query failed: {error}\n"));
    }
    let c = &answer.trace.cost;
    out.push_str(&format!(
        "confidence {:.2} | {} calls, prompt tokens {} computed / {} cached, {} generated, {:.1} s\n",
        answer.confidence,
        c.calls,
        c.prompt_tokens - c.cached_prompt_tokens,
        c.cached_prompt_tokens,
        c.generated_tokens,
        c.seconds
    ));
    out
}

/// The search tree as an indented outline: action, visits, mean reward,
/// and for query-writing steps the query and how it ran.
pub fn tree_text(trace: &Trace) -> String {
    if trace.tree.is_empty() {
        return "no search tree (only --method iesr builds one)\n".to_string();
    }
    let mut out = format!("search tree: {} nodes\n", trace.tree.len());
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); trace.tree.len()];
    for node in &trace.tree {
        if let Some(parent) = node.parent {
            children[parent].push(node.id);
        }
    }
    // Depth-first, each line prefixed by its ancestors' rails.
    let mut stack: Vec<(usize, String, bool)> = vec![(0, String::new(), true)];
    while let Some((id, rails, last)) = stack.pop() {
        let node = &trace.tree[id];
        let branch = match (node.parent, last) {
            (None, _) => "",
            (Some(_), true) => "└─ ",
            (Some(_), false) => "├─ ",
        };
        let mean = if node.visits > 0 {
            node.value / node.visits as f64
        } else {
            0.0
        };
        let mut line = format!(
            "{rails}{branch}{} N={} Q/N={mean:.2}",
            node.action.as_deref().unwrap_or("question"),
            node.visits
        );
        if let Some(reward) = node.reward {
            line.push_str(&format!(" reward={reward:.2}"));
        }
        if node.terminal {
            line.push_str(" [end]");
        }
        if let Some(sql) = &node.sql {
            let ran = match &node.execution {
                Some(Execution::Ok { total_rows, .. }) => format!("{total_rows} rows"),
                Some(Execution::Failed { error }) => format!("error: {error}"),
                None => "not run".to_string(),
            };
            line.push_str(&format!("  {}  -> {ran}", one_line(sql, 90)));
        } else if let Some(output) = &node.output {
            line.push_str(&format!("  {}", one_line(output, 70)));
        }
        out.push_str(&line);
        out.push('\n');
        let child_rails = match node.parent {
            None => String::new(),
            Some(_) => format!("{rails}{}", if last { "   " } else { "│  " }),
        };
        let kids = &children[id];
        for (i, &child) in kids.iter().enumerate().rev() {
            stack.push((child, child_rails.clone(), i + 1 == kids.len()));
        }
    }
    out
}

fn one_line(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

pub fn memory_build_text(summary: &BuildSummary) -> String {
    let at: Vec<String> = summary
        .kept_at_attempt
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{n} at write {}", i + 1))
        .collect();
    format!(
        "{}: kept {} of {} annotated questions ({}); {} already stored\n\
         {} records in the store; {} generated tokens, {:.0} s\n",
        summary.dataset,
        summary.kept,
        summary.annotated,
        at.join(", "),
        summary.already_stored,
        summary.records_in_store,
        summary.generated_tokens,
        summary.seconds
    )
}

pub fn bench_summary_text(summary: &BenchSummary) -> String {
    let mut out = format!(
        "model {} | {} | seed {}\n",
        summary.model,
        summary.variant.label(),
        summary.seed
    );
    out.push_str(&report_text(&summary.report));
    let c = &summary.cost;
    let mut table = Table::new();
    table.set_header(["cost per question", "mean", "p90"]);
    for (name, spread) in [
        ("model calls", &c.calls),
        ("prompt tokens computed", &c.prompt_tokens_computed),
        ("prompt tokens cached", &c.prompt_tokens_cached),
        ("generated tokens", &c.generated_tokens),
        ("seconds to answer", &c.seconds),
    ] {
        table.add_row([
            name.to_string(),
            format!("{:.1}", spread.mean),
            format!("{:.1}", spread.p90),
        ]);
    }
    out.push_str(&format!(
        "{table}\n{} questions in {:.1} s of the run's wall time: {:.1} s a question, {:.0} questions an hour, {:.1} generated tokens/s\n",
        c.questions,
        c.run_seconds,
        c.run_seconds_per_question(),
        c.questions_per_hour(),
        c.generated_tokens_per_second
    ));
    out
}

/// What `iesr report` prints: the runs, and each pair of runs compared on
/// the questions they share.
#[derive(serde::Serialize)]
pub struct RunsReport {
    pub runs: Vec<RunRow>,
    pub pairs: Vec<PairRow>,
}

pub fn runs_report_text(report: &RunsReport) -> String {
    let mut out = runs_text(&report.runs);
    if report.pairs.is_empty() {
        return out;
    }
    let mut table = Table::new();
    table.set_header([
        "A",
        "B",
        "questions",
        "only A right",
        "only B right",
        "A - B (points)",
        "95% interval",
        "McNemar p",
        "A - B, non-empty gold",
    ]);
    for pair in &report.pairs {
        let d = &pair.all;
        let nonempty = pair.nonempty.as_ref().map_or("-".to_string(), |n| {
            format!(
                "{:+.2} [{:+.2}, {:+.2}] of {}",
                n.difference, n.interval.0, n.interval.1, n.questions
            )
        });
        table.add_row([
            pair.a.clone(),
            pair.b.clone(),
            d.questions.to_string(),
            d.only_a.to_string(),
            d.only_b.to_string(),
            format!("{:+.2}", d.difference),
            format!("[{:+.2}, {:+.2}]", d.interval.0, d.interval.1),
            format!("{:.3}", d.p_value),
            nonempty,
        ]);
    }
    out.push_str(&format!(
        "\nPaired on the questions both runs scored (bootstrap over questions, {} resamples):\n{table}\n",
        RESAMPLES
    ));
    out
}

/// Runs side by side, one row each, with accuracy and mean cost per question.
pub fn runs_text(rows: &[RunRow]) -> String {
    let mut table = Table::new();
    table.set_header([
        "run",
        "dataset",
        "series",
        "budget",
        "answered",
        "EX %",
        "EX % (non-empty)",
        "calls",
        "prompt computed",
        "prompt cached",
        "generated",
        "tok/s",
        "run s/q",
        "s mean",
        "s p90",
    ]);
    for r in rows {
        table.add_row([
            r.run.clone(),
            r.dataset.clone(),
            r.series.clone(),
            r.budget.to_string(),
            format!("{}/{}", r.answered, r.questions),
            format!("{:.2}", r.ex),
            format!("{:.2}", r.ex_nonempty),
            format!("{:.1}", r.calls),
            format!("{:.0}", r.prompt_tokens_computed),
            format!("{:.0}", r.prompt_tokens_cached),
            format!("{:.0}", r.generated_tokens),
            format!("{:.1}", r.generated_tokens_per_second),
            format!("{:.1}", r.run_seconds_per_question()),
            format!("{:.1}", r.seconds),
            format!("{:.1}", r.seconds_p90),
        ]);
    }
    format!("{table}\n")
}
