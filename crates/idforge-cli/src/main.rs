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
mod names;
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
    /// Print a man page (roff): `idforge man | man -l -` for idforge(1), `idforge man gen` for
    /// idforge-gen(1); `--out-dir DIR` writes every page (idforge.1, idforge-gen.1, ...).
    Man {
        /// The subcommand whose page to print (gen, inspect, schemes, ...).
        subcommand: Option<String>,
        /// Write every page into this directory (it must exist; existing pages are not
        /// overwritten).
        #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
        out_dir: Option<std::path::PathBuf>,
    },
    /// Run everything at once for a bounded time (processes killed and restarted on a shared
    /// state file, forks, oversubscribed threads, clock jumps) and print one summary.
    Torture(torture::TortureArgs),
    /// Serve ids over HTTP (see docs/SERVICE.md): GET /v1/ids/SCHEME?count=N, /v1/inspect/ID,
    /// /v1/schemes, /healthz, /readyz, /metrics, /openapi.json.
    #[command(after_help = serve::after_help())]
    Serve(Box<serve::ServeArgs>),
}

/// `idforge torture-fork`: one fork round of `torture`, run by `torture` itself. Parsed apart
/// from [`Cli`], so completion scripts and man pages never offer it.
#[derive(Parser, Debug)]
#[command(name = "idforge torture-fork")]
struct TortureForkCli {
    /// Ids per process after the fork.
    #[arg(long)]
    count: usize,
    /// Directory for the ids.
    #[arg(long)]
    out: std::path::PathBuf,
    /// The generator: uuid7, snowflake running ahead of the clock, or fleet (snowflake running
    /// ahead on a node id leased from an in-memory fleet).
    #[arg(long, value_enum, default_value = "uuid7")]
    scheme: torture::ForkScheme,
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
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "torture-fork")
    {
        let f = TortureForkCli::parse_from(std::env::args_os().skip(1));
        return torture::fork_child(&f.out, f.count, f.scheme)
            .unwrap_or_else(|e| failure::report(&e));
    }
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
        Command::Man {
            subcommand,
            out_dir,
        } => man(subcommand.as_deref(), out_dir.as_deref()),
        Command::Serve(a) => serve::run(*a),
        Command::Torture(a) => torture::run(a),
    };
    result.unwrap_or_else(|e| failure::report(&e))
}

/// `idforge man`: the page of idforge or of one subcommand, or every page into a directory.
fn man(subcommand: Option<&str>, out_dir: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let top = Cli::command();
    // Each subcommand's page is titled as its man page is named (idforge-gen), which the top
    // page's SUBCOMMANDS section refers to.
    let page_of = |sub: &clap::Command| {
        let name = format!("idforge-{}", sub.get_name());
        sub.clone().name(name).version(VERSION)
    };
    let subs: Vec<&clap::Command> = top.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    if let Some(dir) = out_dir {
        let mut pages = vec![("idforge.1".to_string(), top.clone())];
        for sub in &subs {
            pages.push((format!("idforge-{}.1", sub.get_name()), page_of(sub)));
        }
        // Refuse before writing anything: no half-written set of pages.
        if let Some((file, _)) = pages.iter().find(|(f, _)| dir.join(f).exists()) {
            anyhow::bail!(
                "{} exists; idforge does not overwrite it: remove it or choose another --out-dir",
                dir.join(file).display()
            );
        }
        for (file, cmd) in pages {
            let path = dir.join(&file);
            let mut f = match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => anyhow::bail!(
                    "{} exists; idforge does not overwrite it: remove it or choose another --out-dir",
                    path.display()
                ),
                Err(e) => anyhow::bail!("cannot create {}: {e}", path.display()),
            };
            clap_mangen::Man::new(cmd).render(&mut f)?;
            eprintln!("idforge: wrote {}", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let cmd = match subcommand {
        None => top.clone(),
        Some(name) => match subs.iter().find(|c| c.get_name() == name) {
            Some(sub) => page_of(sub),
            None => crate::usage!(
                "no subcommand {name:?}; the pages are: {}",
                subs.iter()
                    .map(|c| c.get_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    };
    clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests;
