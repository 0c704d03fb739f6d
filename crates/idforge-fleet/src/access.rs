//! How to reach etcd: endpoints, TLS and authentication ([`EtcdOptions`]), and why connecting
//! failed ([`ConnectError`]). Plain data, checked without I/O, so the command line and the
//! service can check their settings without the `etcd` feature; `EtcdStore::connect_with`
//! (feature `etcd`) reads the files and connects.

use std::path::{Path, PathBuf};

/// A password: its `Debug` never shows it and it has no `Display`, so it cannot reach a log by
/// accident. [`Password::expose`] is the one way to read it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Password(String);

/// Refuses a credentials file that someone other than this user (or root) could change: a CA
/// file, client certificate or key swapped by another user lets them answer as etcd, or as this
/// member, and hand out node ids in use. A secret (a client key, a password file) is refused as
/// well when everyone may read it; its group may (mode 640), as for the service's tokens file.
/// Symbolic links are followed (a Kubernetes Secret's files are links).
///
/// # Errors
/// [`Failure::Settings`], naming the file, the problem and the `chmod`/`chown` that fixes it.
pub fn check_credentials_file(path: &Path, label: &str, secret: bool) -> Result<(), ConnectError> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |problem: String| ConnectError::new(Failure::Settings, problem);
    let meta = std::fs::metadata(path).map_err(|e| {
        refuse(format!(
            "cannot read the etcd {label} {}: {e}",
            path.display()
        ))
    })?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(refuse(format!(
            "the etcd {label} {} belongs to uid {}, not to this user ({me}) or root: its owner could replace it; chown it to this user",
            path.display(),
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(refuse(format!(
            "the etcd {label} {} is writable by {} (mode {mode:04o}): whoever can write it can make this member trust another etcd, or act as it; chmod go-w {}",
            path.display(),
            if mode & 0o002 != 0 { "everyone" } else { "its group" },
            path.display()
        )));
    }
    if secret && mode & 0o004 != 0 {
        return Err(refuse(format!(
            "the etcd {label} {} is readable by everyone (mode {mode:04o}): chmod 600 {} (or 640 for a group of readers)",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

impl Password {
    /// Wraps a password.
    pub fn new(password: impl Into<String>) -> Password {
        Password(password.into())
    }

    /// The password of a file: its content without the line break at its end.
    ///
    /// # Errors
    /// A file that cannot be read, or that is empty.
    pub fn from_file(path: &Path) -> Result<Password, ConnectError> {
        if path.exists() {
            check_credentials_file(path, "password file", true)?;
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            // The path is not shown: given the password itself by mistake (the variables
            // IDFORGE_ETCD_PASSWORD and IDFORGE_ETCD_PASSWORD_FILE are easily confused), the
            // message would print it.
            ConnectError::new(
                Failure::Settings,
                format!(
                    "cannot read the etcd password file ({e}; its path, {} characters long, is not shown in case it is the password itself): give the path of a file holding the password, or the password in IDFORGE_ETCD_PASSWORD",
                    path.as_os_str().len()
                ),
            )
        })?;
        let p = text
            .strip_suffix('\n')
            .map_or(text.as_str(), |t| t.strip_suffix('\r').unwrap_or(t));
        if p.is_empty() {
            return Err(ConnectError::new(
                Failure::Settings,
                format!(
                    "the etcd password file {} is empty: write the password in it",
                    path.display()
                ),
            ));
        }
        Ok(Password(p.to_string()))
    }

    /// The password itself, to hand to etcd.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// How to reach etcd.
///
/// * `https://` endpoints need [`ca_cert`](Self::ca_cert), the CA that signed etcd's server
///   certificate (etcd's `--trusted-ca-file` is the one that signed client certificates); the
///   system's roots are not used, so a CA of one's own is all that is trusted.
/// * [`client_cert`](Self::client_cert) and [`client_key`](Self::client_key), together, for an
///   etcd started with `--client-cert-auth`. With etcd's authentication enabled and no user
///   given, etcd takes the certificate's common name as the user name.
/// * [`user`](Self::user) and [`password`](Self::password), together: etcd's role-based access
///   control (`etcdctl auth enable`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EtcdOptions {
    /// Client URLs: all `http://` or all `https://`.
    pub endpoints: Vec<String>,
    /// PEM file of the CA certificate(s) that signed etcd's server certificate.
    pub ca_cert: Option<PathBuf>,
    /// PEM file of this client's certificate.
    pub client_cert: Option<PathBuf>,
    /// PEM file of this client's private key.
    pub client_key: Option<PathBuf>,
    /// The etcd user.
    pub user: Option<String>,
    /// The etcd user's password.
    pub password: Option<Password>,
    /// The namespace this client works in, if one: the connection check then reads only
    /// `/idforge/<namespace>/`, so a role limited to that prefix is enough (FLEET.md's
    /// least-privilege role). Without one it reads `/idforge/` (what `idforge fleet` without
    /// `--namespace` lists).
    pub namespace: Option<String>,
}

impl std::fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("endpoints", &self.endpoints)
            .field("ca_cert", &self.ca_cert)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .field("user", &self.user)
            .field("password", &self.password)
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl EtcdOptions {
    /// Plain endpoints, no TLS, no user.
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>) -> EtcdOptions {
        EtcdOptions {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            ..EtcdOptions::default()
        }
    }

    /// Whether the endpoints are `https://`.
    pub fn tls(&self) -> bool {
        self.endpoints.iter().any(|e| e.starts_with("https://"))
    }

    /// The endpoints, comma separated (for messages).
    pub fn endpoint_list(&self) -> String {
        self.endpoints.join(",")
    }

    /// A warning these settings deserve, if any: a password sent over plain `http://`.
    pub fn warning(&self) -> Option<String> {
        (self.password.is_some() && !self.tls()).then(|| {
            format!(
                "the etcd password goes unencrypted over http:// to {}: use https:// endpoints",
                self.endpoint_list()
            )
        })
    }

    /// Checks that the settings go together (no file is read).
    ///
    /// # Errors
    /// [`Failure::Settings`], saying what to change.
    pub fn check(&self) -> Result<(), ConnectError> {
        let bad = |m: String| Err(ConnectError::new(Failure::Settings, m));
        if self.endpoints.is_empty() {
            return bad("no etcd endpoint: name at least one, e.g. https://10.0.0.5:2379".into());
        }
        for e in &self.endpoints {
            // `https://user:password@host`: the user and password would be ignored and the URL,
            // password included, printed in every message that names the endpoint.
            let authority = e
                .split("://")
                .nth(1)
                .unwrap_or(e)
                .split('/')
                .next()
                .unwrap_or("");
            if authority.contains('@') {
                let host = authority.rsplit('@').next().unwrap_or_default();
                return bad(format!(
                    "an etcd endpoint holds a user name or password before `@` (…@{host}): write the endpoint without them, the user in --etcd-user and the password in --etcd-password-file or IDFORGE_ETCD_PASSWORD"
                ));
            }
            if !(e.starts_with("http://") || e.starts_with("https://")) {
                return bad(format!(
                    "etcd endpoint {e:?} has no scheme: write https://{e} (TLS) or http://{e}"
                ));
            }
        }
        let tls = self.tls();
        if let Some(e) = self.endpoints.iter().find(|e| e.starts_with("http://")) {
            if tls {
                return bad(format!(
                    "etcd endpoints mix https:// and http:// ({e}): use https:// for all of them"
                ));
            }
            if self.ca_cert.is_some() || self.client_cert.is_some() || self.client_key.is_some() {
                return bad(format!(
                    "a CA certificate, client certificate or key is given but the etcd endpoint {e} is http://: write https://"
                ));
            }
        }
        if tls && self.ca_cert.is_none() {
            return bad(format!(
                "https:// etcd endpoints ({}) need the CA certificate that signed etcd's server certificate",
                self.endpoint_list()
            ));
        }
        if self.client_cert.is_some() != self.client_key.is_some() {
            return bad(
                "a client certificate and its key go together: give both, or neither".into(),
            );
        }
        match (&self.user, &self.password) {
            (Some(u), _) if u.is_empty() => bad("the etcd user name is empty".into()),
            (Some(u), _) if u.contains(':') => bad(format!(
                "the etcd user {:?} holds ':': give the name alone, and the password in a file or the environment, never on the command line",
                u.split(':').next().unwrap_or_default()
            )),
            (Some(u), None) => bad(format!("etcd user {u:?} has no password")),
            (None, Some(_)) => bad("an etcd password without a user name: name the user".into()),
            _ => Ok(()),
        }
    }
}

/// What kind of failure connecting was: what the user should check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The settings do not go together, or a file cannot be read or parsed.
    Settings,
    /// No endpoint could be reached (refused, timed out).
    Unreachable,
    /// The TLS handshake failed: etcd's certificate is not signed by the CA given, is not for
    /// the endpoint's address, or the endpoint does not speak TLS (or speaks it to an `http://`
    /// URL).
    Tls,
    /// etcd refused this client's certificate: none was given and etcd requires one
    /// (`--client-cert-auth`), or it is not signed by a CA etcd trusts.
    ClientCertificate,
    /// etcd refused the user name and password, or needs them.
    Auth,
    /// The user is known but its roles do not allow reading and writing the key prefix.
    Permission,
}

impl Failure {
    /// The settings to check for this failure, as the command line, its environment variables
    /// and `idforge serve`'s config file name them.
    pub fn settings(self) -> &'static str {
        match self {
            Failure::Settings => "the --etcd-* flags or their IDFORGE_ETCD_* variables",
            Failure::Unreachable => "--etcd or IDFORGE_ETCD",
            Failure::Tls => "--etcd-cacert or IDFORGE_ETCD_CACERT, and https:// in --etcd",
            Failure::ClientCertificate => "--etcd-cert and --etcd-key, or IDFORGE_ETCD_CERT and IDFORGE_ETCD_KEY",
            Failure::Auth => "--etcd-user and --etcd-password-file, or IDFORGE_ETCD_USER and IDFORGE_ETCD_PASSWORD",
            Failure::Permission => "the user's role in etcd: docs/FLEET.md shows the least-privilege role",
        }
    }
}

/// Connecting to etcd failed; the message says which endpoint, what failed and what to check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConnectError {
    /// What kind of failure.
    pub failure: Failure,
    message: String,
}

impl ConnectError {
    /// A failure of `kind` with its message.
    pub fn new(failure: Failure, message: impl Into<String>) -> ConnectError {
        ConnectError {
            failure,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_password() {
        let o = EtcdOptions {
            user: Some("idforge".into()),
            password: Some(Password::new("hunter2-secret")),
            ..EtcdOptions::new(["https://127.0.0.1:2379"])
        };
        let d = format!("{o:?} {:#?}", o.password);
        assert!(!d.contains("hunter2"), "{d}");
        assert!(d.contains("<redacted>") && d.contains("idforge"), "{d}");
    }

    #[test]
    fn settings_that_do_not_go_together_are_refused_with_the_fix() {
        let https = EtcdOptions::new(["https://a:2379"]);
        let check = |o: &EtcdOptions| o.check().map_err(|e| e.to_string());
        assert!(check(&https)
            .unwrap_err()
            .contains("need the CA certificate"));
        let ca = EtcdOptions {
            ca_cert: Some("ca.pem".into()),
            ..https.clone()
        };
        assert_eq!(check(&ca), Ok(()));
        let half = EtcdOptions {
            client_cert: Some("c.pem".into()),
            ..ca.clone()
        };
        assert!(check(&half).unwrap_err().contains("give both"));
        let mixed = EtcdOptions {
            endpoints: vec!["https://a:2379".into(), "http://b:2379".into()],
            ..ca.clone()
        };
        assert!(check(&mixed)
            .unwrap_err()
            .contains("mix https:// and http://"));
        let plain_ca = EtcdOptions {
            endpoints: vec!["http://a:2379".into()],
            ..ca.clone()
        };
        assert!(check(&plain_ca).unwrap_err().contains("write https://"));
        let bare = EtcdOptions::new(["a:2379"]);
        assert!(check(&bare).unwrap_err().contains("https://a:2379"));
        let colon = EtcdOptions {
            user: Some("root:pw".into()),
            password: Some(Password::new("x")),
            ..ca.clone()
        };
        let e = check(&colon).unwrap_err();
        assert!(e.contains("\"root\"") && !e.contains("pw"), "{e}");
        let nopw = EtcdOptions {
            user: Some("idforge".into()),
            ..ca.clone()
        };
        assert!(check(&nopw).unwrap_err().contains("no password"));
        let nouser = EtcdOptions {
            password: Some(Password::new("x")),
            ..ca
        };
        assert!(check(&nouser).unwrap_err().contains("without a user"));
        assert!(check(&EtcdOptions::default()).is_err());
    }

    #[test]
    fn a_password_file_loses_its_last_line_break_only() {
        let dir = std::env::temp_dir().join(format!("idforge-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("pw");
        std::fs::write(&f, " s3cret \r\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Password::from_file(&f).unwrap().expose(), " s3cret ");
        std::fs::write(&f, "\n").unwrap();
        let e = Password::from_file(&f).unwrap_err();
        assert_eq!(e.failure, Failure::Settings);
        assert!(e.to_string().contains("is empty"), "{e}");
        let e = Password::from_file(&dir.join("missing")).unwrap_err();
        assert!(e.to_string().contains("cannot read the etcd password file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn credentials_files_others_could_change_or_read_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("idforge-cred-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("file");
        std::fs::write(&f, "secret\n").unwrap();
        let mode =
            |m: u32| std::fs::set_permissions(&f, std::fs::Permissions::from_mode(m)).unwrap();
        // Writable by the group or everyone: refused, secret or not.
        for m in [0o664, 0o646, 0o620] {
            mode(m);
            let e = check_credentials_file(&f, "CA certificate", false).unwrap_err();
            assert_eq!(e.failure, Failure::Settings);
            assert!(e.to_string().contains("chmod go-w"), "{m:o}: {e}");
        }
        // Readable by everyone: fine for a certificate, refused for a key or a password.
        mode(0o644);
        check_credentials_file(&f, "CA certificate", false).unwrap();
        let e = check_credentials_file(&f, "client key", true).unwrap_err();
        assert!(
            e.to_string().contains("readable by everyone") && e.to_string().contains("chmod 600"),
            "{e}"
        );
        let e = Password::from_file(&f).unwrap_err();
        assert!(
            e.to_string().contains("password file")
                && e.to_string().contains("readable by everyone"),
            "{e}"
        );
        // The owner's alone, or shared with a group to read: accepted.
        for m in [0o600, 0o640, 0o400] {
            mode(m);
            check_credentials_file(&f, "client key", true).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
