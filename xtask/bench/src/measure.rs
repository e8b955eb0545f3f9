//! Side-by-side measurement: ours and its baseline alternate round by round
//! in one process, and each figure is the ratio of the two medians, so a
//! noisy machine moves both sides alike.

use std::time::Instant;

use anyhow::{Result, anyhow};
use serde_json::json;

/// A rate (things per second) or a time per thing; which decides how the
/// ratio reads.
#[derive(Clone, Copy)]
pub enum Unit {
    /// Higher is better: ratio = ours / baseline.
    PerSecond(&'static str),
    /// Lower is better (nanoseconds per operation): ratio = baseline / ours.
    Nanos,
    /// A plain quantity (bytes on disk per record byte): ratio = ours / baseline.
    Factor(&'static str),
}

/// One row of the table.
pub struct Figure {
    pub name: String,
    pub ours: f64,
    pub baseline_name: String,
    pub baseline: f64,
    pub unit: Unit,
    /// The bar for the ratio, when it sets one: ratio >= bar for
    /// rates and times, ratio <= bar for a factor.
    pub bar: Option<f64>,
    pub rounds: usize,
}

impl Figure {
    pub fn ratio(&self) -> f64 {
        match self.unit {
            Unit::PerSecond(_) | Unit::Factor(_) => self.ours / self.baseline,
            Unit::Nanos => self.baseline / self.ours,
        }
    }

    /// Whether the bar is met (`None` without a bar).
    pub fn meets_bar(&self) -> Option<bool> {
        self.bar.map(|bar| match self.unit {
            Unit::Factor(_) => self.ratio() <= bar,
            _ => self.ratio() >= bar,
        })
    }

    fn show(&self, value: f64) -> String {
        match self.unit {
            Unit::PerSecond(what) => format!("{} {what}/s", human(value)),
            Unit::Nanos if value >= 1e9 => format!("{:.2} s", value / 1e9),
            Unit::Nanos if value >= 1e6 => format!("{:.1} ms", value / 1e6),
            Unit::Nanos => format!("{value:.0} ns"),
            Unit::Factor(what) => format!("{value:.2} {what}"),
        }
    }

    pub fn markdown_row(&self) -> String {
        let bar = match (self.bar, self.meets_bar()) {
            (Some(bar), Some(true)) => format!("{bar} met"),
            (Some(bar), _) => format!("{bar} NOT met"),
            _ => String::new(),
        };
        format!(
            "| {} | {} | {}: {} | {:.2} | {bar} |",
            self.name,
            self.show(self.ours),
            self.baseline_name,
            self.show(self.baseline),
            self.ratio()
        )
    }

    pub fn json(&self) -> serde_json::Value {
        let unit = match self.unit {
            Unit::PerSecond(what) => format!("{what}/s"),
            Unit::Nanos => "ns".to_owned(),
            Unit::Factor(what) => what.to_owned(),
        };
        json!({
            "figure": self.name,
            "ours": self.ours,
            "baseline": self.baseline_name,
            "baseline_value": self.baseline,
            "unit": unit,
            "ratio": self.ratio(),
            "bar": self.bar,
            "bar_met": self.meets_bar(),
            "rounds": self.rounds,
        })
    }
}

fn human(value: f64) -> String {
    if value >= 1e6 {
        format!("{:.2} M", value / 1e6)
    } else if value >= 1e3 {
        format!("{:.1} k", value / 1e3)
    } else {
        format!("{value:.1}")
    }
}

/// The median of `values` (the upper one of an even count); 0 for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Runs `ours` and two baselines `rounds` times, the one that goes first
/// rotating round by round; each returns its measurement of one round.
/// Returns the three medians.
pub fn alternate_three(
    rounds: usize,
    mut ours: impl FnMut() -> Result<f64>,
    mut first: impl FnMut() -> Result<f64>,
    mut second: impl FnMut() -> Result<f64>,
) -> Result<(f64, f64, f64)> {
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for side in 0..3 {
            match (round + side) % 3 {
                0 => a.push(ours()?),
                1 => b.push(first()?),
                _ => c.push(second()?),
            }
        }
    }
    Ok((median(a), median(b), median(c)))
}

/// Runs `ours` then `baseline`, `rounds` times, alternating; each returns
/// its measurement of one round. Returns the two medians.
pub fn alternate(
    rounds: usize,
    mut ours: impl FnMut() -> Result<f64>,
    mut baseline: impl FnMut() -> Result<f64>,
) -> Result<(f64, f64)> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Who goes first alternates too: a cache warmed by one side helps
        // each side equally often.
        if round % 2 == 0 {
            a.push(ours()?);
            b.push(baseline()?);
        } else {
            b.push(baseline()?);
            a.push(ours()?);
        }
    }
    Ok((median(a), median(b)))
}

/// Runs `work` on each item in a thread of its own and waits for them all;
/// the first error (or panic) is the answer.
pub fn each_in_a_thread<T: Send>(
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> Result<()> + Sync,
) -> Result<()> {
    let work = &work;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items.into_iter().map(|item| scope.spawn(move || work(item))).collect();
        workers.into_iter().try_for_each(|worker| worker.join().map_err(|_| anyhow!("a worker thread panicked"))?)
    })
}

/// Runs `work(n)` for every `n` below `count`, on 64 threads taking the
/// next `n` as they finish: how the benches fill a plane concurrently.
pub fn for_each_on_64_threads(count: usize, work: impl Fn(usize) -> Result<()> + Sync) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    each_in_a_thread(0..64, |_| {
        loop {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n >= count {
                return Ok(());
            }
            work(n)?;
        }
    })
}

/// Things per second for `things` done by `work`.
pub fn rate(things: u64, work: impl FnOnce() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    work()?;
    Ok(things as f64 / start.elapsed().as_secs_f64().max(1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_the_right_way_round() {
        let mut figure = Figure {
            name: "x".into(),
            ours: 80.0,
            baseline_name: "y".into(),
            baseline: 100.0,
            unit: Unit::PerSecond("records"),
            bar: Some(0.8),
            rounds: 5,
        };
        assert_eq!(figure.meets_bar(), Some(true));
        figure.ours = 79.0;
        assert_eq!(figure.meets_bar(), Some(false));
        figure.unit = Unit::Nanos;
        assert!(figure.ratio() > 1.0, "fewer nanoseconds than the baseline is faster");
        figure.unit = Unit::Factor("x");
        figure.bar = Some(2.5);
        assert_eq!(figure.meets_bar(), Some(true));
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }
}
