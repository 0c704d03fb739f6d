//! A server on an ephemeral loopback port and a tiny blocking HTTP/1.1 client, so the tests need
//! no HTTP client crate.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Once};

use idforge_serve::{App, Config};

mod http;
pub use http::*;

/// A private state directory (mode 700) for this test process, set as IDFORGE_STATE_DIR before
/// any scheme is opened.
pub fn state_dir() -> PathBuf {
    static INIT: Once = Once::new();
    let dir = std::env::temp_dir().join(format!("idforge-serve-test-{}", std::process::id()));
    INIT.call_once(|| {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&dir)
            .unwrap();
        // Set once, before any thread of this test reads it.
        std::env::set_var("IDFORGE_STATE_DIR", &dir);
        // Removed when the test binary exits (libtest ends with `exit`, which runs atexit
        // handlers): every run used to leave its directory and state files in /tmp.
        // SAFETY: registers a plain `extern "C" fn` without arguments, as atexit requires.
        unsafe { libc::atexit(remove_state_dir) };
    });
    dir
}

extern "C" fn remove_state_dir() {
    let dir = std::env::temp_dir().join(format!("idforge-serve-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(dir);
}

/// A running server; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    rt: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Opens `config`'s schemes and serves them on 127.0.0.1 at an ephemeral port.
pub fn start(config: Config) -> Server {
    state_dir();
    let app = App::open(config).expect("the schemes open");
    serve(app)
}

/// Serves an opened app on 127.0.0.1 at an ephemeral port.
pub fn serve(app: Arc<App>) -> Server {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    rt.spawn(idforge_serve::serve_on(listener, app.clone(), async {
        let _ = rx.await;
    }));
    Server {
        addr,
        app,
        rt: Some(rt),
        stop: Some(tx),
    }
}

/// A configuration that serves `schemes` on node 0 and host 0 (this test process's own state
/// directory), with the defaults otherwise.
pub fn config(schemes: &[&str]) -> Config {
    Config {
        schemes: Some(schemes.iter().map(|s| s.to_string()).collect()),
        node: Some(0),
        host: Some(0),
        ..Config::default()
    }
}
