//! How long evaluation and benchmark runs show their progress on stderr:
//! a bar on a terminal; on anything else (a log file, CI), where a bar
//! cannot be drawn, a line now and then, so a run of hours is not silent
//! until its end.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Least time between two progress lines of a benchmark run.
const LINE_EVERY: Duration = Duration::from_secs(60);

/// How a run shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Hidden,
    Bar,
    /// A line on stderr at most every minute and when done (benchmark
    /// runs and memory builds; scoring, quick, stays quiet).
    Lines,
}

impl Progress {
    /// A bar when stderr is a terminal, lines when it is not; none when
    /// the caller prints JSON to a terminal.
    pub fn on_stderr(json: bool) -> Self {
        match (std::io::stderr().is_terminal(), json) {
            (true, false) => Progress::Bar,
            (true, true) => Progress::Hidden,
            (false, _) => Progress::Lines,
        }
    }
}

pub(crate) fn progress_bar(len: usize, done: usize, progress: Progress) -> ProgressBar {
    if progress != Progress::Bar {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} ({eta} left) {msg}")
        .expect("the template is valid");
    bar.set_style(style);
    bar.set_position(done as u64);
    bar
}

/// The progress of a run that answers question by question, counting the
/// answers that pass (`right` ones in a benchmark, `kept` ones in a
/// memory build).
pub(crate) struct RunProgress {
    bar: ProgressBar,
    lines: bool,
    counted: &'static str,
    total: usize,
    done: usize,
    answered: usize,
    passed: usize,
    started: Instant,
    last_line: Instant,
}

impl RunProgress {
    /// A run of `total` questions, `done` of them answered by earlier
    /// sessions of the run.
    pub(crate) fn new(
        total: usize,
        done: usize,
        progress: Progress,
        counted: &'static str,
    ) -> Self {
        let now = Instant::now();
        RunProgress {
            bar: progress_bar(total, done, progress),
            lines: progress == Progress::Lines,
            counted,
            total,
            done,
            answered: 0,
            passed: 0,
            started: now,
            last_line: now,
        }
    }

    /// One more question answered, `passed` (right, kept) or not.
    pub(crate) fn answered(&mut self, passed: bool) {
        self.done += 1;
        self.answered += 1;
        self.passed += usize::from(passed);
        self.bar.inc(1);
        self.bar
            .set_message(format!("{} {} this session", self.passed, self.counted));
        let finished = self.done == self.total;
        if self.lines && (finished || self.last_line.elapsed() >= LINE_EVERY) {
            self.last_line = Instant::now();
            eprintln!("{}", self.line());
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// `37/100 questions; this session 12 answered, 3 right, 64 s a
    /// question, about 1 h 7 min left`.
    fn line(&self) -> String {
        let each = self.started.elapsed().as_secs_f64() / self.answered.max(1) as f64;
        let left = each * (self.total - self.done) as f64;
        format!(
            "{}/{} questions; this session {} answered, {} {}, {:.0} s a question, about {} left",
            self.done,
            self.total,
            self.answered,
            self.passed,
            self.counted,
            each,
            duration(left)
        )
    }
}

/// Seconds as `1 h 7 min`, `12 min` or `40 s`.
fn duration(seconds: f64) -> String {
    let seconds = seconds.round() as u64;
    match (seconds / 3600, seconds % 3600 / 60) {
        (0, 0) => format!("{seconds} s"),
        (0, minutes) => format!("{minutes} min"),
        (hours, minutes) => format!("{hours} h {minutes} min"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_off_a_terminal_says_where_it_stands_and_what_is_left() {
        let mut progress = RunProgress::new(10, 4, Progress::Lines, "right");
        progress.answered(true);
        progress.answered(false);
        let line = progress.line();
        assert!(
            line.starts_with("6/10 questions; this session 2 answered, 1 right, "),
            "{line}"
        );
        assert!(line.ends_with(" s left"), "{line}");
    }

    #[test]
    fn durations_read_in_hours_minutes_or_seconds() {
        assert_eq!(duration(40.2), "40 s");
        assert_eq!(duration(12.0 * 60.0 + 5.0), "12 min");
        assert_eq!(duration(3600.0 + 7.0 * 60.0), "1 h 7 min");
    }
}
