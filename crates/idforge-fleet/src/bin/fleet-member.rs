//! A fleet member process for the etcd tests: joins a namespace, prints its node id and fencing
//! token on stderr, then issues ids of a scheme at a bounded rate, one per line on stdout, until
//! its time is up; then it shuts down cleanly and prints its status.
//!
//! `fleet-member ENDPOINTS NAMESPACE SECONDS [RATE_PER_S] [MAX_NODE] [TTL_MS]`
//!
//! `IDFORGE_CLOCK_OFFSET_MS` (may be negative) shifts this process's clock, for both the protocol
//! and the generator: a host whose clock was stepped back.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::OpenOptions;
use idforge::{Clock, Generator, Scheme, Sequencer, WallClock};
use idforge_fleet::etcd::EtcdStore;
use idforge_fleet::{FleetOptions, Member, Store};

/// The wall clock shifted by a fixed offset.
#[derive(Debug, Clone, Copy)]
struct Offset(i64);

impl Clock for Offset {
    fn now_ns(&self) -> u64 {
        WallClock.now_ns().saturating_add_signed(self.0)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!(
            "usage: fleet-member ENDPOINTS NAMESPACE SECONDS [RATE_PER_S] [MAX_NODE] [TTL_MS]"
        );
        std::process::exit(2);
    }
    let endpoints: Vec<String> = args[1].split(',').map(String::from).collect();
    let ns = &args[2];
    let secs: f64 = args[3].parse().expect("SECONDS");
    let rate: u64 = args.get(4).map_or(20_000, |r| r.parse().expect("RATE"));
    let kind = Kind::from_name("snowflake", None).unwrap();
    let tb = kind.timebase(&OpenOptions::default()).unwrap().unwrap();
    let mut opts = FleetOptions::new(ns.clone(), &kind, &OpenOptions::default()).expect("options");
    opts.max_node = args.get(5).map_or(1023, |m| m.parse().expect("MAX_NODE"));
    if let Some(t) = args.get(6) {
        opts.ttl = Duration::from_millis(t.parse().expect("TTL_MS"));
        opts.reserve_ahead = (opts.ttl / 5).max(Duration::from_millis(200));
    }
    let offset: i64 = std::env::var("IDFORGE_CLOCK_OFFSET_MS")
        .ok()
        .map_or(0, |v| {
            v.parse::<i64>().expect("IDFORGE_CLOCK_OFFSET_MS") * 1_000_000
        });
    let clock = Offset(offset);
    opts.clock = Some(Arc::new(clock));
    let store: Arc<dyn Store> = match EtcdStore::connect(&endpoints) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("fleet-member: {e}");
            std::process::exit(3);
        }
    };
    // With IDFORGE_WAIT_FOR_NODE set, a full namespace (or a clock behind every free id's mark)
    // is waited out, retrying every 100 ms, until SECONDS have passed.
    let wait = std::env::var_os("IDFORGE_WAIT_FOR_NODE").is_some();
    let started = Instant::now();
    let member = loop {
        match Member::join(store.clone(), opts.clone()) {
            Ok(m) => break m,
            Err(e) if wait && started.elapsed().as_secs_f64() < secs => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => {
                eprintln!("fleet-member: {e}");
                std::process::exit(4);
            }
        }
    };
    let st = member.status();
    eprintln!("joined node={} token={}", st.node, st.token);
    let seq = Sequencer::with_cell(clock, member.cell(), tb, Scheme::Snowflake.default_policy())
        .expect("sequencer");
    let g = Generator::with_sequencer(&Scheme::Snowflake, Some(member.node()), seq).expect("open");
    let out = std::io::stdout();
    let mut w = std::io::BufWriter::new(out.lock());
    let start = Instant::now();
    let mut issued = 0u64;
    let mut refused = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        // Pace: at most `rate` ids per second, in steps of 1 ms.
        let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
        if issued >= due {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        match g.next() {
            Ok(id) => {
                issued += 1;
                writeln!(w, "{id}").unwrap();
                if issued % 256 == 0 {
                    w.flush().unwrap();
                }
            }
            Err(_) => {
                refused += 1;
                w.flush().unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    w.flush().unwrap();
    let st = member.status();
    eprintln!(
        "done issued={issued} refused={refused} store_calls={} token={}",
        st.store_calls, st.token
    );
    member.shutdown().expect("clean shutdown");
}
