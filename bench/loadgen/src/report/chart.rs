//! The SVG chart: throughput, server CPU per request and memory per held session, one panel
//! each, a horizontal bar per server. Drawn with plotters' SVG backend (no system libraries).
//!
//! Throughput is on a linear axis; CPU per request and memory per session span two to three
//! orders of magnitude between the servers, so they use a log axis. Each bar carries its value.

use std::path::Path;

use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::summary::{self as m, Metric, Summary};

/// One panel of the chart.
struct Panel {
    title: &'static str,
    metric: Metric,
    log: bool,
    color: RGBColor,
}

const PANELS: [Panel; 3] = [
    Panel {
        title: "Throughput, 1 session, 32 in flight (req/s, higher is better)",
        metric: m::TPUT_RPS,
        log: false,
        color: RGBColor(0x2b, 0x6c, 0xb0),
    },
    Panel {
        title: "Server CPU per request (µs, log scale, lower is better)",
        metric: m::TPUT_CPU,
        log: true,
        color: RGBColor(0xc0, 0x5a, 0x1e),
    },
    Panel {
        title: "Memory per idle held session (KiB, log scale, lower is better)",
        metric: m::HOLD_KIB,
        log: true,
        color: RGBColor(0x3c, 0x8d, 0x3c),
    },
];

const WIDTH: u32 = 960;
const ROW: u32 = 22;
const PANEL_CHROME: u32 = 80;
const NAME_WIDTH: i32 = 150;

/// Draws the chart into `path`.
pub(crate) fn draw(s: &Summary, path: &Path) -> anyhow::Result<()> {
    let n = s.servers.len().max(1) as u32;
    let panel_h = PANEL_CHROME + ROW * n;
    let root = SVGBackend::new(path, (WIDTH, panel_h * PANELS.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    for (area, panel) in root.split_evenly((PANELS.len(), 1)).iter().zip(&PANELS) {
        draw_panel(area, s, panel).map_err(|e| anyhow!("{e:?}"))?;
    }
    root.present().map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_panel(area: &DrawingArea<SVGBackend<'_>, Shift>, s: &Summary, p: &Panel) -> DrawResult {
    let rows: Vec<(&str, Option<f64>)> = s
        .servers
        .iter()
        .map(|sv| (sv.as_str(), s.median(sv, p.metric)))
        .collect();
    let n = rows.len().max(1);
    let max = rows.iter().filter_map(|r| r.1).fold(0.0_f64, f64::max);
    let label_style = ("sans-serif", 13).into_font().color(&BLACK);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(p.title, ("sans-serif", 16))
        .margin(6)
        .margin_left(NAME_WIDTH)
        .margin_right(70)
        .x_label_area_size(24);
    let y_range = 0.0..n as f64;
    if p.log {
        // Positive values only; a zero (the null server's memory) is written, not drawn.
        let min = rows
            .iter()
            .filter_map(|r| r.1)
            .filter(|v| *v > 0.0)
            .fold(f64::MAX, f64::min);
        let lo = if min == f64::MAX {
            0.1
        } else {
            (min / 2.0).max(0.01)
        };
        let hi = (max * 2.0).max(lo * 10.0);
        let mut chart = builder.build_cartesian_2d((lo..hi).log_scale(), y_range)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(8)
            .x_label_formatter(&|v| value_text(*v))
            .draw()?;
        bars(&mut chart, &rows, lo, p.color, &label_style)
    } else {
        let hi = if max > 0.0 { max * 1.12 } else { 1.0 };
        let mut chart = builder.build_cartesian_2d(0.0..hi, y_range)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(8)
            .x_label_formatter(&|v| value_text(*v))
            .draw()?;
        bars(&mut chart, &rows, 0.0, p.color, &label_style)
    }
}

/// One bar per server with a value, its value after it and the server's name before the axis
/// (plotters does not clip elements to the plotting area, so the names land in the margin).
fn bars<X>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, RangedCoordf64>>,
    rows: &[(&str, Option<f64>)],
    base: f64,
    color: RGBColor,
    style: &TextStyle<'_>,
) -> DrawResult
where
    X: Ranged<ValueType = f64>,
{
    let right = style.pos(Pos::new(HPos::Right, VPos::Center));
    let left = style.pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (name, v)) in rows.iter().enumerate() {
        // The first server on top.
        let y = (rows.len() - 1 - i) as f64;
        let label = if v.is_some() {
            (*name).to_owned()
        } else {
            format!("{name} (–)")
        };
        chart.draw_series(std::iter::once(
            EmptyElement::at((base, y + 0.5)) + Text::new(label, (-8, 0), right.clone()),
        ))?;
        let Some(v) = *v else { continue };
        if v > base {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(base, y + 0.2), (v, y + 0.8)],
                color.filled(),
            )))?;
        }
        chart.draw_series(std::iter::once(
            EmptyElement::at((v.max(base), y + 0.5))
                + Text::new(value_text(v), (4, 0), left.clone()),
        ))?;
    }
    Ok(())
}

/// A short number: `27.4k`, `512`, `3.5`, `0.25`.
fn value_text(v: f64) -> String {
    if v >= 1000.0 {
        let k = v / 1000.0;
        if k.fract().abs() < 1e-9 {
            format!("{k:.0}k")
        } else {
            format!("{k:.1}k")
        }
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
