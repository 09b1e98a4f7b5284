//! Per-command spawn overhead of a confined skill command against a bare `sh -c true`.
//!
//! Run with `cargo bench -p souz-e2e --bench skill_spawn` after building `souz` (the
//! confinement helper; `SOUZ_BIN` overrides where it is). Measures:
//! - `bare_sh_true`: `sh -c true`, spawned and waited for;
//! - `skill_true`: `true` through `Sandbox::for_skill` (Landlock + seccomp through the two-stage
//!   helper, the runner's process group, private temporary folder and output capture);
//! - `skill_true_with_egress`: the same with a fresh egress proxy per command (a manifest
//!   listing hosts).
//!
//! Where this machine cannot confine commands the skill benches are skipped.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use souz_core::config::{SandboxConfig, SouzPaths};
use souz_core::sandbox::{CommandRequest, Sandbox};
use souz_e2e::souz_bin;
use tokio_util::sync::CancellationToken;

fn skill_spawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("skill_spawn");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("bare_sh_true", |b| {
        b.iter(|| {
            let status = std::process::Command::new("sh")
                .args(["-c", "true"])
                .status()
                .expect("sh");
            assert!(status.success());
        });
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().canonicalize().expect("home");
    let bundle = home.join("bundle");
    std::fs::create_dir_all(&bundle).expect("bundle");
    let config = SandboxConfig {
        roots: vec!["~".to_owned()],
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&config, &paths)
        .expect("sandbox")
        .with_confinement_helper(souz_bin());
    let skill = sandbox.for_skill(&bundle, &[]).expect("skill sandbox");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let request = || {
        let mut request = CommandRequest::shell("true");
        request.cwd = Some(bundle.display().to_string());
        request
    };
    if runtime
        .block_on(skill.run_command(request(), &CancellationToken::new()))
        .is_err()
    {
        eprintln!("this machine cannot confine commands: skill benches skipped");
        return;
    }
    group.bench_function("skill_true", |b| {
        b.iter(|| {
            let outcome = runtime
                .block_on(skill.run_command(request(), &CancellationToken::new()))
                .expect("run");
            assert_eq!(outcome.exit_code, Some(0));
        });
    });
    if skill.limits_tcp_ports() {
        group.bench_function("skill_true_with_egress", |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let (narrowed, proxy) = skill
                        .with_egress(&["api.example.com".to_owned()])
                        .await
                        .expect("egress");
                    let mut request = request();
                    request.env = proxy.environment();
                    let outcome = narrowed
                        .run_command(request, &CancellationToken::new())
                        .await
                        .expect("run");
                    assert_eq!(outcome.exit_code, Some(0));
                });
            });
        });
    }
    group.finish();
}

criterion_group!(benches, skill_spawn);
criterion_main!(benches);
