//! Pictures of what the emulator counted, drawn from its own trace: the
//! sample request that each line's counters keep ([`SiteCounters::sample`]).
//!
//! - [`request`]: one warp's request. Global memory: each of the 32 lanes
//!   against the 32-byte sectors it touches, bytes used against bytes
//!   fetched. Shared memory: each lane against the 32 banks, the word it
//!   touches in each, and the lanes that conflict (two words in one bank in
//!   one phase) marked.
//! - [`summary`]: sectors or wavefronts per request at each line of a
//!   kernel, against the ideal.
//! - [`ascii`]: [`request`] for a terminal.
//! - [`race`] and [`race_ascii`]: the two accesses of a race the checker
//!   found, with their threads and lines.
//! - [`reuse`] and [`reuse_ascii`]: a GEMM's loads per 8 FMAs, line by
//!   line: the register reuse of its inner loop.
//!
//! Nothing here is drawn by hand: change a kernel and its pictures change.
//! The SVG is plain (rectangles, lines, text), written by a small builder
//! that escapes its text.

use super::{Finding, FindingKind, LaneAccess, Report, Site, SiteCounters, bank_ways, request_cost};
use coalesce_kernels::Space;
use std::fmt::Write as _;

const LANES: u32 = 32;
const BANKS: u32 = 32;
/// Colours: bytes a lane asked for, bytes fetched but unused, a conflict.
const USED: &str = "#3b6fb6";
const IDLE: &str = "#e6e9ef";
const CLEAN: &str = "#4f9d69";
const CONFLICT: &str = "#d1495b";
const INK: &str = "#222";

/// An SVG document: a few element kinds, coordinates in pixels.
struct Svg {
    body: String,
    width: u32,
    height: u32,
}

impl Svg {
    fn new(width: u32, height: u32) -> Svg {
        Svg { body: String::new(), width, height }
    }

    fn rect(&mut self, (x, y, w, h): (u32, u32, u32, u32), fill: &str, stroke: Option<&str>) {
        let stroke = stroke.map_or(String::new(), |s| format!(r#" stroke="{s}" stroke-width="0.6""#));
        let _ = writeln!(self.body, r#"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}"{stroke}/>"#);
    }

    fn line(&mut self, (x1, y1): (u32, u32), (x2, y2): (u32, u32), colour: &str) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}" stroke-width="1"/>"#
        );
    }

    /// Text at `(x, y)` (its baseline), `size` pixels, anchored `start`,
    /// `middle` or `end`.
    fn text(&mut self, (x, y): (u32, u32), size: u32, anchor: &str, colour: &str, text: &str) {
        let text = text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let _ = writeln!(
            self.body,
            r#"<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" fill="{colour}">{text}</text>"#
        );
    }

    fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
             font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\">\n\
             <rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n{body}</svg>\n",
            w = self.width,
            h = self.height,
            body = self.body
        )
    }
}

/// `file:line:column` and what the access does, for titles:
/// `03_tiled.rs:122:58 shared ld` (a line may hold several accesses).
pub fn line_name(c: &SiteCounters) -> String {
    format!("{}:{}:{} {}", c.site.file_name(), c.site.line, c.site.column, c.op.name())
}

/// The lanes that run the sample request, by lane.
fn by_lane(sample: &[LaneAccess]) -> Vec<Option<LaneAccess>> {
    let mut lanes = vec![None; LANES as usize];
    for a in sample {
        lanes[a.lane as usize] = Some(*a);
    }
    lanes
}

/// One warp's request at the line of `c`, as SVG, under `title` (the
/// kernel's name, say).
pub fn request(title: &str, c: &SiteCounters) -> String {
    match c.op.space() {
        Space::Global => global(title, c),
        Space::Shared => shared(title, c),
    }
}

/// The sectors of a global request, in order: `(sector, bytes used)`.
fn sectors(sample: &[LaneAccess]) -> Vec<(u64, u32)> {
    let mut used: Vec<(u64, u32)> = Vec::new();
    for a in sample {
        for byte in a.addr..a.addr + a.bytes as u64 {
            match used.iter_mut().find(|s| s.0 == byte / 32) {
                Some(s) => s.1 += 1,
                None => used.push((byte / 32, 1)),
            }
        }
    }
    used.sort_unstable();
    used
}

fn global(title: &str, c: &SiteCounters) -> String {
    const SLOT: u32 = 5; // pixels per 4-byte slot: a sector is 8 slots
    const ROW: u32 = 13;
    const LEFT: u32 = 64;
    const TOP: u32 = 78;
    let sectors = sectors(&c.sample);
    let (cost, ideal) = request_cost(c.op, &c.sample);
    let sector_w = 8 * SLOT + 4;
    let width = (LEFT + sectors.len() as u32 * sector_w + 16).max(560);
    let height = TOP + LANES * ROW + 48;
    let mut svg = Svg::new(width, height);
    svg.text((8, 18), 13, "start", INK, &format!("{title} · {} · {} B per lane", line_name(c), c.width));
    svg.text((8, 36), 12, "start", INK, &format!("one warp's request: {cost} sectors of 32 B (ideal {ideal})"));
    svg.text((LEFT, TOP - 32), 10, "start", INK, "32-byte sector, counted from the request's first →");
    let column = |sector: u64| sectors.iter().position(|s| s.0 == sector).unwrap_or(0) as u32;
    for (i, &(sector, _)) in sectors.iter().enumerate() {
        let x = LEFT + i as u32 * sector_w;
        svg.rect((x, TOP, 8 * SLOT, LANES * ROW), IDLE, Some("#b8bfcc"));
        if sectors.len() <= 40 || i % 4 == 0 {
            svg.text((x + 4 * SLOT, TOP - 20), 9, "middle", INK, &sector.to_string());
        }
    }
    for (lane, a) in by_lane(&c.sample).into_iter().enumerate() {
        let y = TOP + lane as u32 * ROW;
        svg.text((LEFT - 8, y + ROW - 3), 10, "end", INK, &format!("lane {lane}"));
        let Some(a) = a else { continue };
        for slot in (a.addr / 4)..(a.addr + a.bytes as u64).div_ceil(4) {
            let x = LEFT + column(slot / 8) * sector_w + (slot % 8) as u32 * SLOT;
            svg.rect((x, y + 1, SLOT, ROW - 2), USED, None);
        }
    }
    let asked: u64 = c.sample.iter().map(|a| a.bytes as u64).sum();
    let fetched = 32 * sectors.len() as u64;
    svg.text(
        (8, TOP + LANES * ROW + 24),
        12,
        "start",
        INK,
        &format!(
            "bytes used {asked} of {fetched} fetched ({:.0}%); blue: the bytes each lane asks for",
            100.0 * asked as f64 / fetched.max(1) as f64
        ),
    );
    svg.finish()
}

fn shared(title: &str, c: &SiteCounters) -> String {
    const CELL: u32 = 24;
    const ROW: u32 = 14;
    const LEFT: u32 = 64;
    const TOP: u32 = 80;
    let (cost, ideal) = request_cost(c.op, &c.sample);
    let (per_phase, ways) = bank_ways(&c.sample);
    let width = LEFT + BANKS * CELL + 16;
    let height = TOP + LANES * ROW + 74;
    let mut svg = Svg::new(width, height);
    svg.text((8, 18), 13, "start", INK, &format!("{title} · {} · {} B per lane", line_name(c), c.width));
    let worst = ways.iter().flat_map(|w| w.iter()).copied().max().unwrap_or(0);
    let verdict = if worst > 1 { format!("{worst}-way bank conflict") } else { "no bank conflict".to_owned() };
    svg.text(
        (8, 36),
        12,
        "start",
        INK,
        &format!("one warp's request: {cost} wavefronts (ideal {ideal}): {verdict}; phases of {per_phase} lanes"),
    );
    for bank in 0..BANKS {
        svg.text((LEFT + bank * CELL + CELL / 2, TOP - 8), 9, "middle", INK, &bank.to_string());
    }
    svg.text((LEFT, TOP - 22), 10, "start", INK, "bank →");
    svg.rect((LEFT, TOP, BANKS * CELL, LANES * ROW), IDLE, Some("#b8bfcc"));
    for (lane, a) in by_lane(&c.sample).into_iter().enumerate() {
        let y = TOP + lane as u32 * ROW;
        svg.text((LEFT - 8, y + ROW - 3), 10, "end", INK, &format!("lane {lane}"));
        let Some(a) = a else { continue };
        let phase = &ways[(a.lane / per_phase) as usize];
        for word in a.addr / 4..(a.addr + a.bytes as u64).div_ceil(4) {
            let bank = (word % BANKS as u64) as u32;
            let fill = if phase[bank as usize] > 1 { CONFLICT } else { CLEAN };
            svg.rect((LEFT + bank * CELL + 1, y + 1, CELL - 2, ROW - 2), fill, None);
            // The word's row of 32 (which 128 bytes): lanes in one bank on
            // different rows are the conflict.
            svg.text((LEFT + bank * CELL + CELL / 2, y + ROW - 3), 9, "middle", "white", &(word / 32).to_string());
        }
    }
    for phase in 1..LANES / per_phase {
        let y = TOP + phase * per_phase * ROW;
        svg.line((LEFT - 4, y), (LEFT + BANKS * CELL, y), INK);
    }
    let base = TOP + LANES * ROW;
    svg.text((LEFT - 8, base + 14), 9, "end", INK, "ways");
    for bank in 0..BANKS {
        let w = ways.iter().map(|p| p[bank as usize]).max().unwrap_or(0);
        let colour = if w > 1 { CONFLICT } else { INK };
        svg.text((LEFT + bank * CELL + CELL / 2, base + 14), 9, "middle", colour, &w.to_string());
    }
    svg.text(
        (8, base + 36),
        11,
        "start",
        INK,
        "each cell: the word a lane touches in that bank, as its row of 32 words (128 B);",
    );
    svg.text(
        (8, base + 52),
        11,
        "start",
        INK,
        "red: another lane of its phase needs a different word of the same bank (a wavefront each)",
    );
    svg.finish()
}

/// Sectors or wavefronts per request at each line of `report`, against the
/// ideal, as SVG under `title`.
pub fn summary(title: &str, report: &Report) -> String {
    const ROW: u32 = 22;
    const LEFT: u32 = 300;
    const BAR: u32 = 420;
    const TOP: u32 = 50;
    let lines = &report.counters.sites;
    let max = lines.iter().map(|c| c.tally.per_request()).fold(32.0, f64::max);
    let height = TOP + lines.len() as u32 * ROW + 40;
    let mut svg = Svg::new(LEFT + BAR + 180, height);
    svg.text((8, 18), 13, "start", INK, &format!("{title}: every line that accesses memory"));
    svg.text((8, 36), 11, "start", INK, "per request: 32-byte sectors (global), wavefronts (shared); | the ideal");
    let scale = |v: f64| (v / max * BAR as f64).round() as u32;
    for (i, c) in lines.iter().enumerate() {
        let y = TOP + i as u32 * ROW;
        let t = c.tally;
        svg.text((LEFT - 8, y + 15), 11, "end", INK, &format!("{} ({} B)", line_name(c), c.width));
        let over = t.per_request() > t.ideal_per_request() + 1e-9;
        let fill = match (c.op.space(), over) {
            (_, true) => CONFLICT,
            (Space::Global, false) => USED,
            (Space::Shared, false) => CLEAN,
        };
        svg.rect((LEFT, y + 4, scale(t.per_request()).max(1), ROW - 8), fill, None);
        let ideal = LEFT + scale(t.ideal_per_request());
        svg.line((ideal, y + 1), (ideal, y + ROW - 1), INK);
        let label = format!("{:.2} {} (ideal {:.2})", t.per_request(), c.op.unit(), t.ideal_per_request());
        svg.text((LEFT + scale(t.per_request()).max(1) + 6, y + 15), 10, "start", INK, &label);
    }
    svg.text(
        (8, height - 12),
        10,
        "start",
        INK,
        "counted by coalesce's CPU emulator; red: more transactions per request than the ideal",
    );
    svg.finish()
}

/// [`request`] for a terminal: a row per lane. Global: a column per sector
/// the request touches, `#` where the lane's bytes are. Shared: a column per
/// bank, `o` where the lane's word is alone in its bank, `X` where it
/// conflicts.
pub fn ascii(c: &SiteCounters) -> String {
    let (cost, ideal) = request_cost(c.op, &c.sample);
    let mut s = format!("{} ({} B per lane): ", line_name(c), c.width);
    let lanes = by_lane(&c.sample);
    match c.op.space() {
        Space::Global => {
            let sectors = sectors(&c.sample);
            let _ = writeln!(s, "{cost} sectors per request (ideal {ideal}); a column per 32-byte sector");
            for (lane, a) in lanes.iter().enumerate() {
                let mut row = vec!['.'; sectors.len()];
                if let Some(a) = a {
                    for byte in (a.addr..a.addr + a.bytes as u64).step_by(4) {
                        if let Some(i) = sectors.iter().position(|s| s.0 == byte / 32) {
                            row[i] = '#';
                        }
                    }
                }
                let _ = writeln!(s, "  lane {lane:>2} |{}|", row.into_iter().collect::<String>());
            }
        }
        Space::Shared => {
            let (per_phase, ways) = bank_ways(&c.sample);
            let _ = writeln!(s, "{cost} wavefronts per request (ideal {ideal}); a column per bank, X: a conflict");
            for (lane, a) in lanes.iter().enumerate() {
                let mut row = vec!['.'; BANKS as usize];
                if let Some(a) = a {
                    let phase = &ways[(a.lane / per_phase) as usize];
                    for word in a.addr / 4..(a.addr + a.bytes as u64).div_ceil(4) {
                        let bank = (word % BANKS as u64) as usize;
                        row[bank] = if phase[bank] > 1 { 'X' } else { 'o' };
                    }
                }
                let _ = writeln!(s, "  lane {lane:>2} |{}|", row.into_iter().collect::<String>());
            }
        }
    }
    s
}

/// A file name for the picture of `c` among `report`'s lines: the op's
/// name and its rank among the lines of that op, in source order
/// (`shared-ld-1`), so that names survive edits that move lines.
pub fn file_stem(report: &Report, c: &SiteCounters) -> String {
    let rank = report.counters.of(c.op).position(|x| x.site == c.site).unwrap_or(0) + 1;
    format!("{}-{rank}", c.op.name().replace([' ', '.'], "-"))
}

/// Whether `f` is a race, which [`race`] draws.
pub fn is_race(f: &Finding) -> bool {
    matches!(f.kind, FindingKind::SharedRace { .. } | FindingKind::GlobalRace { .. })
}

/// The two sides of a race, the earlier first: who made each access
/// (thread, and block between blocks), at which line, doing what to which
/// word. `None` unless `f` is a race.
fn race_sides(f: &Finding) -> Option<[[String; 3]; 2]> {
    let here = |site: Site| format!("{}:{}:{}", site.file_name(), site.line, site.column);
    let (b, t) = (f.block, f.thread);
    match &f.kind {
        FindingKind::SharedRace { byte, access, other_access, other_thread, other_site } => {
            let other = other_thread.map_or("several threads".to_owned(), |o| format!("thread {o}"));
            let word = format!("shared word {} (byte {byte})", byte / 4);
            Some([
                [other, here(*other_site), format!("{} {word}", other_access.verb())],
                [format!("thread {t}"), here(f.site), format!("{} {word}", access.verb())],
            ])
        }
        FindingKind::GlobalRace { address, access, other_access, other_block, other_thread, other_site } => {
            let word = format!("global {address:#x}");
            Some([
                [
                    format!("block {other_block} thread {other_thread}"),
                    here(*other_site),
                    format!("{} {word}", other_access.verb()),
                ],
                [format!("block {b} thread {t}"), here(f.site), format!("{} {word}", access.verb())],
            ])
        }
        _ => None,
    }
}

/// What orders nothing between the two sides of a race.
fn race_gap(f: &Finding) -> &'static str {
    match f.kind {
        FindingKind::GlobalRace { .. } => "two blocks of one launch: nothing orders them, in either order",
        _ => "no sync_threads between them: nothing orders the two",
    }
}

/// [`race`] for a terminal: the two accesses, one above the other.
pub fn race_ascii(f: &Finding) -> String {
    let Some(sides) = race_sides(f) else { return String::new() };
    let block = match f.kind {
        FindingKind::GlobalRace { .. } => String::new(),
        _ => format!(" in block {}", f.block),
    };
    let who = sides.iter().map(|s| s[0].len()).max().unwrap_or(0);
    let row = |[w, l, d]: &[String; 3]| format!("  {w:<who$}  {l:<24} {d}\n");
    format!(
        "the race{block} ({} time(s) in the launch):\n{}  {:>who$}  {}\n{}",
        f.count,
        row(&sides[0]),
        "|",
        race_gap(f),
        row(&sides[1])
    )
}

/// A race as SVG under `title`: the two accesses, their threads and
/// lines, and the gap that no barrier closes.
pub fn race(title: &str, f: &Finding) -> String {
    let Some(sides) = race_sides(f) else { return Svg::new(10, 10).finish() };
    let (width, height) = (860, 190);
    let mut svg = Svg::new(width, height);
    svg.text((8, 18), 13, "start", INK, &format!("{title}: a race the emulator found"));
    for (side, y) in sides.iter().zip([40, 116]) {
        svg.rect((20, y, width - 40, 34), IDLE, Some("#b8bfcc"));
        for (text, x) in side.iter().zip([30, 330, 540]) {
            svg.text((x, y + 22), 11, "start", INK, text);
        }
    }
    svg.line((60, 74), (60, 116), CONFLICT);
    svg.text((72, 100), 11, "start", CONFLICT, race_gap(f));
    let foot = format!("{} time(s) in the launch; checked by coalesce's CPU emulator", f.count);
    svg.text((8, height - 12), 10, "start", INK, &foot);
    svg.finish()
}

/// The load lines of a GEMM's `report` with their loads per 8 FMAs (one
/// thread's pass over its 8 outputs): `(line, loads)`.
fn loads_per_8(report: &Report, fmas: u64) -> Vec<(String, f64)> {
    report
        .counters
        .sites
        .iter()
        .filter(|c| !c.op.is_store())
        .map(|c| (line_name(c), 8.0 * 32.0 * c.tally.requests as f64 / fmas.max(1) as f64))
        .collect()
}

/// [`reuse`] for a terminal: a bar per load line, loads per 8 FMAs.
pub fn reuse_ascii(report: &Report, fmas: u64) -> String {
    let mut s = String::from("register reuse: loads per 8 FMAs of one thread, a # per load\n");
    let lines = loads_per_8(report, fmas);
    for (name, v) in &lines {
        let _ = writeln!(s, "  {name:<34} {:<16} {v:.2}", "#".repeat(v.round().min(16.0) as usize));
    }
    let total: f64 = lines.iter().map(|l| l.1).sum();
    let _ = writeln!(s, "  {:<34} {:<16} {total:.2}", "all loads", "");
    let _ = writeln!(s, "  {:<34} {:<16} 8", "FMAs", "########");
    s
}

/// Register reuse as SVG under `title`: loads per 8 FMAs at each load line
/// of a GEMM, against the 8 FMAs they feed.
pub fn reuse(title: &str, report: &Report, fmas: u64) -> String {
    const ROW: u32 = 24;
    const LEFT: u32 = 300;
    const UNIT: u32 = 24;
    let mut lines = loads_per_8(report, fmas);
    lines.push(("FMAs".to_owned(), 8.0));
    let height = 50 + lines.len() as u32 * ROW + 30;
    let mut svg = Svg::new(LEFT + 17 * UNIT + 80, height);
    svg.text((8, 18), 13, "start", INK, &format!("{title}: loads per 8 FMAs of one thread"));
    svg.text((8, 36), 11, "start", INK, "a value loaded once into a register feeds several FMAs: fewer loads per FMA");
    for (i, (name, v)) in lines.iter().enumerate() {
        let y = 50 + i as u32 * ROW;
        let fill = if name == "FMAs" { CLEAN } else { USED };
        svg.text((LEFT - 8, y + 16), 11, "end", INK, name);
        svg.rect((LEFT, y + 4, ((v.min(16.0) * UNIT as f64).round() as u32).max(1), ROW - 8), fill, None);
        svg.text((LEFT + (v.min(16.0) * UNIT as f64) as u32 + 6, y + 16), 10, "start", INK, &format!("{v:.2}"));
    }
    svg.finish()
}
