//! The SVG charts, drawn with plotters' SVG backend (no system libraries):
//! - bar charts, a horizontal bar per server: the overview (throughput, server CPU per
//!   request, memory per held session) and streaming (events/s, CPU per event);
//! - line charts, a line per server over the points of a sweep (the scaling curves).
//!
//! Throughput is on a linear axis; CPU per request and memory per session span two to three
//! orders of magnitude between the servers, so they use a log axis. Each bar carries its value.

use std::path::Path;

use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::curves::Section;
use super::summary::{self as m, Metric, Pt, Summary};

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

const STREAM_PANELS: [Panel; 2] = [
    Panel {
        title: "Streaming: events/s, 10 progress + result per call, 32 in flight (higher is better)",
        metric: m::STREAM_EPS,
        log: false,
        color: RGBColor(0x2b, 0x6c, 0xb0),
    },
    Panel {
        title: "Streaming: server CPU per event (µs, log scale, lower is better)",
        metric: m::STREAM_CPU,
        log: true,
        color: RGBColor(0xc0, 0x5a, 0x1e),
    },
];

const WIDTH: u32 = 960;
const ROW: u32 = 22;
const PANEL_CHROME: u32 = 80;
const NAME_WIDTH: i32 = 150;
const LINE_HEIGHT: u32 = 520;

/// Line colours, one per server in order.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Draws every chart into `dir`: `overview_file`, `stream.svg` and one per scaling section.
pub(crate) fn draw_all(s: &Summary, dir: &Path, overview_file: &str) -> anyhow::Result<()> {
    draw_bars(s, &dir.join(overview_file), &PANELS)?;
    draw_bars(s, &dir.join("stream.svg"), &STREAM_PANELS)?;
    for sec in &super::curves::SECTIONS {
        draw_lines(s, &dir.join(sec.file), sec)?;
    }
    Ok(())
}

/// Bar panels, one row per server with a value in any panel.
fn draw_bars(s: &Summary, path: &Path, panels: &[Panel]) -> anyhow::Result<()> {
    let servers: Vec<&str> = s
        .servers
        .iter()
        .map(String::as_str)
        .filter(|sv| panels.iter().any(|p| s.median(sv, p.metric).is_some()))
        .collect();
    let n = servers.len().max(1) as u32;
    let panel_h = PANEL_CHROME + ROW * n;
    let root = SVGBackend::new(path, (WIDTH, panel_h * panels.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        draw_panel(area, s, &servers, panel).map_err(|e| anyhow!("{e:?}"))?;
    }
    root.present().map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

/// A line per server over the points of `sec`'s sweep, log x axis.
fn draw_lines(s: &Summary, path: &Path, sec: &Section) -> anyhow::Result<()> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = s
        .servers
        .iter()
        .filter_map(|sv| {
            let pts: Vec<(f64, f64)> = s
                .points(sv, sec.metric.scenario)
                .into_iter()
                .filter_map(|p| Some((p as f64, s.median(sv, sec.metric.at(Pt::At(p)))?)))
                .filter(|(_, y)| *y > 0.0)
                .collect();
            (!pts.is_empty()).then_some((sv.as_str(), pts))
        })
        .collect();
    let root = SVGBackend::new(path, (WIDTH, LINE_HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    if series.is_empty() {
        root.present().map_err(|e| anyhow!("{e:?}"))?;
        return Ok(());
    }
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1));
    let (x_lo, x_hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (y_lo, y_hi) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let x_range = (x_lo / 1.5).max(0.5)..(x_hi * 1.5);
    let caption = format!(
        "{} ({}{})",
        sec.title,
        sec.y,
        if sec.log_y { ", log scale" } else { "" }
    );
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(70);
    let err = |e| anyhow!("{e:?}");
    if sec.log_y {
        let y_range = (y_lo / 2.0).max(1e-3)..(y_hi * 2.0);
        let mut chart = builder
            .build_cartesian_2d(x_range.log_scale(), y_range.log_scale())
            .map_err(err)?;
        lines(&mut chart, &series, sec).map_err(err)?;
    } else {
        let y_range = 0.0..(y_hi * 1.12).max(1.0);
        let mut chart = builder
            .build_cartesian_2d(x_range.log_scale(), y_range)
            .map_err(err)?;
        lines(&mut chart, &series, sec).map_err(err)?;
    }
    root.present().map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

fn lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[(&str, Vec<(f64, f64)>)],
    sec: &Section,
) -> DrawResult
where
    X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc(sec.x)
        .y_desc(sec.y)
        .x_label_formatter(&|v| value_text(*v))
        .y_label_formatter(&|v| value_text(*v))
        .draw()?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let style = if name.starts_with("vellum") {
            color.stroke_width(3)
        } else {
            color.stroke_width(1)
        };
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), style))?
            .label(*name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    s: &Summary,
    servers: &[&str],
    p: &Panel,
) -> DrawResult {
    let rows: Vec<(&str, Option<f64>)> = servers
        .iter()
        .map(|sv| (*sv, s.median(sv, p.metric)))
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
