use super::*;

#[test]
fn env_values_are_typed_when_possible() {
    assert_eq!(env_value("9000").as_integer(), Some(9000));
    assert_eq!(env_value("true").as_bool(), Some(true));
    assert_eq!(env_value("127.0.0.1").as_str(), Some("127.0.0.1"));
    assert_eq!(
        env_value("info,souz=debug").as_str(),
        Some("info,souz=debug")
    );
}

const README: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));

/// The variable names of the README's environment table (the rows after "Environment
/// variables override the file:").
fn readme_table_names() -> Vec<&'static str> {
    let table = README
        .split_once("Environment variables override the file:")
        .map(|(_, rest)| rest)
        .expect("the README has its environment table");
    table
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| {
            line.strip_prefix("| `")?
                .split_once('`')
                .map(|(name, _)| name)
        })
        .collect()
}

#[test]
fn readme_lists_every_variable() {
    for variable in ENV_OVERRIDES {
        let row = format!("| `{}` | {} |", variable.name, variable.doc);
        assert!(README.contains(&row), "README is missing the row: {row}");
    }
}

#[test]
fn readme_table_and_registry_agree() {
    let table = readme_table_names();
    assert!(!table.is_empty());
    for name in &table {
        let var = Var::from_name(name)
            .unwrap_or_else(|| panic!("README's row `{name}` is not in the registry"));
        assert_eq!(var.setter(), Setter::User, "{name} is not a user setting");
    }
    for var in Var::ALL {
        match var.setter() {
            Setter::User => {
                assert!(
                    table.contains(&var.name()),
                    "README's table lacks {}",
                    var.name()
                );
                let row = format!("| `{}` | {} |", var.name(), var.purpose());
                assert!(README.contains(&row), "README's row differs from: {row}");
            }
            Setter::Key => assert!(
                README.contains(&format!("`{}`", var.name())),
                "README does not name the key variable {}",
                var.name()
            ),
            Setter::System | Setter::Internal => {
                assert!(
                    !table.contains(&var.name()),
                    "{} is not a setting",
                    var.name()
                );
            }
        }
    }
}

#[test]
fn overrides_are_the_user_settings_of_the_registry() {
    for variable in ENV_OVERRIDES {
        let var = Var::from_name(variable.name).expect("every override is registered");
        assert_eq!(var.setter(), Setter::User);
        assert_eq!(var.purpose(), variable.doc);
    }
    let users = Var::ALL.iter().filter(|var| var.setter() == Setter::User);
    assert_eq!(users.count(), ENV_OVERRIDES.len());
}

#[test]
fn every_provider_key_variable_is_registered() {
    // The service keys' variables are checked beside them (`llm::service::service_keys`).
    let providers = souz_protocol::llm::ProviderId::ALL
        .iter()
        .flat_map(|provider| provider.key_variables().iter().copied());
    for name in providers {
        let var = Var::from_name(name).unwrap_or_else(|| panic!("{name} is not registered"));
        assert_eq!(var.setter(), Setter::Key, "{name}");
    }
}

#[test]
fn registry_names_are_unique() {
    let mut names: Vec<_> = Var::ALL.iter().map(|var| var.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Var::ALL.len());
    assert!(Var::ALL.iter().all(|var| !var.purpose().is_empty()));
}

#[test]
fn the_process_lookup_reads_no_unregistered_name() {
    // PATH is set in every test process but is not a registered variable.
    assert!(process_environment_os().any(|(name, _)| name == "PATH"));
    assert_eq!(process_lookup("PATH"), None);
}

#[test]
fn names_are_unique_and_prefixed() {
    let mut names: Vec<_> = ENV_OVERRIDES.iter().map(|o| o.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ENV_OVERRIDES.len());
    assert!(names.iter().all(|name| name.starts_with("SOUZ_")));
}
