//! Plots of reported runs, each as PNG and SVG: execution accuracy and
//! computed tokens against the budget, and accuracy against wall time, one
//! line per series and one set of plots per dataset.

use super::report::RunRow;
use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Once;

const SIZE: (u32, u32) = (900, 560);

/// An axis: its label and whether values are plotted on a log2 scale.
struct Axis {
    label: &'static str,
    log: bool,
}

impl Axis {
    fn to_plot(&self, value: f64) -> f64 {
        if self.log {
            value.max(f64::MIN_POSITIVE).log2()
        } else {
            value
        }
    }

    /// Tick label; a log axis labels powers of two only, so every label is
    /// a round value.
    fn tick(&self, plotted: f64) -> String {
        if !self.log {
            let whole = (plotted - plotted.round()).abs() < 1e-9;
            return if whole {
                format!("{plotted:.0}")
            } else {
                format!("{plotted:.1}")
            };
        }
        if (plotted - plotted.round()).abs() > 1e-6 {
            return String::new();
        }
        format!("{:.0}", plotted.round().exp2())
    }

    /// The plotted range covering `values`: from zero on a linear axis,
    /// whole powers of two on a log axis.
    fn range(&self, values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
        let plotted: Vec<f64> = values.map(|v| self.to_plot(v)).collect();
        let lo = plotted.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = plotted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        if self.log {
            (lo.floor() - 0.5)..(hi.ceil() + 0.5)
        } else {
            0.0..(hi * 1.25).max(hi + 1.0)
        }
    }
}

struct Chart {
    title: String,
    x: Axis,
    y: Axis,
    /// Series name and its (x, y) points, in drawing order.
    series: Vec<(String, Vec<(f64, f64)>)>,
}

/// Writes the three plots for every dataset in `rows` into `dir` and
/// returns the files written.
pub fn write_plots(rows: &[RunRow], dir: &Path) -> Result<Vec<PathBuf>> {
    register_font();
    let mut by_dataset: BTreeMap<&str, Vec<&RunRow>> = BTreeMap::new();
    for row in rows {
        by_dataset.entry(&row.dataset).or_default().push(row);
    }
    let mut written = Vec::new();
    for (dataset, rows) in by_dataset {
        let questions = rows.iter().map(|r| r.questions).max().unwrap_or(0);
        let charts = [
            (
                "ex-vs-budget",
                Chart {
                    title: format!("{dataset} ({questions} questions): accuracy vs budget"),
                    x: Axis {
                        label: "budget (rollouts for iesr, samples for sc)",
                        log: true,
                    },
                    y: Axis {
                        label: "execution accuracy (%)",
                        log: false,
                    },
                    series: series(&rows, |r| (r.budget as f64, r.ex)),
                },
            ),
            (
                "tokens-vs-budget",
                Chart {
                    title: format!("{dataset}: tokens computed per question vs budget"),
                    x: Axis {
                        label: "budget (rollouts for iesr, samples for sc)",
                        log: true,
                    },
                    y: Axis {
                        label: "prompt (uncached) + generated tokens per question",
                        log: true,
                    },
                    series: series(&rows, |r| (r.budget as f64, r.tokens_computed())),
                },
            ),
            (
                "ex-vs-generated-tokens",
                Chart {
                    title: format!("{dataset}: accuracy vs generated tokens"),
                    x: Axis {
                        label: "generated tokens per question (mean)",
                        log: true,
                    },
                    y: Axis {
                        label: "execution accuracy (%)",
                        log: false,
                    },
                    series: series(&rows, |r| (r.generated_tokens, r.ex)),
                },
            ),
            (
                "ex-vs-seconds",
                Chart {
                    title: format!("{dataset}: accuracy vs wall time"),
                    x: Axis {
                        // With several questions in flight, a question's
                        // own seconds overlap; the run's time is its cost.
                        label: "run wall seconds per question",
                        log: true,
                    },
                    y: Axis {
                        label: "execution accuracy (%)",
                        log: false,
                    },
                    series: series(&rows, |r| (r.run_seconds_per_question(), r.ex)),
                },
            ),
        ];
        for (name, chart) in charts {
            let png = dir.join(format!("{dataset}-{name}.png"));
            let svg = png.with_extension("svg");
            draw(BitMapBackend::new(&png, SIZE).into_drawing_area(), &chart)
                .map_err(|e| plot_error(&png, e))?;
            draw(SVGBackend::new(&svg, SIZE).into_drawing_area(), &chart)
                .map_err(|e| plot_error(&svg, e))?;
            written.extend([png, svg]);
        }
    }
    Ok(written)
}

/// Points per series, ordered by budget so lines run left to right in
/// budget order. Runs of another model are another series, named with
/// the model when the chart holds several.
fn series(
    rows: &[&RunRow],
    point: impl Fn(&RunRow) -> (f64, f64),
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut grouped: BTreeMap<(&str, &str), Vec<&RunRow>> = BTreeMap::new();
    for row in rows {
        grouped
            .entry((&row.series, &row.model))
            .or_default()
            .push(row);
    }
    let several_models = grouped
        .keys()
        .map(|(_, model)| model)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    grouped
        .into_iter()
        .map(|((series, model), mut runs)| {
            runs.sort_by_key(|r| r.budget);
            let name = if several_models {
                format!("{series} ({model})")
            } else {
                series.to_string()
            };
            (name, runs.into_iter().map(&point).collect())
        })
        .collect()
}

fn draw<DB: DrawingBackend>(
    area: DrawingArea<DB, Shift>,
    chart: &Chart,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    area.fill(&WHITE)?;
    let points = || chart.series.iter().flat_map(|(_, p)| p.iter());
    let x_range = chart.x.range(points().map(|p| p.0));
    let y_range = chart.y.range(points().map(|p| p.1));
    let mut ctx = ChartBuilder::on(&area)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, y_range)?;
    let x_tick = |v: &f64| chart.x.tick(*v);
    let y_tick = |v: &f64| chart.y.tick(*v);
    ctx.configure_mesh()
        .x_desc(chart.x.label)
        .y_desc(chart.y.label)
        .light_line_style(WHITE)
        .x_label_formatter(&x_tick)
        .y_label_formatter(&y_tick)
        .draw()?;
    for (i, (name, points)) in chart.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let plotted: Vec<(f64, f64)> = points
            .iter()
            .map(|&(x, y)| (chart.x.to_plot(x), chart.y.to_plot(y)))
            .collect();
        ctx.draw_series(LineSeries::new(plotted.clone(), color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        ctx.draw_series(
            plotted
                .into_iter()
                .map(|p| Circle::new(p, 4, color.filled())),
        )?;
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    area.present()
}

fn plot_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("cannot draw {}: {e}", path.display()))
}

/// Text is drawn with an embedded font so plots look the same on machines
/// without fonts installed.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The embedded font is a valid TrueType file; registration cannot fail.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(series: &str, method: &str, budget: usize, ex: f64) -> RunRow {
        RunRow {
            run: format!("{series}-{budget}"),
            dir: PathBuf::new(),
            dataset: "logiccat".into(),
            model: "m".into(),
            series: series.into(),
            method: method.into(),
            budget,
            questions: 30,
            answered: 30,
            ex,
            ex_nonempty: ex,
            calls: budget as f64 * 3.0,
            prompt_tokens_computed: budget as f64 * 100.0,
            prompt_tokens_cached: 0.0,
            generated_tokens: budget as f64 * 50.0,
            seconds: budget as f64 * 4.0,
            seconds_p90: budget as f64 * 5.0,
            run_seconds: budget as f64 * 2.0,
            generated_tokens_per_second: 12.0,
        }
    }

    #[test]
    fn log_axes_round_trip_their_ticks() {
        let axis = Axis {
            label: "",
            log: true,
        };
        assert_eq!(axis.tick(axis.to_plot(8.0)), "8");
        assert_eq!(axis.tick(0.5), "");
        assert_eq!(axis.range([1.0, 32.0].into_iter()), -0.5..5.5);
        let linear = Axis {
            label: "",
            log: false,
        };
        assert_eq!(linear.range([3.0, 20.0].into_iter()), 0.0..25.0);
        assert_eq!(
            (linear.tick(2.0), linear.tick(2.5)),
            ("2".into(), "2.5".into())
        );
    }

    #[test]
    fn series_are_grouped_and_ordered_by_budget() {
        let rows = [
            row("iesr", "iesr", 8, 20.0),
            row("greedy", "greedy", 1, 10.0),
            row("iesr", "iesr", 2, 15.0),
        ];
        let refs: Vec<&RunRow> = rows.iter().collect();
        let s = series(&refs, |r| (r.budget as f64, r.ex));
        assert_eq!(
            s,
            [
                ("greedy".to_string(), vec![(1.0, 10.0)]),
                ("iesr".to_string(), vec![(2.0, 15.0), (8.0, 20.0)]),
            ]
        );
    }

    #[test]
    fn runs_of_another_model_are_their_own_series_named_with_the_model() {
        let mut larger = row("greedy", "greedy", 1, 30.0);
        larger.model = "big".into();
        let rows = [row("greedy", "greedy", 1, 10.0), larger];
        let refs: Vec<&RunRow> = rows.iter().collect();
        let s = series(&refs, |r| (r.budget as f64, r.ex));
        assert_eq!(
            s,
            [
                ("greedy (big)".to_string(), vec![(1.0, 30.0)]),
                ("greedy (m)".to_string(), vec![(1.0, 10.0)]),
            ]
        );
    }

    #[test]
    fn every_plot_is_written_as_png_and_svg() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            row("greedy", "greedy", 1, 10.0),
            row("sc", "sc", 1, 9.0),
            row("sc", "sc", 4, 13.0),
            row("iesr", "iesr", 1, 12.0),
            row("iesr", "iesr", 4, 18.0),
        ];
        let written = write_plots(&rows, dir.path()).unwrap();
        assert_eq!(written.len(), 8);
        for path in &written {
            let bytes = std::fs::read(path).unwrap();
            match path.extension().unwrap().to_str().unwrap() {
                "png" => assert_eq!(&bytes[1..4], b"PNG"),
                _ => {
                    let text = String::from_utf8(bytes).unwrap();
                    assert!(text.contains("<svg") && text.contains("iesr"));
                }
            }
        }
    }
}
