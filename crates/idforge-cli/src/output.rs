//! Writing ids to standard output, in batches, with progress on long runs.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use idforge::schemes::ksuid::Ksuid;
use idforge::schemes::open::{Opened, TextFormat};
use idforge::text;

/// Writes `count` ids of `g` in `format`, one per line; progress on stderr when `progress`.
///
/// # Errors
/// The generator's errors (ids written before one are unique), and write errors.
pub fn write_ids(g: &Opened, count: u64, format: TextFormat, progress: bool) -> anyhow::Result<()> {
    let stdout = io::stdout();
    let mut w = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let start = Instant::now();
    let mut last_report = start;
    let mut done = 0u64;
    let bits = g.bits();
    // Taken 4096 at a time: one reservation per tick's worth within each.
    const CHUNK: u64 = 4096;
    while done < count {
        let n = CHUNK.min(count - done);
        let mut err = None;
        g.take(n, |id| {
            if err.is_none() {
                // Plain formats are encoded on the stack: no allocation per id.
                let r = match format {
                    TextFormat::Plain(f) => w.write_all(text::encode(id, bits, f).as_bytes()),
                    TextFormat::TypeId(p) => w.write_all(p.encode(id).as_bytes()),
                    TextFormat::Ksuid => w.write_all(Ksuid::from_id(id).encode().as_bytes()),
                    TextFormat::Time => w.write_all(g.render(id, format).as_bytes()),
                }
                .and_then(|()| w.write_all(b"\n"));
                if let Err(e) = r {
                    err = Some(e);
                }
            }
        })?;
        if let Some(e) = err {
            return Err(e.into());
        }
        done += n;
        if progress {
            let now = Instant::now();
            if now.duration_since(last_report) >= Duration::from_millis(500) {
                last_report = now;
                let secs = now.duration_since(start).as_secs_f64();
                eprint!(
                    "\ridforge: {done}/{count} ids ({:.0}%), {:.1} M ids/s   ",
                    done as f64 * 100.0 / count as f64,
                    done as f64 / secs / 1e6
                );
            }
        }
    }
    w.flush()?;
    if progress {
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "\ridforge: {done} ids in {secs:.2} s ({:.1} M ids/s)            ",
            done as f64 / secs.max(1e-9) / 1e6
        );
    }
    Ok(())
}
