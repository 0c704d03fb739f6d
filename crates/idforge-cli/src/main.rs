//! `idforge`: generate and decode unique ids. This file only wires the commands: each lives in
//! its own module, and every scheme opens through the library.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod bench;
mod failure;
mod fleet;
mod gen;
mod inspect;
mod log;
mod output;
mod schemes;
mod serve;
mod stdout;
mod torture;

/// The version, with the git commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("IDFORGE_GIT_COMMIT"),
    ")"
);

/// Unique ids in every layout that matters: UUIDv7, uProtocol, GlobalId, Snowflake, Sonyflake,
/// Chronicle's nanosecond timestamps, Groupon's Locality UUID and custom layouts, from one
/// lock-free engine.
#[derive(Parser, Debug)]
#[command(name = "idforge", version = VERSION, about, long_about = None, after_help = failure::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate ids, one per line.
    #[command(after_help = GEN_HELP)]
    Gen(Box<gen::GenArgs>),
    /// Decode ids into their parts (time, node, counter, version).
    #[command(after_help = INSPECT_HELP)]
    Inspect(inspect::InspectArgs),
    /// List every scheme with its layout, capacity and the year it runs out.
    Schemes {
        /// One JSON object per scheme (an array).
        #[arg(long)]
        json: bool,
    },
    /// Node ids leased from etcd: who holds which, and every node id's mark.
    Fleet {
        /// etcd client URLs, comma-separated (falls back to IDFORGE_ETCD).
        #[arg(long, env = "IDFORGE_ETCD", value_name = "ENDPOINTS")]
        etcd: String,
        #[command(flatten)]
        access: fleet::EtcdAccess,
        /// The namespace (as `gen --namespace`; default the scheme's name, e.g. snowflake).
        #[arg(long)]
        namespace: String,
    },
    /// Measure every scheme on this machine: ns per id, two threads, batches, the clock.
    Bench(bench::BenchArgs),
    /// Print a shell completion script: `idforge completions bash > /etc/bash_completion.d/idforge`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `idforge man | man -l -`.
    Man,
    /// Run everything at once for a bounded time (processes killed and restarted on a shared
    /// state file, forks, oversubscribed threads, clock jumps) and print one summary.
    Torture(torture::TortureArgs),
    /// Serve ids over HTTP (see docs/SERVICE.md): GET /v1/ids/SCHEME?count=N, /v1/inspect/ID,
    /// /v1/schemes, /healthz, /readyz, /metrics, /openapi.json.
    #[command(after_help = serve::after_help())]
    Serve(Box<serve::ServeArgs>),
    /// Internal: one fork round of `torture`.
    #[command(hide = true)]
    TortureFork {
        /// Ids per process after the fork.
        #[arg(long)]
        count: usize,
        /// Directory for the ids.
        #[arg(long)]
        out: std::path::PathBuf,
        /// The generator: uuid7, snowflake running ahead of the clock, or fleet (snowflake
        /// running ahead on a node id leased from an in-memory fleet).
        #[arg(long, value_enum, default_value = "uuid7")]
        scheme: torture::ForkScheme,
    },
}

const GEN_HELP: &str = concat!(
    "Examples:
  idforge gen uuid7 -n 5
  idforge gen snowflake --node 7 -n 3 --format hex
  idforge gen global-id --node 18 --at 2024-01-01T00:00:00Z -n 3
  idforge gen nanots-host --host 28 --format time
  idforge gen custom --layout time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z --node 1
  idforge gen locality --sequential --pid 7 --mac 02:42:ac:11:00:02 -n 3

",
    include_str!("schemes.txt")
);

const INSPECT_HELP: &str = "Examples:
  idforge inspect 017f22e2-79b0-7cc3-98c4-dc0c0c07398f
  idforge inspect --scheme snowflake --json 1541815603606036480
  idforge gen uuid7 -n 3 | idforge inspect
  idforge inspect --json 20be0ffc-314a-bd53-7a50-013a65ca76d2";

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !stdout::is_open() {
        // A file opened later would take descriptor 1: refuse before anything is made or opened.
        eprintln!("idforge: error: standard output is closed, so its output would be lost; redirect it (to /dev/null to discard it)");
        return ExitCode::from(5);
    }
    let result = match cli.command {
        Command::Gen(a) => gen::run(*a),
        Command::Inspect(a) => inspect::run(a),
        Command::Schemes { json } => schemes::schemes(json),
        Command::Fleet {
            etcd,
            access,
            namespace,
        } => fleet::status(&etcd, access, &namespace),
        Command::Bench(a) => bench::run(a),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "idforge",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout())
            .map(|()| ExitCode::SUCCESS)
            .map_err(Into::into),
        Command::Serve(a) => serve::run(*a),
        Command::Torture(a) => torture::run(a),
        Command::TortureFork { count, out, scheme } => torture::fork_child(&out, count, scheme),
    };
    result.unwrap_or_else(|e| failure::report(&e))
}

#[cfg(test)]
mod tests;
