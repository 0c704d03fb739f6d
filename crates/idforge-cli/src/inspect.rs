//! `idforge inspect`: decode ids into their parts, from arguments or standard input.

use std::io::{self, BufRead, IsTerminal, Write};
use std::process::ExitCode;

use clap::Args;
use idforge::inspect::Inspector;
use idforge::schemes::catalog::Kind;
use idforge::text::Format;

use crate::usage;

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Ids to decode; `-` reads ids from standard input, one per line, as does giving none when
    /// standard input is not a terminal.
    ids: Vec<String>,
    /// The scheme of the ids (names as in `gen`, case-insensitive). Needed for integer ids; UUIDs
    /// are recognised by their version (8: uprotocol-v8, b: locality), except version 7: uuid7,
    /// uprotocol and other libraries use its bits differently, so without --scheme uuid7 or
    /// --scheme uprotocol only its time and raw rand_a/rand_b bits are shown. TypeID text with a
    /// prefix (user_01h455vb4pex5vsknk084sn02q) is recognised by its shape; a bare TypeID suffix
    /// needs --scheme typeid (or --format typeid). KSUID text (27 base62 characters, not all
    /// digits) is recognised by its shape; --scheme ksuid also reads idforge's counter in it.
    #[arg(long, short = 's', value_parser = crate::names::SchemeName, hide_possible_values = true)]
    scheme: Option<String>,
    /// Layout of the custom scheme (see `idforge gen --help`).
    #[arg(long)]
    layout: Option<String>,
    /// The ids' format, as `gen --format` writes them: dec, hex, base32, uuid, ulid, xid, typeid,
    /// or time (nanots, nanots-host). Without it, ulid, objectid and xid ids are read in their
    /// own text (as strictly as the format's reference reads it), tsid's 13 characters as base32,
    /// and otherwise the format is detected: text that could be two (16 digits: decimal or 64-bit
    /// hex) is refused with the choices.
    #[arg(long, short = 'f')]
    format: Option<String>,
    /// Print one JSON object per id (ids as strings; unix_ms and unix_ns as integers).
    #[arg(long)]
    json: bool,
    /// nanots-host: decimal digits of the host id (2, the default, or 3).
    #[arg(long)]
    host_digits: Option<u32>,
}

/// Runs `idforge inspect`.
pub fn run(a: InspectArgs) -> anyhow::Result<ExitCode> {
    let kind = match (&a.scheme, &a.layout) {
        (Some(name), layout) => Some(Kind::from_name(name, layout.as_deref())?),
        (None, Some(layout)) => Some(Kind::from_name("custom", Some(layout))?),
        (None, None) => None,
    };
    let timestamps = matches!(
        kind,
        Some(Kind::NanoTsHost) | Some(Kind::Layout(idforge::Scheme::NanoTs))
    );
    let format = match a.format.as_deref().map(str::trim) {
        None => None,
        // Timestamp text is recognised by its shape; `time` says the ids are nanots values.
        Some("time") if timestamps => None,
        Some("time") => usage!("--format time applies only to nanots and nanots-host ids; name the scheme with --scheme"),
        Some(f) => Some(f.parse::<Format>().map_err(crate::failure::Usage)?),
    };
    if a.host_digits.is_some() && kind != Some(Kind::NanoTsHost) {
        usage!("--host-digits applies only to nanots-host ids (--scheme nanots-host)");
    }
    let from_stdin = a.ids.is_empty();
    if from_stdin && io::stdin().is_terminal() {
        usage!("give the ids to decode as arguments, or on standard input (`-`, or no ids when it is not a terminal)");
    }
    let mut inspector =
        Inspector::new(kind, format, a.host_digits)?.with_hint_rewriter(crate::failure::flagify);
    // Lines are decoded straight into the output buffer (no copy per line), and read from the
    // input buffer where they lie whole in it (copied only when one spans two reads).
    let mut out = Out {
        buf: Vec::with_capacity(OUT_CAPACITY + 1024),
        to: io::stdout().lock(),
    };
    let mut failures = 0u64;
    // `place` says where a bad id came from: nothing for an argument, the line number for
    // standard input (made only for a bad id). Returns whether the id was bad.
    let mut one = |id: &str, line_no: Option<u64>, out: &mut Out| -> io::Result<bool> {
        match inspector.write(id, a.json, &mut out.buf) {
            Ok(()) => {
                out.buf.push(b'\n');
                out.spill()?;
                Ok(false)
            }
            Err(e) => {
                out.flush()?;
                let msg = crate::failure::flagify(&e.to_string());
                let place = line_no
                    .map(|n| format!("standard input line {n}: "))
                    .unwrap_or_default();
                eprintln!("idforge: {place}{}: {msg}", clip_input(id.trim()));
                Ok(true)
            }
        }
    };
    let stdin_args = usize::from(from_stdin);
    for arg in a
        .ids
        .iter()
        .map(String::as_str)
        .chain(std::iter::repeat_n("-", stdin_args))
    {
        if arg != "-" {
            failures += u64::from(one(arg, None, &mut out)?);
            continue;
        }
        let mut input = io::BufReader::with_capacity(64 * 1024, io::stdin().lock());
        // A line begun in one read and ended in the next.
        let mut partial = Vec::new();
        let mut line_no = 0u64;
        // A line as text, or `None` where it is not UTF-8.
        let mut line = |text: Option<&str>, out: &mut Out| -> io::Result<u64> {
            line_no += 1;
            Ok(match text.map(str::trim_end) {
                Some(l) if l.trim_start().is_empty() => 0,
                Some(l) => u64::from(one(l, Some(line_no), out)?),
                None => {
                    out.flush()?;
                    eprintln!(
                        "idforge: standard input line {line_no}: not UTF-8 text, so not an id"
                    );
                    1
                }
            })
        };
        loop {
            let chunk = input.fill_buf()?;
            if chunk.is_empty() {
                if !partial.is_empty() {
                    failures += line(std::str::from_utf8(&partial).ok(), &mut out)?;
                }
                break;
            }
            let mut rest = chunk;
            if !partial.is_empty() {
                match memchr::memchr(b'\n', rest) {
                    Some(at) => {
                        partial.extend_from_slice(&rest[..=at]);
                        failures += line(std::str::from_utf8(&partial).ok(), &mut out)?;
                        partial.clear();
                        rest = &rest[at + 1..];
                    }
                    None => {
                        partial.extend_from_slice(rest);
                        rest = &[];
                    }
                }
            }
            // The lines that end in this read, checked as UTF-8 at once (a line end is ASCII:
            // each line of valid text is valid text), or one by one where that fails, to name
            // the bad line. Line ends are found 16 or 32 bytes at a time.
            if let Some(last) = memchr::memrchr(b'\n', rest) {
                let whole = &rest[..=last];
                let text = std::str::from_utf8(whole).ok();
                let mut start = 0;
                for at in memchr::memchr_iter(b'\n', whole) {
                    let one_line = match text {
                        // At a line end: a character boundary.
                        Some(t) => Some(&t[start..=at]),
                        None => std::str::from_utf8(&whole[start..=at]).ok(),
                    };
                    failures += line(one_line, &mut out)?;
                    start = at + 1;
                }
                rest = &rest[last + 1..];
            }
            partial.extend_from_slice(rest);
            let used = chunk.len();
            input.consume(used);
        }
    }
    out.flush()?;
    // The hint that an id's layout is unknown, said once rather than on each line (JSON
    // objects carry it).
    if !a.json {
        for (hint, n) in inspector.hints() {
            match n {
                1 => eprintln!("idforge: hint: {hint}"),
                n => eprintln!("idforge: hint (for {n} of the ids): {hint}"),
            }
        }
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Bytes of output gathered before they are written.
const OUT_CAPACITY: usize = 64 * 1024;

/// Standard output, buffered in a `Vec` the inspector appends its lines to.
struct Out {
    buf: Vec<u8>,
    to: io::StdoutLock<'static>,
}

impl Out {
    /// Writes the buffer once it is full.
    fn spill(&mut self) -> io::Result<()> {
        if self.buf.len() >= OUT_CAPACITY {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.to.write_all(&self.buf)?;
        self.buf.clear();
        self.to.flush()
    }
}

/// Input echoed in a message: at most 80 characters, control characters escaped (`\u{1b}`), so
/// that text read from a file can neither drive the terminal (escape sequences) nor hide itself.
fn clip_input(s: &str) -> String {
    let mut c = String::new();
    let long = s.chars().count() > 80;
    for ch in s.chars().take(if long { 77 } else { 80 }) {
        if ch.is_control() {
            c.extend(ch.escape_default());
        } else {
            c.push(ch);
        }
    }
    if long {
        c.push_str("...");
    }
    c
}
