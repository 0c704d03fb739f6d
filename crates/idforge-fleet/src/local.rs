//! A local etcd cluster for tests (feature `etcd`): members on free loopback ports with data in
//! a temporary directory, killed and removed on drop; with [`Security`], clients reach it over
//! TLS with client certificates (a throwaway CA made with the `openssl` command) and through
//! etcd's authentication, with a least-privilege user.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::access::{EtcdOptions, Password};
use crate::etcd::EtcdStore;
use crate::store::Store;

/// The least-privilege user of a cluster with [`Security::auth`]: its role `idforge` may read
/// and write the key prefix `/idforge/` and nothing else. The client certificate's common name
/// is this name too.
pub const USER: &str = "idforge";
/// [`USER`]'s password (also in [`LocalCluster::password_file`]).
pub const PASSWORD: &str = "idforge-test-password";
/// etcd's `root` user's password.
pub const ROOT_PASSWORD: &str = "root-test-password";
/// A user whose role may read and write `/other/` only.
pub const OUTSIDER: &str = "outsider";
/// [`OUTSIDER`]'s password.
pub const OUTSIDER_PASSWORD: &str = "outsider-test-password";

/// A user whose role (`team`) has readwrite on one namespace only, `/idforge/team/`: FLEET.md's
/// least-privilege role.
pub const TEAM: &str = "team";

/// [`TEAM`]'s password.
pub const TEAM_PASSWORD: &str = "team-test-password";

/// A user whose role (`reader`) may only read `/idforge/`.
pub const READER: &str = "reader";

/// [`READER`]'s password.
pub const READER_PASSWORD: &str = "reader-test-password";

/// How clients reach a [`LocalCluster`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Security {
    /// `https://` client URLs, with `--client-cert-auth` (peers stay on plain HTTP).
    pub tls: bool,
    /// etcd's authentication enabled: users `root`, [`USER`] and [`OUTSIDER`].
    pub auth: bool,
}

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
    security: Security,
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
        LocalCluster::start_with(n, Security::default())
    }

    /// Starts `n` members (1 or 3) as `security` says and waits until they serve: with TLS, a
    /// CA, server certificate (for 127.0.0.1 and localhost) and client certificate are made
    /// first; with authentication, the users and roles are added and authentication enabled.
    ///
    /// # Panics
    /// When `etcd`, `etcdctl` or (for TLS) `openssl` is not installed (scripts/etcd install
    /// installs them), or the cluster does not become ready in 30 s.
    pub fn start_with(n: usize, security: Security) -> LocalCluster {
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
        let mut c = LocalCluster {
            dir,
            nodes,
            security,
        };
        if security.tls {
            c.make_certificates();
        }
        for i in 0..n {
            c.spawn(i);
        }
        c.wait_ready_as(&c.options_as(None));
        if security.auth {
            c.enable_auth();
        }
        c
    }

    /// The directory of the cluster's data, certificates and logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The test CA's certificate (signed etcd's server and the client certificates).
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// The client certificate (common name [`USER`]).
    pub fn client_cert(&self) -> PathBuf {
        self.dir.join("client.pem")
    }

    /// The client certificate's key.
    pub fn client_key(&self) -> PathBuf {
        self.dir.join("client.key")
    }

    /// Another CA's certificate, which signed nothing etcd uses: trusting it alone, a client
    /// must refuse etcd's server certificate.
    pub fn other_ca_cert(&self) -> PathBuf {
        self.dir.join("other-ca.pem")
    }

    /// A client certificate and key signed by the other CA, which etcd does not trust.
    pub fn stranger_cert(&self) -> (PathBuf, PathBuf) {
        (self.dir.join("stranger.pem"), self.dir.join("stranger.key"))
    }

    /// A file holding [`PASSWORD`] and a line break.
    pub fn password_file(&self) -> PathBuf {
        self.dir.join("idforge.password")
    }

    /// How [`USER`] connects: TLS with the client certificate, and [`USER`] and [`PASSWORD`]
    /// with authentication.
    pub fn options(&self) -> EtcdOptions {
        self.options_as(self.security.auth.then_some((USER, PASSWORD)))
    }

    /// How `user` (with its password) connects, over TLS with the client certificate if the
    /// cluster has TLS.
    pub fn options_as(&self, user: Option<(&str, &str)>) -> EtcdOptions {
        let mut o = EtcdOptions::new(self.endpoints());
        if self.security.tls {
            o.ca_cert = Some(self.ca_cert());
            o.client_cert = Some(self.client_cert());
            o.client_key = Some(self.client_key());
        }
        if let Some((u, p)) = user {
            o.user = Some(u.to_string());
            o.password = Some(Password::new(p));
        }
        o
    }

    /// `etcdctl` against the first live member, with the TLS files and (with authentication)
    /// as `root`.
    pub fn etcdctl(&self) -> Command {
        let i = self
            .nodes
            .iter()
            .position(|n| n.child.is_some())
            .unwrap_or(0);
        self.etcdctl_at(i)
    }

    fn etcdctl_at(&self, i: usize) -> Command {
        let mut c = Command::new("etcdctl");
        c.env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(&self.endpoints()[i]);
        if self.security.tls {
            c.arg("--cacert")
                .arg(self.ca_cert())
                .arg("--cert")
                .arg(self.client_cert())
                .arg("--key")
                .arg(self.client_key());
        }
        if self.security.auth && self.dir.join("auth-enabled").exists() {
            c.arg("--user").arg(format!("root:{ROOT_PASSWORD}"));
        }
        c
    }

    fn run(&self, mut c: Command, what: &str) {
        let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            out.status.success(),
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A CA, another CA, etcd's server certificate (127.0.0.1, localhost), a client certificate
    /// (common name [`USER`]) and a stranger's client certificate signed by the other CA.
    fn make_certificates(&self) {
        assert!(
            Command::new("openssl").arg("version").output().is_ok(),
            "openssl is not installed: the TLS tests make their certificates with it (scripts/etcd install installs it)"
        );
        let d = &self.dir;
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for ca in ["ca", "other-ca"] {
            let mut c = Command::new("openssl");
            c.current_dir(d)
                .args(["req", "-x509"])
                .args(ec)
                .args([
                    "-keyout",
                    &format!("{ca}.key"),
                    "-out",
                    &format!("{ca}.pem"),
                ])
                .args(["-days", "2", "-subj", &format!("/CN=idforge test {ca}")]);
            self.run(c, "openssl req -x509 (a test CA)");
        }
        let leaf = |name: &str, ca: &str, cn: &str, ext: &str| {
            std::fs::write(d.join(format!("{name}.ext")), ext).unwrap();
            let mut c = Command::new("openssl");
            c.current_dir(d)
                .args(["req", "-new"])
                .args(ec)
                .args([
                    "-keyout",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.csr"),
                ])
                .args(["-subj", &format!("/CN={cn}")]);
            self.run(c, "openssl req -new");
            let mut c = Command::new("openssl");
            c.current_dir(d)
                .args(["x509", "-req", "-in", &format!("{name}.csr")])
                .args(["-CA", &format!("{ca}.pem"), "-CAkey", &format!("{ca}.key")])
                .args(["-CAcreateserial", "-days", "2"])
                .args(["-extfile", &format!("{name}.ext")])
                .args(["-out", &format!("{name}.pem")]);
            self.run(c, "openssl x509 -req (signing a certificate)");
        };
        let client =
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n";
        leaf(
            "server",
            "ca",
            "etcd",
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        );
        leaf("client", "ca", USER, client);
        leaf("stranger", "other-ca", USER, client);
        std::fs::write(self.password_file(), format!("{PASSWORD}\n")).unwrap();
        {
            // A secret: the member refuses a password file everyone can read.
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(self.password_file(), mode).unwrap();
        }
    }

    /// Users `root`, [`USER`] (role `idforge`: readwrite on the prefix `/idforge/` only),
    /// [`OUTSIDER`] (readwrite on `/other/` only), [`TEAM`] (readwrite on the namespace
    /// `/idforge/team/` only) and [`READER`] (read on `/idforge/` only), then `etcdctl auth
    /// enable`.
    fn enable_auth(&self) {
        let steps: [&[&str]; 18] = [
            &["user", "add", "root", "--new-user-password", ROOT_PASSWORD],
            &["user", "grant-role", "root", "root"],
            &["role", "add", "idforge"],
            &[
                "role",
                "grant-permission",
                "idforge",
                "--prefix=true",
                "readwrite",
                "/idforge/",
            ],
            &["user", "add", USER, "--new-user-password", PASSWORD],
            &["user", "grant-role", USER, "idforge"],
            &["role", "add", "other"],
            &[
                "role",
                "grant-permission",
                "other",
                "--prefix=true",
                "readwrite",
                "/other/",
            ],
            &[
                "user",
                "add",
                OUTSIDER,
                "--new-user-password",
                OUTSIDER_PASSWORD,
            ],
            &["user", "grant-role", OUTSIDER, "other"],
            &["role", "add", "team"],
            &[
                "role",
                "grant-permission",
                "team",
                "--prefix=true",
                "readwrite",
                "/idforge/team/",
            ],
            &["user", "add", TEAM, "--new-user-password", TEAM_PASSWORD],
            &["user", "grant-role", TEAM, "team"],
            &["role", "add", "reader"],
            &[
                "role",
                "grant-permission",
                "reader",
                "--prefix=true",
                "read",
                "/idforge/",
            ],
            &[
                "user",
                "add",
                READER,
                "--new-user-password",
                READER_PASSWORD,
            ],
            &["user", "grant-role", READER, "reader"],
        ];
        for args in steps {
            let mut c = self.etcdctl();
            c.args(args);
            self.run(c, &format!("etcdctl {}", args[..2].join(" ")));
        }
        let mut c = self.etcdctl();
        c.args(["auth", "enable"]);
        self.run(c, "etcdctl auth enable");
        std::fs::write(self.dir.join("auth-enabled"), "").unwrap();
        self.wait_ready();
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
        let client = self.endpoints()[i].clone();
        let mut cmd = Command::new("etcd");
        if self.security.tls {
            cmd.arg("--cert-file")
                .arg(self.dir.join("server.pem"))
                .arg("--key-file")
                .arg(self.dir.join("server.key"))
                .arg("--trusted-ca-file")
                .arg(self.ca_cert())
                .arg("--client-cert-auth");
        }
        let child = cmd
            .args(["--name", &n.name])
            .arg("--data-dir")
            .arg(self.dir.join(&n.name))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
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

    /// The client URLs (`https://` with TLS).
    pub fn endpoints(&self) -> Vec<String> {
        let scheme = if self.security.tls { "https" } else { "http" };
        self.nodes
            .iter()
            .map(|n| format!("{scheme}://127.0.0.1:{}", n.client))
            .collect()
    }

    /// Waits until the cluster answers [`LocalCluster::options`].
    ///
    /// # Panics
    /// After 30 s.
    pub fn wait_ready(&self) {
        self.wait_ready_as(&self.options());
    }

    fn wait_ready_as(&self, o: &EtcdOptions) {
        let start = Instant::now();
        loop {
            if let Ok(s) = EtcdStore::connect_with(o) {
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

    /// A store connected to every member as [`LocalCluster::options`] (with authentication:
    /// as the least-privilege [`USER`]).
    ///
    /// # Panics
    /// When no member answers.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::new(EtcdStore::connect_with(&self.options()).unwrap())
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
            let out = self
                .etcdctl_at(i)
                .args(["endpoint", "status", "-w", "fields"])
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
