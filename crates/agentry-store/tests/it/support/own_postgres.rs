//! A Postgres server of one test's own, which the test may stop and start again (the shared test
//! server must stay up for the others): `initdb` into a temporary directory, trust
//! authentication, 127.0.0.1 on a free port, stopped and removed when dropped.
//!
//! The server's programs are found through `AGENTRY_TEST_PG_BIN` (the directory holding
//! `initdb` and `pg_ctl`), else in Debian's `/usr/lib/postgresql/<version>/bin`. Without them the
//! test says it is skipped (under CI=true it fails instead).

use super::TempDir;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The variable naming the directory of Postgres's server programs.
pub const PG_BIN_VAR: &str = "AGENTRY_TEST_PG_BIN";

/// A Postgres server run for one test.
pub struct OwnPostgres {
    bin: PathBuf,
    dir: TempDir,
    port: u16,
}

impl OwnPostgres {
    /// A new server, started, or `None` (said on stderr) where Postgres's programs are missing.
    pub fn start() -> Option<OwnPostgres> {
        let Some(bin) = pg_bin() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "Postgres's server programs are missing: set {PG_BIN_VAR} to the directory of initdb"
            );
            eprintln!(
                "skipping: Postgres's server programs are missing (set {PG_BIN_VAR} to the directory of initdb)"
            );
            return None;
        };
        let dir = TempDir::new();
        let port = free_port();
        let server = OwnPostgres { bin, dir, port };
        if is_root() {
            // initdb refuses to run as root: the server runs as the postgres system user.
            run(Command::new("chown").arg("postgres").arg(server.dir.path()));
        }
        let data = server.data();
        run(server.as_owner("initdb").arg("-D").arg(&data).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        ]));
        server.up();
        Some(server)
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server the quickest clean way (`pg_ctl stop -m fast`: connections are cut,
    /// in-flight transactions rolled back), waiting until it is down.
    pub fn stop(&self) {
        run(self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"]));
    }

    /// Starts it again on the same port and data, waiting until it accepts connections.
    pub fn up(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k '{}' -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        run(self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .args(["-w", "-o", &options, "start"]));
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// One of the server's programs, run as the owner of its data.
    fn as_owner(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ = self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

fn pg_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(PG_BIN_VAR) {
        return Some(PathBuf::from(dir)).filter(|dir| dir.join("initdb").is_file());
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn run(command: &mut Command) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
