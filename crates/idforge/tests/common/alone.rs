//! Running one test alone in a process of its own (shared by the fork tests of idforge and
//! idforge-fleet).

/// Runs the test `name` alone in a new process of this test binary and checks that it passed;
/// `false` inside that process, where the caller runs the test's body. A child made without the
/// `pthread_atfork` handlers inherits every lock another thread of the parent held at the fork
/// (malloc's, a test harness's), and copies of every other test's pipes: among the parallel
/// tests of one binary it could hang, and hold the other tests' pipes open. Alone, the only
/// other thread is the harness's idle main thread.
pub fn in_own_process(name: &str) -> bool {
    use std::io::Read;
    if std::env::var_os("IDFORGE_TEST_ALONE").is_some() {
        return false;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads", "1", "--nocapture"])
        .env("IDFORGE_TEST_ALONE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{name}: its process did not finish in 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        status.success() && out.contains("1 passed"),
        "{name} in its own process: {status}\n{out}\n{err}"
    );
    true
}
