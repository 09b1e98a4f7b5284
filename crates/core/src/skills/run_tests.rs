use super::*;

fn parse(json: &str) -> SkillCommandArgs {
    serde_json::from_str(json).unwrap()
}

fn build(permissions: &Permissions, json: &str) -> Result<CommandRequest, RunError> {
    request(
        "demo",
        Path::new("/staged"),
        permissions,
        &parse(json),
        |name| (name == "API_TOKEN").then(|| "t0k".to_owned()),
    )
}

#[test]
fn script_paths_and_working_folders_stay_inside_the_bundle() {
    let permissions = Permissions::default();
    for bad in [
        r#"{"scriptPath":"../x.sh"}"#,
        r#"{"scriptPath":"/etc/passwd"}"#,
        r#"{"scriptPath":"scripts/../../x"}"#,
        r#"{"script":"true","workingDirectory":"../.."}"#,
        r#"{"script":"true","workingDirectory":"/tmp"}"#,
    ] {
        assert!(
            matches!(build(&permissions, bad), Err(RunError::Invalid(_))),
            "{bad}"
        );
    }
    let ok = build(
        &permissions,
        r#"{"runtime":"PYTHON","scriptPath":"scripts/a.py","args":["1"],"workingDirectory":"data"}"#,
    )
    .unwrap();
    assert_eq!(
        ok.program,
        CommandProgram::Argv(vec!["python3".into(), "scripts/a.py".into(), "1".into()])
    );
    assert_eq!(ok.cwd.as_deref(), Some("/staged/data"));
    assert!(!ok.network);
}

#[test]
fn hosts_get_no_direct_network_and_process_needs_a_command() {
    let hosts = Permissions {
        hosts: vec!["api.example.com".into()],
        ..Permissions::default()
    };
    // The network is the egress proxy's, added at run time: never the request's own.
    assert!(!build(&hosts, r#"{"script":"true"}"#).unwrap().network);
    // Whether consent covers the program is `coverage`'s question (an unlisted one asks).
    let listed = Permissions {
        programs: vec!["jq".into()],
        ..Permissions::default()
    };
    assert!(build(&listed, r#"{"runtime":"PROCESS","command":[]}"#).is_err());
    assert_eq!(
        build(&listed, r#"{"runtime":"PROCESS","command":["jq","."]}"#)
            .unwrap()
            .program,
        CommandProgram::Argv(vec!["jq".into(), ".".into()])
    );
    assert!(serde_json::from_str::<SkillCommandArgs>(r#"{"runtime":"RUBY"}"#).is_err());
}

#[test]
fn only_listed_variables_pass_and_the_time_limit_is_clamped() {
    let permissions = Permissions {
        env: vec!["API_TOKEN".into(), "MISSING".into()],
        time_limit_seconds: 30,
        ..Permissions::default()
    };
    let request = build(&permissions, r#"{"script":"true","timeoutMillis":999999}"#).unwrap();
    assert_eq!(request.timeout, Some(Duration::from_secs(30)));
    let names: Vec<&str> = request.env.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["API_TOKEN", "SOUZ_SKILL_ID", "SOUZ_SKILL_ROOT"]);
    let short = build(&permissions, r#"{"script":"true","timeoutMillis":1}"#).unwrap();
    assert_eq!(short.timeout, Some(Duration::from_secs(1)));
}
