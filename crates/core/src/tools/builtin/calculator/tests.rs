use super::*;

fn calculate(text: &str) -> Result<String, CalculationError> {
    parse(text)?.evaluate().map(format_number)
}

#[test]
fn evaluates_expressions() {
    let cases = [
        ("128 * 453", "57984"),
        ("10 + 5 / 2", "12.5"),
        ("(2 + 3) ^ 2", "25"),
        // Precedence and associativity.
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("10 - 4 - 3", "3"),
        ("100 / 10 / 5", "2"),
        ("2 * 3 ^ 2", "18"),
        ("2 ^ 3 ^ 2", "512"),
        ("(2 ^ 3) ^ 2", "64"),
        ("-2 ^ 2", "-4"),
        ("(-2) ^ 2", "4"),
        ("2 ^ -1", "0.5"),
        ("-3 * -2", "6"),
        ("--3", "3"),
        ("+-+3", "-3"),
        ("2 - -2", "4"),
        // Functions (degrees) and constants.
        ("sqrt(144)", "12"),
        ("sqrt(2)", "1.4142135623731"),
        ("sin(30)", "0.5"),
        ("cos(60)", "0.5"),
        ("cos(90)", "0"),
        ("sin(180)", "0"),
        ("sin(-90)", "-1"),
        ("cos(360 * 5)", "1"),
        ("tan(45)", "1"),
        ("sin(30) ^ 2", "0.25"),
        ("SQRT(16) + 1", "5"),
        ("2 * pi", "6.28318530717959"),
        // Number formats.
        ("0.1 + 0.2", "0.3"),
        (".5 + 1.", "1.5"),
        ("1.5e3", "1500"),
        ("2E-3 * 1000", "2"),
        ("7 / 2", "3.5"),
        ("1 / 3", "0.333333333333333"),
        ("10 ^ 20", "100000000000000000000"),
        ("10 ^ 21", "1e21"),
        ("10 ^ -8", "1e-8"),
        ("-0", "0"),
        ("0 * -1", "0"),
        // Typographic operators.
        ("6 × 7", "42"),
        ("8 ÷ 2 − 1", "3"),
        ("  ( ( 1 ) )  ", "1"),
    ];
    for (expression, expected) in cases {
        assert_eq!(
            calculate(expression).as_deref(),
            Ok(expected),
            "{expression}"
        );
    }
}

#[test]
#[allow(clippy::too_many_lines, reason = "a table of inputs and errors")]
fn rejects_bad_input_with_clear_errors() {
    use CalculationError as E;
    let cases: Vec<(&str, CalculationError)> = vec![
        ("", E::Empty),
        ("   ", E::Empty),
        ("1 / 0", E::DivisionByZero),
        ("1 / (2 - 2)", E::DivisionByZero),
        ("0 ^ -1", E::DivisionByZero),
        ("sqrt(-4)", E::NegativeSquareRoot("-4".into())),
        ("tan(90)", E::UndefinedTangent("90".into())),
        ("tan(-270)", E::UndefinedTangent("-270".into())),
        ("10 ^ 400", E::Overflow),
        ("1e308 * 10", E::Overflow),
        ("(-8) ^ 0.5", E::NotANumber),
        (
            "2 +",
            E::UnexpectedEnd {
                expected: "a number, `(` or a function",
            },
        ),
        ("(1 + 2", E::UnclosedParenthesis(1)),
        (
            "1 + 2)",
            E::Unexpected {
                found: ")".into(),
                position: 6,
            },
        ),
        (
            "2 3",
            E::Unexpected {
                found: "3".into(),
                position: 3,
            },
        ),
        (
            "2(3)",
            E::Unexpected {
                found: "(".into(),
                position: 2,
            },
        ),
        (
            "1 ++",
            E::UnexpectedEnd {
                expected: "a number, `(` or a function",
            },
        ),
        (
            "* 2",
            E::Unexpected {
                found: "*".into(),
                position: 1,
            },
        ),
        (
            "1 % 2",
            E::Unexpected {
                found: "%".into(),
                position: 3,
            },
        ),
        (
            "2 ** 3",
            E::Unexpected {
                found: "*".into(),
                position: 4,
            },
        ),
        (
            "1..2",
            E::BadNumber {
                text: "1..2".into(),
                position: 1,
            },
        ),
        (
            "1e999",
            E::BadNumber {
                text: "1e999".into(),
                position: 1,
            },
        ),
        (
            "log(10)",
            E::UnknownName {
                name: "log".into(),
                position: 1,
            },
        ),
        (
            "x + 1",
            E::UnknownName {
                name: "x".into(),
                position: 1,
            },
        ),
        (
            "sqrt 16",
            E::Unexpected {
                found: "16".into(),
                position: 6,
            },
        ),
        (
            "sqrt",
            E::UnexpectedEnd {
                expected: "`(` after the function name",
            },
        ),
        (
            "()",
            E::Unexpected {
                found: ")".into(),
                position: 2,
            },
        ),
        (
            "import os",
            E::UnknownName {
                name: "import".into(),
                position: 1,
            },
        ),
    ];
    for (expression, expected) in cases {
        assert_eq!(calculate(expression), Err(expected), "{expression}");
    }
}

#[test]
fn bounds_length_and_depth() {
    let long = "1+".repeat(MAX_EXPRESSION_CHARS / 2) + "1";
    assert_eq!(calculate(&long), Err(CalculationError::TooLong));

    let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
    assert_eq!(calculate(&deep), Err(CalculationError::TooDeep));
    let signs = format!("{}1", "-".repeat(200));
    assert_eq!(calculate(&signs), Err(CalculationError::TooDeep));
    let powers = format!("2{}", "^1".repeat(200));
    assert_eq!(calculate(&powers), Err(CalculationError::TooDeep));

    // Within the limits, nesting works.
    let nested = format!("{}7{}", "(".repeat(30), ")".repeat(30));
    assert_eq!(calculate(&nested).as_deref(), Ok("7"));
    let long_sum = "1+".repeat(1_000) + "1";
    assert_eq!(calculate(&long_sum).as_deref(), Ok("1001"));
}

#[test]
fn error_messages_read_well() {
    assert_eq!(
        calculate("2 + 3)").unwrap_err().to_string(),
        "unexpected `)` at position 6"
    );
    assert_eq!(
        calculate("log(2)").unwrap_err().to_string(),
        "unknown function or name `log` at position 1 (known: sqrt, sin, cos, tan, pi)"
    );
    assert_eq!(
        calculate("5/0").unwrap_err().to_string(),
        "division by zero"
    );
}

#[tokio::test]
async fn runs_through_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::tools::builtin::documents::fixtures::context(dir.path());
    let mut builder = CatalogBuilder::default();
    register(&mut builder).unwrap();
    let catalog = builder.build();
    let tool = catalog.get("Calculator").unwrap();
    assert_eq!(tool.spec().risk, Risk::ReadOnly);
    assert_eq!(tool.spec().category, ToolCategory::Calculator);

    let planned = tool
        .plan(serde_json::json!({"expression": "(2 + 3) ^ 2"}), &ctx)
        .await
        .unwrap();
    assert_eq!(planned.plan.summary, "Calculate (2 + 3) ^ 2");
    let long = format!("1 +\n{}", "1 + ".repeat(100)) + "1";
    let long_planned = tool
        .plan(serde_json::json!({ "expression": long }), &ctx)
        .await
        .unwrap();
    assert!(long_planned.plan.summary.starts_with("Calculate 1 + 1 + "));
    assert_eq!(
        long_planned.plan.summary.chars().count(),
        "Calculate ".len() + 120
    );
    assert!(long_planned.plan.summary.ends_with('…'));
    assert_eq!(long_planned.run(ctx.clone()).await.unwrap().text, "102");
    assert!(planned.plan.targets.is_empty());
    assert_eq!(planned.run(ctx.clone()).await.unwrap().text, "25");

    // A malformed expression fails while planning, a bad value while running.
    let error = tool
        .plan(serde_json::json!({"expression": "2 +* 3"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "unexpected `*` at position 4");
    let planned = tool
        .plan(serde_json::json!({"expression": "1/0"}), &ctx)
        .await
        .unwrap();
    let result = crate::tools::into_result(planned.run(ctx.clone()).await);
    assert!(result.is_error);
    assert_eq!(result.text, "division by zero");
}
