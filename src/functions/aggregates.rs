//! Statistics other engines have and SQLite lacks, as SQL aggregates on
//! every connection: sample and population standard deviation and
//! variance (STDEV, STDDEV, STDDEV_SAMP, STDDEV_POP, VARIANCE, VAR_SAMP,
//! VAR_POP) and MEDIAN. NULLs and text that is not a number are skipped,
//! as SQLite's AVG skips NULLs.

use rusqlite::functions::{Aggregate, Context, FunctionFlags};
use rusqlite::types::ValueRef;
use rusqlite::Connection;

/// What a statistic is computed from.
#[derive(Debug, Clone, Copy)]
enum Statistic {
    SampleDeviation,
    PopulationDeviation,
    SampleVariance,
    PopulationVariance,
    Median,
}

/// Every name an aggregate answers to.
const AGGREGATES: &[(&str, Statistic)] = &[
    ("stdev", Statistic::SampleDeviation),
    ("stddev", Statistic::SampleDeviation),
    ("stddev_samp", Statistic::SampleDeviation),
    ("stdevp", Statistic::PopulationDeviation),
    ("stddev_pop", Statistic::PopulationDeviation),
    ("variance", Statistic::SampleVariance),
    ("var_samp", Statistic::SampleVariance),
    ("var_pop", Statistic::PopulationVariance),
    ("median", Statistic::Median),
];

/// The names the aggregates answer to.
pub fn aggregate_names() -> impl Iterator<Item = &'static str> {
    AGGREGATES.iter().map(|&(name, _)| name)
}

/// Registers the aggregates on `conn`.
pub fn register_aggregates(conn: &Connection) -> rusqlite::Result<()> {
    for &(name, statistic) in AGGREGATES {
        conn.create_aggregate_function(
            name,
            1,
            FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
            statistic,
        )?;
    }
    Ok(())
}

impl Aggregate<Vec<f64>, Option<f64>> for Statistic {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<Vec<f64>> {
        Ok(Vec::new())
    }

    fn step(&self, ctx: &mut Context<'_>, values: &mut Vec<f64>) -> rusqlite::Result<()> {
        let value = match ctx.get_raw(0) {
            ValueRef::Integer(i) => Some(i as f64),
            ValueRef::Real(f) => Some(f),
            ValueRef::Text(text) => std::str::from_utf8(text)
                .ok()
                .and_then(|t| t.trim().parse().ok()),
            ValueRef::Null | ValueRef::Blob(_) => None,
        };
        values.extend(value.filter(|v: &f64| v.is_finite()));
        Ok(())
    }

    fn finalize(
        &self,
        _: &mut Context<'_>,
        values: Option<Vec<f64>>,
    ) -> rusqlite::Result<Option<f64>> {
        Ok(values.and_then(|v| self.of(v)))
    }
}

impl Statistic {
    /// The statistic of `values`; None (NULL) where it is undefined: no
    /// values, or one for a sample statistic.
    fn of(self, mut values: Vec<f64>) -> Option<f64> {
        let n = values.len() as f64;
        if values.is_empty() {
            return None;
        }
        if let Statistic::Median = self {
            values.sort_by(f64::total_cmp);
            let middle = values.len() / 2;
            return Some(if values.len() % 2 == 1 {
                values[middle]
            } else {
                (values[middle - 1] + values[middle]) / 2.0
            });
        }
        let mean = values.iter().sum::<f64>() / n;
        let squares: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
        let sample = matches!(self, Statistic::SampleDeviation | Statistic::SampleVariance);
        if sample && values.len() < 2 {
            return None;
        }
        let variance = squares / if sample { n - 1.0 } else { n };
        Some(match self {
            Statistic::SampleDeviation | Statistic::PopulationDeviation => variance.sqrt(),
            _ => variance,
        })
    }
}
