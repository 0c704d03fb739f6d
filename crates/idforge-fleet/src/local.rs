//! A local etcd cluster for tests (feature `etcd`): members on free loopback ports with data in
//! a temporary directory, killed and removed on drop.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::etcd::EtcdStore;
use crate::store::Store;

struct Node {
    name: String,
    client: u16,
    peer: u16,
    child: Option<Child>,
}

/// etcd members on loopback, killed (and their data removed) on drop.
pub struct LocalCluster {
    dir: PathBuf,
    nodes: Vec<Node>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl LocalCluster {
    /// Starts `n` members (1 or 3) and waits until they serve.
    ///
    /// # Panics
    /// When `etcd` is not installed or does not become ready in 30 s.
    pub fn start(n: usize) -> LocalCluster {
        assert!(
            Command::new("etcd").arg("--version").output().is_ok(),
            "etcd is not installed: run these tests through scripts/etcd test"
        );
        let dir = std::env::temp_dir().join(format!(
            "idforge-etcd-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let nodes = (0..n)
            .map(|i| Node {
                name: format!("m{i}"),
                client: free_port(),
                peer: free_port(),
                child: None,
            })
            .collect();
        let mut c = LocalCluster { dir, nodes };
        for i in 0..n {
            c.spawn(i);
        }
        c.wait_ready();
        c
    }

    /// (Re)starts member `i` on its data directory.
    ///
    /// # Panics
    /// When `etcd` cannot be started.
    pub fn spawn(&mut self, i: usize) {
        let initial: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("{}=http://127.0.0.1:{}", n.name, n.peer))
            .collect();
        let n = &self.nodes[i];
        let log = std::fs::File::create(self.dir.join(format!("{}.log", n.name))).unwrap();
        let child = Command::new("etcd")
            .args(["--name", &n.name])
            .arg("--data-dir")
            .arg(self.dir.join(&n.name))
            .args([
                "--listen-client-urls",
                &format!("http://127.0.0.1:{}", n.client),
                "--advertise-client-urls",
                &format!("http://127.0.0.1:{}", n.client),
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{}", n.peer),
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{}", n.peer),
                "--initial-cluster",
                &initial.join(","),
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "idforge-test",
                "--heartbeat-interval",
                "100",
                "--election-timeout",
                "500",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting etcd");
        self.nodes[i].child = Some(child);
    }

    /// The client URLs.
    pub fn endpoints(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("http://127.0.0.1:{}", n.client))
            .collect()
    }

    /// Waits until the cluster answers.
    ///
    /// # Panics
    /// After 30 s.
    pub fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            if let Ok(s) = EtcdStore::connect(&self.endpoints()) {
                if s.scan("ready-probe").is_ok() {
                    return;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "etcd did not become ready; logs in {}",
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Kills member `i` (`SIGKILL`).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// A store connected to every member.
    ///
    /// # Panics
    /// When no member answers.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::new(EtcdStore::connect(&self.endpoints()).unwrap())
    }

    /// The index of the raft leader, from `etcdctl endpoint status`.
    ///
    /// # Panics
    /// When no member says it leads.
    pub fn leader(&self) -> usize {
        for (i, n) in self.nodes.iter().enumerate() {
            if n.child.is_none() {
                continue;
            }
            let out = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args([
                    "--endpoints",
                    &format!("http://127.0.0.1:{}", n.client),
                    "endpoint",
                    "status",
                    "-w",
                    "fields",
                ])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let field = |k: &str| {
                text.lines()
                    .find(|l| l.starts_with(&format!("\"{k}\"")))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|v| v.trim().to_string())
            };
            if field("Leader").is_some() && field("Leader") == field("MemberID") {
                return i;
            }
        }
        panic!("no leader found");
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
