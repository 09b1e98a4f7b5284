//! Cold start to the first 200 from `/health`, and idle footprint, of the real `souz` binary.
//!
//! Run with `scripts/bench.sh startup` (builds the release binary first). Measures:
//! - `first_start`: a fresh `SOUZ_HOME` (writes config, token, creates and migrates the database);
//! - `restart`: an existing home.
//!
//! Then it prints idle RSS and CPU time of a daemon left alone for a few seconds.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use souz_e2e::{http, souz, souz_bin, status_kib, wait_for_daemon_file};

#[allow(clippy::zombie_processes)] // the caller stops and waits for the child
fn start(home: &std::path::Path) -> (Child, Duration) {
    let began = Instant::now();
    let child = souz(home)
        .arg("serve")
        .env("SOUZ_PORT", "0")
        .env("SOUZ_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn souz");
    let address = wait_for_daemon_file(home, Duration::from_secs(20))
        .trim_start_matches("http://")
        .to_owned();
    loop {
        if let Ok(response) = http(&address, "GET", "/health", &[], b"")
            && response.status == 200
        {
            return (child, began.elapsed());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn stop(mut child: Child) {
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

fn startup(c: &mut Criterion) {
    let mut group = c.benchmark_group("startup");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("first_start_to_healthy", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let home = tempfile::tempdir().expect("tempdir");
                let (child, elapsed) = start(home.path());
                total += elapsed;
                stop(child);
            }
            total
        });
    });
    let home = tempfile::tempdir().expect("tempdir");
    let (child, _) = start(home.path());
    stop(child);
    group.bench_function("restart_to_healthy", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let _ = std::fs::remove_file(home.path().join("daemon.json"));
                let (child, elapsed) = start(home.path());
                total += elapsed;
                stop(child);
            }
            total
        });
    });
    group.finish();
    idle_footprint();
}

fn idle_footprint() {
    let home = tempfile::tempdir().expect("tempdir");
    let (child, _) = start(home.path());
    std::thread::sleep(Duration::from_secs(3));
    let pid = child.id();
    let cpu_before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(5));
    let cpu_after = cpu_ticks(pid);
    let rss = ["VmRSS", "RssAnon", "RssFile"].map(|field| status_kib(pid, field));
    stop(child);
    match (rss, cpu_before, cpu_after) {
        ([Some(rss), Some(anonymous), Some(file)], Some(before), Some(after)) => println!(
            "idle footprint: RSS {:.1} MiB after 3 s ({:.1} anonymous, {:.1} file-backed); \
             CPU {} ticks (1/100 s) over the next 5 s",
            mib(rss),
            mib(anonymous),
            mib(file),
            after - before
        ),
        _ => println!("idle footprint: /proc not available on this system"),
    }
    startup_layout();
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// How much of `crates/cli/startup-order.txt` (the startup code the release link lays out
/// together, see `crates/cli/build.rs`) this binary still has: functions renamed or gone since
/// the list was made are not laid out, and the idle RSS grows. Regenerate with
/// `scripts/startup-order.sh` when this falls.
fn startup_layout() {
    let list = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/cli/startup-order.txt"
    );
    let Ok(listed) = std::fs::read_to_string(list) else {
        return;
    };
    let Ok(symbols) = std::process::Command::new("nm")
        .arg("--defined-only")
        .arg(souz_bin())
        .output()
    else {
        println!("startup layout: `nm` not found");
        return;
    };
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    let present: std::collections::HashSet<&str> = symbols
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2))
        .collect();
    let listed: Vec<&str> = listed.lines().filter(|name| !name.is_empty()).collect();
    let found = listed.iter().filter(|name| present.contains(*name)).count();
    println!(
        "startup layout: {found} of {} listed functions are in this binary",
        listed.len()
    );
}

fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

criterion_group!(benches, startup);
criterion_main!(benches);
