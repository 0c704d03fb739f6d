//! What the tests of `idforge serve` as a process share: a private state directory and a
//! server process whose address is read from its log.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// A private state directory (mode 700), removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        use std::os::unix::fs::DirBuilderExt;
        let d = std::env::temp_dir().join(format!("idforge-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&d)
            .unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process, the address it listens on (read from its first line on stderr), and its
/// log so far.
pub struct Proc {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Arc<Mutex<String>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `idforge serve` on `state`, with the service's environment variables cleared.
pub fn cmd(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_idforge"));
    c.arg("serve")
        .env("IDFORGE_STATE_DIR", state)
        .env_remove("IDFORGE_LISTEN")
        .env_remove("IDFORGE_NODE")
        .env_remove("IDFORGE_HOST")
        .env_remove("IDFORGE_TOKENS")
        .env_remove("IDFORGE_TOKENS_FILE")
        .env_remove("IDFORGE_MAX_COUNT")
        .env_remove("IDFORGE_MAX_BATCHES")
        .env_remove("IDFORGE_CLOCK")
        .env_remove("IDFORGE_STATE_MODE")
        .env_remove("IDFORGE_IN_PROCESS")
        .env_remove("IDFORGE_TIMEOUT_MS")
        .env_remove("IDFORGE_HEADER_TIMEOUT_MS")
        .env_remove("IDFORGE_IDLE_TIMEOUT_MS")
        .env_remove("IDFORGE_MAX_CONNECTIONS")
        .env_remove("IDFORGE_SHUTDOWN_GRACE_MS")
        .env_remove("IDFORGE_LOG")
        .env_remove("IDFORGE_LOG_FORMAT")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Starts `c` and waits for it to listen; its log keeps being collected, line by line.
pub fn spawn(mut c: Command) -> Proc {
    let mut child = c.spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let _ = child.wait();
            panic!("the server stopped before listening:\n{seen}");
        }
        seen.push_str(&line);
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split(';').next().unwrap().trim().parse().unwrap();
        }
    };
    let stderr = Arc::new(Mutex::new(seen));
    let sink = stderr.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while err.read_line(&mut line).is_ok_and(|n| n > 0) {
            sink.lock().unwrap().push_str(&line);
            line.clear();
        }
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        sink.lock().unwrap().push_str(&rest);
    });
    Proc {
        child,
        addr,
        stderr,
    }
}
