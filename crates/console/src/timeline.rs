//! A run's timeline: one bar per step and per effect, from the `at` of the
//! record that started it to the `at` of the record that finished it (or the
//! run's last record, while it is still open), drawn as inline SVG.

use journal_core::{EffectResult, RecordBody, VerifiedRecord};
use maud::{Markup, html};

/// What a bar stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarKind {
    Step,
    Effect,
}

/// How a bar ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarEnd {
    Finished,
    Failed,
    Open,
}

/// One step or effect of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bar {
    pub(crate) kind: BarKind,
    pub(crate) label: String,
    pub(crate) start_millis: i64,
    pub(crate) end_millis: i64,
    pub(crate) end: BarEnd,
}

/// The bars of a run's records, in the order they started.
pub(crate) fn bars(records: &[VerifiedRecord]) -> Vec<Bar> {
    let last = records.last().map_or(0, |record| record.record.at.unix_millis());
    let mut bars: Vec<Bar> = Vec::new();
    let open = |bars: &[Bar], kind: BarKind, label: &str| {
        bars.iter().rposition(|bar| bar.kind == kind && bar.label == label && bar.end == BarEnd::Open)
    };
    for record in records {
        let at = record.record.at.unix_millis();
        let effect = record.record.effect_key.clone().unwrap_or_default();
        match &record.record.body {
            RecordBody::StepStarted(mark) => bars.push(Bar {
                kind: BarKind::Step,
                label: mark.step.clone(),
                start_millis: at,
                end_millis: last,
                end: BarEnd::Open,
            }),
            RecordBody::StepFinished(mark) => {
                if let Some(bar) = open(&bars, BarKind::Step, &mark.step).and_then(|index| bars.get_mut(index)) {
                    bar.end_millis = at;
                    bar.end = BarEnd::Finished;
                }
            }
            RecordBody::EffectStarted(_) => bars.push(Bar {
                kind: BarKind::Effect,
                label: effect,
                start_millis: at,
                end_millis: last,
                end: BarEnd::Open,
            }),
            RecordBody::EffectDone(done) => {
                if let Some(bar) = open(&bars, BarKind::Effect, &effect).and_then(|index| bars.get_mut(index)) {
                    bar.end_millis = at;
                    bar.end = match done.result {
                        EffectResult::Ok { .. } => BarEnd::Finished,
                        _ => BarEnd::Failed,
                    };
                }
            }
            _ => {}
        }
    }
    bars
}

const WIDTH: i64 = 760;
const LABEL_WIDTH: i64 = 200;
const ROW: i64 = 22;

/// The SVG of `bars`: a row per bar, time left to right.
pub(crate) fn svg(bars: &[Bar]) -> Markup {
    let start = bars.iter().map(|bar| bar.start_millis).min().unwrap_or(0);
    let end = bars.iter().map(|bar| bar.end_millis).max().unwrap_or(start);
    // Record times come from the store: saturating arithmetic, never a panic.
    let span = end.saturating_sub(start).max(1);
    let plot = WIDTH - LABEL_WIDTH - 10;
    let x = |millis: i64| LABEL_WIDTH + millis.saturating_sub(start).saturating_mul(plot) / span;
    let height = ROW * (bars.len() as i64) + 24;
    html! {
        svg class="timeline" xmlns="http://www.w3.org/2000/svg" width=(WIDTH) height=(height)
            viewBox={"0 0 " (WIDTH) " " (height)} role="img" aria-label="timeline of steps and effects" {
            @for (row, bar) in bars.iter().enumerate() {
                @let y = ROW * row as i64 + 4;
                @let left = x(bar.start_millis);
                @let width = x(bar.end_millis).saturating_sub(left).max(3);
                @let class = match (bar.kind, bar.end) {
                    (BarKind::Step, BarEnd::Open) | (BarKind::Effect, BarEnd::Open) => "bar open",
                    (_, BarEnd::Failed) => "bar failed",
                    (BarKind::Step, _) => "bar step",
                    (BarKind::Effect, _) => "bar effect",
                };
                text x="4" y=(y + 14) class="label" {
                    (match bar.kind { BarKind::Step => "step ", BarKind::Effect => "effect " }) (crate::pages::cut(&bar.label))
                }
                rect class=(class) x=(left) y=(y) width=(width) height=(ROW - 6) {
                    title { (crate::pages::cut(&bar.label)) ": " (bar.end_millis.saturating_sub(bar.start_millis)) " ms" }
                }
            }
            text x=(LABEL_WIDTH) y=(height - 4) class="axis" { "0 ms" }
            text x=(WIDTH - 10) y=(height - 4) class="axis" text-anchor="end" { (span) " ms" }
        }
    }
}
