use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse(text: &str) -> Result<Config, Vec<Problem>> {
    Config::parse(
        SouzPaths::new("/tmp/souz-test"),
        Path::new("config.toml"),
        text,
        &no_env,
    )
}

fn rendered(problems: &[Problem]) -> Vec<String> {
    problems.iter().map(ToString::to_string).collect()
}

#[test]
fn template_parses_to_defaults() {
    let config = parse(&Config::template()).unwrap();
    assert_eq!(config, Config::defaults(SouzPaths::new("/tmp/souz-test")));
}

#[test]
fn uncommented_template_also_parses_to_defaults() {
    // Every `# key = default` line, uncommented, must be a valid setting equal to the default.
    let uncommented: String = Config::template()
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if rest.contains(" = ") && !rest.starts_with(' ') => rest.to_owned(),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let uncommented_lines = uncommented
        .lines()
        .filter(|l| l.contains(" = ") && !l.starts_with('#'));
    let expected_keys: usize = Config::sections().iter().map(|s| s.keys.len()).sum();
    assert_eq!(uncommented_lines.count(), expected_keys);
    let config = parse(&uncommented).unwrap();
    assert_eq!(config, Config::defaults(SouzPaths::new("/tmp/souz-test")));
}

#[test]
fn template_documents_every_key() {
    let template = Config::template();
    for section in Config::sections() {
        assert!(template.contains(&format!("\n[{}]\n", section.name)));
        for key in section.keys {
            assert!(
                !key.doc.trim().is_empty(),
                "{}.{} has no doc",
                section.name,
                key.name
            );
            assert!(
                template.contains(&format!("# {} = ", key.name)),
                "{} missing",
                key.name
            );
        }
    }
}

#[test]
fn values_are_applied() {
    let config = parse(
        "[server]\nport = 9001\nbody_limit = \"2MiB\"\nallowed_origins = [\"http://a.test\"]\n\n\
         [log]\nlevel = \"debug\"\n",
    )
    .unwrap();
    assert_eq!(config.server.port, 9001);
    assert_eq!(config.server.body_limit, ByteSize(2 << 20));
    assert_eq!(
        config.server.allowed_origins,
        vec!["http://a.test".to_owned()]
    );
    assert_eq!(config.log.level, "debug");
    // Untouched keys keep their defaults.
    assert_eq!(config.server.host, "127.0.0.1");
}

#[test]
fn inline_section_tables_work() {
    let config = parse("server = { port = 9002 }\n").unwrap();
    assert_eq!(config.server.port, 9002);
}

#[test]
fn syntax_error_has_position() {
    let problems = parse("[server]\nport = = 3\n").unwrap_err();
    assert_eq!(problems.len(), 1);
    let text = problems[0].to_string();
    assert!(text.starts_with("config.toml:2:"), "{text}");
    assert!(text.contains("invalid TOML"), "{text}");
}

#[test]
fn every_problem_is_reported_with_its_position() {
    let text = "\
[server]
port = \"eighty\"
colour = \"blue\"
host = \"0.0.0.0\"

[nope]
x = 1

[log]
retention_days = 0
";
    let mut problems = rendered(&parse(text).unwrap_err());
    // The list of known sections grows with every feature; check its start only.
    assert!(
        problems[3].starts_with(
            "config.toml:6:2: unknown section [nope]; known sections: [server], [log]"
        ),
        "{}",
        problems[3]
    );
    problems.remove(3);
    assert_eq!(
        problems,
        vec![
            "config.toml:2:8: [server] port: invalid type: string \"eighty\", expected u16"
                .to_owned(),
            "config.toml:3:1: unknown key `colour` in [server]; known keys: host, port, \
             allow_non_loopback, allowed_hosts, allowed_origins, body_limit, shutdown_grace_seconds, \
             header_read_timeout_seconds, max_connections, trusted_proxy_token, proxy_user_roots, \
             proxy_users_decide"
                .to_owned(),
            "config.toml:4:8: [server] host: `0.0.0.0` is not a loopback address; Souz listens \
             on loopback only unless `allow_non_loopback = true` is set"
                .to_owned(),
            "config.toml:10:18: [log] retention_days: must be between 1 and 365".to_owned(),
        ]
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    let problems = parse("# ünïcödé\n[log]\nlevel = \"lоud\"\n").unwrap_err();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].to_string().starts_with("config.toml:3:9:"),
        "{}",
        problems[0]
    );
}

#[test]
fn top_level_keys_are_not_sections() {
    let problems = rendered(&parse("port = 1\n").unwrap_err());
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with("config.toml:1:1: `port` is not a section"),
        "{}",
        problems[0]
    );
}

#[test]
fn nested_value_errors_point_inside_the_value() {
    let problems = rendered(&parse("[server]\nallowed_origins = [\"ok://a\", 5]\n").unwrap_err());
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("config.toml:2:"), "{}", problems[0]);
    assert!(problems[0].contains("allowed_origins"), "{}", problems[0]);
}

#[test]
fn env_overrides_apply_and_report_their_variable() {
    let env = |name: &str| match name {
        "SOUZ_PORT" => Some("9100".to_owned()),
        "SOUZ_HOST" => Some("localhost".to_owned()),
        "SOUZ_LOG" => Some("warn,souz_core=debug".to_owned()),
        _ => None,
    };
    let config = Config::parse(
        SouzPaths::new("/tmp/x"),
        Path::new("c.toml"),
        "[server]\nport = 1\n",
        &env,
    )
    .unwrap();
    assert_eq!(config.server.port, 9100);
    assert_eq!(config.server.host, "localhost");
    assert_eq!(config.log.level, "warn,souz_core=debug");

    let env = |name: &str| match name {
        "SOUZ_PORT" => Some("http".to_owned()),
        "SOUZ_HOST" => Some("10.0.0.1".to_owned()),
        _ => None,
    };
    let problems = rendered(
        &Config::parse(SouzPaths::new("/tmp/x"), Path::new("c.toml"), "", &env).unwrap_err(),
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("environment variable SOUZ_PORT: [server] port:"))
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("environment variable SOUZ_HOST: [server] host:"))
    );
}

#[test]
fn first_start_writes_template_once() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let env = |name: &str| (name == "SOUZ_HOME").then(|| home.display().to_string());
    let config = Config::load(&env).unwrap();
    let file = config.paths.config_file();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), Config::template());

    std::fs::write(&file, "[server]\nport = 9200\n").unwrap();
    let config = Config::load(&env).unwrap();
    assert_eq!(config.server.port, 9200);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "[server]\nport = 9200\n"
    );
    assert!(!write_template_if_missing(&file).unwrap());
}

#[test]
fn bad_file_is_reported_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let env = |name: &str| (name == "SOUZ_HOME").then(|| dir.path().display().to_string());
    let file = dir.path().join("config.toml");
    let bad = "[server]\nport = 70000\n";
    std::fs::write(&file, bad).unwrap();
    let before = std::fs::metadata(&file).unwrap().modified().unwrap();
    let error = Config::load(&env).unwrap_err();
    let ConfigError::Problems(problems) = error else {
        panic!("expected problems, got {error}");
    };
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].to_string().contains("config.toml:2:8:"),
        "{}",
        problems[0]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        before
    );
}

#[test]
fn unreadable_file_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let error = Config::load_file(SouzPaths::new(dir.path()), &missing, &no_env).unwrap_err();
    assert!(
        error.to_string().contains("missing.toml: cannot read"),
        "{error}"
    );
}

#[test]
fn mcp_servers_are_tables_checked_with_positions() {
    let config = parse(
        "[mcp.servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"server\"]\n\n\
         [mcp.servers.tracker]\nurl = \"https://mcp.example.com/mcp\"\nexpose_to_mcp_clients = false\n",
    )
    .unwrap();
    assert_eq!(config.mcp.servers.len(), 2);
    assert_eq!(config.mcp.servers["files"].args, ["-y", "server"]);
    assert!(config.mcp.servers["files"].is_stdio());
    assert!(!config.mcp.servers["tracker"].expose_to_mcp_clients);

    let problems = parse("[mcp.servers.files]\ncommand = \"npx\"\ntimeout = 3\n").unwrap_err();
    let rendered = rendered(&problems);
    assert_eq!(rendered.len(), 1, "{rendered:?}");
    assert!(rendered[0].starts_with("config.toml:3:1:"), "{rendered:?}");
    assert!(
        rendered[0].contains("unknown field `timeout`"),
        "{rendered:?}"
    );

    let problems =
        parse("[mcp.servers.web]\nurl = \"https://x\"\ncommand = \"npx\"\n").unwrap_err();
    assert!(
        rendered_contains(
            &problems,
            "server `web`: set either `command` or `url`, not both"
        ),
        "{problems:?}"
    );
}

#[test]
fn the_telegram_channel_is_a_table_checked_with_positions() {
    let config =
        parse("[channels.telegram]\nenabled = true\napi_url = \"http://127.0.0.1:8081\"\n")
            .unwrap();
    assert!(config.channels.telegram.enabled);
    assert_eq!(config.channels.telegram.api_url, "http://127.0.0.1:8081");
    assert_eq!(config.channels.telegram.poll_seconds, 30);
    assert!(!parse("").unwrap().channels.telegram.enabled);

    let problems = parse("[channels.telegram]\nenabled = true\ntoken = \"123:abc\"\n").unwrap_err();
    let rendered = rendered(&problems);
    assert_eq!(rendered.len(), 1, "{rendered:?}");
    assert!(rendered[0].starts_with("config.toml:3:1:"), "{rendered:?}");
    assert!(
        rendered[0].contains("unknown field `token`"),
        "{rendered:?}"
    );

    let problems = parse("[channels.telegram]\napi_url = \"api.telegram.org\"\n").unwrap_err();
    assert!(
        rendered_contains(&problems, "[channels] telegram: api_url must be"),
        "{problems:?}"
    );
}

fn rendered_contains(problems: &[Problem], needle: &str) -> bool {
    problems
        .iter()
        .any(|problem| problem.to_string().contains(needle))
}
