//! The progress bar of long evaluation and benchmark runs (drawn only when
//! asked for, which callers do when stderr is a terminal).

use indicatif::{ProgressBar, ProgressStyle};

pub(crate) fn progress_bar(len: usize, done: usize, visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} ({eta} left) {msg}")
        .expect("the template is valid");
    bar.set_style(style);
    bar.set_position(done as u64);
    bar
}
